package rules

import (
	"fmt"
	"strings"

	"github.com/itchyny/gojq"
)

// Which fields a step may change. The proxy needs it for selectors on an
// emulated version: the server evaluates them on the served version, so a
// selector on a field that some step changes would select the wrong objects.

// Overlaps reports whether p and q may select the same field, or one a field
// inside the other. A wildcard matches any key or index.
func (p Path) Overlaps(q Path) bool {
	for i := 0; i < len(p) && i < len(q); i++ {
		a, b := p[i], q[i]
		switch {
		case a.Kind == StepWildcard || b.Kind == StepWildcard:
		case a.Kind != b.Kind, a.Kind == StepKey && a.Key != b.Key, a.Kind == StepIndex && a.Index != b.Index:
			return false
		}
	}
	return true
}

// MayChange reports whether the step may change the value at field (or
// anything inside or above it) in either direction, and why. A step changes
// what its path and target path select; a when: condition only reads. A jq
// step on the whole object is judged from the syntax trees of its
// expressions (see [JQMayChange]).
func (t *Transformation) MayChange(field Path) (why string, may bool) {
	for _, s := range []string{t.Path, t.TargetPath} {
		if s == "" {
			continue
		}
		p, err := ParsePath(s)
		if err != nil || p.Overlaps(field) {
			return fmt.Sprintf("%s changes %s", t.Action, s), true
		}
	}
	if t.OnWholeObject() {
		for _, e := range []struct{ dir, src string }{{"forward", t.Forward}, {"reverse", t.Reverse}} {
			if why, may := JQMayChange(e.src, field); may {
				return fmt.Sprintf("jq on the whole object: its %s expression %s", e.dir, why), true
			}
		}
	}
	return "", false
}

// JQMayChange reports whether the jq expression src, run on an object, may
// change the value at field (or anything inside or above it), and why. It
// decides from the syntax tree and errs on the side of "may": the expression
// must be a pipeline of updates of named paths (P = v, P |= f, P += v, ...,
// del(P), . + {k: v}, if/elif/else, reduce ... (.; ...), select, E as $x |
// ...). Any other result (object construction, with_entries, walk, setpath,
// delpaths, to_entries, fromjson, a variable, a function of its own) may be
// any object, and a key it cannot name statically (.[$k], .["\(.x)"],
// .[$__loc__.file], .[], getpath, paths, ..) matches every key. Reads, such
// as conditions, right-hand sides of = and E in E as $x, change nothing.
func JQMayChange(src string, field Path) (why string, may bool) {
	q, err := gojq.Parse(src)
	if err != nil {
		return "does not parse", true
	}
	a := &jqWrites{defined: map[string]bool{}}
	a.collectDefs(q)
	paths, unknown := a.object(q)
	if unknown != "" {
		return fmt.Sprintf("may change any field (%s)", shorten(unknown)), true
	}
	for _, p := range paths {
		if p.Overlaps(field) {
			if len(p) == 0 {
				return "may replace the whole object", true
			}
			return "may change " + p.String(), true
		}
	}
	return "", false
}

func shorten(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > 60 {
		s = s[:57] + "..."
	}
	return s
}

// jqWrites finds the paths a jq expression may write.
type jqWrites struct {
	// defined holds the names of functions and parameters the expression
	// defines: they may shadow the builtins the analysis knows.
	defined map[string]bool
}

// maxPaths bounds the paths tracked: beyond it the answer is "anything".
const maxPaths = 256

// object returns the paths at which q's output, run on an object, may differ
// from it; unknown names the part of q whose output may be anything.
func (a *jqWrites) object(q *gojq.Query) (paths []Path, unknown string) {
	if q.Term != nil {
		return a.objectTerm(q.Term)
	}
	if q.Left == nil || q.Right == nil {
		return nil, q.String()
	}
	switch q.Op {
	case gojq.OpPipe:
		if len(q.Patterns) > 0 {
			return a.object(q.Right) // E as $x | body: E is only read
		}
		return a.union(a.object, q.Left, q.Right)
	case gojq.OpComma, gojq.OpAlt:
		return a.union(a.object, q.Left, q.Right)
	case gojq.OpModify:
		// P |= f changes, under each path of P, what f changes. (It also
		// creates P with null where P is absent: that changes nothing above
		// P, and P itself only when f changes nothing, the case kept whole.)
		ps, unknown := a.paths(q.Left)
		if unknown != "" {
			return nil, unknown
		}
		inner, innerUnknown := a.object(q.Right)
		if innerUnknown != "" || len(inner) == 0 {
			return ps, ""
		}
		return a.concat(ps, inner)
	case gojq.OpAssign, gojq.OpUpdateAdd, gojq.OpUpdateSub, gojq.OpUpdateMul,
		gojq.OpUpdateDiv, gojq.OpUpdateMod, gojq.OpUpdateAlt:
		return a.paths(q.Left)
	case gojq.OpAdd, gojq.OpMul:
		// . + {k: v} and . * {k: v} change the keys of the object.
		if isIdentity(q.Left) {
			return objectKeys(q.Right)
		}
		if isIdentity(q.Right) {
			return objectKeys(q.Left)
		}
	}
	return nil, q.String()
}

func (a *jqWrites) union(f func(*gojq.Query) ([]Path, string), qs ...*gojq.Query) ([]Path, string) {
	var out []Path
	for _, q := range qs {
		ps, unknown := f(q)
		if unknown != "" {
			return nil, unknown
		}
		out = append(out, ps...)
	}
	if len(out) > maxPaths {
		return nil, "too many paths"
	}
	return out, ""
}

// concat joins every path of ps with every path of suffixes. Nil suffixes
// mean no change below ps.
func (a *jqWrites) concat(ps, suffixes []Path) ([]Path, string) {
	if len(ps)*len(suffixes) > maxPaths {
		return nil, "too many paths"
	}
	var out []Path
	for _, p := range ps {
		for _, s := range suffixes {
			out = append(out, append(append(Path{}, p...), s...))
		}
	}
	return out, ""
}

func (a *jqWrites) objectTerm(t *gojq.Term) ([]Path, string) {
	for _, s := range t.SuffixList {
		if !s.Optional {
			return nil, t.String()
		}
	}
	switch t.Type {
	case gojq.TermTypeIdentity, gojq.TermTypeBreak:
		return nil, ""
	case gojq.TermTypeQuery:
		return a.object(t.Query)
	case gojq.TermTypeIf:
		return a.union(a.object, ifBranches(t.If)...)
	case gojq.TermTypeTry:
		if t.Try.Catch != nil {
			return nil, t.String() // the catch's output is made from the error
		}
		return a.object(t.Try.Body)
	case gojq.TermTypeReduce:
		if isIdentity(t.Reduce.Start) {
			return a.object(t.Reduce.Update)
		}
	case gojq.TermTypeLabel:
		return a.object(t.Label.Body)
	case gojq.TermTypeFunc:
		f := t.Func
		if a.defined[f.Name] {
			break
		}
		switch {
		case f.Name == "empty" && len(f.Args) == 0, f.Name == "error" && len(f.Args) <= 1,
			f.Name == "select" && len(f.Args) == 1:
			return nil, ""
		case f.Name == "del" && len(f.Args) == 1:
			return a.paths(f.Args[0])
		}
	}
	return nil, t.String()
}

// ifBranches are the branches of an if; a missing else is the identity.
func ifBranches(i *gojq.If) []*gojq.Query {
	qs := []*gojq.Query{i.Then}
	for _, e := range i.Elif {
		qs = append(qs, e.Then)
	}
	if i.Else == nil {
		return append(qs, &gojq.Query{Term: &gojq.Term{Type: gojq.TermTypeIdentity}})
	}
	return append(qs, i.Else)
}

// paths returns the paths q selects as a path expression (the left side of
// an update, the argument of del), relative to its input.
func (a *jqWrites) paths(q *gojq.Query) ([]Path, string) {
	if q.Term != nil {
		return a.pathTerm(q.Term)
	}
	if q.Left == nil || q.Right == nil {
		return nil, q.String()
	}
	switch q.Op {
	case gojq.OpPipe:
		if len(q.Patterns) > 0 {
			return a.paths(q.Right)
		}
		l, unknown := a.paths(q.Left)
		if unknown != "" {
			return nil, unknown
		}
		r, unknown := a.paths(q.Right)
		if unknown != "" {
			return nil, unknown
		}
		return a.concat(l, r)
	case gojq.OpComma, gojq.OpAlt:
		return a.union(a.paths, q.Left, q.Right)
	}
	return nil, q.String()
}

func (a *jqWrites) pathTerm(t *gojq.Term) ([]Path, string) {
	var base []Path
	switch t.Type {
	case gojq.TermTypeIdentity:
		base = []Path{{}}
	case gojq.TermTypeIndex:
		base = []Path{{indexStep(t.Index)}}
	case gojq.TermTypeQuery, gojq.TermTypeIf, gojq.TermTypeTry, gojq.TermTypeFunc:
		var unknown string
		base, unknown = a.pathBase(t)
		if unknown != "" {
			return nil, unknown
		}
	default:
		return nil, t.String()
	}
	for _, s := range t.SuffixList {
		var st Step
		switch {
		case s.Optional:
			continue
		case s.Iter:
			st = Step{Kind: StepWildcard}
		case s.Index != nil:
			st = indexStep(s.Index)
		default:
			return nil, t.String()
		}
		for i := range base {
			base[i] = append(base[i], st)
		}
	}
	return base, ""
}

// pathBase is the paths of a parenthesised query, an if, a try or a
// function call before the term's suffixes.
func (a *jqWrites) pathBase(t *gojq.Term) ([]Path, string) {
	switch t.Type {
	case gojq.TermTypeQuery:
		return a.paths(t.Query)
	case gojq.TermTypeIf:
		return a.union(a.paths, ifBranches(t.If)...)
	case gojq.TermTypeTry:
		if t.Try.Catch == nil {
			return a.paths(t.Try.Body)
		}
	case gojq.TermTypeFunc:
		f := t.Func
		if a.defined[f.Name] {
			break
		}
		switch {
		case f.Name == "select" && len(f.Args) == 1:
			return []Path{{}}, ""
		case f.Name == "empty" && len(f.Args) == 0, f.Name == "error" && len(f.Args) <= 1:
			return nil, ""
		}
	}
	return nil, t.String()
}

// indexStep is one step of a path expression: a key written out, or a
// wildcard for anything computed (variables, interpolation, $__loc__,
// slices, numbers).
func indexStep(ix *gojq.Index) Step {
	switch {
	case ix.IsSlice:
	case ix.Name != "":
		return Step{Kind: StepKey, Key: ix.Name}
	case ix.Str != nil:
		if len(ix.Str.Queries) == 0 {
			return Step{Kind: StepKey, Key: ix.Str.Str}
		}
	case ix.Start != nil:
		if t := ix.Start.Term; t != nil && t.Type == gojq.TermTypeString && len(t.SuffixList) == 0 && len(t.Str.Queries) == 0 && len(ix.Start.FuncDefs) == 0 {
			return Step{Kind: StepKey, Key: t.Str.Str}
		}
	}
	return Step{Kind: StepWildcard}
}

// objectKeys is the top-level keys of an object construction; computed keys
// match any key.
func objectKeys(q *gojq.Query) ([]Path, string) {
	t := q.Term
	if t == nil || t.Type != gojq.TermTypeObject || len(t.SuffixList) > 0 {
		return nil, q.String()
	}
	var out []Path
	for _, kv := range t.Object.KeyVals {
		switch {
		case kv.KeyString != nil && len(kv.KeyString.Queries) == 0:
			out = append(out, Path{{Kind: StepKey, Key: kv.KeyString.Str}})
		case kv.Key != "" && !strings.HasPrefix(kv.Key, "$"):
			out = append(out, Path{{Kind: StepKey, Key: kv.Key}})
		default:
			out = append(out, Path{{Kind: StepWildcard}})
		}
	}
	return out, ""
}

func isIdentity(q *gojq.Query) bool {
	return q != nil && q.Term != nil && q.Term.Type == gojq.TermTypeIdentity && len(q.Term.SuffixList) == 0 && len(q.FuncDefs) == 0
}

// collectDefs records the functions and closure parameters the expression
// defines anywhere.
func (a *jqWrites) collectDefs(q *gojq.Query) {
	walkQuery(q, func(q *gojq.Query) {
		for _, fd := range q.FuncDefs {
			a.defined[fd.Name] = true
			for _, arg := range fd.Args {
				a.defined[strings.TrimPrefix(arg, "$")] = true
			}
		}
	})
}

// walkQuery calls f on q and on every query inside it.
func walkQuery(q *gojq.Query, f func(*gojq.Query)) {
	if q == nil {
		return
	}
	f(q)
	for _, fd := range q.FuncDefs {
		walkQuery(fd.Body, f)
	}
	walkTerm(q.Term, f)
	walkQuery(q.Left, f)
	walkQuery(q.Right, f)
	for _, p := range q.Patterns {
		walkPattern(p, f)
	}
}

func walkTerm(t *gojq.Term, f func(*gojq.Query)) {
	if t == nil {
		return
	}
	walkIndex(t.Index, f)
	if t.Func != nil {
		for _, a := range t.Func.Args {
			walkQuery(a, f)
		}
	}
	if t.Object != nil {
		for _, kv := range t.Object.KeyVals {
			walkString(kv.KeyString, f)
			walkQuery(kv.KeyQuery, f)
			walkQuery(kv.Val, f)
		}
	}
	if t.Array != nil {
		walkQuery(t.Array.Query, f)
	}
	if t.Unary != nil {
		walkTerm(t.Unary.Term, f)
	}
	walkString(t.Str, f)
	if t.If != nil {
		walkQuery(t.If.Cond, f)
		walkQuery(t.If.Then, f)
		for _, e := range t.If.Elif {
			walkQuery(e.Cond, f)
			walkQuery(e.Then, f)
		}
		walkQuery(t.If.Else, f)
	}
	if t.Try != nil {
		walkQuery(t.Try.Body, f)
		walkQuery(t.Try.Catch, f)
	}
	if r := t.Reduce; r != nil {
		walkQuery(r.Query, f)
		for _, p := range r.Patterns {
			walkPattern(p, f)
		}
		walkQuery(r.Start, f)
		walkQuery(r.Update, f)
	}
	if r := t.Foreach; r != nil {
		walkQuery(r.Query, f)
		for _, p := range r.Patterns {
			walkPattern(p, f)
		}
		walkQuery(r.Start, f)
		walkQuery(r.Update, f)
		walkQuery(r.Extract, f)
	}
	if t.Label != nil {
		walkQuery(t.Label.Body, f)
	}
	walkQuery(t.Query, f)
	for _, s := range t.SuffixList {
		walkIndex(s.Index, f)
	}
}

func walkIndex(ix *gojq.Index, f func(*gojq.Query)) {
	if ix == nil {
		return
	}
	walkString(ix.Str, f)
	walkQuery(ix.Start, f)
	walkQuery(ix.End, f)
}

func walkString(s *gojq.String, f func(*gojq.Query)) {
	if s == nil {
		return
	}
	for _, q := range s.Queries {
		walkQuery(q, f)
	}
}

func walkPattern(p *gojq.Pattern, f func(*gojq.Query)) {
	if p == nil {
		return
	}
	for _, e := range p.Array {
		walkPattern(e, f)
	}
	for _, o := range p.Object {
		walkString(o.KeyString, f)
		walkQuery(o.KeyQuery, f)
		walkPattern(o.Val, f)
	}
}
