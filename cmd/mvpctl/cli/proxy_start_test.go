package cli

import (
	"context"
	"encoding/pem"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"k8s.io/client-go/tools/clientcmd"
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
	dir := t.TempDir()
	ca := filepath.Join(dir, "backend-ca.pem")
	os.WriteFile(ca, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: backend.Certificate().Raw}), 0o644)
	kubeconfig := filepath.Join(dir, "in.kubeconfig")
	os.WriteFile(kubeconfig, []byte(fmt.Sprintf(`apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: %s, certificate-authority: %s}}]
users: [{name: u, user: {token: client-token}}]
contexts: [{name: ctx, context: {cluster: c, user: u}}]
current-context: ctx
`, backend.URL, ca)), 0o600)

	ln, _ := net.Listen("tcp", "127.0.0.1:0")
	addr := ln.Addr().String()
	ln.Close()
	out := filepath.Join(dir, "proxy.kubeconfig")
	ctx, cancel := context.WithCancel(context.Background())
	root := newRootCmd("mvpctl")
	root.SetArgs([]string{"proxy", "--kubeconfig", kubeconfig, "--listen", addr, "--write-kubeconfig", out})
	root.SetOut(io.Discard)
	root.SetErr(io.Discard)
	done := make(chan error, 1)
	go func() { done <- root.ExecuteContext(ctx) }()
	defer func() {
		cancel()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			t.Error("proxy did not stop")
		}
	}()

	// The kubeconfig is written once the proxy listens, before it probes.
	deadline := time.Now().Add(10 * time.Second)
	for {
		if _, err := os.Stat(out); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("no kubeconfig written")
		}
		time.Sleep(time.Millisecond)
	}
	rc, err := clientcmd.BuildConfigFromFlags("", out)
	if err != nil {
		t.Fatal(err)
	}
	tr, err := restTransport(rc)
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	req, _ := http.NewRequest(http.MethodGet, rc.Host+"/api/v1/namespaces/default/configmaps/x", nil)
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
