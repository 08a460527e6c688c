package main

import (
	"bytes"
	"context"
	"debug/buildinfo"
	"fmt"
	"io"
	"os"
	"runtime"
	"runtime/debug"
	"strings"
	"time"

	"github.com/mvpctl/mvpctl/e2e/convertcmp"
	"github.com/mvpctl/mvpctl/e2e/corpus"
	"github.com/mvpctl/mvpctl/e2e/measure"
)

// report is everything a run found.
type report struct {
	started               time.Time
	loadBefore, loadAfter string
	versions              string
	corpus                *corpus.Corpus
	results               []convertcmp.Result
	timings               []*workload
}

func loadAverage() string { return measure.LoadAverage() }

// versions says which builds ran.
func (t *tools) versions(ctx context.Context) (string, error) {
	res, err := measure.Run(ctx, measure.Cmd{Path: t.opts.mvpctl, Args: []string{"version"}})
	if err != nil {
		return "", err
	}
	kube := "unknown"
	if info, err := buildinfo.ReadFile(t.opts.kubectlConvert); err == nil {
		for _, d := range append([]*debug.Module{&info.Main}, info.Deps...) {
			if d.Path == "k8s.io/kubernetes" {
				kube = d.Version
			}
		}
	}
	return fmt.Sprintf("%s; kubectl-convert built from k8s.io/kubernetes %s; %s",
		firstLine(res.Stdout), kube, runtime.Version()), nil
}

// write prints the report to standard output and to opts.report.
func (r *report) write(o options) error {
	var b bytes.Buffer
	r.markdown(&b)
	os.Stdout.Write(b.Bytes())
	if o.report != "" {
		return os.WriteFile(o.report, b.Bytes(), 0o644)
	}
	return nil
}

func (r *report) markdown(w io.Writer) {
	fmt.Fprintf(w, "Run of %s on %d CPUs, load average %s at the start and %s at the end.\n%s.\n\n",
		r.started.UTC().Format("2006-01-02 15:04 MST"), runtime.NumCPU(), r.loadBefore, r.loadAfter, r.versions)
	var empty []string
	for _, v := range r.corpus.Versions {
		if len(v.Manifests) == 0 {
			empty = append(empty, v.GroupVersion().String()+" "+v.Kind)
		}
	}
	fmt.Fprintf(w, "Corpus: %d manifests of %d old versions that the built-in rules convert.", r.corpus.Count(), len(r.corpus.Versions))
	if len(empty) > 0 {
		fmt.Fprintf(w, " No manifest in testdata/oracle for: %s.", strings.Join(empty, ", "))
	}
	fmt.Fprint(w, "\n\n")
	convertcmp.WriteSummary(w, r.results)
	fmt.Fprintln(w)
	fmt.Fprintln(w, "Differences (field: manifests, example values):")
	convertcmp.WriteDifferences(w, r.results)
	fmt.Fprintln(w)
	r.timingTable(w)
}

func (r *report) timingTable(w io.Writer) {
	fmt.Fprintln(w, "| workload | processes | objects | mvpctl CPU | kubectl-convert CPU | **CPU mvpctl / kubectl-convert** | mvpctl wall | kubectl-convert wall | wall mvpctl / kubectl-convert | peak RSS mvpctl / kubectl-convert |")
	fmt.Fprintln(w, "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
	for _, wl := range r.timings {
		m, k := measure.Summarise(wl.cpu[mvpctl]), measure.Summarise(wl.cpu[kubectlConvert])
		mw, kw := measure.Summarise(wl.wall[mvpctl]), measure.Summarise(wl.wall[kubectlConvert])
		cpu := measure.Summarise(measure.Ratios(wl.cpu[mvpctl], wl.cpu[kubectlConvert]))
		wall := measure.Summarise(measure.Ratios(wl.wall[mvpctl], wl.wall[kubectlConvert]))
		fmt.Fprintf(w, "| %s | %d | %d | %s | %s | **%s** | %s | %s | %s | %.0f / %.0f MiB |\n",
			wl.name, len(wl.jobs), wl.objects(), seconds(m), seconds(k), ratio(cpu), seconds(mw), seconds(kw), ratio(wall),
			float64(wl.maxRSS[mvpctl])/(1<<20), float64(wl.maxRSS[kubectlConvert])/(1<<20))
	}
	fmt.Fprintf(w, "\nSeconds per round, summed over the workload's processes: median (range) of %d interleaved rounds; ratios are the median (range) of the per-round ratios.\n",
		len(r.timings[0].cpu[mvpctl]))
	if len(r.timings) == 2 {
		r.fit(w)
	}
	for _, wl := range r.timings {
		for _, d := range wl.dropped {
			fmt.Fprintf(w, "Left out of %q: %s\n", wl.name, d)
		}
	}
}

func seconds(s measure.Stats) string {
	return fmt.Sprintf("%.2f s (%.2f–%.2f)", s.Median, s.Min, s.Max)
}

func ratio(s measure.Stats) string {
	return fmt.Sprintf("×%.2f (%.2f–%.2f)", s.Median, s.Min, s.Max)
}

// fit splits each tool's median CPU into a cost per process (start-up) and
// a cost per object, solving cpu = a·processes + b·objects for the two
// workloads, which have different numbers of each.
func (r *report) fit(w io.Writer) {
	p1, o1 := float64(len(r.timings[0].jobs)), float64(r.timings[0].objects())
	p2, o2 := float64(len(r.timings[1].jobs)), float64(r.timings[1].objects())
	det := p1*o2 - p2*o1
	if det == 0 {
		return
	}
	var per [2]float64
	fmt.Fprint(w, "Fitted to the two workloads' median CPU (cpu = start-up × processes + cost × objects):")
	for _, which := range []tool{mvpctl, kubectlConvert} {
		c1 := measure.Summarise(r.timings[0].cpu[which]).Median
		c2 := measure.Summarise(r.timings[1].cpu[which]).Median
		a, b := (c1*o2-c2*o1)/det, (p1*c2-p2*c1)/det
		per[which] = b
		fmt.Fprintf(w, " %s %.0f ms per process and %.0f µs per object;", which, a*1e3, b*1e6)
	}
	if per[kubectlConvert] > 0 {
		fmt.Fprintf(w, " per object, mvpctl / kubectl-convert ×%.2f.", per[mvpctl]/per[kubectlConvert])
	}
	fmt.Fprintln(w)
}
