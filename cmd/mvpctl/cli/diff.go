package cli

import (
	"context"
	"fmt"
	"io"
	"sync"

	"github.com/spf13/cobra"

	"github.com/mvpctl/mvpctl/schemadiff"
)

// diffOptions are the flags of mvpctl diff.
type diffOptions struct {
	// Group keeps one API group; empty means all ("core" for the core group).
	Group string
	// Kind keeps one kind; empty means all.
	Kind string
	// Output is text, json or markdown.
	Output string
	// AllVersions also reports still-served, non-preferred versions.
	AllVersions bool
	// FailOn is what exits 1: removed (kinds, fields or enum values the
	// new dump no longer has), changed (any difference); empty: nothing.
	FailOn string
}

func newDiffCmd() *cobra.Command {
	var opts diffOptions
	cmd := &cobra.Command{
		Use:   "diff OLD NEW",
		Short: "Report API changes per kind and version between two OpenAPI dumps",
		Long: `Compare two dumps of Kubernetes APIs and report, per kind, which
group/versions were removed, added and kept, which version each removed
version migrates to, and the field-level changes between the two schemas,
including renamed and moved fields with a confidence.

OLD and NEW are each one of: a /openapi/v2 swagger.json, an /openapi/v3
document or a directory of them, CRD manifests (YAML or JSON), or
cluster:CONTEXT to read /openapi/v3 through that kubeconfig context.

Exit status: 0, or 1 when the dumps differ as --fail-on says (removed: a
kind version, field or enum value of OLD is gone from NEW; changed: any
difference), as oasdiff breaking --fail-on does; 2 on bad usage or input.`,
		Example: `  mvpctl diff v1.21/swagger.json v1.22/swagger.json --group networking.k8s.io
  mvpctl diff cluster:old cluster:new -o markdown
  mvpctl diff old.json new.json --fail-on removed   # in CI: exit 1 on a removal`,
		Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runDiff(cmd.Context(), cmd.OutOrStdout(), args[0], args[1], opts)
		},
	}
	cmd.Flags().StringVar(&opts.Group, "group", "", `only this API group ("core" for the core group)`)
	cmd.Flags().StringVar(&opts.Kind, "kind", "", "only this kind")
	cmd.Flags().StringVarP(&opts.Output, "output", "o", "text", "output format: text, json or markdown")
	cmd.Flags().BoolVar(&opts.AllVersions, "all-versions", false, "also pair still-served versions that are not preferred with the preferred one")
	cmd.Flags().StringVar(&opts.FailOn, "fail-on", "", "exit 1 when the dumps differ: removed (kinds, fields or enum values gone) or changed (any difference)")
	registerCompletion(cmd, "output", completeWords(reportFormats()...))
	registerCompletion(cmd, "fail-on", completeWords("removed", "changed"))
	return cmd
}

func reportFormats() []string {
	out := make([]string, len(schemadiff.ReportFormats))
	for i, f := range schemadiff.ReportFormats {
		out[i] = string(f)
	}
	return out
}

func runDiff(ctx context.Context, out io.Writer, oldSrc, newSrc string, opts diffOptions) error {
	format, err := reportFormat(opts.Output)
	if err != nil {
		return err
	}
	switch opts.FailOn {
	case "", "removed", "changed":
	default:
		return usageErrorf("--fail-on %q: want removed or changed", opts.FailOn)
	}
	report, err := loadAndDiff(ctx, oldSrc, newSrc, schemadiff.Options{Group: opts.Group, Kind: opts.Kind, AllVersions: opts.AllVersions})
	if err != nil {
		return err
	}
	if err := schemadiff.WriteReport(out, report, format); err != nil {
		return failure(err)
	}
	kinds, fields := removals(report)
	switch {
	case opts.FailOn == "removed" && kinds+fields > 0:
		return failure(fmt.Errorf("--fail-on removed: %d kind versions and %d fields or enum values removed", kinds, fields))
	case opts.FailOn == "changed" && !report.Empty():
		return failure(fmt.Errorf("--fail-on changed: the dumps differ"))
	}
	return nil
}

// removals counts what a client of the old dump loses: kind versions the
// new dump no longer serves, and fields and enum values a migration's
// target version does not have.
func removals(r *schemadiff.Report) (kinds, fields int) {
	kinds = len(r.Kinds.Deleted)
	for _, m := range r.Migrations {
		if m.Schema == nil {
			continue
		}
		fields += len(m.Schema.Deleted)
		for _, f := range m.Schema.Modified {
			if f.Enum != nil {
				fields += len(f.Enum.Deleted)
			}
		}
	}
	return kinds, fields
}

func reportFormat(s string) (schemadiff.ReportFormat, error) {
	for _, f := range schemadiff.ReportFormats {
		if string(f) == s {
			return f, nil
		}
	}
	return "", usageErrorf("unknown output format %q: use text, json or markdown", s)
}

// loadAndDiff loads both dumps (input errors exit 2) and diffs them.
func loadAndDiff(ctx context.Context, oldSrc, newSrc string, opts schemadiff.Options) (*schemadiff.Report, error) {
	if ctx == nil {
		ctx = context.Background()
	}
	// The two dumps load in parallel; an error of OLD is reported first.
	var old, nw *schemadiff.Spec
	var oldErr, newErr error
	var wg sync.WaitGroup
	wg.Go(func() { old, oldErr = schemadiff.Load(ctx, oldSrc) })
	nw, newErr = schemadiff.Load(ctx, newSrc)
	wg.Wait()
	if oldErr != nil {
		return nil, inputError(oldErr)
	}
	if newErr != nil {
		return nil, inputError(newErr)
	}
	r := schemadiff.Diff(old, nw, opts)
	if opts.Group != "" && len(r.Kinds.Kept)+len(r.Kinds.Deleted) == 0 {
		return nil, usageErrorf("%s serves no kinds in group %q", oldSrc, opts.Group)
	}
	if opts.Kind != "" && len(r.Kinds.Kept)+len(r.Kinds.Deleted) == 0 {
		return nil, usageErrorf("%s serves no kind %q%s", oldSrc, opts.Kind, groupSuffix(opts.Group))
	}
	return r, nil
}

func groupSuffix(g string) string {
	if g == "" {
		return ""
	}
	return fmt.Sprintf(" in group %q", g)
}
