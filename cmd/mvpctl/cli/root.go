// Package cli holds mvpctl's cobra commands. Commands are thin: they parse
// flags into options and call the rules, engine or schemadiff packages.
package cli

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"
)

// Run executes mvpctl with args (args[0] is the program name) and returns the
// process exit code: 0 ok, 1 a conversion, test or check failed, 2 usage or
// input error.
func Run(args []string, stdout, stderr io.Writer) int {
	code := runWithIn(args, os.Stdin, stdout, stderr)
	if code == 0 {
		if err := checkGoroutineLeaks(); err != nil {
			fmt.Fprintf(stderr, "%s: %v\n", programName(args), err)
			return exitCode(err)
		}
	}
	return code
}

func runWithIn(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	root := newRootCmd(programName(args))
	root.SetArgs(args[1:])
	root.SetIn(stdin)
	root.SetOut(stdout)
	root.SetErr(stderr)
	err := root.Execute()
	if err == nil {
		return 0
	}
	var silent *silentError
	if !errors.As(err, &silent) {
		fmt.Fprintf(stderr, "%s: %v\n", root.Name(), err)
	}
	return exitCode(err)
}

// programName makes `kubectl mvp` print its own name in usage lines when the
// binary is installed as the kubectl plugin kubectl-mvp.
func programName(args []string) string {
	if len(args) == 0 {
		return "mvpctl"
	}
	if base := filepath.Base(args[0]); strings.HasPrefix(base, "kubectl-") {
		return "kubectl " + strings.TrimPrefix(base, "kubectl-")
	}
	return "mvpctl"
}

func newRootCmd(name string) *cobra.Command {
	root := &cobra.Command{
		Use:           name,
		Short:         "Keep Kubernetes clients working across API version changes",
		Long:          "mvpctl converts objects between API versions with TransformationRules (compiled to jq),\ndrafts and checks those rules, and proxies a mixed-version control plane.",
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.SetFlagErrorFunc(func(c *cobra.Command, err error) error {
		return usageErrorf("%v\nSee '%s --help'.", err, c.CommandPath())
	})
	root.AddCommand(
		newConvertCmd(),
		newCompileCmd(),
		newTestCmd(),
		newProxyCmd(),
		newDiffCmd(),
		newGenerateRulesCmd(),
		newLintCmd(),
		newVersionCmd(),
		newCompletionCmd(),
		newRulesCmd(),
		newScanCmd(),
	)
	return root
}
