package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/mvpctl/mvpctl/e2e/convertcmp"
	"github.com/mvpctl/mvpctl/e2e/corpus"
	"github.com/mvpctl/mvpctl/e2e/measure"
)

// tools runs the two converters.
type tools struct {
	opts options
	work string
}

// tool is one of the two converters.
type tool int

const (
	mvpctl tool = iota
	kubectlConvert
)

func (t tool) String() string { return [...]string{"mvpctl convert", "kubectl-convert"}[t] }

// cmd is the command line that converts file to gv with tool, writing
// format (yaml or json).
func (t *tools) cmd(which tool, file string, gv schema.GroupVersion, format string) measure.Cmd {
	if which == mvpctl {
		args := []string{"convert", "--output-version", gv.String(), "-f", file, "-o", format}
		if t.opts.rules != "" {
			// --builtin=false: the rules are read once, from -rules, not
			// also from the copy embedded in the binary.
			args = append(args, "--builtin=false", "--rules", t.opts.rules)
		}
		return measure.Cmd{Path: t.opts.mvpctl, Timeout: t.opts.processTimeout, Args: args}
	}
	// No kubeconfig: kubectl-convert converts locally and must not read the
	// user's.
	return measure.Cmd{Path: t.opts.kubectlConvert, Timeout: t.opts.processTimeout,
		Env:  []string{"KUBECONFIG=" + filepath.Join(t.work, "no-kubeconfig")},
		Args: []string{"-f", file, "--output-version", gv.String(), "-o", format}}
}

// convert runs which on file and writes its output to out, as YAML or, when
// out ends in .json, JSON.
func (t *tools) convert(ctx context.Context, which tool, file string, gv schema.GroupVersion, out string) ([]byte, error) {
	format := "yaml"
	if filepath.Ext(out) == ".json" {
		format = "json"
	}
	res, err := measure.Run(ctx, t.cmd(which, file, gv, format))
	if err != nil {
		return nil, err
	}
	if res.ExitCode != 0 || res.Truncated {
		return nil, fmt.Errorf("%s exit %d: %s", which, res.ExitCode, strings.TrimSpace(string(res.Stderr)))
	}
	if err := os.WriteFile(out, res.Stdout, 0o644); err != nil {
		return nil, err
	}
	return res.Stdout, nil
}

// compareAll compares every manifest, opts.workers at a time, in corpus
// order.
func (t *tools) compareAll(ctx context.Context, c *corpus.Corpus, files []string) ([]convertcmp.Result, error) {
	type job struct {
		v    *corpus.OldVersion
		m    corpus.Manifest
		file string
		i    int
	}
	results := make([]convertcmp.Result, len(files))
	jobs := make(chan job)
	var wg sync.WaitGroup
	for range t.opts.workers {
		wg.Go(func() {
			for j := range jobs {
				results[j.i] = t.compare(ctx, j.v, j.m, j.file)
			}
		})
	}
	i := 0
	for _, v := range c.Versions {
		for _, m := range v.Manifests {
			jobs <- job{v, m, files[i], i}
			i++
		}
	}
	close(jobs)
	wg.Wait()
	return results, ctx.Err()
}

// compare converts one manifest with both tools and explains the
// differences, running the later stages of the comparison only when the
// outputs differ. Every output is kept next to the others under
// work/out/<old version>/<manifest>/.
func (t *tools) compare(ctx context.Context, v *corpus.OldVersion, m corpus.Manifest, file string) convertcmp.Result {
	res := convertcmp.Result{APIVersion: v.GroupVersion().String(), Kind: v.Kind, Target: v.Target.String(),
		RemovedIn: v.RemovedIn, Source: m.Source}
	dir := filepath.Join(t.work, "out", v.Dir(), strings.TrimSuffix(m.Name, ".yaml"))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		res.Outcome, res.Detail = convertcmp.Failed, err.Error()
		return res
	}
	out := func(name string) string { return filepath.Join(dir, name) }
	kText, err := t.convert(ctx, kubectlConvert, file, v.Target, out("kubectl-convert.yaml"))
	if err != nil {
		res.Outcome, res.Detail = convertcmp.Failed, err.Error()
		if convertcmp.NotInScheme(res.Detail) {
			res.Outcome = convertcmp.NotConverted
		}
		return res
	}
	mText, err := t.convert(ctx, mvpctl, file, v.Target, out("mvpctl.yaml"))
	if err != nil {
		res.Outcome, res.Detail = convertcmp.Failed, err.Error()
		return res
	}
	o := convertcmp.Outputs{}
	if o.Kubectl, err = convertcmp.Decode(kText); err == nil {
		o.Mvpctl, err = convertcmp.Decode(mText)
	}
	if err != nil {
		res.Outcome, res.Detail = convertcmp.Failed, err.Error()
		return res
	}
	if got := o.Kubectl["apiVersion"]; got != v.Target.String() {
		res.Outcome = convertcmp.NotConverted
		res.Detail = fmt.Sprintf("kubectl-convert wrote apiVersion %v", got)
		return res
	}
	if onlyAnnotation(convertcmp.Classify(o)) {
		res.Findings = convertcmp.Classify(o)
	} else {
		res.Detail = t.normalise(ctx, &o, v, file, out)
		res.Findings = convertcmp.Classify(o)
	}
	if res.Order, err = t.keyOrder(ctx, file, v.Target, out); err != nil {
		res.Outcome, res.Detail = convertcmp.Failed, err.Error()
		return res
	}
	res.Outcome = convertcmp.Verdict(kText, mText, res.Findings)
	return res
}

// keyOrder converts file with both tools to JSON, where each keeps an
// order of its own (YAML output sorts keys), and lists the mappings whose
// keys come in another order.
func (t *tools) keyOrder(ctx context.Context, file string, gv schema.GroupVersion, out func(string) string) ([]string, error) {
	var orders [2]map[string][]string
	for i, which := range []tool{kubectlConvert, mvpctl} {
		b, err := t.convert(ctx, which, file, gv, out(strings.ReplaceAll(which.String(), " ", "-")+".json"))
		if err != nil {
			return nil, err
		}
		if orders[i], err = convertcmp.KeyOrder(b); err != nil {
			return nil, err
		}
	}
	return convertcmp.OrderDiffers(orders[0], orders[1]), nil
}

func onlyAnnotation(fs []convertcmp.Finding) bool {
	for _, f := range fs {
		if f.Class != convertcmp.Annotation {
			return false
		}
	}
	return true
}

// normalise runs stages 4 and 5 of the comparison (package convertcmp)
// into o, and says which could not run and why.
func (t *tools) normalise(ctx context.Context, o *convertcmp.Outputs, v *corpus.OldVersion, file string, out func(string) string) string {
	var notes []string
	for _, side := range []struct {
		name string
		into *map[string]any
	}{{"kubectl-convert", &o.KubectlTyped}, {"mvpctl", &o.Typed}} {
		typed, err := t.convert(ctx, kubectlConvert, out(side.name+".yaml"), v.Target, out(side.name+".typed.yaml"))
		if err == nil {
			*side.into, err = convertcmp.Decode(typed)
		}
		if err != nil {
			notes = append(notes, "stage 4 ("+side.name+"'s output through kubectl-convert): "+err.Error())
		}
	}
	err := func() error {
		if _, err := t.convert(ctx, kubectlConvert, file, v.GroupVersion(), out("source-defaulted.yaml")); err != nil {
			return err
		}
		if _, err := t.convert(ctx, mvpctl, out("source-defaulted.yaml"), v.Target, out("source-defaulted.mvpctl.yaml")); err != nil {
			return err
		}
		b, err := t.convert(ctx, kubectlConvert, out("source-defaulted.mvpctl.yaml"), v.Target, out("source-defaulted.mvpctl.typed.yaml"))
		if err != nil {
			return err
		}
		o.SourceDefaulted, err = convertcmp.Decode(b)
		return err
	}()
	if err != nil {
		notes = append(notes, "stage 5 (the source-defaulted input): "+err.Error())
	}
	return strings.Join(notes, "; ")
}
