package lint

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/itchyny/gojq"

	"github.com/mvpctl/mvpctl/rules"
	"github.com/mvpctl/mvpctl/schemadiff"
)

// This file is the value-not-convertible check: a step that fails on a
// value the schema of the version it reads allows. In the proxy such a
// step fails every emulated GET, LIST and WATCH that meets one such object,
// for every client, as a failing conversion webhook does in kube-apiserver;
// in mvpctl convert, that object. Each direction is checked against the
// version it reads: forward against fromVersion (the working object at the
// step), reverse against toVersion. The step is run on one value of each
// shape the schema allows (its enum, when it has one), with the engine's
// own conversion (rules.ConvertValue) and jq, so only what really fails is
// reported; a step's when is evaluated on an object holding just that
// value, and a value it skips is not reported.

// probeTimeout bounds one run of a rule's jq expression on a probe value.
const probeTimeout = time.Second

// allowed lists one value of each shape a schema allows and says which
// those are; none when the schema is unknown.
func allowed(n *snode) (vals []any, desc string) {
	if n == nil {
		return nil, ""
	}
	if len(n.Enum) > 0 {
		return n.Enum, n.Type + " (one of " + enumList(n.Enum) + ")"
	}
	switch n.Type {
	case schemadiff.TypeAny:
		vals = []any{"x", 1, 1.5, true, map[string]any{}, []any{}}
		desc = "any value (the schema gives no type)"
		if n.PreserveUnknownFields {
			desc = "any value (x-kubernetes-preserve-unknown-fields)"
		}
	case schemadiff.TypeIntOrString:
		vals, desc = []any{1, "x"}, "an integer or a string (x-kubernetes-int-or-string)"
	case schemadiff.TypeString:
		vals, desc = []any{"x"}, "a string"
	case schemadiff.TypeInteger:
		vals, desc = []any{1}, "an integer"
	case schemadiff.TypeNumber:
		vals, desc = []any{1.5}, "a number"
	case schemadiff.TypeBoolean:
		vals, desc = []any{true}, "a boolean"
	case schemadiff.TypeObject, schemadiff.TypeMap:
		vals, desc = []any{map[string]any{}}, "an object"
		if n.PreserveUnknownFields {
			desc = "an object of any fields (x-kubernetes-preserve-unknown-fields)"
		}
	case schemadiff.TypeArray:
		vals, desc = []any{[]any{}}, "an array"
	default:
		return nil, ""
	}
	if n.Nullable {
		vals, desc = append(vals, nil), desc+" or null"
	}
	return vals, desc
}

// probe is one direction of a step run on one value: fn gives the error it
// fails with, if any, and the field of the transformation that fails.
type probe func(ctx context.Context, x any) (fld string, err error)

// checkConvertible runs step i on the values the schemas allow where it
// reads: cur is the schema of its path in the working object (forward).
func (s *ruleSchema) checkConvertible(i int, t *rules.Transformation, path, target rules.Path, cur *snode) {
	var fwd, rev probe
	readFwd, readRev := path, path
	switch t.Action {
	case rules.ActionConvertType:
		fwd = func(_ context.Context, x any) (string, error) {
			y, err := rules.ConvertValue(x, t.Type)
			if err != nil || t.FromType == "" {
				return "type", err
			}
			_, err = rules.ConvertValue(y, t.FromType) // the way back must give x
			return "fromType", err
		}
		rev = func(_ context.Context, x any) (string, error) {
			y := x
			if t.FromType != "" {
				var err error
				if y, err = rules.ConvertValue(x, t.FromType); err != nil {
					return "fromType", err
				}
			}
			_, err := rules.ConvertValue(y, t.Type) // the way back must give x
			return "type", err
		}
	case rules.ActionRename:
		if t.Type == "" {
			break
		}
		convert := func(_ context.Context, x any) (string, error) {
			_, err := rules.ConvertValue(x, t.Type)
			return "type", err
		}
		// Reverse moves the value back unchanged, but checks that forward
		// would give it again.
		fwd, rev, readRev = convert, convert, target
	case rules.ActionJQ:
		if t.OnWholeObject() || t.Path == "" {
			break
		}
		f, r := compileProbe(t.Forward), compileProbe(t.Reverse)
		if f == nil || r == nil {
			break // reported by the compile checks
		}
		fwd = func(ctx context.Context, x any) (string, error) {
			y, err := runProbe(ctx, f, x)
			if err != nil {
				return "forward", err
			}
			_, err = runProbe(ctx, r, y)
			return "reverse", err
		}
		rev = func(ctx context.Context, x any) (string, error) {
			y, err := runProbe(ctx, r, x)
			if err != nil {
				return "reverse", err
			}
			_, err = runProbe(ctx, f, y)
			return "forward", err
		}
	}
	// A type hint that disagrees with the schema of the version read is
	// reported as schema-type; the values it fails on are not reported
	// again.
	// What an earlier step left is unknown, not untyped: not probed.
	if cur == writtenBelow || cur == anyNode && s.writtenBefore(i, path) {
		cur = nil
	}
	if fwd != nil && readFwd != nil && cur != nil && (t.Action != rules.ActionConvertType || t.FromType == "" || typeAgrees(t.FromType, cur.Type)) {
		s.probeStep(i, t, rules.Forward, readFwd, cur, s.fromLabel, fwd)
	}
	if rev != nil && readRev != nil {
		if n, ok := s.inTo(readRev); ok && (t.Type == "" || typeAgrees(t.Type, n.Type)) {
			s.probeStep(i, t, rules.Reverse, readRev, n, s.toLabel, rev)
		}
	}
	s.checkParents(i, t, path, target)
}

// probeStep reports the first value of those n allows on which p fails.
func (s *ruleSchema) probeStep(i int, t *rules.Transformation, dir rules.Direction, at rules.Path, n *snode, label string, p probe) {
	vals, desc := allowed(n)
	when := compileProbe(t.When)
	for _, x := range vals {
		ctx, cancel := context.WithTimeout(s.l.ctx, probeTimeout)
		skip := when != nil && !holds(ctx, when, objectWith(at, x))
		var fld string
		var err error
		if !skip {
			fld, err = p(ctx, rules.DeepCopyJSON(x))
		}
		cancel()
		if err != nil {
			s.l.addRule(IDValueNotConvertible, s.r, tfield(i, fld), i, describeStep(t), dir, label, at.String(), desc, jsonText(x), err)
			return
		}
	}
}

// checkParents reports a write below a field that the version read may
// hold as something else than an object: the step cannot create its
// field there (cannot index string with "b").
func (s *ruleSchema) checkParents(i int, t *rules.Transformation, path, target rules.Path) {
	switch t.Action {
	case rules.ActionRename:
		if s.w != nil {
			s.parentShapes(i, t, rules.Forward, target, "targetPath", s.fromLabel, func(p rules.Path) (*snode, bool) {
				n, _, ok := s.w.lookupDirect(p)
				return n, ok
			})
		}
		s.parentShapes(i, t, rules.Reverse, path, "path", s.toLabel, s.inTo)
	case rules.ActionSet, rules.ActionEnsureFieldExistence:
		if s.w != nil {
			s.parentShapes(i, t, rules.Forward, path, "path", s.fromLabel, func(p rules.Path) (*snode, bool) {
				n, _, ok := s.w.lookupDirect(p)
				return n, ok
			})
		}
	}
}

func (s *ruleSchema) parentShapes(i int, t *rules.Transformation, dir rules.Direction, p rules.Path, fld, label string, lookup func(rules.Path) (*snode, bool)) {
	if len(p) < 2 {
		return
	}
	for k := len(p) - 1; k >= 1; k-- {
		next := p[k]
		if next.Kind != rules.StepKey {
			return // above an index or wildcard the step only visits what exists
		}
		n, ok := lookup(p[:k])
		if !ok || n == nil {
			continue // the step creates it
		}
		if n == writtenBelow || n == anyNode && dir == rules.Forward && s.writtenBefore(i, p[:k]) {
			return // what transformations write: unknown
		}
		vals, desc := allowed(n)
		for _, x := range vals {
			if x == nil {
				continue
			}
			if _, isObj := x.(map[string]any); isObj {
				continue
			}
			err := fmt.Errorf("cannot index %s with %q", rules.TypeName(x), next.Key)
			s.l.addRule(IDValueNotConvertible, s.r, tfield(i, fld), i, describeStep(t), dir, label, p[:k].String(), desc, jsonText(x), err)
			return
		}
		return // an object: the fields above it are objects too
	}
}

// writtenBefore reports whether a step before i writes a value of its own
// (jq, set, ensureFieldExistence, newField) at or above p: the working
// object then holds an unknown value there (anyNode), which is not a field
// the schema leaves untyped.
func (s *ruleSchema) writtenBefore(i int, p rules.Path) bool {
	p = schemaPath(p)
	for j := range i {
		t := &s.mr.Transformations[j]
		switch t.Action {
		case rules.ActionJQ, rules.ActionSet, rules.ActionEnsureFieldExistence, rules.ActionNewField:
		default:
			continue
		}
		if q, err := rules.ParsePath(t.Path); err == nil && t.Path != "" && hasPrefix(p, schemaPath(q)) {
			return true
		}
	}
	return false
}

// describeStep names a step in a finding.
func describeStep(t *rules.Transformation) string {
	switch t.Action {
	case rules.ActionRename:
		s := fmt.Sprintf("rename %s -> %s", t.Path, t.TargetPath)
		if t.Type != "" {
			s += ", type " + string(t.Type)
		}
		return s
	case rules.ActionConvertType:
		s := fmt.Sprintf("convertType %s to %s", t.Path, t.Type)
		if t.FromType != "" {
			s += ", fromType " + string(t.FromType)
		}
		return s
	case rules.ActionJQ:
		return "jq on " + t.Path
	}
	return string(t.Action) + " " + t.Path
}

// compileProbe compiles a user expression as the engine does, nil if empty
// or invalid.
func compileProbe(src string) *gojq.Code {
	if strings.TrimSpace(src) == "" {
		return nil
	}
	code, err := rules.NewSnippet(src).Code()
	if err != nil {
		return nil
	}
	return code
}

// runProbe runs an expression that must give exactly one result, as the
// engine does.
func runProbe(ctx context.Context, code *gojq.Code, x any) (any, error) {
	iter := code.RunWithContext(ctx, x)
	var out []any
	for len(out) < 2 {
		v, ok := iter.Next()
		if !ok {
			break
		}
		if err, isErr := v.(error); isErr {
			return nil, jqMessage(err)
		}
		out = append(out, v)
	}
	if len(out) != 1 {
		return nil, fmt.Errorf("expression gave %d results, want 1", len(out))
	}
	return rules.DeepCopyJSON(out[0]), nil
}

// jqMessage is a jq error as jq prints it.
func jqMessage(err error) error {
	if e, ok := err.(interface{ Value() any }); ok {
		if s, ok := e.Value().(string); ok {
			return fmt.Errorf("%s", s)
		}
	}
	return err
}

// holds evaluates a when condition: false, as the engine, when it gives
// nothing; an error counts as true (the step's probe then reports what
// fails).
func holds(ctx context.Context, code *gojq.Code, obj map[string]any) bool {
	v, ok := code.RunWithContext(ctx, obj).Next()
	if !ok {
		return false
	}
	if _, isErr := v.(error); isErr {
		return true
	}
	return v != nil && v != false
}

// maxProbeIndex bounds the arrays objectWith builds for an index in a path,
// which the rules file sets.
const maxProbeIndex = 64

// objectWith is an object holding x at p, wildcards as first elements.
func objectWith(p rules.Path, x any) map[string]any {
	var build func(k int) any
	build = func(k int) any {
		if k == len(p) {
			return rules.DeepCopyJSON(x)
		}
		switch st := p[k]; st.Kind {
		case rules.StepKey:
			return map[string]any{st.Key: build(k + 1)}
		case rules.StepIndex:
			if st.Index > maxProbeIndex {
				return []any{build(k + 1)}
			}
			a := make([]any, st.Index+1)
			a[st.Index] = build(k + 1)
			return a
		default:
			return []any{build(k + 1)}
		}
	}
	obj, _ := build(0).(map[string]any)
	if obj == nil {
		obj = map[string]any{}
	}
	return obj
}
