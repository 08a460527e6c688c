package cli

import (
	"context"
	"fmt"
	"io"
	"os"

	"github.com/spf13/cobra"

	"github.com/mvpctl/mvpctl/engine/golden"
)

type testOptions struct {
	Update  bool // rewrite expected outputs
	Verbose bool // list passing cases too
}

func newTestCmd() *cobra.Command {
	var opts testOptions
	cmd := &cobra.Command{
		Use:   "test DIR|FILE...",
		Short: "Run golden conversion cases (txtar archives) against their rules",
		Long: `Run golden conversion cases: each *.txtar archive holds rules, input objects
and the expected output of both directions. Every case is run with the native
executor and with the jq programs, and checks both round trips. Mismatches
print a diff; --update rewrites the expected outputs instead.`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runTest(cmd.Context(), cmd.OutOrStdout(), args, opts)
		},
	}
	cmd.Flags().BoolVar(&opts.Update, "update", false, "rewrite the out/ sections of cases that differ")
	cmd.Flags().BoolVarP(&opts.Verbose, "verbose", "v", false, "list passing cases too")
	return cmd
}

func runTest(ctx context.Context, stdout io.Writer, args []string, opts testOptions) error {
	if ctx == nil {
		ctx = context.Background()
	}
	var files []string
	for _, a := range args {
		info, err := os.Stat(a)
		if err != nil {
			return inputError(err)
		}
		if !info.IsDir() {
			files = append(files, a)
			continue
		}
		found, err := golden.Files(a)
		if err != nil {
			return inputError(err)
		}
		files = append(files, found...)
	}
	if len(files) == 0 {
		return usageErrorf("no *.txtar cases in %v", args)
	}
	passed, failed := 0, 0
	for _, f := range files {
		res, err := golden.RunFile(ctx, f, opts.Update)
		if err != nil {
			return inputError(fmt.Errorf("%s: %w", f, err))
		}
		switch {
		case !res.OK():
			failed++
			fmt.Fprintf(stdout, "FAIL %s\n", f)
			for _, msg := range res.Failures {
				fmt.Fprintf(stdout, "    %s\n", indent(msg))
			}
		case res.Updated:
			passed++
			fmt.Fprintf(stdout, "updated %s\n", f)
		default:
			passed++
			if opts.Verbose {
				fmt.Fprintf(stdout, "ok   %s\n", f)
			}
		}
	}
	fmt.Fprintf(stdout, "%d passed, %d failed\n", passed, failed)
	if failed > 0 {
		return &silentError{code: exitFailure}
	}
	return nil
}

func indent(s string) string {
	out := []byte{}
	for i := 0; i < len(s); i++ {
		out = append(out, s[i])
		if s[i] == '\n' && i+1 < len(s) {
			out = append(out, "    "...)
		}
	}
	return string(out)
}
