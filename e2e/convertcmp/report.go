package convertcmp

import (
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"
	"unicode/utf8"
)

// Result is the comparison of one manifest.
type Result struct {
	// APIVersion and Kind are the manifest's; Target the group/version both
	// tools converted it to; RemovedIn the release that removed its
	// version ("" for none).
	APIVersion, Kind, Target, RemovedIn string
	// Source names the manifest.
	Source string
	// Outcome is the verdict; Findings the classified differences.
	Outcome  Outcome
	Findings []Finding
	// Order lists the mappings whose shared keys come in another order.
	Order []string
	// Detail says why the manifest Failed or was NotConverted.
	Detail string
}

// group is the results of one old version.
type group struct {
	apiVersion, kind, target, removedIn string
	results                             []Result
}

func groupResults(results []Result) []*group {
	var out []*group
	for _, r := range results {
		i := slices.IndexFunc(out, func(g *group) bool { return g.apiVersion == r.APIVersion && g.kind == r.Kind })
		if i < 0 {
			out = append(out, &group{apiVersion: r.APIVersion, kind: r.Kind, target: r.Target, removedIn: r.RemovedIn})
			i = len(out) - 1
		}
		out[i].results = append(out[i].results, r)
	}
	return out
}

var outcomes = []Outcome{Identical, SameValues, Explained, Disagrees, NotConverted, Failed}

// WriteSummary writes a Markdown table with one row per old version: how
// many manifests had each outcome, and a total row.
func WriteSummary(w io.Writer, results []Result) {
	fmt.Fprint(w, "| old version | kind | to | removed in | manifests |")
	for _, o := range outcomes {
		fmt.Fprintf(w, " %s |", o)
	}
	fmt.Fprint(w, " key order differs (-o json) |\n|---|---|---|---|---:|")
	fmt.Fprint(w, strings.Repeat("---:|", len(outcomes)+1)+"\n")
	total := make([]int, len(outcomes)+2)
	for _, g := range groupResults(results) {
		counts := make([]int, len(outcomes)+2)
		counts[0] = len(g.results)
		for _, r := range g.results {
			counts[1+slices.Index(outcomes, r.Outcome)]++
			if len(r.Order) > 0 {
				counts[len(counts)-1]++
			}
		}
		removed := g.removedIn
		if removed == "" {
			removed = "–"
		}
		fmt.Fprintf(w, "| %s | %s | %s | %s |", g.apiVersion, g.kind, g.target, removed)
		for i, n := range counts {
			fmt.Fprintf(w, " %d |", n)
			total[i] += n
		}
		fmt.Fprintln(w)
	}
	fmt.Fprint(w, "| **all** | | | |")
	for _, n := range total {
		fmt.Fprintf(w, " **%d** |", n)
	}
	fmt.Fprintln(w)
}

// maxPaths bounds the paths listed per class and old version.
const maxPaths = 40

// WriteDifferences writes, per old version, every class of difference with
// the fields it touched (list indices generalised), how many manifests
// each, and an example value; then the manifests that failed or that
// kubectl-convert did not convert, with the reason.
func WriteDifferences(w io.Writer, results []Result) {
	for _, g := range groupResults(results) {
		byClass := map[Class]map[string]*pathCount{}
		for _, r := range g.results {
			for _, f := range r.Findings {
				if byClass[f.Class] == nil {
					byClass[f.Class] = map[string]*pathCount{}
				}
				p := Generalise(f.Path)
				pc := byClass[f.Class][p]
				if pc == nil {
					pc = &pathCount{path: p, example: f}
					byClass[f.Class][p] = pc
				}
				if !slices.Contains(pc.sources, r.Source) {
					pc.sources = append(pc.sources, r.Source)
				}
			}
		}
		var failed []Result
		for _, r := range g.results {
			if r.Outcome == Failed || r.Outcome == NotConverted || r.Detail != "" {
				failed = append(failed, r)
			}
		}
		if len(byClass) == 0 && len(failed) == 0 {
			continue
		}
		fmt.Fprintf(w, "\n**%s %s → %s** (%d manifests)\n\n", g.apiVersion, g.kind, g.target, len(g.results))
		for _, c := range []Class{Disagreement, Annotation, SourceDefault, Filled, Canonical, Omitted} {
			writeClass(w, c, byClass[c])
		}
		for _, r := range failed {
			fmt.Fprintf(w, "- %s: `%s`: %s\n", r.Outcome, r.Source, oneLine(r.Detail, 240))
		}
	}
}

type pathCount struct {
	path    string
	example Finding
	sources []string
}

func writeClass(w io.Writer, c Class, paths map[string]*pathCount) {
	if len(paths) == 0 {
		return
	}
	list := make([]*pathCount, 0, len(paths))
	for _, pc := range paths {
		list = append(list, pc)
	}
	slices.SortFunc(list, func(a, b *pathCount) int { return strings.Compare(a.path, b.path) })
	var items []string
	for i, pc := range list {
		if i == maxPaths {
			items = append(items, fmt.Sprintf("and %d more", len(list)-maxPaths))
			break
		}
		items = append(items, fmt.Sprintf("`%s` (%d%s)", pc.path, len(pc.sources), example(pc.example)))
	}
	fmt.Fprintf(w, "- %s: %s\n", c, strings.Join(items, "; "))
}

// example shows the values of a finding: kubectl-convert's, mvpctl's, or
// both for a disagreement.
func example(f Finding) string {
	var parts []string
	if f.InA {
		parts = append(parts, "kubectl-convert: "+value(f.A))
	}
	if f.InB && f.Class != Annotation {
		parts = append(parts, "mvpctl: "+value(f.B))
	}
	if !f.InA && f.Class == Disagreement {
		parts = append(parts, "kubectl-convert: absent")
	}
	if !f.InB && f.Class == Disagreement {
		parts = append(parts, "mvpctl: absent")
	}
	if f.Note != "" {
		parts = append(parts, f.Note)
	}
	if len(parts) == 0 {
		return ""
	}
	return ", " + strings.Join(parts, ", ")
}

// value is v as compact JSON, cut short, safe in a Markdown table cell.
func value(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return "`" + strings.ReplaceAll(oneLine(string(b), 60), "`", "'") + "`"
}

// oneLine joins s's lines and cuts it to n bytes.
func oneLine(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > n {
		for n > 0 && !utf8.RuneStart(s[n]) {
			n--
		}
		s = s[:n] + "…"
	}
	return strings.ReplaceAll(s, "|", `\|`)
}
