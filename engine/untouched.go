package engine

import (
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/mvpctl/mvpctl/rules"
)

// Untouched reports whether converting objects of gvk to version to never
// reads or writes the field at path (and below it): no step's path leads
// to it or into it, no step runs on the whole object, and no step has a
// jq condition (which sees the whole object). A caller may then keep that
// field out of the conversion (as text it does not decode), as the
// proxy does with metadata.managedFields, which Kubernetes does not convert
// either. It answers false whenever it cannot tell.
func (c *Converter) Untouched(gvk schema.GroupVersionKind, to schema.GroupVersion, path ...string) bool {
	if c.opts.Executor == JQ || len(path) == 0 {
		return false // a jq program sees the whole object
	}
	progs, _, err := c.Path(gvk, to)
	if err != nil {
		return false
	}
	for _, p := range progs {
		for i := range p.Ops {
			op := &p.Ops[i]
			if op.Kind == rules.OpObject || op.When != "" ||
				overlaps(op.PathElems, path) || op.Kind == rules.OpMove && overlaps(op.TargetElems, path) {
				return false
			}
		}
	}
	return true
}

// overlaps reports whether a step's path (jq elements, nil a wildcard)
// may lead to the field at path or into it.
func overlaps(elems []any, path []string) bool {
	for i, e := range elems {
		if i == len(path) {
			return true // into it
		}
		switch e := e.(type) {
		case nil: // a wildcard
		case string:
			if e != path[i] {
				return false
			}
		default:
			return false // an index: the field's parents are objects
		}
	}
	return true // to it, or to an object that holds it
}
