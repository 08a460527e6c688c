package cli

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"

	"github.com/spf13/cobra"

	"github.com/mvpctl/mvpctl/schemadiff"
)

// generateRulesOptions are the flags of mvpctl generate-rules.
type generateRulesOptions struct {
	// From and To are the old and new dumps; both are required.
	From, To string
	// Group keeps one API group; empty means all.
	Group string
	// Output is the rules file; empty or "-" means stdout.
	Output string
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
		Use:   "generate-rules --from OLD --to NEW",
		Short: "Draft TransformationRules from two OpenAPI dumps",
		Long: `Draft TransformationRules for every kind whose version the new dump no
longer serves (or no longer prefers): one apiMigrationRules entry per kind and
version pair, a transformation per confident change, and a commented TODO for
what cannot be inferred safely.

Exit status: 0 when nothing is left to review, 1 when TODOs remain, 2 on bad
input.`,
		Example: `  mvpctl generate-rules --from v1.21/swagger.json --to v1.22/swagger.json -o rules.yaml --report report.md`,
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runGenerateRules(cmd.Context(), cmd.OutOrStdout(), cmd.ErrOrStderr(), opts)
		},
	}
	cmd.Flags().StringVar(&opts.From, "from", "", "the old dump (required)")
	cmd.Flags().StringVar(&opts.To, "to", "", "the new dump (required)")
	cmd.Flags().StringVar(&opts.Group, "group", "", `only this API group ("core" for the core group)`)
	cmd.Flags().StringVarP(&opts.Output, "output", "o", "", "write the rules to this file instead of stdout")
	cmd.Flags().StringVar(&opts.Report, "report", "", "write a Markdown report of drafted rules and TODOs to this file")
	cmd.Flags().StringVar(&opts.Name, "name", "", "metadata.name of the rules (default: from the dumps' versions)")
	cmd.Flags().BoolVar(&opts.AllVersions, "all-versions", false, "also draft rules for still-served versions that are not preferred")
	return cmd
}

func runGenerateRules(ctx context.Context, stdout, stderr io.Writer, opts generateRulesOptions) error {
	if opts.From == "" || opts.To == "" {
		return usageErrorf("--from and --to are required")
	}
	report, err := loadAndDiff(ctx, opts.From, opts.To, schemadiff.Options{Group: opts.Group, AllVersions: opts.AllVersions})
	if err != nil {
		return err
	}
	draft := schemadiff.DraftRules(report, schemadiff.DraftOptions{Name: opts.Name})
	out := draft.YAML()
	if opts.Output == "" || opts.Output == "-" {
		if _, err := stdout.Write(out); err != nil {
			return failure(err)
		}
	} else if err := os.WriteFile(opts.Output, out, 0o644); err != nil {
		return usageErrorf("%v", err)
	}
	if opts.Report != "" {
		var b bytes.Buffer
		if err := schemadiff.WriteDraftReport(&b, report, draft); err != nil {
			return failure(err)
		}
		if err := os.WriteFile(opts.Report, b.Bytes(), 0o644); err != nil {
			return usageErrorf("%v", err)
		}
	}
	if n := len(draft.TODOs); n > 0 {
		fmt.Fprintf(stderr, "%d migration rules drafted; %d TODOs to review\n", len(draft.Rules.Spec.APIMigrationRules), n)
		return &silentError{code: exitFailure}
	}
	return nil
}
