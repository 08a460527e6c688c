// Command convert-compare runs `mvpctl convert` and kubectl-convert side by
// side, in one run, on a corpus of realistic manifests of every old version
// mvpctl's built-in rules convert (package corpus): it compares their
// outputs manifest by manifest, explaining each difference (package
// convertcmp), then measures both tools' CPU and wall time in interleaved
// rounds and reports the ratios mvpctl/kubectl-convert.
//
//	make compare-convert
//	go run ./cmd/convert-compare [-mvpctl ../bin/mvpctl] [-rounds 3] [-copies 50] [-report FILE] [-keep DIR]
//
// It runs from the e2e directory. kubectl-convert comes from the e2e binary
// cache (`make e2e-bins-convert`).
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"github.com/mvpctl/mvpctl/e2e/bins"
	"github.com/mvpctl/mvpctl/e2e/corpus"
)

// options are the command's flags.
type options struct {
	mvpctl, kubectlConvert, kubeVersion string
	repo, rules                         string
	rounds, copies, workers             int
	maxManifests                        int
	timeout, processTimeout             time.Duration
	report, keep                        string
}

func main() {
	var o options
	flag.StringVar(&o.mvpctl, "mvpctl", "../bin/mvpctl", "mvpctl binary")
	flag.StringVar(&o.kubectlConvert, "kubectl-convert", "", "kubectl-convert binary (default: the e2e cache's, of -kubernetes-version)")
	flag.StringVar(&o.kubeVersion, "kubernetes-version", "v1.35.4", "release of kubectl-convert in the e2e cache")
	flag.StringVar(&o.repo, "repo", "..", "root of the mvpctl checkout (testdata/oracle, rules/builtin)")
	flag.StringVar(&o.rules, "rules", "", "rules passed to mvpctl convert --builtin=false --rules (default: the built-in rules embedded in the binary, as users run it)")
	flag.IntVar(&o.rounds, "rounds", 3, "interleaved timing rounds (at most 50)")
	flag.IntVar(&o.copies, "copies", 50, "copies of the corpus in each bundle of the bundle workload (at most 1000)")
	flag.IntVar(&o.workers, "j", 2, "processes at a time while comparing outputs (timing runs one at a time)")
	flag.IntVar(&o.maxManifests, "max-manifests", 5000, "bound on the corpus")
	flag.DurationVar(&o.timeout, "timeout", 30*time.Minute, "bound on the whole run")
	flag.DurationVar(&o.processTimeout, "process-timeout", 2*time.Minute, "bound on one process")
	flag.StringVar(&o.report, "report", "", "write the Markdown report here too")
	flag.StringVar(&o.keep, "keep", "", "write the corpus and every output under this directory and keep them")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, o); err != nil {
		fmt.Fprintln(os.Stderr, "convert-compare:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, o options) error {
	if o.rounds < 1 || o.rounds > 50 || o.copies < 1 || o.copies > 1000 || o.workers < 1 || o.workers > 16 {
		return errors.New("-rounds must be 1..50, -copies 1..1000, -j 1..16")
	}
	ctx, cancel := context.WithTimeout(ctx, o.timeout)
	defer cancel()
	if err := o.resolve(); err != nil {
		return err
	}
	work := o.keep
	if work == "" {
		dir, err := os.MkdirTemp("", "convert-compare-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(dir)
		work = dir
	}
	c, err := corpus.Load(ctx, corpus.Options{Mvpctl: o.mvpctl, Repo: o.repo, MaxManifests: o.maxManifests})
	if err != nil {
		return err
	}
	files, err := c.Write(filepath.Join(work, "corpus"))
	if err != nil {
		return err
	}
	r := &report{started: time.Now(), loadBefore: loadAverage(), corpus: c}
	t := &tools{opts: o, work: work}
	fmt.Fprintf(os.Stderr, "convert-compare: %d manifests of %d old versions; comparing outputs\n", len(files), len(c.Versions))
	if r.results, err = t.compareAll(ctx, c, files); err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "convert-compare: timing %d rounds\n", o.rounds)
	if r.timings, err = t.time(ctx, c, files, r.results); err != nil {
		return err
	}
	r.loadAfter = loadAverage()
	if r.versions, err = t.versions(ctx); err != nil {
		return err
	}
	return r.write(o)
}

// resolve fills the defaults that depend on other flags and checks the
// binaries exist.
func (o *options) resolve() error {
	if o.kubectlConvert == "" {
		p, err := bins.Find(bins.KubectlConvert, o.kubeVersion)
		if err != nil {
			return err
		}
		o.kubectlConvert = p
	}
	for _, p := range []*string{&o.mvpctl, &o.kubectlConvert, &o.repo, &o.rules} {
		if *p == "" {
			continue // no -rules
		}
		abs, err := filepath.Abs(*p)
		if err != nil {
			return err
		}
		if _, err := os.Stat(abs); err != nil {
			return err
		}
		*p = abs
	}
	return nil
}
