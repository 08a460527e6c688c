package apidoc

import (
	"encoding/json"
	"os"
	"strings"
	"testing"

	openapiv2 "github.com/google/gnostic-models/openapiv2"
)

func TestOpenAPIV3Path(t *testing.T) {
	for _, tc := range []struct{ doc, want, err string }{
		{`{"openapi":"3.0.0","paths":{"/apis/policy/v1beta1/":{},"/apis/policy/v1beta1/poddisruptionbudgets":{}}}`, "apis/policy/v1beta1", ""},
		{`{"openapi":"3.0.0","paths":{"/api/v1/pods":{}}}`, "api/v1", ""},
		{`{"openapi":"3.0.0","paths":{"/apis/a/v1/x":{},"/apis/b/v1/y":{}}}`, "", "both"},
		{`{"swagger":"2.0","paths":{"/api/v1/pods":{}}}`, "", "not an OpenAPI v3"},
		{`{"openapi":"3.0.0","paths":{"/version":{}}}`, "", "no /api"},
	} {
		got, err := OpenAPIV3Path([]byte(tc.doc))
		if got != tc.want || (err == nil) != (tc.err == "") || err != nil && !strings.Contains(err.Error(), tc.err) {
			t.Errorf("%s: got %q, %v; want %q, %q", tc.doc, got, err, tc.want, tc.err)
		}
	}
}

// Kubernetes v1.24's policy/v1beta1 document (testdata) converts to Swagger
// 2.0 with every reference into definitions.
func TestOpenAPIV3ToV2_PolicyV1beta1(t *testing.T) {
	doc, err := os.ReadFile("../../../../testdata/emulation/openapi/apis__policy__v1beta1_openapi.json")
	if err != nil {
		t.Fatal(err)
	}
	v2, err := OpenAPIV3ToV2(doc)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(v2), "#/components/") {
		t.Error("a reference still points into components")
	}
	var d struct {
		Paths       map[string]json.RawMessage
		Definitions map[string]struct{ Properties map[string]json.RawMessage }
	}
	if err := json.Unmarshal(v2, &d); err != nil {
		t.Fatal(err)
	}
	if d.Definitions["io.k8s.api.policy.v1beta1.PodDisruptionBudget"].Properties["spec"] == nil ||
		d.Paths["/apis/policy/v1beta1/namespaces/{namespace}/poddisruptionbudgets/{name}"] == nil {
		t.Errorf("definitions %d, paths %d", len(d.Definitions), len(d.Paths))
	}
	if _, err := openapiv2.ParseDocument(v2); err != nil {
		t.Errorf("gnostic: %v", err)
	}
	if _, err := OpenAPIV3ToV2([]byte(`{"openapi":"3.0.0","paths":{}}`)); err != nil {
		t.Errorf("a document without info: %v", err)
	}
}
