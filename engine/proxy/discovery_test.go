package proxy

import (
	"encoding/json"
	"net/http"
	"slices"
	"testing"

	openapiv2 "github.com/google/gnostic-models/openapiv2"
	"google.golang.org/protobuf/proto"
	apidiscoveryv2 "k8s.io/api/apidiscovery/v2"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/mvpctl/mvpctl/engine/proxy/internal/apidoc"
	"github.com/mvpctl/mvpctl/engine/proxy/internal/proxytest"
)

func TestProxy_DiscoveryIsTheUnionOfBackends(t *testing.T) {
	old := newFake(t, "old", "v1.35.4", "v1/configmaps", "admissionregistration.k8s.io/v1beta1/mutatingadmissionpolicies", "apps/v1/deployments")
	neu := newFake(t, "new", "v1.36.3", "v1/configmaps", "v1/pods", "admissionregistration.k8s.io/v1/mutatingadmissionpolicies", "admissionregistration.k8s.io/v1beta1/mutatingadmissionpolicies", "apps/v1/deployments")
	p, srv := startProxy(t, Options{}, old, neu)

	const accept = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,application/json"
	code, hdr, body := proxytest.Do(t, nil, proxytest.NewRequest(t, http.MethodGet, srv.URL+"/apis", "", "Accept", accept))
	if ct := hdr.Get("Content-Type"); ct != apidoc.AggregatedContentType {
		t.Fatalf("Content-Type %q, want aggregated discovery", ct)
	}
	var list apidiscoveryv2.APIGroupDiscoveryList
	if err := json.Unmarshal(body, &list); err != nil {
		t.Fatal(err)
	}
	var adm *apidiscoveryv2.APIGroupDiscovery
	for i := range list.Items {
		if list.Items[i].Name == "admissionregistration.k8s.io" {
			adm = &list.Items[i]
		}
	}
	if adm == nil {
		t.Fatalf("admissionregistration.k8s.io missing from %s", body)
	}
	var versions []string
	for _, v := range adm.Versions {
		versions = append(versions, v.Version)
	}
	if !slices.Equal(versions, []string{"v1", "v1beta1"}) {
		t.Errorf("admissionregistration versions %v, want [v1 v1beta1] (the newest server's preference)", versions)
	}

	etag := hdr.Get("ETag")
	if etag == "" || hdr.Get("Cache-Control") != "public" || hdr.Get("Vary") != "Accept" {
		t.Errorf("caching headers: ETag %q, Cache-Control %q, Vary %q", etag, hdr.Get("Cache-Control"), hdr.Get("Vary"))
	}
	if code, _, _ := proxytest.Do(t, nil, proxytest.NewRequest(t, http.MethodGet, srv.URL+"/apis", "", "Accept", accept, "If-None-Match", etag)); code != http.StatusNotModified {
		t.Errorf("If-None-Match with the current ETag = %d, want 304", code)
	}

	// Legacy discovery, from the same union.
	_, _, body = proxytest.Do(t, nil, proxytest.NewRequest(t, http.MethodGet, srv.URL+"/apis/admissionregistration.k8s.io/v1", "", "Accept", "application/json"))
	var rl metav1.APIResourceList
	if err := json.Unmarshal(body, &rl); err != nil {
		t.Fatalf("%v: %s", err, body)
	}
	if len(rl.APIResources) != 1 || rl.APIResources[0].Name != "mutatingadmissionpolicies" {
		t.Errorf("legacy admissionregistration.k8s.io/v1 = %s", body)
	}
	_, _, body = proxytest.Do(t, nil, proxytest.NewRequest(t, http.MethodGet, srv.URL+"/api", "", "Accept", "application/json"))
	var vs metav1.APIVersions
	if err := json.Unmarshal(body, &vs); err != nil {
		t.Fatalf("%v: %s", err, body)
	}
	if !slices.Equal(vs.Versions, []string{"v1"}) {
		t.Errorf("legacy /api = %s", body)
	}

	// A server that is down keeps its resources in discovery: taking them
	// out would make the garbage collector think they are gone.
	neu.notReady.Store(true)
	proxytest.Poll(t, "new not ready", func() bool { return !p.list()[1].snapshot().ready })
	_, _, body = proxytest.Do(t, nil, proxytest.NewRequest(t, http.MethodGet, srv.URL+"/apis/admissionregistration.k8s.io/v1", "", "Accept", "application/json"))
	rl = metav1.APIResourceList{}
	if err := json.Unmarshal(body, &rl); err != nil {
		t.Fatalf("%v: %s", err, body)
	}
	if len(rl.APIResources) != 1 {
		t.Errorf("with new down, admissionregistration.k8s.io/v1 = %s, want it still listed", body)
	}
	code, hdr, _ = proxytest.Do(t, nil, proxytest.NewRequest(t, http.MethodGet, srv.URL+"/apis/nothere.example.com/v1", "", "Accept", "application/json"))
	if code != http.StatusNotFound {
		t.Errorf("unknown group version = %d, want 404", code)
	}
}

func TestProxy_OpenAPIV2IsTheUnion(t *testing.T) {
	old := newFake(t, "old", "v1.35.4", "v1/configmaps")
	old.openAPIV2 = `{"swagger":"2.0","info":{"title":"Kubernetes","version":"v1.35.4"},"paths":{"/api/v1/configmaps":{"get":{"operationId":"old","responses":{"200":{"description":"OK"}}}},"/apis/gone/v1beta1/things":{"get":{"operationId":"gone","responses":{"200":{"description":"OK"}}}}},"definitions":{"io.k8s.api.core.v1.ConfigMap":{"description":"old"},"io.k8s.api.gone.v1beta1.Thing":{"description":"only old"}}}`
	neu := newFake(t, "new", "v1.36.3", "v1/configmaps")
	neu.openAPIV2 = `{"swagger":"2.0","info":{"title":"Kubernetes","version":"v1.36.3"},"paths":{"/api/v1/configmaps":{"get":{"operationId":"new","responses":{"200":{"description":"OK"}}}}},"definitions":{"io.k8s.api.core.v1.ConfigMap":{"description":"new"},"io.k8s.api.admissionregistration.v1.MutatingAdmissionPolicy":{"description":"only new"}}}`
	_, srv := startProxy(t, Options{}, old, neu)

	code, hdr, body := proxytest.Do(t, nil, proxytest.NewRequest(t, http.MethodGet, srv.URL+"/openapi/v2", "", "Accept", "application/json"))
	if code != http.StatusOK {
		t.Fatalf("/openapi/v2: %d %s", code, body)
	}
	var doc struct {
		Info        struct{ Version string }
		Paths       map[string]map[string]struct{ OperationID string }
		Definitions map[string]struct{ Description string }
	}
	if err := json.Unmarshal(body, &doc); err != nil {
		t.Fatalf("%v: %s", err, body)
	}
	if doc.Info.Version != "v1.36.3" || doc.Paths["/api/v1/configmaps"]["get"].OperationID != "new" ||
		doc.Definitions["io.k8s.api.core.v1.ConfigMap"].Description != "new" {
		t.Errorf("overlapping entries are not the newest server's: %s", body)
	}
	if doc.Definitions["io.k8s.api.gone.v1beta1.Thing"].Description != "only old" ||
		doc.Definitions["io.k8s.api.admissionregistration.v1.MutatingAdmissionPolicy"].Description != "only new" ||
		doc.Paths["/apis/gone/v1beta1/things"] == nil {
		t.Errorf("the union lacks one server's entries: %s", body)
	}
	if code, _, _ := proxytest.Do(t, nil, proxytest.NewRequest(t, http.MethodGet, srv.URL+"/openapi/v2", "", "Accept", "application/json", "If-None-Match", hdr.Get("ETag"))); code != http.StatusNotModified {
		t.Errorf("If-None-Match = %d, want 304", code)
	}

	code, hdr, body = proxytest.Do(t, nil, proxytest.NewRequest(t, http.MethodGet, srv.URL+"/openapi/v2", "", "Accept", apidoc.OpenAPIV2ProtobufDeprecated))
	if hdr.Get("Content-Type") != apidoc.OpenAPIV2Protobuf {
		t.Fatalf("Content-Type %q, want protobuf: %s", hdr.Get("Content-Type"), body)
	}
	var pb openapiv2.Document
	if err := proto.Unmarshal(body, &pb); err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, d := range pb.GetDefinitions().GetAdditionalProperties() {
		names = append(names, d.GetName())
	}
	slices.Sort(names)
	if want := []string{"io.k8s.api.admissionregistration.v1.MutatingAdmissionPolicy", "io.k8s.api.core.v1.ConfigMap", "io.k8s.api.gone.v1beta1.Thing"}; !slices.Equal(names, want) {
		t.Errorf("protobuf definitions %v, want %v", names, want)
	}
}

func TestOpenAPIV3Backends_HashOwnerFirst(t *testing.T) {
	mk := func(name, url string) *backend {
		b := &backend{name: name}
		b.state.Store(&backendState{ready: true, caps: &capabilities{openAPIV3: map[string]string{"api/v1": url}}})
		return b
	}
	a, b := mk("a", "/openapi/v3/api/v1?hash=AAA"), mk("b", "/openapi/v3/api/v1?hash=BBB")
	for _, order := range [][]*backend{{a, b}, {b, a}} {
		got := openAPIV3Backends(order, "api/v1", "/openapi/v3/api/v1?hash=BBB")
		if len(got) != 2 || got[0] != b {
			t.Errorf("order %s,%s: first candidate %s, want b (its hash)", order[0].name, order[1].name, got[0].name)
		}
	}
}
