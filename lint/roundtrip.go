package lint

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/mvpctl/mvpctl/engine"
	"github.com/mvpctl/mvpctl/rules"
)

// maxShrinkRuns bounds the conversions spent minimizing one failing sample.
const maxShrinkRuns = 400

// failure is what went wrong with one sample.
type failure struct {
	id     string
	path   string // first differing field
	detail string
	err    error
	step   string // forward or reverse, for conversion errors
}

// checkRoundTrips converts samples of each rule's two versions there and
// back with both executors: reverse(forward(x)) == x for objects of
// fromVersion, forward(reverse(y)) == y for objects of toVersion.
func (l *linter) checkRoundTrips() error {
	if l.opts.Samples == 0 && len(l.opts.Examples) == 0 {
		return nil
	}
	for i := range l.clean {
		r := &l.clean[i]
		if r.compiled == nil {
			continue
		}
		if err := l.ctx.Err(); err != nil {
			return err
		}
		l.roundTripRule(r)
	}
	return nil
}

type pair struct{ native, jq *engine.Converter }

func (l *linter) roundTripRule(r *ruleInfo) {
	mr := r.ref.Rule
	cs := []*rules.Compiled{r.compiled}
	conv := pair{engine.NewConverter(cs, engine.Options{Executor: engine.Native}), engine.NewConverter(cs, engine.Options{Executor: engine.JQ})}
	fromGV := schema.GroupVersion{Group: mr.APIGroup, Version: mr.FromVersion}
	toGV := schema.GroupVersion{Group: mr.TargetGroup(), Version: mr.ToVersion}
	for _, dir := range []rules.Direction{rules.Forward, rules.Reverse} {
		start, other := fromGV, toGV
		group, version, preferNew := mr.APIGroup, mr.FromVersion, false
		if dir == rules.Reverse {
			start, other = toGV, fromGV
			group, version, preferNew = mr.TargetGroup(), mr.ToVersion, true
		}
		var objs []Example
		for _, ex := range l.opts.Examples {
			if av, _ := ex.Object["apiVersion"].(string); av == start.String() && l.exampleFits(mr, ex.Object) {
				objs = append(objs, Example{Name: ex.Name, Object: rules.DeepCopyJSON(ex.Object).(map[string]any)})
			}
		}
		if l.opts.Samples > 0 {
			k := l.kindSchema(mr, group, version, preferNew)
			if k == nil {
				fld, also := "fromVersion", ""
				if dir == rules.Reverse {
					fld = "toVersion"
				}
				if len(objs) > 0 {
					also = fmt.Sprintf("; only the %d given example object(s) were round-tripped", len(objs))
				}
				l.addRule(IDSamplesSkipped, r, fld, gvString(group, version)+" "+mr.Resource, also)
			}
			if k != nil {
				g := newGenerator(l.opts.Seed, mr, dir)
				root := newSNode(k.Schema)
				for range l.opts.Samples {
					objs = append(objs, Example{Name: "sample", Object: g.object(root, start.String(), k.Kind)})
				}
			}
		}
		for _, ex := range objs {
			l.samples++
			f := roundTrip(l.ctx, conv, ex.Object, start, other, dir)
			if f == nil {
				continue
			}
			min := shrink(l.ctx, conv, ex.Object, start, other, dir, f)
			f = roundTrip(l.ctx, conv, min, start, other, dir)
			if f == nil { // cannot happen: shrink keeps failing inputs only
				continue
			}
			l.reportRoundTrip(r, dir, ex.Name, f, min)
			break // one failure per rule and direction
		}
	}
}

// exampleFits reports whether an example object is of the rule's resource.
func (l *linter) exampleFits(mr *rules.MigrationRule, obj map[string]any) bool {
	kind, _ := obj["kind"].(string)
	if mr.Kind != "" {
		return kind == mr.Kind
	}
	return strings.EqualFold(kind+"s", mr.Resource) || strings.EqualFold(kind+"es", mr.Resource) || strings.EqualFold(strings.TrimSuffix(kind, "y")+"ies", mr.Resource)
}

func (l *linter) reportRoundTrip(r *ruleInfo, dir rules.Direction, name string, f *failure, example map[string]any) {
	what := "a sample of " + r.ref.Rule.FromVersion
	id := f.id
	if dir == rules.Reverse {
		what = "a sample of " + gvString(r.ref.Rule.TargetGroup(), r.ref.Rule.ToVersion)
	} else {
		what = "a sample of " + gvString(r.ref.Rule.APIGroup, r.ref.Rule.FromVersion)
	}
	if name != "sample" {
		what = name
	}
	ex := compactJSON(example)
	fld := l.blame(r, f.path)
	var fd *Finding
	switch id {
	case IDConversionError:
		fd = l.addRule(id, r, fld, f.step, what, f.err, ex)
	case IDExecutorMismatch:
		fd = l.addRule(id, r, fld, f.step, what, orRoot(f.path), f.detail, ex)
	default:
		fd = l.addRule(id, r, fld, what, orRoot(f.path), f.detail, ex)
	}
	if fd != nil {
		fd.Example = example
	}
}

func orRoot(p string) string {
	if p == "" {
		return "the object"
	}
	return p
}

// blame finds the transformation that works on a field, to position a
// round-trip finding; without one, the rule's transformations.
func (l *linter) blame(r *ruleInfo, path string) string {
	best, bestLen := "", -1
	if p, err := rules.ParsePath(path); path != "" && err == nil {
		sp := schemaPath(p)
		for i, t := range r.ref.Rule.Transformations {
			for _, name := range []string{"path", "targetPath"} {
				s := t.Path
				if name == "targetPath" {
					s = t.TargetPath
				}
				tp, err := rules.ParsePath(s)
				if s == "" || err != nil {
					continue
				}
				tp = schemaPath(tp)
				n := min(len(tp), len(sp))
				if (hasPrefix(sp, tp) || hasPrefix(tp, sp)) && n > bestLen {
					best, bestLen = tfield(i, name), n
				}
			}
		}
	}
	if best == "" && len(r.ref.Rule.Transformations) > 0 {
		best = "transformations"
	}
	return best
}

// roundTrip converts x to other and back with both executors and says
// what went wrong, or nil.
func roundTrip(ctx context.Context, c pair, x map[string]any, start, other schema.GroupVersion, dir rules.Direction) *failure {
	there, back := dir.String(), "reverse"
	id := IDRoundTripForward
	if dir == rules.Reverse {
		back, id = "forward", IDRoundTripReverse
	}
	a, err := c.native.Convert(ctx, copyObj(x), other)
	aj, errj := c.jq.Convert(ctx, copyObj(x), other)
	if f := compareExecutors(there, a, err, aj, errj); f != nil {
		return f
	}
	b, err := c.native.Convert(ctx, copyObj(a), start)
	bj, errj := c.jq.Convert(ctx, copyObj(a), start)
	if f := compareExecutors(back, b, err, bj, errj); f != nil {
		return f
	}
	if p, d, differ := firstDiff(x, b, nil); differ {
		return &failure{id: id, path: p, detail: d}
	}
	return nil
}

func compareExecutors(step string, a map[string]any, err error, aj map[string]any, errj error) *failure {
	switch {
	case err != nil && errj != nil:
		return &failure{id: IDConversionError, step: step, err: err, path: errPath(err)}
	case err != nil || errj != nil:
		e := err
		if e == nil {
			e = errj
		}
		return &failure{id: IDExecutorMismatch, step: step, detail: "only one of them fails: " + e.Error(), path: errPath(e)}
	}
	if p, d, differ := firstDiff(a, aj, nil); differ {
		return &failure{id: IDExecutorMismatch, step: step, path: p, detail: strings.Replace(d, "got", "native", 1)}
	}
	return nil
}

// errPath is the field a step error names, if any.
func errPath(err error) string {
	var se *engine.StepError
	if errors.As(err, &se) {
		return se.Path
	}
	return ""
}

// shrink removes fields from a failing input while it keeps failing the
// same way, giving a small example.
func shrink(ctx context.Context, c pair, x map[string]any, start, other schema.GroupVersion, dir rules.Direction, f *failure) map[string]any {
	cur := copyObj(x)
	runs := 0
	for changed := true; changed && runs < maxShrinkRuns; {
		changed = false
		for _, p := range removable(cur) {
			if runs >= maxShrinkRuns {
				break
			}
			cand := copyObj(cur)
			if !deletePath(cand, p) {
				continue
			}
			runs++
			if g := roundTrip(ctx, c, cand, start, other, dir); g != nil && g.id == f.id {
				cur, changed = cand, true
				break
			}
		}
	}
	return cur
}

// removable lists the paths of an object's members and array elements,
// larger subtrees first, leaving apiVersion and kind.
func removable(obj map[string]any) [][]any {
	var out [][]any
	var walk func(v any, at []any)
	walk = func(v any, at []any) {
		switch v := v.(type) {
		case map[string]any:
			for _, k := range slices.Sorted(maps.Keys(v)) {
				if len(at) == 0 && (k == "apiVersion" || k == "kind") {
					continue
				}
				p := append(append([]any{}, at...), k)
				out = append(out, p)
				walk(v[k], p)
			}
		case []any:
			for i := len(v) - 1; i >= 0; i-- {
				p := append(append([]any{}, at...), i)
				out = append(out, p)
				walk(v[i], p)
			}
		}
	}
	walk(obj, nil)
	sort.SliceStable(out, func(i, j int) bool { return len(out[i]) < len(out[j]) })
	return out
}

func deletePath(obj map[string]any, p []any) bool {
	var cur any = obj
	for i, e := range p {
		last := i == len(p)-1
		switch c := cur.(type) {
		case map[string]any:
			k, _ := e.(string)
			if _, ok := c[k]; !ok {
				return false
			}
			if last {
				delete(c, k)
				return true
			}
			cur = c[k]
		case []any:
			n, _ := e.(int)
			if n >= len(c) {
				return false
			}
			if last {
				parent := p[:i]
				return setPath(obj, parent, append(append([]any{}, c[:n]...), c[n+1:]...))
			}
			cur = c[n]
		default:
			return false
		}
	}
	return false
}

func setPath(obj map[string]any, p []any, v any) bool {
	var cur any = obj
	for i, e := range p {
		last := i == len(p)-1
		switch c := cur.(type) {
		case map[string]any:
			k, _ := e.(string)
			if last {
				c[k] = v
				return true
			}
			cur = c[k]
		case []any:
			n, _ := e.(int)
			if last {
				c[n] = v
				return true
			}
			cur = c[n]
		default:
			return false
		}
	}
	return false
}

// firstDiff finds the first field (in sorted key order) where two values
// differ and describes the difference as "got ..., want ...".
func firstDiff(want, got any, at []any) (string, string, bool) {
	wm, wok := want.(map[string]any)
	gm, gok := got.(map[string]any)
	if wok && gok {
		keys := map[string]bool{}
		for k := range wm {
			keys[k] = true
		}
		for k := range gm {
			keys[k] = true
		}
		for _, k := range slices.Sorted(maps.Keys(keys)) {
			p := append(append([]any{}, at...), k)
			wv, win := wm[k]
			gv, gin := gm[k]
			switch {
			case !gin:
				return rules.ConcretePathString(p), "missing, want " + short(wv), true
			case !win:
				return rules.ConcretePathString(p), "got " + short(gv) + ", want no field", true
			}
			if s, d, ok := firstDiff(wv, gv, p); ok {
				return s, d, true
			}
		}
		return "", "", false
	}
	ws, wok := want.([]any)
	gs, gok := got.([]any)
	if wok && gok && len(ws) == len(gs) {
		for i := range ws {
			if s, d, ok := firstDiff(ws[i], gs[i], append(append([]any{}, at...), i)); ok {
				return s, d, true
			}
		}
		return "", "", false
	}
	if rules.EqualJSON(want, got) {
		return "", "", false
	}
	return rules.ConcretePathString(at), "got " + short(got) + ", want " + short(want), true
}

func short(v any) string {
	s := compactJSON(v)
	if len(s) > 80 {
		s = s[:77] + "..."
	}
	return s
}

func compactJSON(v any) string {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return fmt.Sprint(v)
	}
	return strings.TrimSuffix(b.String(), "\n")
}

func copyObj(m map[string]any) map[string]any {
	if m == nil {
		return nil
	}
	return rules.DeepCopyJSON(m).(map[string]any)
}

func unmarshalNumber(b []byte, out *any) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	return dec.Decode(out)
}
