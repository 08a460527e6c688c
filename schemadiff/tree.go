package schemadiff

import (
	"encoding/json"
	"maps"
	"regexp"
	"slices"
	"sort"
	"strings"

	"github.com/getkin/kin-openapi/openapi3"
)

// Value types of a [Field]. Scalars use the rules' value type names.
const (
	TypeObject      = "object"
	TypeArray       = "array"
	TypeMap         = "map"
	TypeString      = "string"
	TypeInteger     = "integer"
	TypeNumber      = "number"
	TypeBoolean     = "boolean"
	TypeIntOrString = "int-or-string"
	TypeAny         = "any"
)

// Field is one property of a kind's schema, flattened to a path in the rules'
// path language: spec.rules[*].http.paths[*].backend. Map values use {*}
// (metadata.labels{*}), which rules cannot address.
type Field struct {
	// Path locates the field in the object.
	Path string `json:"path"`
	// Type is object, array, map, string, integer, number, boolean,
	// int-or-string or any.
	Type string `json:"type"`
	// Format is the OpenAPI format (int32, date-time, ...).
	Format string `json:"format,omitempty"`
	// Ref is the definition the field's schema came from, if any.
	Ref string `json:"ref,omitempty"`
	// Required is whether the parent object requires the field.
	Required bool `json:"required,omitempty"`
	// Enum lists the allowed values, JSON-encoded and sorted.
	Enum []string `json:"enum,omitempty"`
	// Default is the JSON-encoded default, or "".
	Default string `json:"default,omitempty"`
	// Nullable is OpenAPI nullable.
	Nullable bool `json:"nullable,omitempty"`
	// PreserveUnknownFields is x-kubernetes-preserve-unknown-fields.
	PreserveUnknownFields bool `json:"preserveUnknownFields,omitempty"`
	// EmbeddedResource is x-kubernetes-embedded-resource.
	EmbeddedResource bool `json:"embeddedResource,omitempty"`
	// ListType, ListMapKeys and MapType are the x-kubernetes list/map markers.
	ListType    string   `json:"listType,omitempty"`
	ListMapKeys []string `json:"listMapKeys,omitempty"`
	MapType     string   `json:"mapType,omitempty"`
	// Recursive marks a field whose schema refers back to an enclosing
	// definition (JSONSchemaProps); it is not expanded further.
	Recursive bool `json:"recursive,omitempty"`
	// Description is the field's documentation.
	Description string `json:"-"`
}

// node is a Field in the schema tree.
type node struct {
	Field
	name     string // property name; "[*]" for array items, "{*}" for map values
	parent   *node
	children []*node // object properties, sorted by name
	elem     *node   // array items or map values

	shape map[string]bool // memo of structureSimilarity's path set
	words map[string]bool // memo of the description's words
}

// wildcards counts the [*] in the path.
func (n *node) wildcards() int { return strings.Count(n.Path, "[*]") }

// inMap reports whether the path crosses a map value, which rules cannot address.
func (n *node) inMap() bool { return strings.Contains(n.Path, "{*}") }

func (n *node) child(name string) *node {
	i := sort.Search(len(n.children), func(i int) bool { return n.children[i].name >= name })
	if i < len(n.children) && n.children[i].name == name {
		return n.children[i]
	}
	return nil
}

// walk visits n and every descendant, parents first.
func (n *node) walk(f func(*node)) {
	f(n)
	for _, c := range n.children {
		c.walk(f)
	}
	if n.elem != nil {
		n.elem.walk(f)
	}
}

// isAncestorOf reports whether n is a proper ancestor of m.
func (n *node) isAncestorOf(m *node) bool {
	for p := m.parent; p != nil; p = p.parent {
		if p == n {
			return true
		}
	}
	return false
}

// rel is m's path relative to its ancestor n ("" for n itself).
func (n *node) rel(m *node) string {
	return strings.TrimPrefix(m.Path, n.Path)
}

var identRE = regexp.MustCompile(`^[A-Za-z_$][A-Za-z0-9_$-]*$`)

func childPath(parent, name string) string {
	if identRE.MatchString(name) {
		if parent == "" {
			return name
		}
		return parent + "." + name
	}
	q, _ := json.Marshal(name)
	return parent + "[" + string(q) + "]"
}

// buildTree flattens a resolved schema. Refs already on the stack end the
// descent, so recursive definitions stay finite.
func buildTree(ref *openapi3.SchemaRef) *node {
	root := &node{}
	b := treeBuilder{stack: map[string]bool{}}
	b.fill(root, ref)
	return root
}

type treeBuilder struct {
	stack map[string]bool
}

func refName(r string) string {
	if i := strings.LastIndex(r, "/"); i >= 0 {
		return r[i+1:]
	}
	return r
}

func (b *treeBuilder) fill(n *node, ref *openapi3.SchemaRef) {
	v := ViewOf(ref)
	n.Ref = v.Ref
	if v.Ref != "" && b.stack[v.Ref] {
		n.Type = TypeObject
		n.Recursive = true
		return
	}
	if v.Ref != "" {
		b.stack[v.Ref] = true
		defer delete(b.stack, v.Ref)
	}
	n.setAttributes(v)
	n.Type = v.Type
	switch v.Type {
	case TypeArray:
		b.fillElem(n, "[*]", v.Elem)
	case TypeMap:
		b.fillElem(n, "{*}", v.Elem)
	case TypeObject:
		for _, k := range slices.Sorted(maps.Keys(v.Properties)) {
			c := &node{name: k, parent: n}
			c.Path = childPath(n.Path, k)
			c.Required = v.Required[k]
			b.fill(c, v.Properties[k])
			n.children = append(n.children, c)
		}
	}
}

// fillElem builds the node of array items ([*]) or map values ({*}).
func (b *treeBuilder) fillElem(n *node, name string, ref *openapi3.SchemaRef) {
	n.elem = &node{name: name, parent: n}
	n.elem.Path = n.Path + name
	b.fill(n.elem, ref)
}

// setAttributes copies what a Field says about its schema besides the type.
func (n *node) setAttributes(v *View) {
	n.Description, n.Format = v.Description, v.Format
	if v.Default != nil {
		n.Default = encodeJSON(v.Default)
	}
	for _, e := range v.Enum {
		n.Enum = append(n.Enum, encodeJSON(e))
	}
	sort.Strings(n.Enum)
	n.Nullable = v.Nullable
	n.PreserveUnknownFields, n.EmbeddedResource = v.PreserveUnknownFields, v.EmbeddedResource
	n.ListType, n.ListMapKeys, n.MapType = v.ListType, v.ListMapKeys, v.MapType
}

func schemaType(ts []string) string {
	for _, t := range ts {
		switch t {
		case "null":
			continue
		case "object":
			return TypeObject
		case "array":
			return TypeArray
		case "string":
			return TypeString
		case "integer":
			return TypeInteger
		case "number":
			return TypeNumber
		case "boolean":
			return TypeBoolean
		}
	}
	return ""
}

func boolExt(ext map[string]any, key string) bool {
	v, ok := ext[key].(bool)
	return ok && v
}

func encodeJSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return ""
	}
	return string(b)
}

// fingerprint summarises a subtree's structure (paths and types relative to
// the root) so that unchanged shared definitions can be skipped quickly.
func (n *node) fingerprint() string {
	var sb strings.Builder
	n.walk(func(m *node) {
		sb.WriteString(n.rel(m))
		sb.WriteByte(' ')
		sb.WriteString(m.Type)
		sb.WriteByte(' ')
		sb.WriteString(m.Format)
		if m.Required && m != n {
			sb.WriteString(" req")
		}
		sb.WriteString(strings.Join(m.Enum, ","))
		sb.WriteString(m.Default)
		sb.WriteByte('\n')
	})
	return sb.String()
}
