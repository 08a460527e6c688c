package apidoc

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/getkin/kin-openapi/openapi2conv"
	"github.com/getkin/kin-openapi/openapi3"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apiextensions-apiserver/pkg/controller/openapi/builder"
	"k8s.io/kube-openapi/pkg/handler"
	"k8s.io/kube-openapi/pkg/spec3"
)

// The protobuf media types of /openapi/v2: the one kube-apiserver answers
// with, and the older one client-go still asks for.
const (
	OpenAPIV2Protobuf           = "application/com.github.proto-openapi.spec.v2.v1.0+protobuf"
	OpenAPIV2ProtobufDeprecated = "application/com.github.proto-openapi.spec.v2@v1.0+protobuf"
)

// PrefersProtobuf chooses, like kube-openapi's handler, between the JSON and
// the protobuf form of /openapi/v2: the highest q wins, then the first listed.
func PrefersProtobuf(accept string) bool {
	bestQ, proto := -1.0, false
	for _, part := range strings.Split(accept, ",") {
		// Not mime.ParseMediaType: "@" in the deprecated protobuf type is not
		// a token character.
		fields := strings.Split(part, ";")
		q := 1.0
		for _, f := range fields[1:] {
			if v, ok := strings.CutPrefix(strings.TrimSpace(f), "q="); ok {
				if parsed, err := strconv.ParseFloat(v, 64); err == nil {
					q = parsed
				}
			}
		}
		var isProto bool
		switch strings.ToLower(strings.TrimSpace(fields[0])) {
		case OpenAPIV2Protobuf, OpenAPIV2ProtobufDeprecated:
			isProto = true
		case "application/json", "*/*", "application/*":
		default:
			continue
		}
		if q > bestQ {
			bestQ, proto = q, isProto
		}
	}
	return proto
}

// MergeOpenAPIV2 merges Swagger 2.0 documents, the first one's entries
// winning; paths and definitions are unions.
func MergeOpenAPIV2(docs [][]byte) ([]byte, error) {
	var out map[string]json.RawMessage
	union := map[string]map[string]json.RawMessage{"paths": {}, "definitions": {}}
	for i, d := range docs {
		var top map[string]json.RawMessage
		if err := json.Unmarshal(d, &top); err != nil {
			return nil, fmt.Errorf("document %d: %w", i, err)
		}
		if out == nil {
			out = top
		}
		for field, m := range union {
			var entries map[string]json.RawMessage
			if raw, ok := top[field]; ok {
				if err := json.Unmarshal(raw, &entries); err != nil {
					return nil, fmt.Errorf("document %d: %s: %w", i, field, err)
				}
			}
			for k, v := range entries {
				if _, ok := m[k]; !ok {
					m[k] = v
				}
			}
		}
	}
	for field, m := range union {
		raw, err := json.Marshal(m)
		if err != nil {
			return nil, err
		}
		out[field] = raw
	}
	return json.Marshal(out)
}

// MergeOpenAPIV3Index is the /openapi/v3 index of the backends' union
// (path → serverRelativeURL; a path served by several backends points to
// the newest one's document) and of extra documents (path → document,
// named by their hash), which win. It is nil when both are empty.
func MergeOpenAPIV3Index(backends map[string]string, extra map[string][]byte) []byte {
	paths := map[string]map[string]string{}
	for p, doc := range extra {
		paths[p] = map[string]string{"serverRelativeURL": "/openapi/v3/" + p + "?hash=" + ETag(doc)}
	}
	for p, u := range backends {
		if _, ok := paths[p]; !ok {
			paths[p] = map[string]string{"serverRelativeURL": u}
		}
	}
	if len(paths) == 0 {
		return nil
	}
	b, _ := json.Marshal(map[string]any{"paths": paths})
	return b
}

// OpenAPIV3PathOf is the /openapi/v3 path of a group/version (api/v1,
// apis/policy/v1beta1).
func OpenAPIV3PathOf(group, version string) string {
	if group == "" {
		return "api/" + version
	}
	return "apis/" + group + "/" + version
}

// OpenAPIV3Path finds the /openapi/v3 path (apis/policy/v1beta1, api/v1) of
// a group/version's OpenAPI v3 document from the API paths it describes.
func OpenAPIV3Path(doc []byte) (string, error) {
	var d struct {
		OpenAPI string                     `json:"openapi"`
		Paths   map[string]json.RawMessage `json:"paths"`
	}
	if err := json.Unmarshal(doc, &d); err != nil {
		return "", fmt.Errorf("not an OpenAPI v3 document: %w", err)
	}
	if !strings.HasPrefix(d.OpenAPI, "3.") {
		return "", fmt.Errorf("not an OpenAPI v3 document (openapi: %q)", d.OpenAPI)
	}
	key := ""
	for p := range d.Paths {
		parts := strings.Split(strings.Trim(p, "/"), "/")
		var k string
		switch {
		case len(parts) >= 2 && parts[0] == "api":
			k = "api/" + parts[1]
		case len(parts) >= 3 && parts[0] == "apis":
			k = "apis/" + parts[1] + "/" + parts[2]
		default:
			continue
		}
		if key != "" && k != key {
			return "", fmt.Errorf("the document describes both %s and %s: give one group/version per document", key, k)
		}
		key = k
	}
	if key == "" {
		return "", fmt.Errorf("the document has no /api or /apis paths")
	}
	return key, nil
}

// OpenAPIV3ToV2 converts an OpenAPI v3 document to Swagger 2.0 with
// kin-openapi, for /openapi/v2.
func OpenAPIV3ToV2(doc []byte) (v2 []byte, err error) {
	defer func() {
		// The document comes from the user; a converter bug must not take
		// /openapi/v2 down.
		if r := recover(); r != nil {
			v2, err = nil, fmt.Errorf("kin-openapi: %v", r)
		}
	}()
	d, err := openapi3.NewLoader().LoadFromData(doc)
	if err != nil {
		return nil, err
	}
	if d.Info == nil {
		d.Info = &openapi3.Info{Title: "Kubernetes", Version: "unversioned"}
	}
	t, err := openapi2conv.FromV3(d)
	if err != nil {
		return nil, err
	}
	if v2, err = json.Marshal(t); err != nil {
		return nil, err
	}
	// kin-openapi leaves the references inside additionalProperties
	// pointing into components.
	return bytes.ReplaceAll(v2, []byte(`"$ref":"#/components/schemas/`), []byte(`"$ref":"#/definitions/`)), nil
}

// CRDOpenAPI builds the OpenAPI v3 and v2 documents of one version of a CRD
// as kube-apiserver builds them for a served version (v2 with its defaults
// pruned, as it merges them). Both are nil when the CRD has no schema for
// the version.
func CRDOpenAPI(crd *apiextensionsv1.CustomResourceDefinition, version string) (*spec3.OpenAPI, []byte, error) {
	if crd == nil {
		return nil, nil, nil
	}
	i := slices.IndexFunc(crd.Spec.Versions, func(v apiextensionsv1.CustomResourceDefinitionVersion) bool { return v.Name == version })
	if i < 0 || crd.Spec.Versions[i].Schema == nil || crd.Spec.Versions[i].Schema.OpenAPIV3Schema == nil {
		return nil, nil, nil
	}
	v3, err := builder.BuildOpenAPIV3(crd, version, builder.Options{V2: false, IncludeSelectableFields: true})
	if err != nil {
		return nil, nil, err
	}
	v2, err := builder.BuildOpenAPIV2(crd, version, builder.Options{V2: true, IncludeSelectableFields: true})
	if err != nil {
		return nil, nil, err
	}
	v2.Definitions = handler.PruneDefaults(v2.Definitions)
	b, err := json.Marshal(v2)
	if err != nil {
		return nil, nil, err
	}
	return v3, b, nil
}

// MergeOpenAPIV3 merges the OpenAPI v3 documents of several resources of
// one group/version into one, as kube-apiserver merges its CRDs'.
func MergeOpenAPIV3(docs ...*spec3.OpenAPI) ([]byte, error) {
	merged, err := builder.MergeSpecsV3(docs...)
	if err != nil {
		return nil, err
	}
	return json.Marshal(merged)
}
