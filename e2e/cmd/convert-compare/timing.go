package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/mvpctl/mvpctl/e2e/convertcmp"
	"github.com/mvpctl/mvpctl/e2e/corpus"
	"github.com/mvpctl/mvpctl/e2e/measure"
)

// job is one conversion process of a workload.
type job struct {
	file    string
	target  schema.GroupVersion
	objects int
}

// workload is what each tool converts in one round, and what it cost them:
// seconds per round, indexed by tool.
type workload struct {
	name      string
	jobs      []job
	cpu, wall [2][]float64
	maxRSS    [2]int64
	dropped   []string
}

func (w *workload) objects() int {
	n := 0
	for _, j := range w.jobs {
		n += j.objects
	}
	return n
}

// time measures both tools on two workloads, in interleaved rounds: one
// process per manifest (start-up dominates, as when converting a few
// files), and one process per target version converting a bundle of the
// corpus several times over (the conversion itself dominates). Only
// manifests that both tools converted take part.
func (t *tools) time(ctx context.Context, c *corpus.Corpus, files []string, results []convertcmp.Result) ([]*workload, error) {
	perFile := &workload{name: "one process per manifest"}
	byTarget := map[schema.GroupVersion][]string{}
	var targets []schema.GroupVersion
	i := 0
	for _, v := range c.Versions {
		for range v.Manifests {
			if o := results[i].Outcome; o != convertcmp.Failed && o != convertcmp.NotConverted {
				perFile.jobs = append(perFile.jobs, job{file: files[i], target: v.Target, objects: 1})
				if byTarget[v.Target] == nil {
					targets = append(targets, v.Target)
				}
				byTarget[v.Target] = append(byTarget[v.Target], files[i])
			}
			i++
		}
	}
	bundles := &workload{name: fmt.Sprintf("one process per target version, the corpus %d times over", t.opts.copies)}
	for _, gv := range targets {
		j, err := t.bundle(gv, byTarget[gv])
		if err != nil {
			return nil, err
		}
		// A bundle either tool cannot convert as a whole is left out of
		// both tools' rounds.
		if err := t.warm(ctx, j); err != nil {
			bundles.dropped = append(bundles.dropped, fmt.Sprintf("%s: %v", gv, err))
			continue
		}
		bundles.jobs = append(bundles.jobs, j)
	}
	for _, w := range []*workload{perFile, bundles} {
		if err := t.rounds(ctx, w); err != nil {
			return nil, err
		}
	}
	return []*workload{perFile, bundles}, nil
}

// bundle writes the files of one target version, copies times over, as one
// multi-document YAML file.
func (t *tools) bundle(gv schema.GroupVersion, files []string) (job, error) {
	var b bytes.Buffer
	for range t.opts.copies {
		for _, f := range files {
			data, err := os.ReadFile(f)
			if err != nil {
				return job{}, err
			}
			b.WriteString("---\n")
			b.Write(data)
		}
	}
	name := strings.NewReplacer("/", "_", ".", "_").Replace(gv.String())
	p := filepath.Join(t.work, "bundles", name+".yaml")
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return job{}, err
	}
	return job{file: p, target: gv, objects: len(files) * t.opts.copies}, os.WriteFile(p, b.Bytes(), 0o644)
}

// warm runs j once with each tool, unmeasured.
func (t *tools) warm(ctx context.Context, j job) error {
	for _, which := range []tool{mvpctl, kubectlConvert} {
		res, err := measure.Run(ctx, t.cmd(which, j.file, j.target, "yaml"))
		if err != nil {
			return err
		}
		if res.ExitCode != 0 {
			return fmt.Errorf("%s exit %d: %s", which, res.ExitCode, firstLine(res.Stderr))
		}
	}
	return nil
}

// rounds runs w's jobs with each tool in turn, opts.rounds times.
func (t *tools) rounds(ctx context.Context, w *workload) error {
	return measure.Interleave(ctx, t.opts.rounds, 2, func(round, variant int) error {
		var cpu, wall float64
		for _, j := range w.jobs {
			res, err := measure.Run(ctx, t.cmd(tool(variant), j.file, j.target, "yaml"))
			if err != nil {
				return err
			}
			if res.ExitCode != 0 {
				return fmt.Errorf("%s on %s: exit %d: %s", tool(variant), j.file, res.ExitCode, firstLine(res.Stderr))
			}
			cpu += res.CPU.Seconds()
			wall += res.Wall.Seconds()
			w.maxRSS[variant] = max(w.maxRSS[variant], res.MaxRSS)
		}
		w.cpu[variant] = append(w.cpu[variant], cpu)
		w.wall[variant] = append(w.wall[variant], wall)
		return nil
	})
}

func firstLine(b []byte) string {
	s, _, _ := strings.Cut(strings.TrimSpace(string(b)), "\n")
	return s
}
