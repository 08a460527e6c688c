package emulation

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/yaml"

	"github.com/mvpctl/mvpctl/engine/proxy/internal/proxytest"
)

// The emulated version is listed after the served one, as a copy of its
// resource with its own kind.
func TestView_ListsTheEmulatedVersionLast(t *testing.T) {
	e, err := New(&fakeHost{}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	view, groups := e.Rules(proxytest.SeedConverter(t)).View(seedGroups("v1beta1"))
	if len(groups) != 1 || len(groups[0].Versions) != 2 {
		t.Fatalf("groups: %+v", groups)
	}
	served, emulated := groups[0].Versions[0], groups[0].Versions[1]
	if served.Version != "v1beta1" || emulated.Version != "v1alpha1" {
		t.Fatalf("versions %s, %s; want v1beta1, v1alpha1", served.Version, emulated.Version)
	}
	want := served.Resources[0].DeepCopy()
	want.ResponseKind.Version = "v1alpha1"
	if diff := cmp.Diff(*want, emulated.Resources[0]); diff != "" {
		t.Errorf("the emulated resource (-want +got):\n%s", diff)
	}
	alpha := schema.GroupVersion{Group: "myapps.example.com", Version: "v1alpha1"}
	if !view.Emulates(alpha, "customresources") || view.Emulates(alpha, "customresources/status") || view.Emulates(alpha, "others") {
		t.Error("Emulates does not follow the rules")
	}
}

func seedCRD(t *testing.T, crdYAML string) map[string]*apiextensionsv1.CustomResourceDefinition {
	t.Helper()
	var crd apiextensionsv1.CustomResourceDefinition
	if err := yaml.Unmarshal([]byte(crdYAML), &crd); err != nil {
		t.Fatal(err)
	}
	return map[string]*apiextensionsv1.CustomResourceDefinition{crd.Name: &crd}
}

// The OpenAPI of an emulated CRD version is built from the schema its CRD
// keeps for it, read once; a CRD that could not be read is read again.
func TestView_OpenAPIFromTheCRD(t *testing.T) {
	e := startEmulation(t, config{crds: seedCRD(t, proxytest.SeedCRD)})
	e.host.crdErr = 1
	const path = "apis/myapps.example.com/v1alpha1"
	if !e.view.ListsOpenAPIV3(path) || e.view.ListsOpenAPIV3("apis/myapps.example.com/v1beta1") {
		t.Error("ListsOpenAPIV3 lists other than the emulated version")
	}
	if docs := e.view.OpenAPI(context.Background()); len(docs.V3) != 0 || len(docs.V2) != 0 {
		t.Errorf("documents although the CRD could not be read: %v", docs.V3)
	}
	docs := e.view.OpenAPI(context.Background())
	var v3 struct {
		Components struct {
			Schemas map[string]struct{ Properties map[string]json.RawMessage }
		}
	}
	if err := json.Unmarshal(docs.V3[path], &v3); err != nil {
		t.Fatalf("%v: %.300s", err, docs.V3[path])
	}
	if spec := v3.Components.Schemas["com.example.myapps.v1alpha1.Customresource"].Properties["spec"]; !strings.Contains(string(spec), "legacyTimeout") {
		t.Errorf("the v1alpha1 schema: %s", spec)
	}
	if len(docs.V2) != 1 || !strings.Contains(string(docs.V2[0]), "legacyTimeout") {
		t.Errorf("the v2 documents: %d", len(docs.V2))
	}
	if again := e.view.OpenAPI(context.Background()); again != docs {
		t.Error("the documents were built again")
	}
	if n := e.host.crdReads.Load(); n != 2 {
		t.Errorf("the CRD was read %d times, want 2 (a failed read, then one)", n)
	}
}

// An Options.OpenAPIV3 document wins over the CRD, and is converted to v2.
func TestView_OpenAPIFromOptionsWinsOverTheCRD(t *testing.T) {
	given := []byte(`{"openapi":"3.0.0","info":{"title":"given","version":"1"},"paths":{},"components":{"schemas":{"given.Customresource":{"type":"object","description":"from the options"}}}}`)
	const path = "apis/myapps.example.com/v1alpha1"
	e := startEmulation(t, config{crds: seedCRD(t, proxytest.SeedCRD), opts: Options{OpenAPIV3: map[string][]byte{path: given}}})
	docs := e.view.OpenAPI(context.Background())
	if string(docs.V3[path]) != string(given) || len(docs.V2) != 1 || !strings.Contains(string(docs.V2[0]), "from the options") {
		t.Errorf("v3 %s; v2 %q", docs.V3[path], docs.V2)
	}
	if n := e.host.crdReads.Load(); n != 0 {
		t.Errorf("the CRD was read %d times", n)
	}
}
