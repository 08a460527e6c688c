package proxy

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"slices"
	"testing"

	discoveryv1 "k8s.io/api/discovery/v1"
	v1 "k8s.io/client-go/kubernetes/typed/discovery/v1"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"

	"github.com/mvpctl/mvpctl/engine/proxy/internal/proxytest"
)

func TestEndpointSliceBackends(t *testing.T) {
	var gotSelector string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/apis/discovery.k8s.io/v1/namespaces/default/endpointslices" {
			http.NotFound(w, r)
			return
		}
		gotSelector = r.URL.Query().Get("labelSelector")
		list := discoveryv1.EndpointSliceList{Items: []discoveryv1.EndpointSlice{
			{
				Ports: []discoveryv1.EndpointPort{{Name: ptr.To("https"), Port: ptr.To[int32](6443)}},
				Endpoints: []discoveryv1.Endpoint{
					{Addresses: []string{"10.0.0.12"}, Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(true)}},
					{Addresses: []string{"10.0.0.11"}},
					{Addresses: []string{"10.0.0.13"}, Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(false)}},
				},
			},
			{
				Ports:     []discoveryv1.EndpointPort{{Name: ptr.To("https"), Port: ptr.To[int32](6443)}},
				Endpoints: []discoveryv1.Endpoint{{Addresses: []string{"fd00::1"}}},
			},
		}}
		list.Kind, list.APIVersion = "EndpointSliceList", "discovery.k8s.io/v1"
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(list)
	}))
	defer srv.Close()
	client, err := v1.NewForConfig(&rest.Config{Host: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	urls, err := EndpointSliceBackends(context.Background(), client)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"https://10.0.0.11:6443", "https://10.0.0.12:6443", "https://[fd00::1]:6443"}
	if !slices.Equal(urls, want) {
		t.Errorf("backends = %v, want %v", urls, want)
	}
	if gotSelector != "kubernetes.io/service-name=kubernetes" {
		t.Errorf("label selector %q", gotSelector)
	}
}

func TestProxy_SetBackendsAddsAndRemoves(t *testing.T) {
	a := newFake(t, "a", "v1.35.4", "v1/configmaps")
	b := newFake(t, "b", "v1.36.3", "v1/configmaps")
	p, srv := startProxy(t, Options{}, a)
	if err := p.SetBackends([]Backend{a.backend(t), b.backend(t)}); err != nil {
		t.Fatal(err)
	}
	proxytest.Poll(t, "b serving", func() bool {
		_, _, body := proxytest.Do(t, nil, proxytest.NewRequest(t, http.MethodGet, srv.URL+cmPath, ""))
		return answeredBy(t, body) == "b"
	})
	if !p.list()[0].snapshot().ready {
		t.Error("a lost its state when b was added")
	}
	if err := p.SetBackends([]Backend{b.backend(t)}); err != nil {
		t.Fatal(err)
	}
	hitsA := a.hits.Load()
	for range 10 {
		if _, _, body := proxytest.Do(t, nil, proxytest.NewRequest(t, http.MethodGet, srv.URL+cmPath, "")); answeredBy(t, body) != "b" {
			t.Fatalf("answered by %s after a was removed", body)
		}
	}
	if a.hits.Load() != hitsA {
		t.Error("a removed backend still got requests")
	}
}
