package proxy

import (
	"net/http"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/mvpctl/mvpctl/engine/proxy/internal/proxytest"
)

// Discovery and OpenAPI answered from the union of the backends go only to
// clients a backend would answer: the proxy asks one with the client's own
// credentials, passes its refusal on, and remembers a yes for a while.
func TestDiscovery_OnlyForClientsTheClusterAnswers(t *testing.T) {
	f := newFake(t, "a", "v1.36.3", "myapps.example.com/v1beta1/customresources")
	var probes atomic.Int64
	inner := f.srv.Config.Handler
	f.srv.Config.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/apis" || r.URL.Path == "/openapi/v2" || r.URL.Path == "/openapi/v3" {
			switch r.Header.Get("Authorization") {
			case "Bearer denied":
				probes.Add(1)
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(http.StatusForbidden)
				w.Write([]byte(`{"kind":"Status","apiVersion":"v1","status":"Failure","message":"forbidden: User \"eve\" cannot get path \"/apis\"","reason":"Forbidden","code":403}`))
				return
			case "Bearer good":
				probes.Add(1)
			}
		}
		inner.ServeHTTP(w, r)
	})
	_, srv := startProxy(t, Options{Rules: Rules{Converter: proxytest.SeedConverter(t)}}, f)

	code, _, body := proxytest.Do(t, nil, proxytest.NewRequest(t, http.MethodGet, srv.URL+"/apis", "", "Authorization", "Bearer denied"))
	if code != http.StatusForbidden || !strings.Contains(string(body), `cannot get path \"/apis\"`) {
		t.Errorf("/apis for a client the cluster refuses: %d %s", code, body)
	}
	if code, _, body := proxytest.Do(t, nil, proxytest.NewRequest(t, http.MethodGet, srv.URL+"/openapi/v2", "", "Authorization", "Bearer denied")); code != http.StatusForbidden {
		t.Errorf("/openapi/v2 for a client the cluster refuses: %d %s", code, body)
	}

	before := probes.Load()
	for range 3 {
		code, _, body := proxytest.Do(t, nil, proxytest.NewRequest(t, http.MethodGet, srv.URL+"/apis", "", "Authorization", "Bearer good", "Accept", aggregatedAccept))
		if code != http.StatusOK || !strings.Contains(string(body), `"v1alpha1"`) {
			t.Fatalf("/apis for an allowed client: %d %s; want the union with the emulated version", code, body)
		}
	}
	if n := probes.Load() - before; n != 1 {
		t.Errorf("three requests with the same token asked the backend %d times, want once (the answer is cached)", n)
	}
	// The cache is per credentials: the refused client is still refused.
	if code, _, _ := proxytest.Do(t, nil, proxytest.NewRequest(t, http.MethodGet, srv.URL+"/apis", "", "Authorization", "Bearer denied")); code != http.StatusForbidden {
		t.Errorf("/apis for the refused client after an allowed one: %d", code)
	}
}
