package proxy

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/mvpctl/mvpctl/engine/proxy/internal/proxytest"
)

// The tests of emulation through the proxy: what the proxy adds to it
// (discovery, routing, metrics). The emulation's own behaviour is tested in
// internal/emulation.

// emulationProxy emulates v1alpha1 of the seed resource in front of a
// server that serves v1beta1 and answers the resource's requests with h.
func emulationProxy(t *testing.T, h http.HandlerFunc) (*Proxy, string, *fakeAPIServer) {
	t.Helper()
	f := newFake(t, "a", "v1.36.3", "myapps.example.com/v1beta1/customresources", "myapps.example.com/v1beta1/customresources/status")
	f.setHandler(h)
	p, srv := startProxy(t, Options{Rules: Rules{Converter: proxytest.SeedConverter(t)}}, f)
	return p, srv.URL, f
}

func TestEmulation_DiscoveryListsEmulatedVersionLast(t *testing.T) {
	_, url, _ := emulationProxy(t, nil)
	code, _, data := proxytest.Do(t, nil, proxytest.NewRequest(t, http.MethodGet, url+"/apis", "", "Accept", aggregatedAccept))
	if code != http.StatusOK {
		t.Fatalf("/apis: %d %s", code, data)
	}
	var list struct {
		Items []struct {
			Metadata struct{ Name string }
			Versions []struct {
				Version   string
				Resources []struct {
					Resource     string
					ResponseKind struct{ Group, Version, Kind string }
					Verbs        []string
					Subresources []struct{ Subresource string }
				}
			}
		}
	}
	if err := json.Unmarshal(data, &list); err != nil {
		t.Fatal(err)
	}
	var versions []string
	for _, g := range list.Items {
		if g.Metadata.Name != "myapps.example.com" {
			continue
		}
		for _, v := range g.Versions {
			versions = append(versions, v.Version)
			if v.Version == "v1alpha1" {
				r := v.Resources[0]
				if r.Resource != "customresources" || r.ResponseKind.Version != "v1alpha1" || r.ResponseKind.Kind != "Customresource" || len(r.Verbs) != 7 || len(r.Subresources) != 1 {
					t.Errorf("emulated resource: %+v", r)
				}
			}
		}
	}
	if diff := cmp.Diff([]string{"v1beta1", "v1alpha1"}, versions); diff != "" {
		t.Errorf("versions (-want +got):\n%s", diff)
	}
	code, _, body := proxytest.Do(t, nil, proxytest.NewRequest(t, "GET", url+"/apis/myapps.example.com/v1alpha1", ""))
	if code != 200 || !strings.Contains(string(body), `"groupVersion":"myapps.example.com/v1alpha1"`) || !strings.Contains(string(body), `"name":"customresources"`) {
		t.Errorf("legacy discovery: %d %s", code, body)
	}
	code, _, body = proxytest.Do(t, nil, proxytest.NewRequest(t, "GET", url+"/apis/myapps.example.com", ""))
	if code != 200 || !strings.Contains(string(body), `"preferredVersion":{"groupVersion":"myapps.example.com/v1beta1"`) {
		t.Errorf("the emulated version must not be preferred: %d %s", code, body)
	}
}

func TestEmulation_ServedVersionIsNotEmulated(t *testing.T) {
	var path string
	_, url, _ := emulationProxy(t, func(w http.ResponseWriter, r *http.Request) {
		path = r.URL.Path
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, proxytest.ServedObject)
	})
	code, _, body := proxytest.Do(t, nil, proxytest.NewRequest(t, "GET", url+"/apis/myapps.example.com/v1beta1/namespaces/ns/customresources/a", ""))
	if code != 200 || path != "/apis/myapps.example.com/v1beta1/namespaces/ns/customresources/a" {
		t.Fatalf("%d %s", code, path)
	}
	proxytest.SameJSON(t, proxytest.ServedObject, string(body))
}

func TestEmulation_OpenAPIV3DocumentOfEmulatedVersion(t *testing.T) {
	doc := []byte(`{"openapi":"3.0.0","paths":{"/apis/myapps.example.com/v1alpha1/namespaces/{namespace}/customresources":{}},"components":{"schemas":{}}}`)
	f := newFake(t, "a", "v1.36.3", "myapps.example.com/v1beta1/customresources")
	_, srv := startProxy(t, Options{Rules: Rules{Converter: proxytest.SeedConverter(t)}, OpenAPIV3: map[string][]byte{"apis/myapps.example.com/v1alpha1": doc}}, f)
	code, _, body := proxytest.Do(t, nil, proxytest.NewRequest(t, "GET", srv.URL+"/openapi/v3", ""))
	var index struct {
		Paths map[string]struct{ ServerRelativeURL string }
	}
	if err := json.Unmarshal(body, &index); err != nil || code != 200 {
		t.Fatalf("%d %s", code, body)
	}
	u := index.Paths["apis/myapps.example.com/v1alpha1"].ServerRelativeURL
	if !strings.HasPrefix(u, "/openapi/v3/apis/myapps.example.com/v1alpha1?hash=") {
		t.Fatalf("index: %s", body)
	}
	code, _, body = proxytest.Do(t, nil, proxytest.NewRequest(t, "GET", srv.URL+u, ""))
	if code != 200 || string(body) != string(doc) {
		t.Errorf("%d %s", code, body)
	}
}

func TestEmulation_GetIsConvertedAndCountedOnce(t *testing.T) {
	var gotPath, gotAccept string
	p, url, _ := emulationProxy(t, func(w http.ResponseWriter, r *http.Request) {
		gotPath, gotAccept = r.URL.Path, r.Header.Get("Accept")
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, proxytest.ServedObject)
	})
	code, hdr, body := proxytest.Do(t, nil, proxytest.NewRequest(t, "GET", url+"/apis/myapps.example.com/v1alpha1/namespaces/ns/customresources/a", "", "Accept", "application/vnd.kubernetes.protobuf, application/json"))
	if code != 200 || hdr.Get("Content-Type") != "application/json" {
		t.Fatalf("%d %s: %s", code, hdr.Get("Content-Type"), body)
	}
	if gotPath != "/apis/myapps.example.com/v1beta1/namespaces/ns/customresources/a" || gotAccept != "application/json" {
		t.Errorf("backend got %s with Accept %q", gotPath, gotAccept)
	}
	proxytest.SameJSON(t, proxytest.ClientObject, string(body))
	if !strings.Contains(string(body), "9223372036854775807") {
		t.Errorf("int64 not exact: %s", body)
	}
	// Counted once, as emulated, under the version the client asked for.
	if e, l, v := counterValue(t, p, "decision", "emulated"), counterValue(t, p, "decision", "local"), counterValue(t, p, "version", "v1alpha1"); e != 1 || l != 0 || v != 1 {
		t.Errorf("requests counted: emulated %v, local %v, v1alpha1 %v", e, l, v)
	}
}
