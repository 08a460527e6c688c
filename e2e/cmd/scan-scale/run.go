package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/mvpctl/mvpctl/e2e/corpus"
	"github.com/mvpctl/mvpctl/e2e/measure"
)

// variant is one process measured in every round.
type variant struct {
	name string
	cmd  measure.Cmd
	// exits are the exit codes that mean success.
	exits          []int
	cpu, wall, rss []float64
}

func run(ctx context.Context, o options) error {
	if o.n < 1 || o.n > 200000 || o.rounds < 1 || o.rounds > 20 {
		return errors.New("-n must be 1..200000 and -rounds 1..20")
	}
	ctx, cancel := context.WithTimeout(ctx, o.timeout)
	defer cancel()
	for _, p := range []*string{&o.mvpctl, &o.repo} {
		abs, err := filepath.Abs(*p)
		if err != nil {
			return err
		}
		*p = abs
	}
	self, err := os.Executable()
	if err != nil {
		return err
	}
	work := o.keep
	if work == "" {
		if work, err = os.MkdirTemp("", "scan-scale-"); err != nil {
			return err
		}
		defer os.RemoveAll(work)
	}
	c, err := corpus.Load(ctx, corpus.Options{Mvpctl: o.mvpctl, Repo: o.repo})
	if err != nil {
		return err
	}
	root := filepath.Join(work, "tree")
	if err := os.RemoveAll(root); err != nil {
		return err
	}
	t, err := writeTree(root, o.n, c)
	if err != nil {
		return err
	}
	size, err := treeSize(root)
	if err != nil {
		return err
	}
	scan := []string{"scan", "-R", "-f", root}
	if o.kubernetesVersion != "" {
		scan = append(scan, "--kubernetes-version", o.kubernetesVersion)
	}
	findings, err := check(ctx, o, scan, t, c)
	if err != nil {
		return err
	}
	variants := []*variant{
		{name: "read every file (a Go walker, 1 worker per CPU)", exits: []int{0},
			cmd: measure.Cmd{Path: self, Env: []string{walkEnv + "=" + root}}},
		{name: "`mvpctl version` (the process alone)", exits: []int{0},
			cmd: measure.Cmd{Path: o.mvpctl, Args: []string{"version"}}},
		{name: "`mvpctl scan -R` (text)", exits: []int{0, 1},
			cmd: measure.Cmd{Path: o.mvpctl, Args: scan}},
		{name: "`mvpctl scan -R -o json`", exits: []int{0, 1},
			cmd: measure.Cmd{Path: o.mvpctl, Args: append(append([]string{}, scan...), "-o", "json")}},
	}
	loadBefore := measure.LoadAverage()
	started := time.Now()
	err = measure.Interleave(ctx, o.rounds, len(variants), func(_, i int) error {
		v := variants[i]
		v.cmd.Timeout = o.processTimeout
		res, err := measure.Run(ctx, v.cmd)
		if err != nil {
			return err
		}
		if !slices.Contains(v.exits, res.ExitCode) || res.Truncated {
			return fmt.Errorf("%s: exit %d: %s", v.cmd, res.ExitCode, strings.TrimSpace(string(res.Stderr)))
		}
		v.cpu = append(v.cpu, res.CPU.Seconds())
		v.wall = append(v.wall, res.Wall.Seconds())
		v.rss = append(v.rss, float64(res.MaxRSS)/(1<<20))
		return nil
	})
	if err != nil {
		return err
	}
	var b bytes.Buffer
	fmt.Fprintf(&b, "Run of %s on %d CPUs, load average %s at the start and %s at the end; %s.\n\n",
		started.UTC().Format("2006-01-02 15:04 MST"), runtime.NumCPU(), loadBefore, measure.LoadAverage(), runtime.Version())
	fmt.Fprintf(&b, "Tree: %d files (%.1f MB) in %d charts; %d of them on %d old versions of the corpus; the scan reported %d findings (%s).\n\n",
		t.files, float64(size)/1e6, (o.n+99)/100, sum(t.old), len(t.old), findings.total, findings.summary)
	table(&b, variants)
	os.Stdout.Write(b.Bytes())
	if o.report != "" {
		return os.WriteFile(o.report, b.Bytes(), 0o644)
	}
	return nil
}

// scanResult is what check read from the scan's JSON.
type scanResult struct {
	total   int
	summary string
}

// check runs the scan once, unmeasured, with -o json: it must have read
// every file and found every old-version file of the tree with the status
// its version has in the scanned release, and nothing else.
func check(ctx context.Context, o options, scan []string, t tree, c *corpus.Corpus) (scanResult, error) {
	res, err := measure.Run(ctx, measure.Cmd{Path: o.mvpctl, Args: append(append([]string{}, scan...), "-o", "json"), Timeout: o.processTimeout})
	if err != nil {
		return scanResult{}, err
	}
	if res.ExitCode > 1 || res.Truncated {
		return scanResult{}, fmt.Errorf("mvpctl scan: exit %d: %s", res.ExitCode, strings.TrimSpace(string(res.Stderr)))
	}
	var out struct {
		KubernetesVersion string
		Documents, Files  int
		Findings          []struct{ APIVersion, Kind, Status string }
	}
	if err := json.Unmarshal(res.Stdout, &out); err != nil {
		return scanResult{}, fmt.Errorf("mvpctl scan -o json: %w", err)
	}
	if out.Files != t.files || out.Documents != t.files {
		return scanResult{}, fmt.Errorf("mvpctl scan read %d documents of %d files, want %d", out.Documents, out.Files, t.files)
	}
	got := map[string]int{}
	for _, f := range out.Findings {
		got[f.APIVersion+" "+f.Kind+" "+f.Status]++
	}
	want := map[string]int{}
	for gvk, n := range t.old {
		v := c.Version(gvk)
		if s := status(v, out.KubernetesVersion); s != "" {
			want[gvk.GroupVersion().String()+" "+gvk.Kind+" "+s] += n
		}
	}
	var bad []string
	for k := range mergeKeys(got, want) {
		if got[k] != want[k] {
			bad = append(bad, fmt.Sprintf("%s: %d findings, want %d", k, got[k], want[k]))
		}
	}
	if len(bad) > 0 {
		return scanResult{}, fmt.Errorf("mvpctl scan found other than the tree holds: %s", strings.Join(bad, "; "))
	}
	removed, deprecated := 0, 0
	for _, f := range out.Findings {
		switch f.Status {
		case "removed":
			removed++
		case "deprecated":
			deprecated++
		}
	}
	return scanResult{total: len(out.Findings),
		summary: fmt.Sprintf("%d removed and %d deprecated in %s; exit %d", removed, deprecated, out.KubernetesVersion, res.ExitCode)}, nil
}

// status is what a scan of release should say about v: removed,
// deprecated or nothing.
func status(v *corpus.OldVersion, release string) string {
	r := minor(release)
	switch {
	case v.RemovedIn != "" && minor(v.RemovedIn) <= r:
		return "removed"
	case v.DeprecatedIn != "" && minor(v.DeprecatedIn) <= r:
		return "deprecated"
	}
	return ""
}

// minor reads v1.NN as NN (-1 when it is not of that form).
func minor(release string) int {
	rest, ok := strings.CutPrefix(release, "v1.")
	if !ok {
		return -1
	}
	n, err := strconv.Atoi(rest)
	if err != nil {
		return -1
	}
	return n
}

func mergeKeys(a, b map[string]int) map[string]bool {
	out := map[string]bool{}
	for k := range a {
		out[k] = true
	}
	for k := range b {
		out[k] = true
	}
	return out
}

func sum(m map[schema.GroupVersionKind]int) int {
	n := 0
	for _, v := range m {
		n += v
	}
	return n
}

func treeSize(root string) (int64, error) {
	var size int64
	err := filepath.Walk(root, func(_ string, info os.FileInfo, err error) error {
		if err == nil && info.Mode().IsRegular() {
			size += info.Size()
		}
		return err
	})
	return size, err
}

// table writes each variant's medians and ranges, and its ratios to the
// walker's CPU and wall time of the same round.
func table(w io.Writer, variants []*variant) {
	base := variants[0]
	fmt.Fprintln(w, "| process | wall | CPU (user + system) | peak RSS | **CPU / read** | wall / read |")
	fmt.Fprintln(w, "|---|---:|---:|---:|---:|---:|")
	for _, v := range variants {
		cpu, wall, rss := measure.Summarise(v.cpu), measure.Summarise(v.wall), measure.Summarise(v.rss)
		rc := measure.Summarise(measure.Ratios(v.cpu, base.cpu))
		rw := measure.Summarise(measure.Ratios(v.wall, base.wall))
		fmt.Fprintf(w, "| %s | %.2f s (%.2f–%.2f) | %.2f s (%.2f–%.2f) | %.1f MiB (%.1f–%.1f) | **×%.2f** (%.2f–%.2f) | ×%.2f (%.2f–%.2f) |\n",
			v.name, wall.Median, wall.Min, wall.Max, cpu.Median, cpu.Min, cpu.Max, rss.Median, rss.Min, rss.Max,
			rc.Median, rc.Min, rc.Max, rw.Median, rw.Min, rw.Max)
	}
	fmt.Fprintf(w, "\nMedian (range) of %d interleaved rounds; ratios are the median (range) of the per-round ratios to the walker.\n", len(base.cpu))
	version, scan := variants[1], variants[2]
	fmt.Fprintf(w, "Beyond the process's start-up (`mvpctl version`), the text scan adds %.2f s of CPU and %.1f MiB of peak RSS (medians).\n",
		measure.Summarise(scan.cpu).Median-measure.Summarise(version.cpu).Median,
		measure.Summarise(scan.rss).Median-measure.Summarise(version.rss).Median)
}
