package cli

import (
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"
)

// TestProxyCmd_HoldsRequestsUntilABackendIsReady: a request that reaches a
// proxy that has just started, before the first health probe of its
// backend has answered, waits for it instead of getting a 503 (which costs
// client-go the second of its Retry-After), e.g. after a restart.
func TestProxyCmd_HoldsRequestsUntilABackendIsReady(t *testing.T) {
	const firstProbe = time.Second // the backend's first /readyz takes this long
	var once sync.Once
	backend := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/readyz":
			once.Do(func() { time.Sleep(firstProbe) })
			io.WriteString(w, "ok")
		case "/version":
			io.WriteString(w, `{"major":"1","minor":"36","gitVersion":"v1.36.3"}`)
		case "/api":
			w.Header().Set("Content-Type", "application/json")
			io.WriteString(w, `{"kind":"APIVersions","versions":["v1"]}`)
		case "/apis":
			w.Header().Set("Content-Type", "application/json")
			io.WriteString(w, `{"kind":"APIGroupList","groups":[]}`)
		case "/api/v1":
			w.Header().Set("Content-Type", "application/json")
			io.WriteString(w, `{"kind":"APIResourceList","groupVersion":"v1","resources":[{"name":"configmaps","namespaced":true,"kind":"ConfigMap","verbs":["get","list"]}]}`)
		case "/api/v1/namespaces/default/configmaps/x":
			w.Header().Set("Content-Type", "application/json")
			io.WriteString(w, `{"kind":"ConfigMap","apiVersion":"v1","metadata":{"name":"x"}}`)
		default:
			http.NotFound(w, r)
		}
	}))
	defer backend.Close()
	// The kubeconfig is written once the proxy listens, before it probes.
	run := startProxyCmd(t, "--kubeconfig", backendKubeconfig(t, backend, "client-token"))
	host, tr, _ := run.client(t)
	start := time.Now()
	req, _ := http.NewRequest(http.MethodGet, host+"/api/v1/namespaces/default/configmaps/x", nil)
	resp, err := tr.RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Errorf("first request, %s after start: %d %s, want it held until the backend is ready and answered 200", time.Since(start).Round(time.Millisecond), resp.StatusCode, body)
	}
}
