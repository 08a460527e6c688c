package cli

import (
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/mvpctl/mvpctl/rules"
)

type compileOptions struct {
	Direction string   // forward, reverse or both
	Rule      string   // a rule ID to print; empty prints all
	Rules     []string // rules files or directories, besides the arguments
}

func newCompileCmd() *cobra.Command {
	var opts compileOptions
	cmd := &cobra.Command{
		Use:   "compile RULES...",
		Short: "Print the jq programs that TransformationRules compile to",
		Long: `Print the jq program of every migration rule, per direction. These are the
programs mvpctl runs (the native executor is proven equivalent to them).

They replay exactly with jq 1.7 or later, or gojq. jq 1.6 and earlier read
numbers as 64-bit floats and round integers beyond 2^53, such as
metadata.generation 9223372036854775807:

  mvpctl compile --rule ID --direction forward rules.yaml > fwd.jq
  gojq -f fwd.jq object.json

Rules files and directories are the arguments, or --rules.`,
		Example: `  mvpctl compile rules.yaml
  mvpctl compile --rules rules/ --rule 'ingresses.networking.k8s.io/v1beta1->v1' --direction reverse`,
		ValidArgsFunction: completeRulesFiles,
		RunE: func(cmd *cobra.Command, args []string) error {
			return runCompile(cmd.OutOrStdout(), cmd.ErrOrStderr(), append(opts.Rules, args...), opts)
		},
	}
	f := cmd.Flags()
	f.StringVar(&opts.Direction, "direction", "both", "forward, reverse or both")
	f.StringVar(&opts.Rule, "rule", "", "only the rule with this ID (resource.group/from->to)")
	f.StringSliceVar(&opts.Rules, "rules", nil, "TransformationRules file or directory (repeatable), as well as the arguments")
	markFilenameFlags(cmd, "rules")
	registerCompletion(cmd, "direction", completeWords("both", "forward", "reverse"))
	registerCompletion(cmd, "rule", func(_ *cobra.Command, args []string, _ string) ([]string, cobra.ShellCompDirective) {
		return ruleIDs(append(opts.Rules, args...)), cobra.ShellCompDirectiveNoFileComp
	})
	return cmd
}

func runCompile(stdout, stderr io.Writer, paths []string, opts compileOptions) error {
	if len(paths) == 0 {
		return usageErrorf("compile needs rules: give TransformationRules files or directories as arguments or with --rules")
	}
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
	var ids []string
	n := 0
	for _, c := range compiled {
		ids = append(ids, c.Rule.ID())
		if opts.Rule != "" && c.Rule.ID() != opts.Rule {
			continue
		}
		for _, d := range dirs {
			if n > 0 {
				fmt.Fprintln(stdout)
			}
			fmt.Fprint(stdout, c.Program(d).Source())
			n++
		}
	}
	if n == 0 && opts.Rule != "" {
		return usageErrorf("--rule %q: no rule has this ID; the rules are: %s", opts.Rule, strings.Join(ids, ", "))
	}
	return nil
}
