package cli

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"sort"
	"sync"
	"unicode/utf8"

	"github.com/spf13/cobra"

	"github.com/mvpctl/mvpctl/engine"
	"github.com/mvpctl/mvpctl/lint"
	"github.com/mvpctl/mvpctl/manifest"
	"github.com/mvpctl/mvpctl/rules"
	"github.com/mvpctl/mvpctl/schemadiff"
)

// lintOptions are the flags of mvpctl lint.
type lintOptions struct {
	// Output is text, json, github or sarif.
	Output string
	// FailOn is the lowest severity that fails the run: error or warning.
	FailOn string
	// FromSchema and ToSchema are dumps as for generate-rules; empty skips
	// the schema checks.
	FromSchema, ToSchema string
	// Samples is the number of generated objects per rule and direction;
	// zero generates none.
	Samples int
	// Seed seeds the sample generator.
	Seed uint64
	// Examples is a directory of example objects; empty means none.
	Examples string
	// Disable lists check IDs to leave out.
	Disable []string
	// Rules are rules files or directories besides the arguments.
	Rules []string
}

// lintDocsURI is where each check is documented, per ID anchor.
const lintDocsURI = "https://github.com/mvpctl/mvpctl/blob/main/docs/lint.md"

func newLintCmd() *cobra.Command {
	var opts lintOptions
	cmd := &cobra.Command{
		Use:   "lint RULES...",
		Short: "Report problems in TransformationRules files",
		Long: `Check TransformationRules files (and directories of them, linted as one
set): structure, consistency, that every generated jq program compiles,
information loss, and TODOs. With --from-schema and --to-schema (the inputs
of generate-rules) paths, types and values are checked against the schemas;
with --samples or --examples every rule is run forward and back on objects,
with both executors.

Exit status: 0 when no finding is at or above --fail-on, 1 when some are,
2 on bad usage or unreadable input. Every check is listed in docs/lint.md.

Rules files and directories are the arguments (- for standard input), or
--rules.`,
		Example: `  mvpctl lint rules/
  mvpctl lint rules.yaml --from-schema v1.21/swagger.json --to-schema v1.22/swagger.json --samples 100
  mvpctl lint -o github --fail-on warning rules/`,
		ValidArgsFunction: completeRulesFiles,
		RunE: func(cmd *cobra.Command, args []string) error {
			return runLint(cmd.Context(), cmd.InOrStdin(), cmd.OutOrStdout(), append(opts.Rules, args...), opts)
		},
	}
	f := cmd.Flags()
	f.StringVarP(&opts.Output, "output", "o", "text", "output format: text, json, github or sarif")
	f.StringVar(&opts.FailOn, "fail-on", "error", "exit 1 on findings of this severity or higher: error or warning")
	f.StringVar(&opts.FromSchema, "from-schema", "", "schema of the old versions: an OpenAPI v2/v3 dump, CRDs, a directory or cluster:CONTEXT")
	f.StringVar(&opts.ToSchema, "to-schema", "", "schema of the new versions, in the same forms as --from-schema")
	f.IntVar(&opts.Samples, "samples", 0, "generate this many objects per rule and direction from the schemas and check the round trips")
	f.Uint64Var(&opts.Seed, "seed", 1, "seed of the sample generator")
	f.StringVar(&opts.Examples, "examples", "", "directory of example objects (YAML or JSON) to check the round trips with")
	f.StringSliceVar(&opts.Disable, "disable", nil, "check IDs not to report (comma-separated)")
	f.StringSliceVar(&opts.Rules, "rules", nil, "TransformationRules file or directory (repeatable), as well as the arguments")
	markFilenameFlags(cmd, "rules", "from-schema", "to-schema")
	registerCompletion(cmd, "output", completeWords(lintFormats()...))
	registerCompletion(cmd, "fail-on", completeWords("error", "warning"))
	registerCompletion(cmd, "disable", func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
		return lintCheckIDs(), cobra.ShellCompDirectiveNoFileComp
	})
	return cmd
}

func lintFormats() []string {
	out := make([]string, len(lint.Formats))
	for i, f := range lint.Formats {
		out[i] = string(f)
	}
	return out
}

func lintCheckIDs() []string {
	ids := make([]string, 0, len(lint.Checks))
	for id := range lint.Checks {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	return ids
}

func runLint(ctx context.Context, stdin io.Reader, stdout io.Writer, args []string, opts lintOptions) error {
	if ctx == nil {
		ctx = context.Background()
	}
	format := lint.Format(opts.Output)
	known := false
	for _, f := range lint.Formats {
		known = known || f == format
	}
	if !known {
		return usageErrorf("unknown output format %q: use text, json, github or sarif", opts.Output)
	}
	var failOn lint.Severity
	switch opts.FailOn {
	case "error":
		failOn = lint.Error
	case "warning":
		failOn = lint.Warning
	default:
		return usageErrorf("--fail-on %q: use error or warning", opts.FailOn)
	}
	if opts.Samples < 0 {
		return usageErrorf("--samples must not be negative")
	}
	for _, id := range opts.Disable {
		if _, ok := lint.Checks[id]; !ok {
			return usageErrorf("--disable: unknown check %q (see docs/lint.md)", id)
		}
	}
	if len(args) == 0 {
		return usageErrorf("lint needs rules: give TransformationRules files or directories (- for standard input) as arguments or with --rules")
	}
	sources, err := rules.ReadSources(stdin, args...)
	if err != nil {
		return inputError(err)
	}
	for _, src := range sources {
		if err := checkText(src.Name, src.Data); err != nil {
			return inputError(err)
		}
	}
	lo := lint.Options{Samples: opts.Samples, Seed: opts.Seed, Disable: opts.Disable}
	if lo.From, lo.To, err = loadSchemas(ctx, opts.FromSchema, opts.ToSchema); err != nil {
		return err
	}
	if opts.Examples != "" {
		if lo.Examples, err = readExamples(opts.Examples); err != nil {
			return inputError(err)
		}
	}
	res, err := lint.Run(ctx, sources, lo)
	if err != nil {
		return inputError(err)
	}
	if err := lint.Write(stdout, res, format, lint.ToolInfo{Version: toolVersion(), InformationURI: "https://github.com/mvpctl/mvpctl", DocsURI: lintDocsURI}); err != nil {
		return failure(err)
	}
	if res.Count(failOn) > 0 {
		return &silentError{code: exitFailure}
	}
	return nil
}

// checkText rejects binary data where YAML or JSON text is expected: it is
// not a file with problems to report, but the wrong file.
func checkText(name string, data []byte) error {
	if bytes.IndexByte(data, 0) >= 0 || !utf8.Valid(data) {
		return fmt.Errorf("%s: binary data, not a YAML or JSON rules file", name)
	}
	return nil
}

// loadSchemas loads the two dumps in parallel; either may be empty.
func loadSchemas(ctx context.Context, from, to string) (*schemadiff.Spec, *schemadiff.Spec, error) {
	var fromSpec, toSpec *schemadiff.Spec
	var fromErr, toErr error
	var wg sync.WaitGroup
	if from != "" {
		wg.Go(func() { fromSpec, fromErr = schemadiff.Load(ctx, from) })
	}
	if to != "" {
		toSpec, toErr = schemadiff.Load(ctx, to)
	}
	wg.Wait()
	if fromErr != nil {
		return nil, nil, inputError(fromErr)
	}
	if toErr != nil {
		return nil, nil, inputError(toErr)
	}
	return fromSpec, toSpec, nil
}

// readExamples reads every object of a file, or of the YAML and JSON files
// below a directory.
func readExamples(dir string) ([]lint.Example, error) {
	var out []lint.Example
	_, err := manifest.Walk(dir, manifest.WalkOptions{Recursive: true}, func(f string, err error) error {
		if err != nil {
			return err
		}
		fh, err := os.Open(f)
		if err != nil {
			return err
		}
		docs, err := engine.ReadDocuments(f, fh)
		fh.Close()
		for _, d := range docs {
			out = append(out, lint.Example{Name: d.Source, Object: d.Object})
		}
		return err
	})
	if err != nil && !errors.As(err, new(*manifest.NoFilesError)) {
		return nil, err
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%s: no example objects", dir)
	}
	return out, nil
}

// toolVersion is the version SARIF output names.
func toolVersion() string {
	if version != "" {
		return version
	}
	return "dev"
}
