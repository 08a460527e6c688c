package cli

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
	clocktesting "k8s.io/utils/clock/testing"
)

func TestProxyCmd_UsageErrors(t *testing.T) {
	dir := t.TempDir()
	badRules := filepath.Join(dir, "rules.yaml")
	if err := os.WriteFile(badRules, []byte(`apiVersion: mvp.k8s.io/v1
kind: TransformationRules
metadata: {name: r}
spec:
  apiRoutingRules:
  - {apiGroup: apps, resource: deployments, preferApiServerVersion: newest}
`), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"no backend", []string{"proxy"}, "no backends"},
		{"discovery without kubeconfig", []string{"proxy", "--discover-backends"}, "through --kubeconfig"},
		{"bad backend", []string{"proxy", "--backend", "127.0.0.1:6443"}, "want https://HOST:PORT"},
		{"bad log level", []string{"proxy", "--backend", "https://127.0.0.1:1", "--log-level", "chatty"}, "--log-level"},
		{"half a client cert", []string{"proxy", "--backend", "https://127.0.0.1:1", "--client-certificate", "c.pem"}, "go together"},
		{"bad version pattern", []string{"proxy", "--backend", "https://127.0.0.1:1", "--rules", badRules}, "preferApiServerVersion"},
		{"unreadable rules file", []string{"proxy", "--backend", "https://127.0.0.1:1", "--rules", filepath.Join(dir, "missing.yaml")}, "missing.yaml"},
		{"rules from cluster without kubeconfig", []string{"proxy", "--backend", "https://127.0.0.1:1", "--rules-from-cluster"}, "--rules-from-cluster reads the cluster through --kubeconfig"},
		{"self-signed off loopback", []string{"proxy", "--backend", "https://127.0.0.1:1", "--listen", "0.0.0.0:0"}, "needs a serving certificate"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			code := Run(append([]string{"mvpctl"}, tt.args...), &stdout, &stderr)
			if code != exitUsage {
				t.Errorf("exit code %d, want %d; stderr: %s", code, exitUsage, stderr.String())
			}
			if !strings.Contains(stderr.String(), tt.want) {
				t.Errorf("stderr %q does not mention %q", stderr.String(), tt.want)
			}
		})
	}
}

// TestProxyCmd_ServesThroughWrittenKubeconfig runs the command against a
// TLS backend that answers like a kube-apiserver and uses the kubeconfig it
// writes: the proxy's self-signed CA must verify, and the backend must see
// the client's bearer token. Asked to stop, the proxy fails /readyz but
// keeps serving until --shutdown-delay-duration has passed on its clock,
// which the test moves only after it has checked both.
func TestProxyCmd_ServesThroughWrittenKubeconfig(t *testing.T) {
	seen := make(chan string, 10)
	backend := configMapBackend(t, func(r *http.Request) {
		if r.URL.Path == "/api/v1/namespaces/default/configmaps/x" {
			seen <- r.Header.Get("Authorization")
		}
	})
	const delay = time.Hour
	clk := clocktesting.NewFakeClock(time.Now())
	kubeconfig := filepath.Join(t.TempDir(), "proxy.kubeconfig")
	run := startProxyCmdWith(t, kubeconfig, clk, "--kubeconfig", backendKubeconfig(t, backend, "client-token"), "--health-interval", "50ms", "--shutdown-delay-duration", delay.String())
	host, tr, token := run.client(t)
	get := func(path string) (int, string, error) {
		req, err := http.NewRequest(http.MethodGet, host+path, nil)
		if err != nil {
			return 0, "", err
		}
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := tr.RoundTrip(req)
		if err != nil {
			return 0, "", err
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b), err
	}
	const cm = "/api/v1/namespaces/default/configmaps/x"
	err := wait.PollUntilContextTimeout(t.Context(), 20*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
		code, _, err := get(cm)
		return err == nil && code == http.StatusOK, nil
	})
	if err != nil {
		t.Fatalf("no answer through the proxy: %v; stderr: %s", err, run.stderr)
	}
	if tok := <-seen; tok != "Bearer client-token" {
		t.Errorf("backend saw Authorization %q, want the client's token passed through", tok)
	}

	run.cancel()
	err = wait.PollUntilContextTimeout(t.Context(), 10*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
		code, body, err := get("/readyz?verbose")
		if err != nil {
			return false, err
		}
		return code == http.StatusInternalServerError && strings.Contains(body, "[-]shutdown failed"), nil
	})
	if err != nil {
		t.Fatalf("/readyz after the stop signal: %v; stderr: %s", err, run.stderr)
	}
	if code, body, err := get(cm); err != nil || code != http.StatusOK {
		t.Errorf("a request while draining: %d %s %v", code, body, err)
	}
	// The delay is a timer on the clock from the moment /readyz fails;
	// once it passes, the proxy stops (the test's cleanup waits for it).
	err = wait.PollUntilContextTimeout(t.Context(), 5*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
		return clk.HasWaiters(), nil
	})
	if err != nil {
		t.Fatalf("no shutdown delay timer: %v", err)
	}
	clk.Step(delay)
}

func TestLoadOpenAPIV3(t *testing.T) {
	dir := t.TempDir()
	write := func(name, doc string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(doc), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	a := write("a.json", `{"openapi":"3.0.0","paths":{"/apis/policy/v1beta1/poddisruptionbudgets":{}}}`)
	got, err := loadOpenAPIV3([]string{a})
	if err != nil || len(got) != 1 || got["apis/policy/v1beta1"] == nil {
		t.Fatalf("%v %v", got, err)
	}
	write("b.json", `{"openapi":"3.0.0","paths":{"/apis/policy/v1beta1/":{}}}`)
	if _, err := loadOpenAPIV3([]string{dir}); err == nil || !strings.Contains(err.Error(), "a second document for apis/policy/v1beta1") {
		t.Errorf("two documents for one version: %v", err)
	}
	bad := write("swagger.txt", `{"swagger":"2.0"}`)
	if _, err := loadOpenAPIV3([]string{bad}); err == nil || !strings.Contains(err.Error(), "swagger.txt") {
		t.Errorf("a v2 document: %v", err)
	}
}

// TestProxyCmd_WritesKubeconfigAtomically: --write-kubeconfig replaces the
// file by a rename, so a client or script that reads it as soon as it
// exists never sees a part of it: a hard link to the file it replaced
// keeps the old contents, which writing in place would overwrite.
func TestProxyCmd_WritesKubeconfigAtomically(t *testing.T) {
	dir := t.TempDir()
	path, link := filepath.Join(dir, "proxy.kubeconfig"), filepath.Join(dir, "old.kubeconfig")
	const old = "# the previous kubeconfig\n"
	if err := os.WriteFile(path, []byte(old), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Link(path, link); err != nil {
		t.Fatal(err)
	}
	backend := configMapBackend(t, nil)
	run := startProxyCmdWriting(t, path, "--kubeconfig", backendKubeconfig(t, backend, "client-token"))
	// The proxy writes the kubeconfig before it says it serves.
	err := wait.PollUntilContextTimeout(t.Context(), 5*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
		return strings.Contains(run.stderr.String(), "serving the Kubernetes API"), nil
	})
	if err != nil {
		t.Fatalf("the proxy did not start: %v; stderr: %s", err, run.stderr)
	}
	if data, err := os.ReadFile(link); err != nil || string(data) != old {
		t.Errorf("the replaced file was written in place: it now holds %q (%v)", data, err)
	}
	host, _, token := run.client(t)
	if !strings.HasPrefix(host, "https://127.0.0.1:") || token != "client-token" {
		t.Errorf("written kubeconfig: server %q, token %q", host, token)
	}
	info, err := os.Stat(path)
	if err != nil || info.Mode().Perm() != 0o600 {
		t.Errorf("kubeconfig mode %v (%v), want 0600: it holds credentials", info.Mode(), err)
	}
	if left, _ := filepath.Glob(filepath.Join(dir, ".proxy.kubeconfig.tmp-*")); len(left) != 0 {
		t.Errorf("temporary files left: %v", left)
	}
}
