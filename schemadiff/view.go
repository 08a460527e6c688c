package schemadiff

import (
	"github.com/getkin/kin-openapi/openapi3"
)

// View is one schema the way Kubernetes means it: its allOf members merged
// (Kubernetes' v3 documents wrap refs as {allOf: [{$ref}], default,
// description}) and its value type classified. Properties, items and
// additional properties stay references, so that a reader expands only
// what it visits and recursive definitions (JSONSchemaProps) stay finite.
// The schema tree of a kind and lint's schema checks both read schemas
// through it.
type View struct {
	// Type is TypeObject, TypeArray, TypeMap, TypeString, TypeInteger,
	// TypeNumber, TypeBoolean, TypeIntOrString or TypeAny.
	Type string
	// Ref is the definition the schema came from: the first $ref met, or "".
	Ref string
	// Format, Description and Default are the first ones given.
	Format      string
	Description string
	Default     any
	// Enum is the first enum given.
	Enum []any
	// Nullable is OpenAPI nullable in any member.
	Nullable bool
	// PreserveUnknownFields is x-kubernetes-preserve-unknown-fields in any member.
	PreserveUnknownFields bool
	// EmbeddedResource is x-kubernetes-embedded-resource in any member.
	EmbeddedResource bool
	// ListType, ListMapKeys and MapType are the x-kubernetes list and map
	// markers; the last member that gives one wins.
	ListType    string
	ListMapKeys []string
	MapType     string
	// Properties are an object's members; the first member that defines a
	// name wins. Required names those the object requires.
	Properties map[string]*openapi3.SchemaRef
	Required   map[string]bool
	// Elem is the schema of array items (TypeArray) or map values (TypeMap).
	Elem *openapi3.SchemaRef
}

// maxAllOfDepth bounds the nesting of allOf: a document whose allOf refers
// back to its own schema would otherwise be merged forever.
const maxAllOfDepth = 8

// ViewOf merges and classifies a schema; a nil or unresolved one is TypeAny.
func ViewOf(ref *openapi3.SchemaRef) *View {
	v := &View{Properties: map[string]*openapi3.SchemaRef{}, Required: map[string]bool{}}
	parts := allOfParts(ref, 0, &v.Ref, nil)
	if len(parts) == 0 {
		v.Type = TypeAny
		return v
	}
	var typ string
	intOrString := false
	var items, addl *openapi3.SchemaRef
	for _, p := range parts {
		v.merge(p)
		intOrString = intOrString || boolExt(p.Extensions, "x-kubernetes-int-or-string") || p.Format == "int-or-string"
		if typ == "" && p.Type != nil {
			typ = schemaType(p.Type.Slice())
		}
		if items == nil {
			items = p.Items
		}
		if addl == nil {
			addl = p.AdditionalProperties.Schema
		}
	}
	switch {
	case intOrString:
		typ = TypeIntOrString
	case typ == TypeArray || typ == "" && items != nil:
		typ, v.Elem = TypeArray, items
	case len(v.Properties) > 0 || typ == TypeObject && addl == nil:
		typ = TypeObject
	case addl != nil:
		typ, v.Elem = TypeMap, addl
	case typ == "":
		typ = TypeAny
	}
	v.Type = typ
	return v
}

// allOfParts lists a schema and its allOf members, depth first, and sets
// *name to the first ref met.
func allOfParts(ref *openapi3.SchemaRef, depth int, name *string, parts []*openapi3.Schema) []*openapi3.Schema {
	if ref == nil || ref.Value == nil || depth > maxAllOfDepth {
		return parts
	}
	if *name == "" {
		*name = refName(ref.Ref)
	}
	parts = append(parts, ref.Value)
	for _, a := range ref.Value.AllOf {
		parts = allOfParts(a, depth+1, name, parts)
	}
	return parts
}

// merge adds one allOf member's attributes, properties and requirements.
func (v *View) merge(p *openapi3.Schema) {
	if v.Description == "" {
		v.Description = p.Description
	}
	if v.Format == "" {
		v.Format = p.Format
	}
	if v.Default == nil {
		v.Default = p.Default
	}
	if len(v.Enum) == 0 {
		v.Enum = p.Enum
	}
	v.Nullable = v.Nullable || p.Nullable
	ext := p.Extensions
	v.PreserveUnknownFields = v.PreserveUnknownFields || boolExt(ext, "x-kubernetes-preserve-unknown-fields")
	v.EmbeddedResource = v.EmbeddedResource || boolExt(ext, "x-kubernetes-embedded-resource")
	if s, ok := ext["x-kubernetes-list-type"].(string); ok {
		v.ListType = s
	}
	if s, ok := ext["x-kubernetes-map-type"].(string); ok {
		v.MapType = s
	}
	if keys, ok := ext["x-kubernetes-list-map-keys"].([]any); ok {
		v.ListMapKeys = v.ListMapKeys[:0]
		for _, k := range keys {
			if s, ok := k.(string); ok {
				v.ListMapKeys = append(v.ListMapKeys, s)
			}
		}
	}
	for k, s := range p.Properties {
		if _, ok := v.Properties[k]; !ok {
			v.Properties[k] = s
		}
	}
	for _, r := range p.Required {
		v.Required[r] = true
	}
}
