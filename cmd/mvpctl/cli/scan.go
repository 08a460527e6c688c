package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"
	"sigs.k8s.io/yaml"

	"github.com/mvpctl/mvpctl/lint"
	"github.com/mvpctl/mvpctl/rules"
	"github.com/mvpctl/mvpctl/rules/builtin"
	"github.com/mvpctl/mvpctl/scan"
)

// scanOptions are the flags of mvpctl scan.
type scanOptions struct {
	// Files are -f inputs: files, directories, - and cluster:CONTEXT.
	Files []string
	// Recursive descends into subdirectories.
	Recursive bool
	// KubernetesVersion is the target release; empty means the newest known.
	KubernetesVersion string
	// FailOn is removed or deprecated.
	FailOn string
	// Output is text, json, yaml, sarif, github or markdown.
	Output string
}

// scanDocsURI is where the scan's finding IDs are documented.
const scanDocsURI = "https://github.com/mvpctl/mvpctl/blob/main/docs/scan.md"

// scanChecks describe the scan's findings for SARIF, as lint's checks do.
var scanChecks = []*lint.Check{
	{ID: "removed-api", Severity: lint.Error, Category: "api-lifecycle", Summary: "An object uses an API version that the target Kubernetes release no longer serves"},
	{ID: "deprecated-api", Severity: lint.Warning, Category: "api-lifecycle", Summary: "An object uses an API version that the target Kubernetes release deprecates"},
}

var scanFormats = []string{"text", "json", "yaml", "sarif", "github", "markdown"}

func newScanCmd() *cobra.Command {
	var opts scanOptions
	cmd := &cobra.Command{
		Use:   "scan -f FILE|DIR|-|cluster:CONTEXT... [FILE...]",
		Short: "Find objects on API versions that a Kubernetes release deprecates or removes",
		Long: fmt.Sprintf(`Find objects on deprecated or removed API versions in manifests (files,
directories, standard input; multi-document YAML, JSON, kind: List) and in
clusters. For a cluster (cluster:CONTEXT of the kubeconfig; cluster: is the
current context) it reads what was applied, because the apiserver gives
objects back converted to a version it still serves: the
kubectl.kubernetes.io/last-applied-configuration annotation of every object
and the deployed revision of every Helm 3 release (Secrets or ConfigMaps).

Each finding says where the object is (file:line, or cluster, Helm release
and chart template), its kind, name and apiVersion, the releases that
deprecated and remove that version, what replaces it, and whether mvpctl's
built-in rules convert it. The versions come from Kubernetes' own lifecycle
annotations (k8s.io/api), up to %s.

Exit status: 1 when an object uses an API version removed in
--kubernetes-version (--fail-on deprecated: or deprecated), 2 when an input
cannot be read or decoded (the other inputs are still scanned), 0 otherwise.

Arguments are inputs too, as if each were given with -f (pre-commit passes
the files it checks that way).`, builtin.Newest),
		Example: `  helm template shop ./chart | mvpctl scan -f -
  mvpctl scan -R -f manifests/ --kubernetes-version v1.25
  mvpctl scan -f cluster:prod -o json
  mvpctl scan -R -f . -o github --fail-on deprecated`,
		Args: cobra.ArbitraryArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			// Arguments are inputs as -f gives them: pre-commit and
			// xargs pass file names that way.
			opts.Files = append(opts.Files, args...)
			return runScan(cmd.Context(), cmd.InOrStdin(), cmd.OutOrStdout(), cmd.ErrOrStderr(), opts)
		},
	}
	f := cmd.Flags()
	f.StringArrayVarP(&opts.Files, "filename", "f", nil, "file, directory, - for standard input, or cluster:CONTEXT (repeatable)")
	f.BoolVarP(&opts.Recursive, "recursive", "R", false, "scan the subdirectories of directories too")
	f.StringVar(&opts.KubernetesVersion, "kubernetes-version", "", fmt.Sprintf("Kubernetes release to check against, vMAJOR.MINOR (default %s, the newest known)", builtin.Newest))
	f.StringVar(&opts.FailOn, "fail-on", "removed", "exit 1 on objects whose version is removed, or also deprecated: removed or deprecated")
	f.StringVarP(&opts.Output, "output", "o", "text", "output format: "+strings.Join(scanFormats, ", "))
	return cmd
}

func runScan(ctx context.Context, stdin io.Reader, stdout, stderr io.Writer, opts scanOptions) error {
	if ctx == nil {
		ctx = context.Background()
	}
	known := false
	for _, f := range scanFormats {
		known = known || f == opts.Output
	}
	if !known {
		return usageErrorf("unknown output format %q: use %s", opts.Output, strings.Join(scanFormats, ", "))
	}
	if opts.FailOn != "removed" && opts.FailOn != "deprecated" {
		return usageErrorf("--fail-on %q: use removed or deprecated", opts.FailOn)
	}
	if len(opts.Files) == 0 {
		return usageErrorf("scan: give -f FILE, -f DIR, -f - or -f cluster:CONTEXT")
	}
	target := builtin.Newest
	if opts.KubernetesVersion != "" {
		var err error
		if target, err = builtin.ParseRelease(opts.KubernetesVersion); err != nil {
			return usageErrorf("--kubernetes-version: %v", err)
		}
	}
	res := scan.Run(ctx, opts.Files, scan.Options{Target: target, Recursive: opts.Recursive, Stdin: stdin})
	if err := writeScan(stdout, res, opts.Output); err != nil {
		return failure(err)
	}
	for _, w := range res.Warnings {
		fmt.Fprintf(stderr, "warning: %s\n", w)
	}
	for _, e := range res.Errors {
		fmt.Fprintf(stderr, "mvpctl scan: %v\n", e)
	}
	switch {
	case len(res.Errors) > 0:
		return &silentError{code: exitUsage}
	case res.Count(scan.Removed) > 0, opts.FailOn == "deprecated" && res.Count(scan.Deprecated) > 0:
		return &silentError{code: exitFailure}
	}
	return nil
}

func writeScan(w io.Writer, res *scan.Result, format string) error {
	switch format {
	case "json", "yaml":
		return writeScanData(w, res, format)
	case "github", "sarif":
		return lint.Write(w, scanLintResult(res), lint.Format(format),
			lint.ToolInfo{Name: "mvpctl scan", Version: toolVersion(), InformationURI: "https://github.com/mvpctl/mvpctl", DocsURI: scanDocsURI, Checks: scanChecks})
	case "markdown":
		return writeScanTable(w, res, true)
	}
	return writeScanTable(w, res, false)
}

// scanReport is the json and yaml output.
type scanReport struct {
	KubernetesVersion string         `json:"kubernetesVersion"`
	Documents         int            `json:"documents"`
	Files             int            `json:"files"`
	Summary           map[string]int `json:"summary"`
	Findings          []scan.Finding `json:"findings"`
}

func writeScanData(w io.Writer, res *scan.Result, format string) error {
	rep := scanReport{KubernetesVersion: res.Target.String(), Documents: res.Documents, Files: res.Files, Findings: res.Findings,
		Summary: map[string]int{string(scan.Removed): res.Count(scan.Removed), string(scan.Deprecated): res.Count(scan.Deprecated)}}
	if rep.Findings == nil {
		rep.Findings = []scan.Finding{}
	}
	data, err := json.MarshalIndent(rep, "", "  ")
	if err != nil {
		return err
	}
	if format == "yaml" {
		if data, err = yaml.JSONToYAML(data); err != nil {
			return err
		}
	} else {
		data = append(data, '\n')
	}
	_, err = w.Write(data)
	return err
}

// scanLintResult turns the findings into lint findings, for lint's GitHub
// and SARIF writers: removed-api errors and deprecated-api warnings, at the
// object's file and line (a cluster object's "file" is cluster:CONTEXT).
func scanLintResult(res *scan.Result) *lint.Result {
	out := &lint.Result{}
	for _, f := range res.Findings {
		lf := lint.Finding{ID: "removed-api", Severity: lint.Error, Message: f.Message(res.Target), Pos: rules.Pos{File: f.File, Line: f.Line}}
		if f.Status == scan.Deprecated {
			lf.ID, lf.Severity = "deprecated-api", lint.Warning
		}
		if lf.Pos.Line > 0 {
			lf.Pos.Col = 1
		}
		if f.Cluster != "" && f.HelmRelease == "" {
			lf.Pos.File = scan.ClusterPrefix + f.Cluster
		}
		out.Findings = append(out.Findings, lf)
	}
	return out
}

// writeScanTable prints one row per finding and a summary line, as a
// kubectl-style table or a Markdown table.
func writeScanTable(w io.Writer, res *scan.Result, markdown bool) error {
	header := []string{"LOCATION", "KIND", "NAME", "API VERSION", "STATUS", "DEPRECATED", "REMOVED", "REPLACEMENT", "MVPCTL CONVERTS"}
	rows := make([][]string, 0, len(res.Findings))
	for _, f := range res.Findings {
		converts := "no"
		if f.Convertible {
			converts = "yes"
		}
		rows = append(rows, []string{f.Location.String(), f.Kind, f.Object(), f.APIVersion, string(f.Status),
			orDash(f.DeprecatedIn), orDash(f.RemovedIn), orDash(f.Replacement()), converts})
	}
	var b strings.Builder
	if len(rows) > 0 {
		if markdown {
			writeMarkdownTable(&b, header, rows)
		} else {
			tw := tabwriter.NewWriter(&b, 0, 4, 2, ' ', 0)
			for _, r := range append([][]string{header}, rows...) {
				fmt.Fprintln(tw, strings.Join(r, "\t"))
			}
			tw.Flush()
		}
	}
	if markdown && len(rows) > 0 {
		b.WriteByte('\n')
	}
	writeScanDecisions(&b, res)
	fmt.Fprintf(&b, "%d removed and %d deprecated in Kubernetes %s, in %d documents of %d files\n",
		res.Count(scan.Removed), res.Count(scan.Deprecated), res.Target, res.Documents, res.Files)
	_, err := io.WriteString(w, b.String())
	return err
}

func writeMarkdownTable(b *strings.Builder, header []string, rows [][]string) {
	cell := strings.NewReplacer("|", `\|`, "\n", " ", "\r", " ", "<", "&lt;", ">", "&gt;", "`", "\\`")
	line := func(cells []string) {
		for _, c := range cells {
			b.WriteString("| " + cell.Replace(c) + " ")
		}
		b.WriteString("|\n")
	}
	line(header)
	sep := make([]string, len(header))
	for i := range sep {
		sep[i] = "---"
	}
	line(sep)
	for _, r := range rows {
		line(r)
	}
}

// writeScanDecisions prints, one line each, the fields that converting an
// object needs the user to decide (a webhook's sideEffects).
func writeScanDecisions(b *strings.Builder, res *scan.Result) {
	for _, f := range res.Findings {
		for _, u := range f.NeedsDecision {
			fmt.Fprintf(b, "%s: %s %s: %s\n", f.Location, f.Kind, f.Object(), u)
		}
	}
}
