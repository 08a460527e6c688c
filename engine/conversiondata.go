package engine

import (
	"errors"
	"fmt"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/mvpctl/mvpctl/rules"
)

// ConversionDataError is an object's round-trip annotation
// (rules.ConversionDataAnnotation) that cannot be used: malformed, larger
// than the rules' limit, or not fitting the object. Anyone who may write an
// object can put anything there, so it is data to check, never to trust.
type ConversionDataError struct {
	GVK schema.GroupVersionKind
	// Resource is the resource the rules convert the object as.
	Resource        string
	Namespace, Name string
	ResourceVersion string
	// RuleID and Direction are those of the first program of the
	// conversion, which reads the annotation first.
	RuleID    string
	Direction rules.Direction
	Err       error
}

func (e *ConversionDataError) Error() string {
	obj := objectRef(e.Namespace, e.Name)
	return fmt.Sprintf("converting %s %s (%s) %s by rule %s: annotation %s: %v", e.GVK.Kind, obj, e.GVK.GroupVersion(), e.Direction, e.RuleID, rules.ConversionDataAnnotation, e.Err)
}

func (e *ConversionDataError) Unwrap() error { return e.Err }

// conversionData returns the object's round-trip annotation, if it has one.
func conversionData(obj map[string]any) (any, bool) {
	meta, _ := obj["metadata"].(map[string]any)
	ann, _ := meta["annotations"].(map[string]any)
	raw, ok := ann[rules.ConversionDataAnnotation]
	return raw, ok && raw != nil
}

// dropConversionData removes the round-trip annotation, and the annotations
// map if nothing else is in it, as kube-apiserver stores no empty map.
func dropConversionData(obj map[string]any) {
	meta, _ := obj["metadata"].(map[string]any)
	ann, ok := meta["annotations"].(map[string]any)
	if !ok {
		return
	}
	delete(ann, rules.ConversionDataAnnotation)
	if len(ann) == 0 {
		delete(meta, "annotations")
	}
}

// StripConversionData removes the round-trip annotation from an object, for
// output that will not be converted back: it undoes what writing the
// annotation added (the annotations map, and metadata, where the
// annotation's "$created" says the conversion created them and nothing else
// is in them now).
func StripConversionData(obj map[string]any) {
	meta, _ := obj["metadata"].(map[string]any)
	ann, _ := meta["annotations"].(map[string]any)
	raw, ok := ann[rules.ConversionDataAnnotation]
	if !ok {
		return
	}
	delete(ann, rules.ConversionDataAnnotation)
	var created []any
	if s, ok := raw.(string); ok {
		if all, err := DecodeObject([]byte(s)); err == nil {
			created, _ = all["$created"].([]any)
		}
	}
	if contains(created, "annotations") && len(ann) == 0 {
		delete(meta, "annotations")
	}
	if contains(created, "metadata") && len(meta) == 0 {
		delete(obj, "metadata")
	}
}

// snapshot copies of obj what running progs may change in place, so that
// the object can be converted again without its annotation if the
// annotation makes the first run fail: the top-level map, the members the
// steps' paths start with, and the metadata and annotations maps. Steps
// write only along their paths (whole-object jq steps build a new object),
// and the annotation is read and written in metadata.annotations.
func snapshot(obj map[string]any, progs []*rules.Program) map[string]any {
	deep := map[string]bool{}
	for _, p := range progs {
		for i := range p.Ops {
			for _, elems := range [][]any{p.Ops[i].PathElems, p.Ops[i].TargetElems} {
				if len(elems) == 0 {
					continue
				}
				k, ok := elems[0].(string)
				if !ok {
					return rules.DeepCopyJSON(obj).(map[string]any) // a wildcard: any member
				}
				deep[k] = true
			}
		}
	}
	out := make(map[string]any, len(obj))
	for k, v := range obj {
		if deep[k] {
			v = rules.DeepCopyJSON(v)
		}
		out[k] = v
	}
	if meta, ok := obj["metadata"].(map[string]any); ok && !deep["metadata"] {
		m := make(map[string]any, len(meta))
		for k, v := range meta {
			m[k] = v
		}
		if ann, ok := meta["annotations"].(map[string]any); ok {
			a := make(map[string]any, len(ann))
			for k, v := range ann {
				a[k] = v
			}
			m["annotations"] = a
		}
		out["metadata"] = m
	}
	return out
}

// checkConversionData validates an annotation before any program reads it:
// a string of at most the programs' limit holding one JSON object, and, for
// each program's rule, data of the shape that rule's steps write (what the
// native and jq executors would read differently, or fail on, is refused
// here, so both treat a bad annotation alike). It returns the decoded data.
func checkConversionData(raw any, progs []*rules.Program) (map[string]any, error) {
	s, ok := raw.(string)
	if !ok {
		return nil, fmt.Errorf("not a string")
	}
	limit := 0
	for _, p := range progs {
		limit = max(limit, p.Limit)
	}
	if len(s) > limit {
		return nil, fmt.Errorf("%d bytes, more than the limit of %d", len(s), limit)
	}
	all, err := DecodeObject([]byte(s))
	if err != nil {
		return nil, errors.New("not a JSON object")
	}
	if c, ok := all["$created"]; ok && c != nil {
		if !isStringList(c) {
			return nil, errors.New(`"$created" is not a list of strings`)
		}
	}
	for _, p := range progs {
		if err := checkRuleData(p, all[p.RuleID]); err != nil {
			return nil, fmt.Errorf("rule %s: %w", p.RuleID, err)
		}
	}
	return all, nil
}

// checkRuleData checks one rule's data: step key → path → what the step
// kept (a maybe-value, [] or [v]; for a jq step on the whole object, the
// list of changes of mvp_diff under the path "").
func checkRuleData(p *rules.Program, d any) error {
	if d == nil {
		return nil
	}
	steps, ok := d.(map[string]any)
	if !ok {
		return errors.New("not an object")
	}
	for i := range p.Ops {
		op := &p.Ops[i]
		raw, ok := steps[op.Key]
		if !ok || raw == nil {
			continue
		}
		paths, ok := raw.(map[string]any)
		if !ok {
			return fmt.Errorf("step %s: not an object", op.Key)
		}
		for path, v := range paths {
			if v == nil {
				continue
			}
			var err error
			if op.Kind == rules.OpObject && path == "" {
				err = checkChanges(v)
			} else if s, ok := v.([]any); !ok || len(s) > 1 {
				err = errors.New("not [] or [value]")
			}
			if err != nil {
				return fmt.Errorf("step %s, path %q: %w", op.Key, path, err)
			}
		}
	}
	return nil
}

// checkChanges checks mvp_diff's [path, value] and [path] entries. Their
// paths name object members only (arrays are replaced whole), so an array
// index, which could make a step grow an array to any length, is refused.
func checkChanges(v any) error {
	list, ok := v.([]any)
	if !ok {
		return errors.New("not a list of changes")
	}
	for _, c := range list {
		e, ok := c.([]any)
		if !ok || len(e) < 1 || len(e) > 2 || !isStringList(e[0]) {
			return errors.New("not a list of [path] and [path, value] changes with paths of keys")
		}
	}
	return nil
}

func isStringList(v any) bool {
	list, ok := v.([]any)
	if !ok {
		return false
	}
	for _, e := range list {
		if _, ok := e.(string); !ok {
			return false
		}
	}
	return true
}
