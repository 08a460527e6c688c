package lint

import (
	"encoding/json"
	"math"
	"strings"

	"github.com/getkin/kin-openapi/openapi3"

	"github.com/mvpctl/mvpctl/rules"
	"github.com/mvpctl/mvpctl/schemadiff"
)

// snode is one field of a kind's schema: schemadiff's view of it, whose
// members are expanded lazily so that recursive definitions
// (JSONSchemaProps) stay finite and only what rules look at is built.
type snode struct {
	schemadiff.View
	children map[string]*snode
	elem     *snode
}

var anyNode = typedNode(schemadiff.TypeAny, nil)

// typedNode is a node of a type without members, such as what a type
// conversion leaves.
func typedNode(typ string, enum []any) *snode {
	return &snode{View: schemadiff.View{Type: typ, Enum: enum}}
}

// newSNode reads the attributes of a schema; properties and items are
// expanded when first asked for.
func newSNode(ref *openapi3.SchemaRef) *snode {
	if ref == nil || ref.Value == nil {
		return anyNode
	}
	return &snode{View: *schemadiff.ViewOf(ref), children: map[string]*snode{}}
}

// child is the schema of an object member: a property, a map value, or
// anything below a node that keeps unknown fields. ok is false when the
// schema has no such member.
func (n *snode) child(key string) (c *snode, ok bool) {
	switch {
	case n.Type == schemadiff.TypeAny:
		return anyNode, true
	case n.Type == schemadiff.TypeObject:
		if c, ok := n.children[key]; ok {
			return c, true
		}
		if r, ok := n.Properties[key]; ok {
			c := newSNode(r)
			n.children[key] = c
			return c, true
		}
		if n.PreserveUnknownFields {
			return anyNode, true
		}
	case n.Type == schemadiff.TypeMap:
		return n.element(), true
	case n.PreserveUnknownFields:
		return anyNode, true
	}
	return nil, false
}

// element is the schema of array items or map values.
func (n *snode) element() *snode {
	if n.Type == schemadiff.TypeAny {
		return anyNode
	}
	if n.elem == nil {
		n.elem = newSNode(n.Elem)
	}
	return n.elem
}

// step follows one path step.
func (n *snode) step(st rules.Step) (*snode, bool) {
	switch st.Kind {
	case rules.StepKey:
		return n.child(st.Key)
	default: // index or wildcard
		switch n.Type {
		case schemadiff.TypeArray, schemadiff.TypeMap:
			return n.element(), true
		case schemadiff.TypeAny, schemadiff.TypeObject:
			if st.Kind == rules.StepWildcard || n.Type == schemadiff.TypeAny {
				return anyNode, true // every member of an object
			}
		}
	}
	return nil, false
}

// lookup follows a path from n; required says whether the last step is
// required by its parent (always true for an empty path).
func (n *snode) lookup(p rules.Path) (node *snode, required, ok bool) {
	required = true
	for _, st := range p {
		// Below an unknown value (a jq result) nothing can be proven missing.
		required = st.Kind != rules.StepKey || n.Type == schemadiff.TypeAny || n.Required[st.Key]
		if n, ok = n.step(st); !ok {
			return nil, false, false
		}
	}
	return n, required, true
}

// valueProblem says why a rules value cannot be a field of this schema, or "".
func (n *snode) valueProblem(v any) string {
	if n.Type == schemadiff.TypeAny {
		return ""
	}
	if v == nil {
		return "" // null clears a field of any type
	}
	got := rules.TypeName(v)
	okType := false
	switch n.Type {
	case "string":
		okType = got == "string"
	case "integer":
		okType = got == "number" && valueIsIntegral(v)
	case "number":
		okType = got == "number"
	case "boolean":
		okType = got == "boolean"
	case string(rules.TypeIntOrString):
		okType = got == "string" || got == "number" && valueIsIntegral(v)
	case schemadiff.TypeObject, schemadiff.TypeMap:
		okType = got == "object"
	case schemadiff.TypeArray:
		okType = got == "array"
	}
	if !okType {
		return "the field is " + n.Type + ", the value " + describeType(v)
	}
	if len(n.Enum) > 0 {
		for _, e := range n.Enum {
			if rules.EqualJSON(e, v) {
				return ""
			}
		}
		return "the field allows only " + enumList(n.Enum)
	}
	return ""
}

func valueIsIntegral(v any) bool {
	switch v := v.(type) {
	case json.Number:
		f, err := v.Float64()
		return err == nil && f == math.Trunc(f)
	case float64:
		return v == math.Trunc(v)
	case int, int64:
		return true
	}
	return false
}

func describeType(v any) string {
	t := rules.TypeName(v)
	if t == "number" && valueIsIntegral(v) {
		return "an integer"
	}
	switch t {
	case "array", "object", "integer":
		return "an " + t
	}
	return "a " + t
}

func enumList(enum []any) string {
	parts := make([]string, len(enum))
	for i, e := range enum {
		b, _ := json.Marshal(e)
		parts[i] = string(b)
	}
	return strings.Join(parts, ", ")
}
