package lint

import (
	"encoding/json"
	"math"
	"strings"

	"github.com/getkin/kin-openapi/openapi3"

	"github.com/mvpctl/mvpctl/rules"
)

// Value types of a schema node; scalars use the rules' type names.
const (
	typObject = "object"
	typArray  = "array"
	typMap    = "map"
	typAny    = "any"
)

// snode is one field of a kind's schema, expanded lazily so that recursive
// definitions (JSONSchemaProps) stay finite and only what rules look at is
// built.
type snode struct {
	typ      string
	ref      string // definition name, for recursion and messages
	enum     []any
	required map[string]bool
	nullable bool
	// preserve is x-kubernetes-preserve-unknown-fields: anything may be below.
	preserve bool

	schemas  []*openapi3.SchemaRef // the allOf parts, for lazy expansion
	props    map[string]*openapi3.SchemaRef
	children map[string]*snode
	elemRef  *openapi3.SchemaRef
	elem     *snode
}

var anyNode = &snode{typ: typAny}

// newSNode reads the attributes of a schema; properties and items are
// expanded when first asked for.
func newSNode(ref *openapi3.SchemaRef) *snode {
	if ref == nil || ref.Value == nil {
		return anyNode
	}
	n := &snode{props: map[string]*openapi3.SchemaRef{}, required: map[string]bool{}, children: map[string]*snode{}}
	var parts []*openapi3.Schema
	var collect func(r *openapi3.SchemaRef, depth int)
	collect = func(r *openapi3.SchemaRef, depth int) {
		if r == nil || r.Value == nil || depth > 8 {
			return
		}
		if n.ref == "" && r.Ref != "" {
			n.ref = r.Ref[strings.LastIndexByte(r.Ref, '/')+1:]
		}
		parts = append(parts, r.Value)
		for _, a := range r.Value.AllOf {
			collect(a, depth+1)
		}
	}
	collect(ref, 0)
	var addl *openapi3.SchemaRef
	typ := ""
	for _, p := range parts {
		if len(n.enum) == 0 && len(p.Enum) > 0 {
			n.enum = p.Enum
		}
		n.nullable = n.nullable || p.Nullable
		if b, _ := p.Extensions["x-kubernetes-int-or-string"].(bool); b || p.Format == "int-or-string" {
			typ = string(rules.TypeIntOrString)
		}
		if b, _ := p.Extensions["x-kubernetes-preserve-unknown-fields"].(bool); b {
			n.preserve = true
		}
		for k, v := range p.Properties {
			if _, ok := n.props[k]; !ok {
				n.props[k] = v
			}
		}
		for _, r := range p.Required {
			n.required[r] = true
		}
		if p.Items != nil && n.elemRef == nil {
			n.elemRef = p.Items
		}
		if p.AdditionalProperties.Schema != nil && addl == nil {
			addl = p.AdditionalProperties.Schema
		}
		if typ == "" && p.Type != nil {
			for _, t := range p.Type.Slice() {
				if t != "null" {
					typ = t
					break
				}
			}
		}
	}
	switch {
	case typ == string(rules.TypeIntOrString):
	case typ == typArray || typ == "" && n.elemRef != nil:
		typ = typArray
	case len(n.props) > 0 || typ == typObject && addl == nil:
		typ = typObject
	case addl != nil:
		typ, n.elemRef = typMap, addl
	case typ == "":
		typ = typAny
	}
	n.typ = typ
	return n
}

// child is the schema of an object member: a property, a map value, or
// anything below a node that keeps unknown fields. ok is false when the
// schema has no such member.
func (n *snode) child(key string) (c *snode, ok bool) {
	switch {
	case n.typ == typAny:
		return anyNode, true
	case n.typ == typObject:
		if c, ok := n.children[key]; ok {
			return c, true
		}
		if r, ok := n.props[key]; ok {
			c := newSNode(r)
			n.children[key] = c
			return c, true
		}
		if n.preserve {
			return anyNode, true
		}
	case n.typ == typMap:
		return n.element(), true
	case n.preserve:
		return anyNode, true
	}
	return nil, false
}

// element is the schema of array items or map values.
func (n *snode) element() *snode {
	if n.typ == typAny {
		return anyNode
	}
	if n.elem == nil {
		n.elem = newSNode(n.elemRef)
	}
	return n.elem
}

// step follows one path step.
func (n *snode) step(st rules.Step) (*snode, bool) {
	switch st.Kind {
	case rules.StepKey:
		return n.child(st.Key)
	default: // index or wildcard
		switch n.typ {
		case typArray, typMap:
			return n.element(), true
		case typAny, typObject:
			if st.Kind == rules.StepWildcard || n.typ == typAny {
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
		required = st.Kind != rules.StepKey || n.typ == typAny || n.required[st.Key]
		if n, ok = n.step(st); !ok {
			return nil, false, false
		}
	}
	return n, required, true
}

// valueProblem says why a rules value cannot be a field of this schema, or "".
func (n *snode) valueProblem(v any) string {
	if n.typ == typAny {
		return ""
	}
	if v == nil {
		return "" // null clears a field of any type
	}
	got := rules.TypeName(v)
	okType := false
	switch n.typ {
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
	case typObject, typMap:
		okType = got == "object"
	case typArray:
		okType = got == "array"
	}
	if !okType {
		return "the field is " + n.typ + ", the value " + describeType(v)
	}
	if len(n.enum) > 0 {
		for _, e := range n.enum {
			if rules.EqualJSON(e, v) {
				return ""
			}
		}
		return "the field allows only " + enumList(n.enum)
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
