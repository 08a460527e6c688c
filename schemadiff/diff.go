package schemadiff

import (
	"fmt"
	"sort"
	"strings"
)

// Options narrow and tune [Diff].
type Options struct {
	// Group keeps only kinds of this API group (the old group for a kind
	// that moved). Empty means every group; "core" selects the core group.
	Group string
	// Kind keeps only this kind. Empty means every kind.
	Kind string
	// AllVersions also pairs every old version that is still served with the
	// new preferred version, not only versions that are gone or were
	// preferred. Zero pairs only what a client must move off.
	AllVersions bool
}

func (o Options) keep(g GVK) bool {
	if o.Group != "" {
		want := o.Group
		if want == "core" {
			want = ""
		}
		if g.Group != want {
			return false
		}
	}
	return o.Kind == "" || strings.EqualFold(o.Kind, g.Kind)
}

// DumpInfo describes one side of a [Report].
type DumpInfo struct {
	Source  string `json:"source"`
	Format  Format `json:"format"`
	Title   string `json:"title,omitempty"`
	Version string `json:"version,omitempty"`
	Kinds   int    `json:"kinds"`
}

func dumpInfo(s *Spec) DumpInfo {
	return DumpInfo{Source: s.Source, Format: s.Format, Title: s.Title, Version: s.Version, Kinds: len(s.Kinds)}
}

// Report is everything [Diff] finds between an old and a new dump.
type Report struct {
	Old DumpInfo `json:"old"`
	New DumpInfo `json:"new"`
	// Kinds lists the group/version/kinds each dump serves.
	Kinds *KindsDiff `json:"kinds"`
	// Migrations are the version pairs a client has to move across, each with
	// the field-level difference of the two schemas.
	Migrations []*Migration `json:"migrations,omitempty"`
}

// Empty reports whether the dumps serve the same kinds at the same versions.
func (r *Report) Empty() bool { return r.Kinds.Empty() && len(r.Migrations) == 0 }

// KindsDiff lists group/version/kinds by what happened to them.
type KindsDiff struct {
	Added   []GVK `json:"added,omitempty"`
	Deleted []GVK `json:"deleted,omitempty"`
	Kept    []GVK `json:"kept,omitempty"`
}

// Empty reports whether no kind was added or deleted.
func (d *KindsDiff) Empty() bool { return len(d.Added) == 0 && len(d.Deleted) == 0 }

// Reason says why a [Migration] was paired.
type Reason string

// The reasons a migration is reported.
const (
	// ReasonRemoved: the new dump no longer serves the old version.
	ReasonRemoved Reason = "removed"
	// ReasonPreferred: still served, but the new dump prefers another version.
	ReasonPreferred Reason = "preferred-changed"
	// ReasonOther: still served and not preferred in either dump (Options.AllVersions).
	ReasonOther Reason = "not-preferred"
)

// Migration is one kind's move from an old version to its target version.
type Migration struct {
	From GVK `json:"from"`
	To   GVK `json:"to"`
	// FromResource and ToResource are the plural resource names.
	FromResource string `json:"fromResource"`
	ToResource   string `json:"toResource"`
	Reason       Reason `json:"reason"`
	// Schema is the field-level difference.
	Schema *SchemaDiff `json:"schema"`
}

// SchemaDiff is the field-level difference of one kind between two versions
// (the oasdiff model flattened to rule paths).
type SchemaDiff struct {
	// Added are fields only the target version has (the largest such subtrees).
	Added []*Field `json:"added,omitempty"`
	// Deleted are fields only the old version has.
	Deleted []*Field `json:"deleted,omitempty"`
	// Modified are fields both have, whose schemas differ.
	Modified []*FieldDiff `json:"modified,omitempty"`
	// Moved are renamed or moved fields found by evidence.
	Moved []*Move `json:"moved,omitempty"`
	// Shared are definitions both versions use (io.k8s.api.core.v1.PodSpec)
	// that changed between the dumps: a change of the release, not of the
	// version, so no rule is drafted for it.
	Shared []*SharedDiff `json:"shared,omitempty"`

	// steps keeps the changes in the order rules must apply them.
	steps []step
}

// Empty reports whether the two schemas are the same.
func (d *SchemaDiff) Empty() bool {
	return d == nil || (len(d.Added) == 0 && len(d.Deleted) == 0 && len(d.Modified) == 0 && len(d.Moved) == 0 && len(d.Shared) == 0)
}

// ValueDiff is an attribute that changed.
type ValueDiff struct {
	From any `json:"from"`
	To   any `json:"to"`
}

// EnumDiff lists enum values (JSON-encoded) only one side allows.
type EnumDiff struct {
	Added   []string `json:"added,omitempty"`
	Deleted []string `json:"deleted,omitempty"`
}

// Empty reports whether both sides allow the same values.
func (d *EnumDiff) Empty() bool { return d == nil || (len(d.Added) == 0 && len(d.Deleted) == 0) }

// FieldDiff is a field both versions have, whose schema changed.
type FieldDiff struct {
	// Path is the field's path in the target version.
	Path string `json:"path"`
	// OldPath is its path in the old version when an enclosing object moved.
	OldPath     string     `json:"oldPath,omitempty"`
	Type        *ValueDiff `json:"type,omitempty"`
	Format      *ValueDiff `json:"format,omitempty"`
	Required    *ValueDiff `json:"required,omitempty"`
	Default     *ValueDiff `json:"default,omitempty"`
	Enum        *EnumDiff  `json:"enum,omitempty"`
	Nullable    *ValueDiff `json:"nullable,omitempty"`
	ListType    *ValueDiff `json:"listType,omitempty"`
	MapType     *ValueDiff `json:"mapType,omitempty"`
	Preserve    *ValueDiff `json:"preserveUnknownFields,omitempty"`
	Embedded    *ValueDiff `json:"embeddedResource,omitempty"`
	ListMapKeys *ValueDiff `json:"listMapKeys,omitempty"`

	old, new *node
}

// Empty reports whether nothing changed.
func (d *FieldDiff) Empty() bool {
	return d.Type == nil && d.Format == nil && d.Required == nil && d.Default == nil && d.Enum.Empty() &&
		d.Nullable == nil && d.ListType == nil && d.MapType == nil && d.Preserve == nil && d.Embedded == nil && d.ListMapKeys == nil
}

// Move is a field of the old version found at another path in the target
// version.
type Move struct {
	From *Field `json:"from"`
	To   *Field `json:"to"`
	// Confidence is between 0 and 1; see Evidence.
	Confidence float64 `json:"confidence"`
	// Evidence lists what supports the match.
	Evidence []string `json:"evidence"`
	// Split marks an int-or-string that became an object of a number and a
	// name (servicePort → service.port.number|name).
	Split bool `json:"split,omitempty"`

	work   string // where the old value is when the rule runs
	toNode *node
}

// SharedDiff is a shared definition that changed between the dumps.
type SharedDiff struct {
	Path string `json:"path"`
	Ref  string `json:"ref"`
	// Added and Deleted count the fields only one side's definition has.
	Added   int `json:"added"`
	Deleted int `json:"deleted"`
}

// step is one change in rule order.
type step struct {
	move    *Move
	added   *Field
	deleted *Field
	mod     *FieldDiff
	work    string // the old value's path when the step runs
	dep     *Move  // the move whose scope the step belongs to: its paths assume that move ran
}

// Diff compares two dumps: which kinds each serves, which version every kind
// a client must move off migrates to, and how the two schemas differ.
func Diff(old, new *Spec, opts Options) *Report {
	r := &Report{Old: dumpInfo(old), New: dumpInfo(new), Kinds: &KindsDiff{}}
	for _, g := range old.GVKs() {
		if !opts.keep(g) {
			continue
		}
		if _, ok := new.Kinds[g]; ok {
			r.Kinds.Kept = append(r.Kinds.Kept, g)
		} else {
			r.Kinds.Deleted = append(r.Kinds.Deleted, g)
		}
	}
	for _, g := range new.GVKs() {
		if _, ok := old.Kinds[g]; !ok && (opts.keep(g) || movedFromKept(old, g, opts)) {
			r.Kinds.Added = append(r.Kinds.Added, g)
		}
	}
	for _, g := range old.GVKs() {
		if !opts.keep(g) {
			continue
		}
		target, reason := migrationTarget(old, new, g, opts)
		if target == nil {
			continue
		}
		from := old.Kinds[g]
		m := &Migration{From: g, To: target.GVK, FromResource: from.Resource, ToResource: target.Resource, Reason: reason}
		m.Schema = diffSchemas(buildTree(from.Schema), buildTree(target.Schema))
		r.Migrations = append(r.Migrations, m)
	}
	return r
}

// movedFromKept keeps, under a --group filter, the new GVK a kept kind moved to.
func movedFromKept(old *Spec, g GVK, opts Options) bool {
	if opts.Group == "" {
		return false
	}
	for o := range old.Kinds {
		if opts.keep(o) && o.Kind == g.Kind {
			return true
		}
	}
	return false
}

// migrationTarget picks the new version for an old GVK: nil when the kind
// needs no migration.
func migrationTarget(old, new *Spec, g GVK, opts Options) (*Kind, Reason) {
	gk := g.gk()
	pref := new.Preferred(gk)
	_, stillServed := new.Kinds[g]
	switch {
	case !stillServed && pref != "":
		return new.Kinds[GVK{g.Group, pref, g.Kind}], ReasonRemoved
	case !stillServed:
		// The kind left its group: extensions Ingress → networking.k8s.io.
		if t := movedGroup(old, new, g); t != nil {
			return t, ReasonRemoved
		}
		return nil, ""
	case pref == g.Version:
		return nil, ""
	case old.Preferred(gk) == g.Version:
		return new.Kinds[GVK{g.Group, pref, g.Kind}], ReasonPreferred
	case opts.AllVersions:
		return new.Kinds[GVK{g.Group, pref, g.Kind}], ReasonOther
	}
	return nil, ""
}

// movedGroup finds the group a kind moved to: the same kind name served by
// the new dump in another group, preferring a group the old dump also served
// it in (networking.k8s.io Ingress was in 1.21 already), then the group whose
// schema shares most fields.
func movedGroup(old, new *Spec, g GVK) *Kind {
	var cands []GK
	seen := map[GK]bool{}
	for n := range new.Kinds {
		gk := n.gk()
		if n.Kind == g.Kind && n.Group != g.Group && !seen[gk] {
			seen[gk] = true
			cands = append(cands, gk)
		}
	}
	if len(cands) == 0 {
		return nil
	}
	sort.Slice(cands, func(i, j int) bool { return cands[i].Group < cands[j].Group })
	best, bestScore := GK{}, -1.0
	oldTree := buildTree(old.Kinds[g].Schema)
	for _, c := range cands {
		t := new.Kinds[GVK{c.Group, new.Preferred(c), c.Kind}]
		score := structureSimilarity(oldTree, buildTree(t.Schema))
		if old.Preferred(c) != "" {
			score++
		}
		if score > bestScore {
			best, bestScore = c, score
		}
	}
	return new.Kinds[GVK{best.Group, new.Preferred(best), best.Kind}]
}

// diffSchemas compares two kind schemas and finds moved fields.
func diffSchemas(old, new *node) *SchemaDiff {
	d := &SchemaDiff{}
	sc := &scope{}
	d.compare(sc, old, new, "")
	d.resolve(sc)
	return d
}

// add records a step of the scope's enclosing move.
func (d *SchemaDiff) add(sc *scope, s step) {
	s.dep = sc.move
	d.steps = append(d.steps, s)
}

// scope collects the fields only one side has below a pair of matched nodes;
// moves are looked for within one scope.
type scope struct {
	deleted []cand
	added   []*node
	move    *Move // the move that made the scope; nil at the top
}

type cand struct {
	n    *node
	work string
}

// compare records how o (old, at work path) and n (new) differ and descends.
func (d *SchemaDiff) compare(sc *scope, o, n *node, work string) {
	if o.Ref != "" && o.Ref == n.Ref && !o.Recursive && !n.Recursive {
		// A definition that keeps its name across the pair is shared by the
		// two versions (Kubernetes names a version's own types after its
		// package: io.k8s.api.networking.v1beta1.X), so a difference is a
		// change of the release, not of the version.
		if isMetaRef(o.Ref) || o.fingerprint() == n.fingerprint() {
			return
		}
		d.Shared = append(d.Shared, &SharedDiff{Path: n.Path, Ref: o.Ref, Added: countOnlyIn(n, o), Deleted: countOnlyIn(o, n)})
		return
	}
	if fd := fieldDiff(o, n); fd != nil {
		if o.Path != n.Path {
			fd.OldPath = o.Path
		}
		d.Modified = append(d.Modified, fd)
		d.add(sc, step{mod: fd, work: work})
	}
	if o.Recursive || n.Recursive {
		return
	}
	switch {
	case o.Type == TypeObject && n.Type == TypeObject:
		i, j := 0, 0
		for i < len(o.children) || j < len(n.children) {
			switch {
			case j == len(n.children) || (i < len(o.children) && o.children[i].name < n.children[j].name):
				c := o.children[i]
				sc.deleted = append(sc.deleted, cand{c, childPath(work, c.name)})
				i++
			case i == len(o.children) || n.children[j].name < o.children[i].name:
				sc.added = append(sc.added, n.children[j])
				j++
			default:
				d.compare(sc, o.children[i], n.children[j], childPath(work, o.children[i].name))
				i++
				j++
			}
		}
	case o.Type == n.Type && o.elem != nil && n.elem != nil:
		d.compare(sc, o.elem, n.elem, work+o.elem.name)
	}
}

// isMetaRef reports apimachinery's meta types (ObjectMeta, ListMeta), which
// every kind shares and no version conversion touches.
func isMetaRef(ref string) bool {
	return strings.HasPrefix(ref, "io.k8s.apimachinery.pkg.apis.meta.")
}

func countOnlyIn(a, b *node) int {
	have := map[string]bool{}
	b.walk(func(m *node) { have[b.rel(m)] = true })
	n := 0
	a.walk(func(m *node) {
		if !have[a.rel(m)] {
			n++
		}
	})
	return n
}

func fieldDiff(o, n *node) *FieldDiff {
	fd := &FieldDiff{Path: n.Path, old: o, new: n}
	cmpStr := func(a, b string) *ValueDiff {
		if a == b {
			return nil
		}
		return &ValueDiff{From: a, To: b}
	}
	cmpBool := func(a, b bool) *ValueDiff {
		if a == b {
			return nil
		}
		return &ValueDiff{From: a, To: b}
	}
	fd.Type = cmpStr(o.Type, n.Type)
	if o.Type == n.Type {
		fd.Format = cmpStr(o.Format, n.Format)
	}
	if o.parent != nil && n.parent != nil {
		fd.Required = cmpBool(o.Required, n.Required)
	}
	if o.Default != n.Default && !(zeroDefault(o.Default) && zeroDefault(n.Default)) {
		fd.Default = &ValueDiff{From: decodeOrNil(o.Default), To: decodeOrNil(n.Default)}
	}
	if e := enumDiff(o.Enum, n.Enum); !e.Empty() {
		fd.Enum = e
	}
	fd.Nullable = cmpBool(o.Nullable, n.Nullable)
	fd.ListType = cmpStr(o.ListType, n.ListType)
	fd.MapType = cmpStr(o.MapType, n.MapType)
	fd.Preserve = cmpBool(o.PreserveUnknownFields, n.PreserveUnknownFields)
	fd.Embedded = cmpBool(o.EmbeddedResource, n.EmbeddedResource)
	fd.ListMapKeys = cmpStr(strings.Join(o.ListMapKeys, ","), strings.Join(n.ListMapKeys, ","))
	if fd.Empty() {
		return nil
	}
	return fd
}

func enumDiff(a, b []string) *EnumDiff {
	if len(a) == 0 || len(b) == 0 {
		// Gaining or losing an enum is a validation change, not a value change.
		return nil
	}
	in := func(s []string, v string) bool {
		i := sort.SearchStrings(s, v)
		return i < len(s) && s[i] == v
	}
	e := &EnumDiff{}
	for _, v := range b {
		if !in(a, v) {
			e.Added = append(e.Added, v)
		}
	}
	for _, v := range a {
		if !in(b, v) {
			e.Deleted = append(e.Deleted, v)
		}
	}
	return e
}

// resolve matches moves within a scope, recurses into moved objects, and
// records what is left as added or deleted.
func (d *SchemaDiff) resolve(sc *scope) {
	if len(sc.deleted) == 0 && len(sc.added) == 0 {
		return
	}
	moves := matchMoves(sc)
	usedOld := map[*node]bool{}
	usedNew := map[*node]bool{}
	for _, mv := range moves {
		usedOld[mv.o] = true
		usedNew[mv.n] = true
		m := &Move{From: fieldRef(mv.o), To: fieldRef(mv.n), Confidence: mv.score, Evidence: mv.evidence, Split: mv.split, work: mv.work, toNode: mv.n}
		d.Moved = append(d.Moved, m)
		d.add(sc, step{move: m, work: mv.work})
		if !mv.split {
			sub := &scope{move: m}
			d.compare(sub, mv.o, mv.n, mv.n.Path)
			d.resolve(sub)
		}
	}
	for _, c := range sc.deleted {
		for _, f := range uncovered(c.n, usedOld) {
			d.Deleted = append(d.Deleted, fieldRef(f))
			d.add(sc, step{deleted: fieldRef(f), work: c.work + c.n.rel(f)})
		}
	}
	for _, a := range sc.added {
		for _, f := range uncovered(a, usedNew) {
			d.Added = append(d.Added, fieldRef(f))
			d.add(sc, step{added: fieldRef(f), work: f.Path})
		}
	}
}

// uncovered returns the largest subtrees of root containing no matched node.
func uncovered(root *node, used map[*node]bool) []*node {
	has := func(n *node) bool {
		found := false
		n.walk(func(m *node) {
			if used[m] {
				found = true
			}
		})
		return found
	}
	if used[root] {
		return nil
	}
	if !has(root) {
		return []*node{root}
	}
	var out []*node
	for _, c := range root.children {
		out = append(out, uncovered(c, used)...)
	}
	if root.elem != nil {
		out = append(out, uncovered(root.elem, used)...)
	}
	return out
}

func fieldRef(n *node) *Field {
	f := n.Field
	return &f
}

func decodeOrNil(s string) any {
	if s == "" {
		return nil
	}
	return rawJSON(s)
}

// Summary says what changed: fields added and removed, or only their
// attributes (types, enums, required).
func (d *SharedDiff) Summary() string {
	if d.Added == 0 && d.Deleted == 0 {
		return d.Ref + " changed between the dumps: field attributes only"
	}
	return fmt.Sprintf("%s changed between the dumps: %d fields added, %d removed", d.Ref, d.Added, d.Deleted)
}

// zeroDefault reports no default or a zero-value one: Kubernetes' v3
// documents give non-pointer fields default "" or {} where v2 gives none, and
// neither changes what an object means.
func zeroDefault(d string) bool {
	switch d {
	case "", `""`, "{}", "[]", "0", "false":
		return true
	}
	return false
}
