package schemadiff

import (
	"encoding/json"
	"fmt"
	"math"
	"sort"
	"strings"
	"unicode"
)

// rawJSON is a JSON-encoded value that marshals as itself.
type rawJSON string

func (r rawJSON) MarshalJSON() ([]byte, error) { return []byte(r), nil }

// value decodes r keeping numbers exact.
func (r rawJSON) value() any {
	dec := json.NewDecoder(strings.NewReader(string(r)))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return string(r)
	}
	return v
}

// Thresholds for moves: below minMoveScore a pair is not a move; from
// ConfidentMove on the drafted rename needs no review.
const (
	minMoveScore  = 0.45
	ConfidentMove = 0.7
)

type moveCand struct {
	o, n     *node
	work     string
	score    float64
	evidence []string
	split    bool
}

// matchMoves pairs fields only the old version has with fields only the new
// one has, by evidence, best first, each field at most once and never a field
// together with one of its ancestors.
func matchMoves(sc *scope) []moveCand {
	type oldCand struct {
		n    *node
		work string
	}
	var olds []oldCand
	for _, c := range sc.deleted {
		c.n.walk(func(m *node) {
			if !m.inMap() && m.name != "[*]" {
				olds = append(olds, oldCand{m, c.work + c.n.rel(m)})
			}
		})
	}
	var news []*node
	for _, a := range sc.added {
		a.walk(func(m *node) {
			if !m.inMap() && m.name != "[*]" {
				news = append(news, m)
			}
		})
	}
	// Objects and lists first: spec.backend → spec.defaultBackend must win
	// over its child resource → defaultBackend.resource, whose move it
	// implies. Leaves compete in the second round.
	var out []moveCand
	var usedO, usedN []*node
	conflicts := func(used []*node, x *node) bool {
		for _, u := range used {
			if u == x || u.isAncestorOf(x) || x.isAncestorOf(u) {
				return true
			}
		}
		return false
	}
	for _, containers := range []bool{true, false} {
		var cands []moveCand
		for _, o := range olds {
			if containers && scalar(o.n.Type) {
				continue
			}
			for _, n := range news {
				if containers && scalar(n.Type) {
					continue
				}
				if c, ok := scoreMove(o.n, n, o.work); ok {
					c.work = o.work
					cands = append(cands, c)
				}
			}
		}
		sortCands(cands)
		if containers {
			// An enclosing object's move implies its children's: consider
			// shallower old objects first.
			sort.SliceStable(cands, func(i, j int) bool { return depth(cands[i].o) < depth(cands[j].o) })
		}
		for _, c := range cands {
			if conflicts(usedO, c.o) || conflicts(usedN, c.n) {
				continue
			}
			usedO = append(usedO, c.o)
			usedN = append(usedN, c.n)
			out = append(out, c)
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].o.Path < out[j].o.Path })
	return out
}

func depth(n *node) int {
	d := 0
	for p := n.parent; p != nil; p = p.parent {
		d++
	}
	return d
}

func sortCands(cands []moveCand) {
	sort.SliceStable(cands, func(i, j int) bool {
		a, b := cands[i], cands[j]
		if a.score != b.score {
			return a.score > b.score
		}
		if a.o.Path != b.o.Path {
			return a.o.Path < b.o.Path
		}
		return a.n.Path < b.n.Path
	})
}

// scoreMove weighs the evidence that old field o became new field n.
func scoreMove(o, n *node, work string) (moveCand, bool) {
	c := moveCand{o: o, n: n}
	add := func(w float64, format string, args ...any) {
		if w <= 0 {
			return
		}
		c.score += w
		c.evidence = append(c.evidence, fmt.Sprintf(format, args...))
	}
	// Shape: the values must be able to hold the same data.
	switch {
	case o.Type == TypeIntOrString && n.Type == TypeObject && isNumberNameSplit(n):
		c.split = true
		add(0.1, "int-or-string split into %s", childNames(n))
	case o.Type == n.Type && (o.Type == TypeObject || o.Type == TypeArray || o.Type == TypeMap):
		sim := structureSimilarity(o, n)
		found := leafContainment(o, n)
		if sim < 0.3 && found < 0.8 && !(len(o.children) == 0 && len(n.children) == 0) {
			return c, false
		}
		add(0.35*sim, "structure %.0f%% alike", sim*100)
		if found >= 0.8 && sim < 0.5 {
			// Its fields were renamed inside, or the new one grew: the old
			// leaves are all there by name (podGroups → podGroupTemplates).
			add(0.2*found, "%.0f%% of its fields found below by name", found*100)
		}
		if o.Ref != "" && shortRef(o.Ref) == shortRef(n.Ref) {
			add(0.15, "both are %s", shortRef(o.Ref))
		}
	case o.Type == n.Type:
		add(0.1, "same type %s", o.Type)
		if o.Format == n.Format && o.Format != "" {
			add(0.05, "same format %s", o.Format)
		}
		if len(o.Enum) > 0 && strings.Join(o.Enum, ",") == strings.Join(n.Enum, ",") {
			add(0.1, "same enum")
		}
	case scalar(o.Type) && scalar(n.Type):
		c.score -= 0.15
		c.evidence = append(c.evidence, fmt.Sprintf("type %s → %s", o.Type, n.Type))
	default:
		return c, false
	}
	// Names.
	on, nn := o.name, n.name
	switch {
	case on == nn && on != "[*]":
		add(0.4, "same name %q", on)
	case strings.EqualFold(on, nn):
		add(0.35, "same name %q but for case", nn)
	case n.parent != nil && n.parent.name != "" && strings.EqualFold(on, n.parent.name+nn):
		add(0.45, "%s = %s.%s", on, n.parent.name, nn)
	case suffixName(nn, on) || suffixName(on, nn):
		add(0.3, "%q and %q share a suffix", on, nn)
	case prefixName(nn, on) || prefixName(on, nn):
		add(0.3, "%q and %q share a prefix", on, nn)
	default:
		add(0.3*jaccard(camelTokens(on), camelTokens(nn)), "name tokens overlap")
	}
	// Parents: a rename in place, or a move one level down.
	op, np := parentOf(work), parentPath(n)
	switch {
	case op == np:
		add(0.15, "same parent")
	case strings.HasPrefix(np, op) && op != "":
		add(0.1, "moved below %s", np)
	}
	// Documentation.
	if s := jaccard(o.descWords(), n.descWords()); s > 0 {
		add(0.25*s, "descriptions %.0f%% alike", s*100)
	}
	if o.wildcards() != n.wildcards() {
		c.score -= 0.3
		c.evidence = append(c.evidence, "different list nesting")
	}
	c.score = math.Round(math.Min(c.score, 1)*100) / 100
	return c, c.score >= minMoveScore
}

func scalar(t string) bool {
	switch t {
	case TypeString, TypeInteger, TypeNumber, TypeBoolean, TypeIntOrString:
		return true
	}
	return false
}

// isNumberNameSplit matches Kubernetes' ServiceBackendPort: an object of one
// integer and one string field.
func isNumberNameSplit(n *node) bool {
	if len(n.children) != 2 {
		return false
	}
	var i, s int
	for _, c := range n.children {
		switch c.Type {
		case TypeInteger:
			i++
		case TypeString:
			s++
		}
	}
	return i == 1 && s == 1
}

func childNames(n *node) string {
	var s []string
	for _, c := range n.children {
		s = append(s, c.name)
	}
	return n.name + "." + strings.Join(s, "|")
}

func parentPath(n *node) string {
	if n.parent == nil {
		return ""
	}
	return n.parent.Path
}

// shortRef drops the package from a definition name:
// io.k8s.api.networking.v1.IngressBackend → IngressBackend.
func shortRef(r string) string {
	if i := strings.LastIndex(r, "."); i >= 0 {
		return r[i+1:]
	}
	return r
}

// suffixName reports whether long ends with short as a camelCase word:
// defaultBackend ends with backend.
func suffixName(long, short string) bool {
	if len(long) <= len(short) || short == "" || short == "[*]" {
		return false
	}
	cap := strings.ToUpper(short[:1]) + short[1:]
	return strings.HasSuffix(long, cap)
}

// prefixName reports whether long starts with short followed by a new
// camelCase word: timeoutSeconds starts with timeout.
func prefixName(long, short string) bool {
	return len(long) > len(short) && short != "" && strings.HasPrefix(long, short) && unicode.IsUpper(rune(long[len(short)]))
}

// structureSimilarity is the Jaccard index of the two subtrees' relative
// paths with types.
func structureSimilarity(a, b *node) float64 {
	set := func(r *node) map[string]bool {
		if r.shape != nil {
			return r.shape
		}
		m := map[string]bool{}
		r.walk(func(x *node) {
			if x != r {
				m[r.rel(x)+" "+x.Type] = true
			}
		})
		r.shape = m
		return m
	}
	sa, sb := set(a), set(b)
	if len(sa) == 0 && len(sb) == 0 {
		return 1
	}
	return jaccard(sa, sb)
}

// leafContainment is the share of a's leaf names (with types) that b's
// subtree has somewhere; 0 for subtrees of fewer than two leaves.
func leafContainment(a, b *node) float64 {
	names := func(r *node) map[string]bool {
		m := map[string]bool{}
		r.walk(func(x *node) {
			if x != r && x.children == nil && x.elem == nil {
				m[x.name+" "+x.Type] = true
			}
		})
		return m
	}
	na, nb := names(a), names(b)
	if len(na) < 2 {
		return 0
	}
	in := 0
	for k := range na {
		if nb[k] {
			in++
		}
	}
	return float64(in) / float64(len(na))
}

func jaccard(a, b map[string]bool) float64 {
	if len(a) == 0 || len(b) == 0 {
		return 0
	}
	inter := 0
	for k := range a {
		if b[k] {
			inter++
		}
	}
	return float64(inter) / float64(len(a)+len(b)-inter)
}

func camelTokens(s string) map[string]bool {
	m := map[string]bool{}
	start := 0
	for i, r := range s {
		if i > 0 && unicode.IsUpper(r) {
			m[strings.ToLower(s[start:i])] = true
			start = i
		}
	}
	if start < len(s) {
		m[strings.ToLower(s[start:])] = true
	}
	return m
}

var stopWords = map[string]bool{"the": true, "and": true, "this": true, "that": true, "for": true, "are": true, "with": true, "will": true, "not": true, "can": true, "must": true, "field": true, "from": true, "which": true, "when": true, "more": true, "info": true}

// words is the set of lower-case words of three letters or more.
func words(s string) map[string]bool {
	m := map[string]bool{}
	for _, w := range strings.FieldsFunc(strings.ToLower(s), func(r rune) bool { return !unicode.IsLetter(r) }) {
		if len(w) >= 3 && !stopWords[w] {
			m[w] = true
		}
	}
	return m
}

func (n *node) descWords() map[string]bool {
	if n.words == nil {
		n.words = words(n.Description)
	}
	return n.words
}
