package cli

import (
	"bytes"
	"context"
	"crypto/tls"
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

	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/utils/clock"
)

// configMapBackend is a TLS server that answers like a v1.36 kube-apiserver
// serving ConfigMaps, with one object, default/x. before, when not nil, sees
// each request first.
func configMapBackend(t *testing.T, before func(*http.Request)) *httptest.Server {
	t.Helper()
	backend := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if before != nil {
			before(r)
		}
		w.Header().Set("Content-Type", "application/json")
		switch r.URL.Path {
		case "/readyz":
			io.WriteString(w, "ok")
		case "/version":
			io.WriteString(w, `{"major":"1","minor":"36","gitVersion":"v1.36.3"}`)
		case "/api":
			io.WriteString(w, `{"kind":"APIVersions","versions":["v1"]}`)
		case "/apis":
			io.WriteString(w, `{"kind":"APIGroupList","groups":[]}`)
		case "/api/v1":
			io.WriteString(w, `{"kind":"APIResourceList","groupVersion":"v1","resources":[{"name":"configmaps","namespaced":true,"kind":"ConfigMap","verbs":["get","list"]}]}`)
		case "/api/v1/namespaces/default/configmaps/x":
			io.WriteString(w, `{"kind":"ConfigMap","apiVersion":"v1","metadata":{"name":"x"}}`)
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(backend.Close)
	return backend
}

// backendKubeconfig writes a kubeconfig for a TLS test backend: its CA, and
// a user with a bearer token.
func backendKubeconfig(t *testing.T, backend *httptest.Server, token string) string {
	t.Helper()
	dir := t.TempDir()
	ca := filepath.Join(dir, "backend-ca.pem")
	if err := os.WriteFile(ca, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: backend.Certificate().Raw}), 0o644); err != nil {
		t.Fatal(err)
	}
	kubeconfig := filepath.Join(dir, "in.kubeconfig")
	if err := os.WriteFile(kubeconfig, []byte(fmt.Sprintf(`apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: %s, certificate-authority: %s}}]
users: [{name: u, user: {token: %s}}]
contexts: [{name: ctx, context: {cluster: c, user: u}}]
current-context: ctx
`, backend.URL, ca, token)), 0o600); err != nil {
		t.Fatal(err)
	}
	return kubeconfig
}

// proxyRun is `mvpctl proxy` running in-process for one test, on a free
// loopback port, writing its kubeconfig. It is stopped, and must exit
// cleanly, when the test ends.
type proxyRun struct {
	stderr     *lockedBuffer
	kubeconfig string
	cancel     context.CancelFunc // asks the proxy to stop, as SIGTERM does
}

func startProxyCmd(t *testing.T, args ...string) *proxyRun {
	t.Helper()
	return startProxyCmdWriting(t, filepath.Join(t.TempDir(), "proxy.kubeconfig"), args...)
}

// startProxyCmdWriting is startProxyCmd with the path of the kubeconfig.
func startProxyCmdWriting(t *testing.T, kubeconfig string, args ...string) *proxyRun {
	t.Helper()
	return startProxyCmdWith(t, kubeconfig, clock.RealClock{}, args...)
}

// startProxyCmdWith is startProxyCmdWriting with the clock that times the
// shutdown delay.
func startProxyCmdWith(t *testing.T, kubeconfig string, clk clock.Clock, args ...string) *proxyRun {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	run := &proxyRun{stderr: &lockedBuffer{}, kubeconfig: kubeconfig}
	ctx, cancel := context.WithCancel(context.Background())
	run.cancel = cancel
	root := newRootCmd("mvpctl", "mvpctl")
	if cmd, _, err := root.Find([]string{"proxy"}); err != nil {
		t.Fatal(err)
	} else {
		root.RemoveCommand(cmd)
		root.AddCommand(newProxyCmd(clk))
	}
	root.SetArgs(append([]string{"proxy", "--listen", addr, "--write-kubeconfig", run.kubeconfig}, args...))
	root.SetOut(io.Discard)
	root.SetErr(run.stderr)
	done := make(chan error, 1)
	go func() { done <- root.ExecuteContext(ctx) }()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("proxy exited with %v; stderr: %s", err, run.stderr)
			}
		case <-time.After(10 * time.Second):
			t.Error("proxy did not stop")
		}
	})
	return run
}

// client waits for the proxy's kubeconfig (written whole, by a rename, once
// it listens) and returns the proxy's URL, a transport that trusts its
// certificate, and the kubeconfig user's bearer token.
func (r *proxyRun) client(t *testing.T) (host string, tr http.RoundTripper, token string) {
	t.Helper()
	err := wait.PollUntilContextTimeout(t.Context(), 5*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
		_, err := os.Stat(r.kubeconfig)
		return err == nil, nil
	})
	if err != nil {
		t.Fatalf("no kubeconfig written: %v; stderr: %s", err, r.stderr)
	}
	rc, err := clientcmd.BuildConfigFromFlags("", r.kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	tc, err := rest.TLSConfigFor(rc)
	if err != nil {
		t.Fatal(err)
	}
	if tc == nil {
		tc = &tls.Config{}
	}
	return rc.Host, &http.Transport{TLSClientConfig: tc}, rc.BearerToken
}

// lockedBuffer is the proxy's stderr, read by the test while it runs.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
