package cli

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/mvpctl/mvpctl/engine"
)

type convertOptions struct {
	Files           []string // manifests: files, directories or - for stdin
	Rules           []string // rules files or directories
	OutputVersion   string   // group/version to convert to
	Output          string   // yaml or json
	ContinueOnError bool     // write what converted even if some documents failed
	Engine          string   // native or jq
	ProgramTimeout  time.Duration
}

func newConvertCmd() *cobra.Command {
	var opts convertOptions
	cmd := &cobra.Command{
		Use:   "convert -f FILE --rules RULES --output-version GROUP/VERSION",
		Short: "Convert manifests between API versions with TransformationRules",
		Long: `Convert manifests between API versions with TransformationRules, like
kubectl convert, for built-in kinds and custom resources alike.

Input is YAML (several documents separated by ---) or JSON, including List
kinds. Objects that no rule converts are written unchanged with a warning.
Output is written only when every document converted, unless
--continue-on-error is set.`,
		Example: `  mvpctl convert -f ingress.yaml --rules rules/ --output-version networking.k8s.io/v1
  kubectl get ingress -o yaml | mvpctl convert -f - --rules rules.yaml --output-version networking.k8s.io/v1beta1`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runConvert(cmd.Context(), cmd.InOrStdin(), cmd.OutOrStdout(), cmd.ErrOrStderr(), opts)
		},
	}
	cmd.Flags().StringSliceVarP(&opts.Files, "filename", "f", nil, "manifest file, directory or - for standard input (repeatable)")
	cmd.Flags().StringSliceVar(&opts.Rules, "rules", nil, "TransformationRules file or directory (repeatable)")
	cmd.Flags().StringVar(&opts.OutputVersion, "output-version", "", "group/version to convert to, e.g. networking.k8s.io/v1 or v1")
	cmd.Flags().StringVarP(&opts.Output, "output", "o", "yaml", "output format: yaml or json")
	cmd.Flags().BoolVar(&opts.ContinueOnError, "continue-on-error", false, "write the documents that converted even when others failed (exit code stays 1)")
	cmd.Flags().StringVar(&opts.Engine, "engine", "native", "executor: native (fast) or jq (the generated jq programs)")
	cmd.Flags().DurationVar(&opts.ProgramTimeout, "program-timeout", engine.DefaultProgramTimeout, "longest run of one rule's program on one object (a rule that loops fails)")
	return cmd
}

func runConvert(ctx context.Context, stdin io.Reader, stdout, stderr io.Writer, opts convertOptions) error {
	if len(opts.Files) == 0 {
		return usageErrorf("no input: give -f FILE, a directory or - for standard input")
	}
	if len(opts.Rules) == 0 {
		return usageErrorf("no rules: give --rules FILE or a directory")
	}
	if opts.OutputVersion == "" {
		return usageErrorf("--output-version is required, e.g. --output-version networking.k8s.io/v1")
	}
	to, err := schema.ParseGroupVersion(opts.OutputVersion)
	if err != nil || to.Version == "" {
		return usageErrorf("--output-version %q: want GROUP/VERSION or VERSION for the core group", opts.OutputVersion)
	}
	if opts.Output != "yaml" && opts.Output != "json" {
		return usageErrorf("--output %q: want yaml or json", opts.Output)
	}
	exec, err := parseEngine(opts.Engine)
	if err != nil {
		return err
	}
	if opts.ProgramTimeout <= 0 {
		return usageErrorf("--program-timeout %s: want a positive duration", opts.ProgramTimeout)
	}
	conv, err := engine.Load(engine.Options{Executor: exec, ProgramTimeout: opts.ProgramTimeout,
		Warn: func(msg string) { fmt.Fprintf(stderr, "warning: %s\n", msg) }}, opts.Rules...)
	if err != nil {
		return rulesError(stderr, err)
	}
	docs, err := readManifests(stdin, opts.Files)
	if err != nil {
		return inputError(err)
	}
	if ctx == nil {
		ctx = context.Background()
	}
	var out []map[string]any
	failed := 0
	for _, d := range docs {
		obj, err := conv.Convert(ctx, d.Object, to)
		if err != nil {
			fmt.Fprintf(stderr, "error: %s: %v\n", d.Source, err)
			failed++
			continue
		}
		out = append(out, obj)
	}
	if failed > 0 && !opts.ContinueOnError {
		fmt.Fprintf(stderr, "error: %d of %d documents failed to convert; nothing written\n", failed, len(docs))
		return &silentError{code: exitFailure}
	}
	var buf bytes.Buffer
	if opts.Output == "json" {
		err = writeJSON(&buf, out)
	} else {
		err = writeYAML(&buf, out)
	}
	if err != nil {
		return failure(err)
	}
	if _, err := stdout.Write(buf.Bytes()); err != nil {
		return failure(err)
	}
	if failed > 0 {
		fmt.Fprintf(stderr, "error: %d of %d documents failed to convert\n", failed, len(docs))
		return &silentError{code: exitFailure}
	}
	return nil
}

func parseEngine(s string) (engine.Executor, error) {
	switch s {
	case "native", "":
		return engine.Native, nil
	case "jq":
		return engine.JQ, nil
	}
	return 0, usageErrorf("--engine %q: want native or jq", s)
}

// readManifests reads every document of the given files, directories (their
// *.yaml, *.yml and *.json files, sorted) and standard input.
func readManifests(stdin io.Reader, inputs []string) ([]engine.Document, error) {
	var docs []engine.Document
	read := func(name string, r io.Reader) error {
		d, err := engine.ReadDocuments(name, r)
		docs = append(docs, d...)
		return err
	}
	for _, in := range inputs {
		if in == "-" {
			if err := read("<stdin>", stdin); err != nil {
				return nil, err
			}
			continue
		}
		info, err := os.Stat(in)
		if err != nil {
			return nil, err
		}
		files := []string{in}
		if info.IsDir() {
			files = nil
			for _, pat := range []string{"*.yaml", "*.yml", "*.json"} {
				m, _ := filepath.Glob(filepath.Join(in, pat))
				files = append(files, m...)
			}
			sort.Strings(files)
		}
		for _, f := range files {
			fh, err := os.Open(f)
			if err != nil {
				return nil, err
			}
			err = read(f, fh)
			fh.Close()
			if err != nil {
				return nil, err
			}
		}
	}
	return docs, nil
}
