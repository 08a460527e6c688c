package lint

import (
	"fmt"
	"sort"
	"strings"

	"github.com/mvpctl/mvpctl/rules"
)

func (l *linter) checkConsistency() {
	for i := range l.clean {
		l.checkWrites(&l.clean[i])
		l.checkRenameChains(&l.clean[i])
	}
	l.checkVersionGraph()
	l.checkRouting()
}

// normPath renders a path canonically so that spec.a and spec["a"] compare equal.
func normPath(s string) string {
	p, err := rules.ParsePath(s)
	if err != nil {
		return s
	}
	return p.String()
}

func tfield(i int, name string) string { return fmt.Sprintf("transformations[%d].%s", i, name) }

// checkWrites finds two transformations writing the same field, where the
// second overwrites the first unconditionally (rename and set do;
// ensureFieldExistence only fills an absent field, which is how a default
// after a rename is written).
func (l *linter) checkWrites(r *ruleInfo) {
	type writer struct {
		index int
		write rules.Write
	}
	written := map[string]writer{}
	for i, t := range r.ref.Rule.Transformations {
		facts, _ := t.Action.Facts()
		if !r.stepKnown(i, "action") || (facts.Write != rules.WriteNone || facts.ClearsPath) && !r.stepKnown(i, "path", "targetPath", "when") {
			// What it writes, or moves away, is unknown: later writes are
			// compared with the writes after it only.
			clear(written)
			continue
		}
		if t.When != "" {
			continue // conditional writes may exclude each other
		}
		if facts.ClearsPath {
			// The path no longer holds anything forward.
			delete(written, normPath(t.Path))
		}
		if facts.Write == rules.WriteNone {
			continue
		}
		fld, target := t.Target()
		key := normPath(target)
		if prev, ok := written[key]; ok && (facts.Write == rules.WriteAlways || prev.write == rules.WriteIfAbsent) {
			l.addRule(IDDuplicateTarget, r, tfield(i, fld), i, key, prev.index)
		}
		written[key] = writer{i, facts.Write}
	}
}

// checkRenameChains finds a rename A → B followed by a rename B → C with
// nothing in between working on B: one rename A → C says the same.
func (l *linter) checkRenameChains(r *ruleInfo) {
	ts := r.ref.Rule.Transformations
	// known says whether what a step reads and writes is free of
	// structure errors.
	known := func(i int) bool { return r.stepKnown(i, "action", "path", "targetPath", "when") }
	for i, t := range ts {
		if t.Action != rules.ActionRename || !known(i) {
			continue
		}
		b := normPath(t.TargetPath)
	next:
		for j := i + 1; j < len(ts); j++ {
			u := ts[j]
			if !known(j) {
				break // it may work on B
			}
			if u.Action == rules.ActionRename && normPath(u.Path) == b && t.When == "" && u.When == "" {
				l.addRule(IDRenameChain, r, tfield(i, "targetPath"), t.Path, b, j, u.TargetPath, t.Path, u.TargetPath)
				break
			}
			for _, p := range []string{u.Path, u.TargetPath} {
				if p != "" && (within(normPath(p), b) || within(b, normPath(p))) {
					break next
				}
			}
			if u.OnWholeObject() {
				break // a whole-object expression may read B
			}
		}
	}
}

// checkVersionGraph looks at each resource's rules as a graph of
// group/versions: a rule that connects two versions already connected
// either closes a cycle (v1 → v2 → v1) or adds a second path between them,
// and the converter would silently pick the shortest.
func (l *linter) checkVersionGraph() {
	type edge struct {
		to   string
		rule *ruleInfo
	}
	out := map[string]map[string][]edge{} // resource → node → edges (both directions)
	for i := range l.clean {
		r := &l.clean[i]
		mr := r.ref.Rule
		from := gvString(mr.APIGroup, mr.FromVersion)
		to := gvString(mr.TargetGroup(), mr.ToVersion)
		g := out[mr.Resource]
		if g == nil {
			g = map[string][]edge{}
			out[mr.Resource] = g
		}
		if path := findPath(g, from, to, func(e edge) string { return e.to }); path != nil {
			// Is it a directed cycle: does a chain of rules lead from to back to from?
			if directedPath(l.clean[:i], mr.Resource, to, from) {
				cycle := []string{from}
				for k := len(path) - 1; k >= 0; k-- {
					cycle = append(cycle, path[k])
				}
				l.addRule(IDVersionCycle, r, "toVersion", mr.Resource, strings.Join(cycle, " -> "))
			} else {
				l.addRule(IDAmbiguousPath, r, "toVersion", mr.Resource, from, to, strings.Join(path, " - "))
			}
		}
		g[from] = append(g[from], edge{to, r})
		g[to] = append(g[to], edge{from, r})
	}
}

func gvString(group, version string) string {
	if group == "" {
		return version
	}
	return group + "/" + version
}

// findPath is a breadth-first search in an undirected graph; it returns the
// nodes from a to b, or nil.
func findPath[E any](g map[string][]E, a, b string, to func(E) string) []string {
	prev := map[string]string{a: ""}
	queue := []string{a}
	for len(queue) > 0 {
		n := queue[0]
		queue = queue[1:]
		if n == b {
			var path []string
			for x := b; x != ""; x = prev[x] {
				path = append([]string{x}, path...)
			}
			return path
		}
		for _, e := range g[n] {
			if _, seen := prev[to(e)]; !seen {
				prev[to(e)] = n
				queue = append(queue, to(e))
			}
		}
	}
	return nil
}

// directedPath reports whether rules of a resource lead forward from a to b.
func directedPath(rs []ruleInfo, resource, a, b string) bool {
	g := map[string][]string{}
	for i := range rs {
		mr := rs[i].ref.Rule
		if mr.Resource == resource {
			f := gvString(mr.APIGroup, mr.FromVersion)
			g[f] = append(g[f], gvString(mr.TargetGroup(), mr.ToVersion))
		}
	}
	return findPath(g, a, b, func(s string) string { return s }) != nil
}

// checkRouting reports routing rules that nothing can serve: a group or
// resource no migration rule converts and no schema given serves, or a
// client version neither knows. Without schemas, only groups that some
// migration rule names are checked, since any server may serve the others.
func (l *linter) checkRouting() {
	served := map[string]map[string]bool{} // group/resource → versions
	groups := map[string]bool{}
	note := func(group, resource, version string) {
		k := group + "/" + resource
		if served[k] == nil {
			served[k] = map[string]bool{}
		}
		served[k][version] = true
		groups[group] = true
	}
	for _, d := range l.rs.Documents {
		for _, mr := range d.Rules.Spec.APIMigrationRules {
			note(mr.APIGroup, mr.Resource, mr.FromVersion)
			note(mr.TargetGroup(), mr.Resource, mr.ToVersion)
		}
	}
	haveSchemas := l.opts.From != nil || l.opts.To != nil
	for _, s := range l.specs() {
		for g, k := range s.Kinds {
			note(g.Group, k.Resource, g.Version)
		}
	}
	for _, d := range l.rs.Documents {
		for i, rr := range d.Rules.Spec.APIRoutingRules {
			fld := fmt.Sprintf("spec.apiRoutingRules[%d]", i)
			if rr.Resource == "" || !haveSchemas && !groups[rr.APIGroup] {
				continue
			}
			what := rr.APIGroup
			if what == "" {
				what = "core"
			}
			var versions map[string]bool
			if rr.Resource == "*" {
				if !groups[rr.APIGroup] {
					l.add(IDRoutingUnservable, d.Pos(fld+".apiGroup"), fld+".apiGroup", "", "group "+what, "")
				}
				continue
			}
			versions = served[rr.APIGroup+"/"+rr.Resource]
			if versions == nil {
				l.add(IDRoutingUnservable, d.Pos(fld+".resource"), fld+".resource", "", rr.Resource+" in group "+what, "")
				continue
			}
			if rr.ClientVersion != "" && !versions[rr.ClientVersion] {
				known := make([]string, 0, len(versions))
				for v := range versions {
					known = append(known, v)
				}
				sort.Strings(known)
				l.add(IDRoutingUnservable, d.Pos(fld+".clientVersion"), fld+".clientVersion", "", rr.Resource+" in group "+what, fmt.Sprintf(" at version %s (known: %s)", rr.ClientVersion, strings.Join(known, ", ")))
			}
		}
	}
}
