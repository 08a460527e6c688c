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
	"k8s.io/utils/clock"
)

// Run executes mvpctl with args (args[0] is the program name) and returns the
// process exit code: 0 ok, 1 a conversion, test or check failed, 2 usage or
// input error.
func Run(args []string, stdout, stderr io.Writer) int {
	code := runWithIn(args, os.Stdin, stdout, stderr)
	if code == 0 {
		if err := checkGoroutineLeaks(); err != nil {
			fmt.Fprintf(stderr, "%s: %v\n", invoked(args).display, err)
			return exitCode(err)
		}
	}
	return code
}

func runWithIn(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	inv := invoked(args)
	root := newRootCmd(inv.name, inv.display)
	root.SetArgs(inv.args)
	root.SetIn(stdin)
	root.SetOut(stdout)
	root.SetErr(stderr)
	err := root.Execute()
	if err == nil {
		return 0
	}
	var silent *silentError
	if !errors.As(err, &silent) {
		fmt.Fprintf(stderr, "%s: %v\n", root.DisplayName(), err)
	}
	return exitCode(err)
}

// invocation is how mvpctl was started: as itself, as the kubectl plugin
// kubectl-NAME (`kubectl NAME ...`), or as the plugin's completion helper
// kubectl_complete-NAME that kubectl runs to complete `kubectl NAME ...`.
type invocation struct {
	name    string   // the executable's name: mvpctl or kubectl-NAME
	display string   // what usage lines and hints name: mvpctl or "kubectl NAME"
	args    []string // the command line after the program name
}

// Plugin executable names, as kubectl looks them up on the PATH.
const (
	pluginPrefix           = "kubectl-"
	pluginCompletionPrefix = "kubectl_complete-"
)

func invoked(args []string) invocation {
	inv := invocation{name: "mvpctl", display: "mvpctl"}
	if len(args) == 0 {
		return inv
	}
	inv.args = args[1:]
	base := strings.TrimSuffix(filepath.Base(args[0]), ".exe")
	switch {
	case strings.HasPrefix(base, pluginCompletionPrefix):
		plugin := strings.TrimPrefix(base, pluginCompletionPrefix)
		inv.name, inv.display = pluginPrefix+plugin, "kubectl "+plugin
		inv.args = append([]string{cobra.ShellCompRequestCmd}, inv.args...)
	case strings.HasPrefix(base, pluginPrefix):
		plugin := strings.TrimPrefix(base, pluginPrefix)
		inv.name, inv.display = base, "kubectl "+plugin
	}
	return inv
}

// newRootCmd builds the command tree. name is the executable's name (shell
// completion scripts complete it); display is what usage lines, hints and
// examples name, "kubectl mvp" for the plugin.
func newRootCmd(name, display string) *cobra.Command {
	root := &cobra.Command{
		Use:           name,
		Short:         "Keep Kubernetes clients working across API version changes",
		Long:          "mvpctl converts objects between API versions with TransformationRules (compiled to jq),\ndrafts and checks those rules, and proxies a mixed-version control plane.",
		Version:       versionString(),
		SilenceUsage:  true,
		SilenceErrors: true,
		Annotations:   map[string]string{cobra.CommandDisplayNameAnnotation: display},
	}
	root.SetVersionTemplate("{{.Version}}\n")
	root.SetFlagErrorFunc(func(c *cobra.Command, err error) error {
		return usageErrorf("%v\nSee '%s --help'.", err, c.CommandPath())
	})
	root.AddCommand(
		newConvertCmd(),
		newCompileCmd(),
		newTestCmd(),
		newProxyCmd(clock.RealClock{}),
		newDiffCmd(),
		newGenerateRulesCmd(),
		newLintCmd(),
		newVersionCmd(),
		newCompletionCmd(),
		newRulesCmd(),
		newScanCmd(),
		newWebhookCmd(),
		newHelmCmd(),
	)
	if display != "mvpctl" {
		renameExamples(root, display)
	}
	return root
}

// renameExamples makes the examples of every command name the plugin as
// it is run ("kubectl mvp convert ...").
func renameExamples(c *cobra.Command, display string) {
	c.Example = strings.ReplaceAll(c.Example, "mvpctl ", display+" ")
	for _, sub := range c.Commands() {
		renameExamples(sub, display)
	}
}
