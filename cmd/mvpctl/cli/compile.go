package cli

import (
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/mvpctl/mvpctl/rules"
)

type compileOptions struct {
	Direction string // forward, reverse or both
	Rule      string // a rule ID to print; empty prints all
}

func newCompileCmd() *cobra.Command {
	var opts compileOptions
	cmd := &cobra.Command{
		Use:   "compile RULES...",
		Short: "Print the jq programs that TransformationRules compile to",
		Long: `Print the jq program of every migration rule, per direction. These are the
programs mvpctl runs (the native executor is proven equivalent to them), and
they can be replayed with jq or gojq:

  mvpctl compile --rule ID --direction forward rules.yaml > fwd.jq
  gojq -f fwd.jq object.json`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runCompile(cmd.OutOrStdout(), cmd.ErrOrStderr(), args, opts)
		},
	}
	cmd.Flags().StringVar(&opts.Direction, "direction", "both", "forward, reverse or both")
	cmd.Flags().StringVar(&opts.Rule, "rule", "", "only the rule with this ID (resource.group/from->to)")
	return cmd
}

func runCompile(stdout, stderr io.Writer, paths []string, opts compileOptions) error {
	var dirs []rules.Direction
	switch opts.Direction {
	case "both":
		dirs = []rules.Direction{rules.Forward, rules.Reverse}
	case "forward":
		dirs = []rules.Direction{rules.Forward}
	case "reverse":
		dirs = []rules.Direction{rules.Reverse}
	default:
		return usageErrorf("--direction %q: want forward, reverse or both", opts.Direction)
	}
	rs, err := rules.Load(paths...)
	if err != nil {
		return rulesError(stderr, err)
	}
	compiled, err := rules.Compile(rs, rules.CompileOptions{})
	if err != nil {
		return rulesError(stderr, err)
	}
	n := 0
	for _, c := range compiled {
		if opts.Rule != "" && c.Rule.ID() != opts.Rule {
			continue
		}
		for _, d := range dirs {
			if n > 0 {
				fmt.Fprintln(stdout)
			}
			fmt.Fprint(stdout, c.Program(d).Source)
			n++
		}
	}
	if n == 0 {
		return usageErrorf("no rule with ID %q", opts.Rule)
	}
	return nil
}
