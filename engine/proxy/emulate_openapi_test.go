package proxy

import (
	"encoding/json"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"

	openapiv2 "github.com/google/gnostic-models/openapiv2"
	"google.golang.org/protobuf/proto"
	"sigs.k8s.io/yaml"

	"github.com/mvpctl/mvpctl/engine/proxy/internal/apidoc"
	"github.com/mvpctl/mvpctl/engine/proxy/internal/proxytest"
)

const crdPath = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/customresources.myapps.example.com"

// crdBackend is a backend serving v1beta1 of the seed resource and the
// CRD object, which it counts. fail makes the next CRD reads answer 500.
type crdBackend struct {
	f     *fakeAPIServer
	reads atomic.Int64
	fail  atomic.Int64
	crd   string // YAML; empty answers 404
	auth  atomic.Value
}

func newCRDBackend(t *testing.T, crd string) *crdBackend {
	t.Helper()
	c := &crdBackend{crd: crd}
	c.f = newFake(t, "a", "v1.36.3", "myapps.example.com/v1beta1/customresources", "apiextensions.k8s.io/v1/customresourcedefinitions")
	c.f.openAPIV2 = `{"swagger":"2.0","info":{"title":"Kubernetes","version":"v1.36.3"},"paths":{"/api/v1/configmaps":{}},"definitions":{"io.k8s.api.core.v1.ConfigMap":{"description":"served"}}}`
	c.f.setHandler(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != crdPath {
			http.NotFound(w, r)
			return
		}
		c.reads.Add(1)
		c.auth.Store(r.Header.Get("Authorization"))
		if c.fail.Add(-1) >= 0 {
			http.Error(w, "etcd is slow", http.StatusInternalServerError)
			return
		}
		if c.crd == "" {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusNotFound)
			w.Write([]byte(`{"kind":"Status","apiVersion":"v1","status":"Failure","reason":"NotFound","code":404}`))
			return
		}
		js, err := yaml.YAMLToJSON([]byte(c.crd))
		if err != nil {
			t.Error(err)
		}
		w.Header().Set("Content-Type", "application/json")
		w.Write(js)
	})
	return c
}

// start runs a proxy with the proxy's own token in front of the backend.
func (c *crdBackend) start(t *testing.T, opts Options) (*Proxy, string) {
	t.Helper()
	b := c.f.backend(t)
	b.BearerToken = "proxy-token"
	opts.Backends = append(opts.Backends, b)
	p, srv := startProxy(t, opts)
	return p, srv.URL
}

func openAPIV3Index(t *testing.T, base string) map[string]string {
	t.Helper()
	code, _, body := proxytest.Do(t, nil, proxytest.NewRequest(t, "GET", base+"/openapi/v3", ""))
	if code == http.StatusNotFound {
		return nil // no backend has an index, and nothing is emulated
	}
	if code != http.StatusOK {
		t.Fatalf("/openapi/v3: %d %s", code, body)
	}
	var index struct {
		Paths map[string]struct{ ServerRelativeURL string }
	}
	if err := json.Unmarshal(body, &index); err != nil {
		t.Fatalf("%v: %s", err, body)
	}
	out := map[string]string{}
	for p, v := range index.Paths {
		out[p] = v.ServerRelativeURL
	}
	return out
}

type openAPIV2Doc struct {
	Paths       map[string]json.RawMessage
	Definitions map[string]struct {
		Description string
		Properties  map[string]json.RawMessage
	}
}

func getOpenAPIV2(t *testing.T, base string) (openAPIV2Doc, string) {
	t.Helper()
	code, hdr, body := proxytest.Do(t, nil, proxytest.NewRequest(t, http.MethodGet, base+"/openapi/v2", "", "Accept", "application/json"))
	var doc openAPIV2Doc
	if err := json.Unmarshal(body, &doc); err != nil || code != http.StatusOK {
		t.Fatalf("/openapi/v2: %d %v: %.300s", code, err, body)
	}
	return doc, hdr.Get("ETag")
}

const (
	alphaPath  = "apis/myapps.example.com/v1alpha1"
	alphaModel = "com.example.myapps.v1alpha1.Customresource"
)

func TestEmulation_OpenAPIFromTheCRDsOldVersion(t *testing.T) {
	c := newCRDBackend(t, proxytest.SeedCRD)
	p, base := c.start(t, Options{Rules: Rules{Converter: proxytest.SeedConverter(t)}})

	// /openapi/v3 lists v1alpha1; its document is built from the CRD's
	// v1alpha1 schema by apiextensions-apiserver's builder.
	u := openAPIV3Index(t, base)[alphaPath]
	if !strings.HasPrefix(u, "/openapi/v3/"+alphaPath+"?hash=") {
		t.Fatalf("the index does not list %s: %q", alphaPath, u)
	}
	code, _, body := proxytest.Do(t, nil, proxytest.NewRequest(t, "GET", base+u, ""))
	if code != http.StatusOK {
		t.Fatalf("%d %s", code, body)
	}
	var v3 struct {
		OpenAPI    string
		Paths      map[string]json.RawMessage
		Components struct {
			Schemas map[string]struct {
				Properties map[string]json.RawMessage
				GVK        []map[string]string `json:"x-kubernetes-group-version-kind"`
			}
		}
	}
	if err := json.Unmarshal(body, &v3); err != nil {
		t.Fatal(err)
	}
	model := v3.Components.Schemas[alphaModel]
	if !strings.HasPrefix(v3.OpenAPI, "3.") || v3.Paths["/apis/myapps.example.com/v1alpha1/namespaces/{namespace}/customresources/{name}"] == nil ||
		len(model.GVK) != 1 || model.GVK[0]["version"] != "v1alpha1" || model.GVK[0]["kind"] != "Customresource" ||
		!strings.Contains(string(model.Properties["spec"]), `"legacyTimeout":{"description":"The request timeout in seconds.","type":"integer"}`) {
		t.Errorf("the v1alpha1 document: %.2000s", body)
	}

	// /openapi/v2 has the version's definitions and paths after the
	// backend's, in JSON and protobuf.
	doc, etag := getOpenAPIV2(t, base)
	if doc.Definitions["io.k8s.api.core.v1.ConfigMap"].Description != "served" || doc.Paths["/api/v1/configmaps"] == nil {
		t.Errorf("/openapi/v2 lost the backend's document: %v", doc.Definitions)
	}
	if !strings.Contains(string(doc.Definitions[alphaModel].Properties["spec"]), "legacyTimeout") ||
		doc.Paths["/apis/myapps.example.com/v1alpha1/namespaces/{namespace}/customresources/{name}"] == nil {
		t.Errorf("/openapi/v2 lacks the emulated version: %v", doc.Definitions[alphaModel])
	}
	code, _, pbBody := proxytest.Do(t, nil, proxytest.NewRequest(t, http.MethodGet, base+"/openapi/v2", "", "Accept", apidoc.OpenAPIV2Protobuf))
	var pb openapiv2.Document
	if err := proto.Unmarshal(pbBody, &pb); err != nil || code != http.StatusOK {
		t.Fatalf("protobuf: %d %v", code, err)
	}
	found := false
	for _, d := range pb.GetDefinitions().GetAdditionalProperties() {
		found = found || d.GetName() == alphaModel
	}
	if !found {
		t.Errorf("the protobuf form lacks %s", alphaModel)
	}
	if n := c.reads.Load(); n != 1 {
		t.Errorf("the CRD was read %d times, want once for the union", n)
	}
	if got, _ := c.auth.Load().(string); got != "Bearer proxy-token" {
		t.Errorf("the CRD was read with %q, not the proxy's identity", got)
	}

	// Without the rules v1alpha1 is not emulated: gone from both documents,
	// and /openapi/v2's ETag changes.
	if err := p.SetRules(Rules{}); err != nil {
		t.Fatal(err)
	}
	if u, ok := openAPIV3Index(t, base)[alphaPath]; ok {
		t.Errorf("the index still lists %s: %s", alphaPath, u)
	}
	doc, etag2 := getOpenAPIV2(t, base)
	if _, ok := doc.Definitions[alphaModel]; ok || etag2 == etag {
		t.Errorf("/openapi/v2 after the rules went: ETag %s (was %s), has %s: %v", etag2, etag, alphaModel, ok)
	}
	if err := p.SetRules(Rules{Converter: proxytest.SeedConverter(t)}); err != nil {
		t.Fatal(err)
	}
	if doc, etag3 := getOpenAPIV2(t, base); doc.Definitions[alphaModel].Properties == nil || etag3 != etag {
		t.Errorf("/openapi/v2 with the rules back: ETag %s, want %s", etag3, etag)
	}
	if n := c.reads.Load(); n != 2 {
		t.Errorf("the CRD was read %d times, want again for the new union", n)
	}
}

func TestEmulation_OpenAPIFromCRDWithoutTheVersion(t *testing.T) {
	// The CRD dropped v1alpha1 from spec.versions; another CRD is not there.
	crd := proxytest.SeedCRD[:strings.Index(proxytest.SeedCRD, "  - name: v1alpha1")]
	for name, c := range map[string]*crdBackend{"version gone": newCRDBackend(t, crd), "no CRD": newCRDBackend(t, "")} {
		t.Run(name, func(t *testing.T) {
			_, base := c.start(t, Options{Rules: Rules{Converter: proxytest.SeedConverter(t)}})
			if u, ok := openAPIV3Index(t, base)[alphaPath]; ok {
				t.Errorf("the index lists %s: %s", alphaPath, u)
			}
			if doc, _ := getOpenAPIV2(t, base); doc.Definitions[alphaModel].Properties != nil {
				t.Errorf("/openapi/v2 has %s", alphaModel)
			}
			if c.reads.Load() != 1 {
				t.Errorf("the CRD was read %d times, want once", c.reads.Load())
			}
		})
	}
}

// A CRD that could not be read is read again on the next request.
func TestEmulation_OpenAPIFromCRDRetriesAFailedRead(t *testing.T) {
	c := newCRDBackend(t, proxytest.SeedCRD)
	c.fail.Store(1)
	_, base := c.start(t, Options{Rules: Rules{Converter: proxytest.SeedConverter(t)}})
	if _, ok := openAPIV3Index(t, base)[alphaPath]; ok {
		t.Error("listed although the CRD could not be read")
	}
	if _, ok := openAPIV3Index(t, base)[alphaPath]; !ok {
		t.Error("not listed after the CRD could be read")
	}
	if n := c.reads.Load(); n != 2 {
		t.Errorf("%d reads, want 2", n)
	}
}

// An --openapi-from document wins over the CRD's schema, in /openapi/v3 and,
// converted, in /openapi/v2.
func TestEmulation_OpenAPIFromFlagWinsOverTheCRD(t *testing.T) {
	given := []byte(`{"openapi":"3.0.0","info":{"title":"given","version":"1"},"paths":{"/apis/myapps.example.com/v1alpha1/namespaces/{namespace}/customresources/{name}":{"get":{"responses":{"200":{"description":"OK","content":{"application/json":{"schema":{"$ref":"#/components/schemas/given.Customresource"}}}}}}}},"components":{"schemas":{"given.Customresource":{"type":"object","description":"from the flag"}}}}`)
	c := newCRDBackend(t, proxytest.SeedCRD)
	_, base := c.start(t, Options{Rules: Rules{Converter: proxytest.SeedConverter(t)}, OpenAPIV3: map[string][]byte{alphaPath: given}})
	u := openAPIV3Index(t, base)[alphaPath]
	if code, _, body := proxytest.Do(t, nil, proxytest.NewRequest(t, "GET", base+u, "")); code != http.StatusOK || string(body) != string(given) {
		t.Errorf("%d %s", code, body)
	}
	doc, _ := getOpenAPIV2(t, base)
	if doc.Definitions["given.Customresource"].Description != "from the flag" || doc.Definitions[alphaModel].Properties != nil {
		t.Errorf("/openapi/v2: %v", doc.Definitions)
	}
	if !strings.Contains(string(doc.Paths["/apis/myapps.example.com/v1alpha1/namespaces/{namespace}/customresources/{name}"]), `"$ref":"#/definitions/given.Customresource"`) {
		t.Errorf("/openapi/v2 path: %s", doc.Paths["/apis/myapps.example.com/v1alpha1/namespaces/{namespace}/customresources/{name}"])
	}
	if c.reads.Load() != 0 {
		t.Errorf("the CRD was read %d times, want never", c.reads.Load())
	}
}
