package cli

import (
	"io"
	"net/http"
	"net/http/httptrace"
	"sync"
	"testing"
)

// TestProxyCmd_HoldsRequestsUntilABackendIsReady: a request that reaches a
// proxy that has just started, before the first health probe of its
// backend has answered, waits for it instead of getting a 503 (which costs
// client-go the second of its Retry-After), e.g. after a restart.
func TestProxyCmd_HoldsRequestsUntilABackendIsReady(t *testing.T) {
	// The backend answers its first /readyz only once the client has
	// connected to the proxy.
	connected := make(chan struct{})
	var connectOnce, probeOnce sync.Once
	stop := t.Context()
	backend := configMapBackend(t, func(r *http.Request) {
		if r.URL.Path == "/readyz" {
			probeOnce.Do(func() {
				select {
				case <-connected:
				case <-stop.Done():
				}
			})
		}
	})
	// The kubeconfig is written once the proxy listens, before it probes.
	run := startProxyCmd(t, "--kubeconfig", backendKubeconfig(t, backend, "client-token"))
	host, tr, _ := run.client(t)
	req, err := http.NewRequest(http.MethodGet, host+"/api/v1/namespaces/default/configmaps/x", nil)
	if err != nil {
		t.Fatal(err)
	}
	trace := &httptrace.ClientTrace{ConnectDone: func(string, string, error) { connectOnce.Do(func() { close(connected) }) }}
	resp, err := tr.RoundTrip(req.WithContext(httptrace.WithClientTrace(req.Context(), trace)))
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Errorf("first request, sent before the backend's first probe answered: %d %s, want it held until the backend is ready and answered 200", resp.StatusCode, body)
	}
}
