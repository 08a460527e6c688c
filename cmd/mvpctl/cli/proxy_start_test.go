package cli

import (
	"io"
	"net/http"
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
	backend := configMapBackend(t, func(r *http.Request) {
		if r.URL.Path == "/readyz" {
			once.Do(func() { time.Sleep(firstProbe) })
		}
	})
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
