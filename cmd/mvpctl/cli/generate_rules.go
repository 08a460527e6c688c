package cli

import (
	"bytes"
	"context"
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/mvpctl/mvpctl/schemadiff"
)

// generateRulesOptions are the flags of mvpctl generate-rules.
type generateRulesOptions struct {
	// From and To are the old and new dumps; both are required.
	From, To string
	// Group keeps one API group; empty means all.
	Group string
	// Output is the format: yaml (the only one: the drafted rules carry
	// their TODOs as comments).
	Output string
	// OutputFile is the rules file; empty or "-" means stdout.
	OutputFile string
	// Report is the Markdown report file; empty writes none.
	Report string
	// Name is metadata.name; empty derives it from the dumps' versions.
	Name string
	// AllVersions also drafts rules for still-served, non-preferred versions.
	AllVersions bool
}

func newGenerateRulesCmd() *cobra.Command {
	var opts generateRulesOptions
	cmd := &cobra.Command{
		Use:   "generate-rules OLD NEW",
		Short: "Draft TransformationRules from two OpenAPI dumps",
		Long: `Draft TransformationRules for every kind whose version the new dump no
longer serves (or no longer prefers): one apiMigrationRules entry per kind and
version pair, a transformation per confident change, and a commented TODO for
what cannot be inferred safely.

OLD and NEW take the forms diff takes (OpenAPI v2/v3 dumps, CRD manifests,
cluster:CONTEXT); --from and --to name them too.

Exit status: 0 when nothing is left to review, 1 when TODOs remain, 2 on bad
input.`,
		Example: `  mvpctl generate-rules v1.21/swagger.json v1.22/swagger.json --output-file rules.yaml --report report.md
  mvpctl generate-rules --from cluster:old --to cluster:new > rules.yaml`,
		Args: cobra.MaximumNArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := dumpArgs(&opts, args); err != nil {
				return err
			}
			return runGenerateRules(cmd.Context(), cmd.OutOrStdout(), cmd.ErrOrStderr(), opts)
		},
	}
	cmd.Flags().StringVar(&opts.From, "from", "", "the old dump, instead of the OLD argument")
	cmd.Flags().StringVar(&opts.To, "to", "", "the new dump, instead of the NEW argument")
	cmd.Flags().StringVar(&opts.Group, "group", "", `only this API group ("core" for the core group)`)
	cmd.Flags().StringVarP(&opts.Output, "output", "o", "yaml", "output format: yaml")
	cmd.Flags().StringVar(&opts.OutputFile, "output-file", "", "write the rules to this file instead of standard output")
	registerCompletion(cmd, "output", completeWords("yaml"))
	cmd.Flags().StringVar(&opts.Report, "report", "", "write a Markdown report of drafted rules and TODOs to this file")
	cmd.Flags().StringVar(&opts.Name, "name", "", "metadata.name of the rules (default: from the dumps' versions)")
	cmd.Flags().BoolVar(&opts.AllVersions, "all-versions", false, "also draft rules for still-served versions that are not preferred")
	return cmd
}

// dumpArgs takes OLD and NEW from the arguments, or from --from and --to,
// not both.
func dumpArgs(opts *generateRulesOptions, args []string) error {
	if len(args) == 0 {
		return nil
	}
	if opts.From != "" || opts.To != "" {
		return usageErrorf("give the dumps as OLD NEW or with --from and --to, not both")
	}
	if len(args) != 2 {
		return usageErrorf("give two dumps: OLD NEW")
	}
	opts.From, opts.To = args[0], args[1]
	return nil
}

func runGenerateRules(ctx context.Context, stdout, stderr io.Writer, opts generateRulesOptions) error {
	if opts.From == "" || opts.To == "" {
		return usageErrorf("give two dumps: OLD NEW (or --from OLD --to NEW)")
	}
	if opts.Output != "yaml" {
		return usageErrorf("-o %q: the only format is yaml; write the rules to a file with --output-file", opts.Output)
	}
	report, err := loadAndDiff(ctx, opts.From, opts.To, schemadiff.Options{Group: opts.Group, AllVersions: opts.AllVersions})
	if err != nil {
		return err
	}
	draft := schemadiff.DraftRules(report, schemadiff.DraftOptions{Name: opts.Name})
	out := draft.YAML()
	if opts.OutputFile == "" || opts.OutputFile == "-" {
		if _, err := stdout.Write(out); err != nil {
			return failure(err)
		}
	} else if err := writeFileAtomic(opts.OutputFile, out, 0o644); err != nil {
		return usageErrorf("--output-file: %v", err)
	}
	if opts.Report != "" {
		var b bytes.Buffer
		if err := schemadiff.WriteDraftReport(&b, report, draft); err != nil {
			return failure(err)
		}
		if err := writeFileAtomic(opts.Report, b.Bytes(), 0o644); err != nil {
			return usageErrorf("--report: %v", err)
		}
	}
	if n := len(draft.TODOs); n > 0 {
		fmt.Fprintf(stderr, "%d migration rules drafted; %d TODOs to review\n", len(draft.Rules.Spec.APIMigrationRules), n)
		return &silentError{code: exitFailure}
	}
	return nil
}
