package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	gojson "github.com/goccy/go-json"
	"maps"
	"slices"
	"sort"
	"strings"

	"github.com/mvpctl/mvpctl/rules"
)

// runNative executes a program's ops directly on Go maps. It has the same
// semantics as the program's jq source (rules/mvp.jq) and is what the
// converter runs by default, because it costs a fraction of the jq
// interpreter; TestExecutors_Agree runs both on every golden case. obj is
// modified in place and must be owned by the caller. data, when not nil, is
// obj's round-trip annotation already decoded (and then consumed).
func runNative(ctx context.Context, p *rules.Program, obj map[string]any, data map[string]any) (map[string]any, error) {
	st, err := beginNative(p, obj, data)
	if err != nil {
		return nil, err
	}
	for i := range p.Ops {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		op := &p.Ops[i]
		if op.WhenJQ != nil {
			ok, err := evalWhen(ctx, op.WhenJQ, st.obj)
			if err != nil {
				return nil, &StepError{Op: op, Err: err}
			}
			if !ok {
				continue
			}
		}
		switch op.Kind {
		case rules.OpValue:
			err = st.value(ctx, op)
		case rules.OpMove:
			err = st.move(op)
		case rules.OpObject:
			err = st.object(ctx, op)
		}
		if err != nil {
			return nil, err
		}
	}
	return st.end(p)
}

// StepError is a failure of one step of a program.
type StepError struct {
	Op *rules.Op
	// Path is the concrete field path where the step failed, if any.
	Path string
	Err  error
}

func (e *StepError) Error() string {
	where := fmt.Sprintf("transformations[%d] (%s)", e.Op.Index, e.Op.Describe)
	if e.Path != "" {
		where += " at " + e.Path
	}
	return where + ": " + e.Err.Error()
}

func (e *StepError) Unwrap() error { return e.Err }

// nativeState is the Go form of the jq wrapper {o, d, w, all} of
// rules/mvp.jq: the object and its round-trip data (the annotation) while
// one program runs.
type nativeState struct {
	// obj is the object (the wrapper's o).
	obj map[string]any
	// read is the round-trip data this rule left on the object in the other
	// direction (d), read and dropped: step key → path → maybe-value.
	read map[string]any
	// written is the data this direction leaves for the way back (w): step
	// key → path → maybe-value.
	written map[string]map[string]any
	// others is the conversion data of the other rules (all), kept as it is.
	others map[string]any
}

func beginNative(p *rules.Program, obj map[string]any, m map[string]any) (*nativeState, error) {
	st := &nativeState{obj: obj, written: map[string]map[string]any{}, others: map[string]any{}}
	meta, _ := obj["metadata"].(map[string]any)
	ann, _ := meta["annotations"].(map[string]any)
	raw, ok := ann[rules.ConversionDataAnnotation]
	if !ok || raw == nil {
		return st, nil
	}
	if m == nil {
		s, _ := raw.(string)
		dec := json.NewDecoder(strings.NewReader(s))
		dec.UseNumber()
		var all any
		if err := dec.Decode(&all); err != nil || dec.More() {
			all = nil
		}
		var isMap bool
		if m, isMap = all.(map[string]any); !isMap {
			return nil, fmt.Errorf("annotation %s is not valid conversion data", rules.ConversionDataAnnotation)
		}
	}
	delete(ann, rules.ConversionDataAnnotation)
	created, _ := m["$created"].([]any)
	if contains(created, "annotations") && len(ann) == 0 {
		delete(meta, "annotations")
	}
	if contains(created, "metadata") && len(meta) == 0 {
		delete(obj, "metadata")
	}
	st.read, _ = m[p.RuleID].(map[string]any)
	delete(m, p.RuleID)
	delete(m, "$created")
	st.others = m
	return st, nil
}

func contains(list []any, s string) bool {
	for _, e := range list {
		if e == s {
			return true
		}
	}
	return false
}

func (st *nativeState) end(p *rules.Program) (map[string]any, error) {
	data := st.others
	if len(st.written) > 0 {
		w := make(map[string]any, len(st.written))
		for k, v := range st.written {
			w[k] = v
		}
		data[p.RuleID] = w
	}
	obj := st.obj
	if len(data) > 0 {
		meta, hasMeta := obj["metadata"].(map[string]any)
		var created []any
		if obj["metadata"] == nil {
			created = []any{"metadata", "annotations"}
		} else if hasMeta && meta["annotations"] == nil {
			created = []any{"annotations"}
		}
		if len(created) > 0 {
			data["$created"] = created
		}
		// Sorted keys and no HTML escaping: the same text as jq's tojson.
		b, err := gojson.MarshalWithOption(data, gojson.DisableHTMLEscape())
		if err != nil {
			return nil, fmt.Errorf("encoding conversion data: %w", err)
		}
		js := string(b)
		if len(js) > p.Limit {
			return nil, fmt.Errorf("conversion data needs %d bytes, more than the limit of %d", len(js), p.Limit)
		}
		if !hasMeta {
			if obj["metadata"] != nil {
				return nil, fmt.Errorf("metadata is not an object")
			}
			meta = map[string]any{}
			obj["metadata"] = meta
		}
		ann, ok := meta["annotations"].(map[string]any)
		if !ok {
			if meta["annotations"] != nil {
				return nil, fmt.Errorf("metadata.annotations is not an object")
			}
			ann = map[string]any{}
			meta["annotations"] = ann
		}
		ann[rules.ConversionDataAnnotation] = js
	}
	obj["apiVersion"] = p.To.String()
	return obj, nil
}

// maybe is a field that may be absent.
type maybe struct {
	v       any
	present bool
}

func (m maybe) equal(o maybe) bool {
	return m.present == o.present && (!m.present || rules.EqualJSON(m.v, o.v))
}

// asData renders a maybe-value as stored in conversion data: [] or [v].
func (m maybe) asData() any {
	if !m.present {
		return []any{}
	}
	return []any{rules.DeepCopyJSON(m.v)}
}

func fromData(v any) (maybe, error) {
	s, ok := v.([]any)
	if !ok || len(s) > 1 {
		return maybe{}, fmt.Errorf("invalid conversion data entry %v", v)
	}
	if len(s) == 0 {
		return maybe{}, nil
	}
	return maybe{v: s[0], present: true}, nil
}

func (st *nativeState) value(ctx context.Context, op *rules.Op) error {
	if op.CreatesParents() {
		return st.set(ctx, op)
	}
	d, _ := st.read[op.Key].(map[string]any)
	for _, q := range candidates(st.obj, op.PathElems) {
		x := get(st.obj, q)
		y, err := st.image(ctx, op, d, q, x)
		if err == nil {
			err = put(st.obj, q, y)
		}
		if err != nil {
			return &StepError{Op: op, Path: rules.ConcretePathString(q), Err: err}
		}
	}
	return nil
}

// image is what a value step makes of x, the maybe-value at the concrete
// path q: the other direction's data when R of it gives x back (the field
// was not changed since), else F of x. It keeps x in round-trip data when R
// of the image does not give x back.
func (st *nativeState) image(ctx context.Context, op *rules.Op, d map[string]any, q []any, x maybe) (maybe, error) {
	y, used, err := fromOther(ctx, op, d, q, x)
	if err != nil {
		return maybe{}, err
	}
	if !used {
		if y, err = applyFn(ctx, op.F, x); err != nil {
			return maybe{}, err
		}
	}
	back, err := applyFn(ctx, op.R, y)
	if err != nil {
		return maybe{}, err
	}
	if !back.equal(x) {
		st.keep(op.Key, rules.ConcretePathString(q), x)
	}
	return y, nil
}

// fromOther returns what the other direction kept for the field at q, if R
// of it gives x back.
func fromOther(ctx context.Context, op *rules.Op, d map[string]any, q []any, x maybe) (maybe, bool, error) {
	if len(d) == 0 {
		return maybe{}, false, nil
	}
	raw, ok := d[rules.ConcretePathString(q)]
	if !ok || raw == nil {
		return maybe{}, false, nil
	}
	s, err := fromData(raw)
	if err != nil {
		return maybe{}, false, err
	}
	rs, err := applyFn(ctx, op.R, s)
	if err != nil || !rs.equal(x) {
		return maybe{}, false, err
	}
	return s, true, nil
}

// set is mvp_set: a value step whose field may lie under missing objects.
// Writing a value creates the missing objects after the path's last
// wildcard or index (a parent holding anything but an object or null is an
// error). Where R writes the field from nothing, removing the field removes
// the objects that leaves empty and puts back an empty or null parent that
// round-trip data names; where F does, such a parent, which the way back
// would remove, is kept in round-trip data.
func (st *nativeState) set(ctx context.Context, op *rules.Op) error {
	b := tail(op.PathElems)
	fMakes, rMakes := op.F.Kind == rules.FnConst, op.R.Kind == rules.FnConst
	d, _ := st.read[op.Key].(map[string]any)
	for _, q := range sites(st.obj, op.PathElems) {
		x := get(st.obj, q)
		y, err := st.image(ctx, op, d, q, x)
		if err == nil {
			err = st.setAt(op, d, q, b, x, y, fMakes, rMakes)
		}
		if err != nil {
			return &StepError{Op: op, Path: rules.ConcretePathString(q), Err: err}
		}
	}
	return nil
}

// setAt changes the field at q from x to y for set.
func (st *nativeState) setAt(op *rules.Op, d map[string]any, q []any, b int, x, y maybe, fMakes, rMakes bool) error {
	switch {
	case y.present:
		if why, ok := blocked(st.obj, q, b); ok {
			return errors.New(why)
		}
		var before []maybe
		if !x.present && fMakes {
			before = parentsBefore(st.obj, q, b)
		}
		if err := put(st.obj, q, y); err != nil {
			return err
		}
		if before != nil {
			st.keepRemovedParent(op.Key, q, b, before)
		}
	case x.present:
		if err := put(st.obj, q, maybe{}); err != nil {
			return err
		}
		if rMakes {
			prune(st.obj, q, q[:b])
			return restoreParents(st.obj, d, q, b)
		}
	}
	return nil
}

// parentsBefore records the parents q[:n] of q after position b as they
// are before a write; the empty ones, which the write may fill in place,
// are copied.
func parentsBefore(obj map[string]any, q []any, b int) []maybe {
	if len(q) <= b+1 {
		return nil // no parent a set step may create
	}
	before := make([]maybe, len(q))
	for n := b + 1; n < len(q); n++ {
		m := get(obj, q[:n])
		if m.present && emptyish(m.v) {
			m.v = rules.DeepCopyJSON(m.v)
		}
		before[n] = m
	}
	return before
}

// keepRemovedParent keeps, after a write at q, the topmost parent that was
// there before and that removing q again would remove with the objects it
// leaves empty: those holding nothing but the way to q.
func (st *nativeState) keepRemovedParent(key string, q []any, b int, before []maybe) {
	n := len(q) - 1
	for n > b {
		if m, ok := getpath(st.obj, q[:n]).(map[string]any); !ok || len(m) != 1 {
			break
		}
		n--
	}
	for n++; n < len(q); n++ {
		if before[n].present {
			st.keep(key, rules.ConcretePathString(q[:n]), before[n])
			return
		}
	}
}

// restoreParents puts back, after removing q and the objects that left
// empty, the parents that round-trip data names: only where one is now
// absent, and only empty objects or null, as nothing else is kept for them.
func restoreParents(obj map[string]any, d map[string]any, q []any, b int) error {
	if len(d) == 0 {
		return nil
	}
	for n := b + 1; n < len(q); n++ {
		raw, ok := d[rules.ConcretePathString(q[:n])]
		if !ok || raw == nil {
			continue
		}
		s, err := fromData(raw)
		if err != nil {
			return err
		}
		if !s.present || !emptyish(s.v) || get(obj, q[:n]).present {
			continue
		}
		s.v = rules.DeepCopyJSON(s.v)
		if err := put(obj, q[:n], s); err != nil {
			return err
		}
	}
	return nil
}

func (st *nativeState) keep(key, path string, x maybe) {
	w := st.written[key]
	if w == nil {
		w = map[string]any{}
		st.written[key] = w
	}
	w[path] = x.asData()
}

func (st *nativeState) move(op *rules.Op) error {
	d, _ := st.read[op.Key].(map[string]any)
	for _, q := range expand(st.obj, op.PathElems, 0) {
		t := bind(op.TargetElems, op.PathElems, q)
		c := commonLen(q, t)
		prev := get(st.obj, t)
		if prev.present {
			st.keep(op.Key, rules.ConcretePathString(t), prev)
		}
		// The target's parents as they were, for what the move back cannot
		// give back (see mvp_move). Only empty values can need keeping.
		before := make([]maybe, len(t))
		// Parents that existed with content survive any move back, so the
		// simulation below is needed only when one was absent or empty.
		simulate := false
		for n := c + 1; n < len(t); n++ {
			m := get(st.obj, t[:n])
			if !m.present || emptyish(m.v) {
				simulate = true
			}
			if m.present && emptyish(m.v) {
				m.v = rules.DeepCopyJSON(m.v)
			}
			before[n] = m
		}
		if why, ok := blocked(st.obj, t, 1); ok {
			return &StepError{Op: op, Path: rules.ConcretePathString(t), Err: errors.New(why)}
		}
		v := get(st.obj, q)
		if err := put(st.obj, t, v); err != nil {
			return &StepError{Op: op, Path: rules.ConcretePathString(t), Err: err}
		}
		if err := put(st.obj, q, maybe{}); err != nil {
			return &StepError{Op: op, Path: rules.ConcretePathString(q), Err: err}
		}
		prune(st.obj, q, t)
		// Simulate the move back on the target side, on a copy of the
		// containers along t.
		if simulate {
			// Only the containers below the common parent t[:c] can change,
			// so the simulation copies from there.
			base, rt, rq := st.obj, t, q
			if sub, ok := getpath(st.obj, t[:c]).(map[string]any); ok && c > 0 {
				base, rt, rq = sub, t[c:], q[c:]
			}
			back := pathCopy(base, rt)
			_ = put(back, rt, maybe{})
			prune(back, rt, rq)
			if prev.present {
				_ = put(back, rt, prev)
			}
			off := len(t) - len(rt)
			for n := c + 1; n < len(t); n++ {
				if _, isKey := t[n-1].(string); !isKey {
					continue
				}
				if before[n].present != get(back, rt[:n-off]).present {
					st.keep(op.Key, rules.ConcretePathString(t[:n]), before[n])
					break
				}
			}
		}
		if len(d) == 0 {
			continue // nothing left by the other direction
		}
		// Parents of the source kept by the other direction.
		for n := c + 1; n < len(q); n++ {
			raw, ok := d[rules.ConcretePathString(q[:n])]
			if !ok || raw == nil {
				continue
			}
			if cur := get(st.obj, q[:n]); cur.present && !emptyish(cur.v) {
				continue
			}
			s, err := fromData(raw)
			if err != nil {
				return &StepError{Op: op, Path: rules.ConcretePathString(q[:n]), Err: err}
			}
			s.v = rules.DeepCopyJSON(s.v)
			if err := put(st.obj, q[:n], s); err != nil {
				return &StepError{Op: op, Path: rules.ConcretePathString(q[:n]), Err: err}
			}
		}
		k := rules.ConcretePathString(q)
		if raw, ok := d[k]; ok && raw != nil {
			s, err := fromData(raw)
			if err != nil {
				return &StepError{Op: op, Path: k, Err: err}
			}
			if err := put(st.obj, q, s); err != nil {
				return &StepError{Op: op, Path: k, Err: err}
			}
		}
	}
	return nil
}

func (st *nativeState) object(ctx context.Context, op *rules.Op) error {
	x := st.obj
	fx, err := runOne(ctx, op.F.JQ, x)
	if err != nil {
		return &StepError{Op: op, Err: err}
	}
	y := fx
	if d, _ := st.read[op.Key].(map[string]any); d != nil && d[""] != nil {
		base, ok := rules.DeepCopyJSON(fx).(map[string]any)
		if !ok {
			return &StepError{Op: op, Err: fmt.Errorf("expression gave %s, want an object", rules.TypeName(fx))}
		}
		cand, err := applyChanges(base, d[""])
		if err != nil {
			return &StepError{Op: op, Err: err}
		}
		rc, err := runOne(ctx, op.R.JQ, cand)
		if err != nil {
			return &StepError{Op: op, Err: err}
		}
		if rules.EqualJSON(rc, x) {
			y = cand
		}
	}
	back, err := runOne(ctx, op.R.JQ, y)
	if err != nil {
		return &StepError{Op: op, Err: err}
	}
	if !rules.EqualJSON(back, x) {
		w := st.written[op.Key]
		if w == nil {
			w = map[string]any{}
			st.written[op.Key] = w
		}
		w[""] = diffChanges(back, x)
	}
	m, ok := y.(map[string]any)
	if !ok {
		return &StepError{Op: op, Err: fmt.Errorf("expression gave %s, want an object", rules.TypeName(y))}
	}
	st.obj = m
	return nil
}

// diffChanges is mvp_diff: the changes that turn a into b, as [path, value]
// (set) and [path] (delete) entries, objects compared member by member.
func diffChanges(a, b any) []any {
	var out []any
	var walk func(p []any, a, b any)
	walk = func(p []any, a, b any) {
		am, aok := a.(map[string]any)
		bm, bok := b.(map[string]any)
		if !aok || !bok {
			if !rules.EqualJSON(a, b) {
				out = append(out, []any{append([]any{}, p...), rules.DeepCopyJSON(b)})
			}
			return
		}
		keys := make([]string, 0, len(am)+len(bm))
		for k := range am {
			keys = append(keys, k)
		}
		for k := range bm {
			if _, ok := am[k]; !ok {
				keys = append(keys, k)
			}
		}
		sort.Strings(keys)
		for _, k := range keys {
			av, inA := am[k]
			bv, inB := bm[k]
			child := append(append([]any{}, p...), k)
			switch {
			case !inB:
				out = append(out, []any{child})
			case !inA:
				out = append(out, []any{child, rules.DeepCopyJSON(bv)})
			case !rules.EqualJSON(av, bv):
				walk(child, av, bv)
			}
		}
	}
	walk(nil, a, b)
	return out
}

// applyChanges is mvp_patch: apply the changes of diffChanges to obj in place.
func applyChanges(obj map[string]any, changes any) (map[string]any, error) {
	list, ok := changes.([]any)
	if !ok {
		return nil, fmt.Errorf("invalid conversion data: %v", changes)
	}
	for _, c := range list {
		e, ok := c.([]any)
		if !ok || len(e) < 1 || len(e) > 2 {
			return nil, fmt.Errorf("invalid conversion data entry %v", c)
		}
		path, ok := e[0].([]any)
		if !ok {
			return nil, fmt.Errorf("invalid conversion data path %v", e[0])
		}
		m := maybe{}
		if len(e) == 2 {
			m = maybe{v: rules.DeepCopyJSON(e[1]), present: true}
		}
		if len(path) == 0 {
			root, ok := m.v.(map[string]any)
			if !ok {
				return nil, fmt.Errorf("conversion data replaces the object by %s", rules.TypeName(m.v))
			}
			obj = root
			continue
		}
		if err := put(obj, path, m); err != nil {
			return nil, err
		}
	}
	return obj, nil
}

// applyFn applies a value function to a maybe-value without modifying it.
func applyFn(ctx context.Context, f rules.Fn, x maybe) (maybe, error) {
	switch f.Kind {
	case rules.FnIdentity:
		return x, nil
	case rules.FnAbsent:
		return maybe{}, nil
	case rules.FnConst:
		return maybe{v: rules.DeepCopyJSON(f.Value), present: true}, nil
	case rules.FnDefault:
		if x.present {
			return x, nil
		}
		return maybe{v: rules.DeepCopyJSON(f.Value), present: true}, nil
	}
	if !x.present {
		return x, nil
	}
	switch f.Kind {
	case rules.FnMap:
		for _, p := range f.Pairs {
			if rules.EqualJSON(x.v, p[0]) {
				return maybe{v: rules.DeepCopyJSON(p[1]), present: true}, nil
			}
		}
		return x, nil
	case rules.FnConvert:
		v, err := rules.ConvertValue(x.v, f.Type)
		return maybe{v: v, present: true}, err
	case rules.FnJQ:
		v, err := runOne(ctx, f.JQ, x.v)
		return maybe{v: v, present: true}, err
	}
	return maybe{}, fmt.Errorf("unknown value function %d", f.Kind)
}

// runOne runs a user expression that must give exactly one result.
func runOne(ctx context.Context, expr *rules.Snippet, v any) (any, error) {
	code, err := expr.Code()
	if err != nil {
		return nil, err
	}
	iter := code.RunWithContext(ctx, v)
	var out []any
	for {
		r, ok := iter.Next()
		if !ok {
			break
		}
		if err, isErr := r.(error); isErr {
			return nil, jqError(err)
		}
		out = append(out, r)
		if len(out) > 1 {
			break
		}
	}
	if len(out) != 1 {
		return nil, fmt.Errorf("expression gave %d results, want 1", len(out))
	}
	// gojq results may share values with the compiled program's constants;
	// later steps change objects in place, so they get their own copy.
	return rules.DeepCopyJSON(out[0]), nil
}

// evalWhen is mvp_when: the first result of the condition, false if none.
func evalWhen(ctx context.Context, cond *rules.Snippet, obj map[string]any) (bool, error) {
	code, err := cond.Code()
	if err != nil {
		return false, err
	}
	r, ok := code.RunWithContext(ctx, obj).Next()
	if !ok {
		return false, nil
	}
	if err, isErr := r.(error); isErr {
		return false, jqError(err)
	}
	return r != nil && r != false, nil
}

// jqError renders a jq error value the way jq prints it.
func jqError(err error) error {
	var ve interface{ Value() any }
	if e, ok := err.(interface{ Value() any }); ok {
		ve = e
	}
	if ve != nil {
		if s, ok := ve.Value().(string); ok {
			return fmt.Errorf("%s", s)
		}
	}
	return err
}

// expand returns every concrete path matching pattern p (given as jq path
// elements, nil for a wildcard) whose value exists, in jq order (array index
// order, sorted object keys). extra is spare capacity for callers that
// append to the results.
func expand(obj any, p []any, extra int) [][]any {
	var out [][]any
	buf := make([]any, 0, len(p))
	var walk func(v any, n int)
	walk = func(v any, n int) {
		if n == len(p) {
			q := make([]any, len(buf), len(buf)+extra)
			copy(q, buf)
			out = append(out, q)
			return
		}
		switch e := p[n].(type) {
		case nil:
			switch v := v.(type) {
			case []any:
				for i, c := range v {
					buf = append(buf, i)
					walk(c, n+1)
					buf = buf[:n]
				}
			case map[string]any:
				for _, k := range slices.Sorted(maps.Keys(v)) {
					buf = append(buf, k)
					walk(v[k], n+1)
					buf = buf[:n]
				}
			}
		case int:
			if a, ok := v.([]any); ok && e < len(a) {
				buf = append(buf, p[n])
				walk(a[e], n+1)
				buf = buf[:n]
			}
		case string:
			if m, ok := v.(map[string]any); ok {
				if c, ok := m[e]; ok {
					buf = append(buf, p[n])
					walk(c, n+1)
					buf = buf[:n]
				}
			}
		}
	}
	walk(obj, 0)
	return out
}

// candidates is mvp_candidates: for a pattern ending in a key, that key
// under every matching object parent, present or not.
func candidates(obj map[string]any, p []any) [][]any {
	if len(p) == 0 {
		return expand(obj, p, 0)
	}
	if _, isKey := p[len(p)-1].(string); !isKey {
		return expand(obj, p, 0)
	}
	parents := expand(obj, p[:len(p)-1], 1)
	out := parents[:0]
	for _, q := range parents {
		if _, ok := getpath(obj, q).(map[string]any); ok {
			out = append(out, append(q, p[len(p)-1]))
		}
	}
	return out
}

// tail is mvp_tail: the length of pattern p up to its last wildcard or
// index; the keys after it name objects a set step may create.
func tail(p []any) int {
	for i := len(p) - 1; i >= 0; i-- {
		if _, isKey := p[i].(string); !isKey {
			return i + 1
		}
	}
	return 0
}

// sites is mvp_sites: the keys after the last wildcard or index of p under
// every match of what comes before, present or not, except under a null
// list item.
func sites(obj map[string]any, p []any) [][]any {
	b := tail(p)
	matches := expand(obj, p[:b], len(p)-b)
	out := matches[:0]
	for _, m := range matches {
		if b > 0 && getpath(obj, m) == nil {
			continue
		}
		out = append(out, append(m, p[b:]...))
	}
	return out
}

// blocked is mvp_blocked: why nothing can be written at q: its first
// parent, from position from on, that holds something other than null or
// the object or array the next step of q needs.
func blocked(obj map[string]any, q []any, from int) (why string, ok bool) {
	var v any = obj
	for n := 1; n < len(q); n++ {
		m := get(v, q[n-1:n])
		if !m.present || m.v == nil {
			return "", false
		}
		v = m.v
		if n < from {
			continue
		}
		_, isMap := v.(map[string]any)
		_, isList := v.([]any)
		switch _, wantMap := q[n].(string); {
		case wantMap && !isMap:
			return fmt.Sprintf("%s is %s, not an object", rules.ConcretePathString(q[:n]), withArticle(rules.TypeName(v))), true
		case !wantMap && !isList:
			return fmt.Sprintf("%s is %s, not an array", rules.ConcretePathString(q[:n]), withArticle(rules.TypeName(v))), true
		}
	}
	return "", false
}

// withArticle is mvp_article: a type name with its article.
func withArticle(typ string) string {
	if typ == "object" || typ == "array" {
		return "an " + typ
	}
	return "a " + typ
}

func getpath(v any, q []any) any {
	for _, e := range q {
		switch e := e.(type) {
		case string:
			m, _ := v.(map[string]any)
			v = m[e]
		case int:
			a, _ := v.([]any)
			if e >= len(a) {
				return nil
			}
			v = a[e]
		}
	}
	return v
}

// get is mvp_get: the maybe-value at a concrete path.
func get(v any, q []any) maybe {
	for _, e := range q {
		switch e := e.(type) {
		case string:
			m, ok := v.(map[string]any)
			if !ok {
				return maybe{}
			}
			if v, ok = m[e]; !ok {
				return maybe{}
			}
		case int:
			a, ok := v.([]any)
			if !ok || e >= len(a) {
				return maybe{}
			}
			v = a[e]
		}
	}
	return maybe{v: v, present: true}
}

// put is mvp_put: set the value at q (creating parents as jq's setpath
// does) or delete it when absent.
func put(obj map[string]any, q []any, m maybe) error {
	if len(q) == 0 {
		return fmt.Errorf("cannot replace the whole object")
	}
	var root any = obj
	nv, err := putIn(root, q, m)
	if err != nil {
		return err
	}
	if _, ok := nv.(map[string]any); !ok {
		return fmt.Errorf("object replaced by %s", rules.TypeName(nv))
	}
	return nil
}

// putIn returns v with the change applied; maps are changed in place, arrays
// may be reallocated (the caller stores the result).
func putIn(v any, q []any, m maybe) (any, error) {
	switch e := q[0].(type) {
	case string:
		mv, ok := v.(map[string]any)
		if !ok {
			if v != nil {
				return nil, fmt.Errorf("cannot index %s with %q", rules.TypeName(v), e)
			}
			if !m.present {
				return v, nil
			}
			mv = map[string]any{}
		}
		if len(q) == 1 {
			if m.present {
				mv[e] = m.v
			} else {
				delete(mv, e)
			}
			return mv, nil
		}
		child, exists := mv[e]
		if !exists && !m.present {
			return mv, nil
		}
		nc, err := putIn(child, q[1:], m)
		if err != nil {
			return nil, err
		}
		mv[e] = nc
		return mv, nil
	case int:
		a, ok := v.([]any)
		if !ok {
			if v != nil {
				return nil, fmt.Errorf("cannot index %s with number", rules.TypeName(v))
			}
			if !m.present {
				return v, nil
			}
		}
		if len(q) == 1 && !m.present {
			if e >= len(a) {
				return a, nil
			}
			return append(a[:e:e], a[e+1:]...), nil
		}
		if e >= len(a) {
			if !m.present {
				return a, nil
			}
			grown := make([]any, e+1)
			copy(grown, a)
			a = grown
		}
		if len(q) == 1 {
			a[e] = m.v
			return a, nil
		}
		nc, err := putIn(a[e], q[1:], m)
		if err != nil {
			return nil, err
		}
		a[e] = nc
		return a, nil
	}
	return nil, fmt.Errorf("invalid path element %v", q[0])
}

// bind is mvp_bind: the target pattern with its wildcards replaced, in
// order, by what the source pattern's wildcards matched in q.
func bind(to, from []any, q []any) []any {
	out := make([]any, len(to))
	j := 0
	for i, e := range to {
		if e != nil {
			out[i] = e
			continue
		}
		for from[j] != nil {
			j++
		}
		out[i] = q[j]
		j++
	}
	return out
}

// commonLen is mvp_common: the length of the common prefix of q and t.
func commonLen(q, t []any) int {
	m := min(len(q), len(t))
	for i := 0; i < m; i++ {
		if q[i] != t[i] {
			return i
		}
	}
	return m
}

// emptyish is mvp_empty: null, or an object or array that holds nothing
// but such values.
func emptyish(v any) bool {
	switch v := v.(type) {
	case nil:
		return true
	case map[string]any:
		for _, e := range v {
			if !emptyish(e) {
				return false
			}
		}
		return true
	case []any:
		for _, e := range v {
			if !emptyish(e) {
				return false
			}
		}
		return true
	}
	return false
}

// pathCopy returns obj with every container along q copied (shallowly), so
// that changes along q leave obj as it is.
func pathCopy(obj map[string]any, q []any) map[string]any {
	root := shallowCopy(obj).(map[string]any)
	var cur any = root
	for _, e := range q {
		switch e := e.(type) {
		case string:
			m, ok := cur.(map[string]any)
			if !ok {
				return root
			}
			child, ok := m[e]
			if !ok {
				return root
			}
			c := shallowCopy(child)
			m[e] = c
			cur = c
		case int:
			a, ok := cur.([]any)
			if !ok || e >= len(a) {
				return root
			}
			c := shallowCopy(a[e])
			a[e] = c
			cur = c
		}
	}
	return root
}

func shallowCopy(v any) any {
	switch v := v.(type) {
	case map[string]any:
		m := make(map[string]any, len(v))
		for k, e := range v {
			m[k] = e
		}
		return m
	case []any:
		return append([]any(nil), v...)
	}
	return v
}

// prune is mvp_prune: drop objects the move left empty, up to the deepest
// common parent of q and t.
func prune(obj map[string]any, q, t []any) {
	common := commonLen(q, t)
	for n := len(q) - 1; n > common; n-- {
		if _, isKey := q[n-1].(string); !isKey {
			continue
		}
		if p, ok := getpath(obj, q[:n]).(map[string]any); ok && len(p) == 0 {
			_ = put(obj, q[:n], maybe{})
		}
	}
}
