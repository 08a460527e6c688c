package proxy_test

import (
	"bufio"
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"io"
	"math/big"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	certutil "k8s.io/client-go/util/cert"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"

	"github.com/mvpctl/mvpctl/e2e/bins"
	"github.com/mvpctl/mvpctl/e2e/framework"
)

// mapGVR is served by v1.36 only (MutatingAdmissionPolicy went GA in v1.36).
var mapGVR = schema.GroupVersionResource{Group: "admissionregistration.k8s.io", Version: "v1", Resource: "mutatingadmissionpolicies"}

// newPolicy is a MutatingAdmissionPolicy without a binding: it changes
// nothing, it only exists.
func newPolicy(name string) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "admissionregistration.k8s.io/v1",
		"kind":       "MutatingAdmissionPolicy",
		"metadata":   map[string]any{"name": name},
		"spec": map[string]any{
			"matchConstraints": map[string]any{"resourceRules": []any{map[string]any{
				"apiGroups": []any{"apps"}, "apiVersions": []any{"v1"},
				"operations": []any{"CREATE"}, "resources": []any{"deployments"},
			}}},
			"reinvocationPolicy": "Never",
			"mutations": []any{map[string]any{
				"patchType":          "ApplyConfiguration",
				"applyConfiguration": map[string]any{"expression": `Object{metadata: Object.metadata{labels: {"mvpctl-e2e": "true"}}}`},
			}},
		},
	}}
}

func kubectl(t *testing.T, ctx context.Context, kubeconfig string, args ...string) (string, error) {
	t.Helper()
	bin, err := bins.Find(bins.Kubectl, newVersion)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.CommandContext(ctx, bin, append([]string{"--kubeconfig", kubeconfig}, args...)...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err = cmd.Run()
	return out.String(), err
}

func TestProxy_MixedVersionControlPlane(t *testing.T) {
	cp := framework.Start(t, framework.Options{Versions: []string{oldVersion, newVersion}})
	old := cp.Server(0)
	p := startProxy(t, cp)
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Minute)
	defer cancel()

	t.Run("ApiResourcesListsBothVersions", func(t *testing.T) {
		out, err := kubectl(t, ctx, p.Kubeconfig, "api-resources", "-o", "name")
		if err != nil {
			t.Fatalf("kubectl api-resources through the proxy: %v\n%s", err, out)
		}
		for _, want := range []string{"mutatingadmissionpolicies.admissionregistration.k8s.io", "configmaps", "deployments.apps"} {
			if !strings.Contains(out, want+"\n") {
				t.Errorf("kubectl api-resources through the proxy lacks %s:\n%s", want, out)
			}
		}
		dc := discovery.NewDiscoveryClientForConfigOrDie(p.tokenConfig(cp))
		rl, err := dc.ServerResourcesForGroupVersion("admissionregistration.k8s.io/v1")
		if err != nil {
			t.Fatal(err)
		}
		found := false
		for _, r := range rl.APIResources {
			found = found || r.Name == "mutatingadmissionpolicies"
		}
		if !found {
			t.Errorf("admissionregistration.k8s.io/v1 through the proxy lacks mutatingadmissionpolicies")
		}
	})

	t.Run("NewResourceWorksThroughProxyAnd404sDirect", func(t *testing.T) {
		manifest := filepath.Join(t.TempDir(), "policy.yaml")
		data, _ := newPolicy("e2e-proxy").MarshalJSON()
		if err := os.WriteFile(manifest, data, 0o644); err != nil {
			t.Fatal(err)
		}
		if out, err := kubectl(t, ctx, p.Kubeconfig, "apply", "-f", manifest); err != nil {
			t.Fatalf("kubectl apply through the proxy: %v\n%s", err, out)
		}
		out, err := kubectl(t, ctx, p.Kubeconfig, "get", "mutatingadmissionpolicies.v1.admissionregistration.k8s.io", "e2e-proxy", "-o", "name")
		if err != nil || strings.TrimSpace(out) != "mutatingadmissionpolicy.admissionregistration.k8s.io/e2e-proxy" {
			t.Errorf("kubectl get through the proxy: %v\n%s", err, out)
		}
		// Every request, whichever server it could have landed on.
		dyn := dynamic.NewForConfigOrDie(p.tokenConfig(cp))
		for i := range 30 {
			if _, err := dyn.Resource(mapGVR).Get(ctx, "e2e-proxy", metav1.GetOptions{}); err != nil {
				t.Fatalf("get %d through the proxy: %v", i, err)
			}
		}
		_, err = dynamic.NewForConfigOrDie(old.RESTConfig()).Resource(mapGVR).Get(ctx, "e2e-proxy", metav1.GetOptions{})
		if !apierrors.IsNotFound(err) {
			t.Errorf("direct to %s: %v, want 404 (the baseline the proxy removes)", old.Version, err)
		}
		if m := p.metricsText(t); !strings.Contains(m, `decision="rerouted"`) || !strings.Contains(m, `resource="mutatingadmissionpolicies"`) {
			t.Errorf("metrics lack rerouted mutatingadmissionpolicies requests")
		}
	})

	t.Run("ExplainUsesTheOpenAPIV3Union", func(t *testing.T) {
		// kubectl explain reads the /openapi/v3 index (merged by the proxy) and
		// then the group-version document, which only the v1.36 server has.
		out, err := kubectl(t, ctx, p.Kubeconfig, "explain", "mutatingadmissionpolicies.spec.mutations", "--api-version", "admissionregistration.k8s.io/v1")
		if err != nil || !strings.Contains(out, "patchType") {
			t.Errorf("kubectl explain through the proxy: %v\n%s", err, out)
		}
		out, err = kubectl(t, ctx, p.Kubeconfig, "explain", "configmaps.data")
		if err != nil || !strings.Contains(out, "ConfigMap") {
			t.Errorf("kubectl explain configmaps through the proxy: %v\n%s", err, out)
		}
	})

	t.Run("OpenAPIV2IsTheUnion", func(t *testing.T) {
		// client-go asks for the protobuf form.
		doc, err := discovery.NewDiscoveryClientForConfigOrDie(p.tokenConfig(cp)).OpenAPISchema()
		if err != nil {
			t.Fatal(err)
		}
		defs := map[string]bool{}
		for _, d := range doc.GetDefinitions().GetAdditionalProperties() {
			defs[d.GetName()] = true
		}
		for _, want := range []string{"io.k8s.api.admissionregistration.v1.MutatingAdmissionPolicy", "io.k8s.api.core.v1.ConfigMap"} {
			if !defs[want] {
				t.Errorf("/openapi/v2 through the proxy lacks %s (%d definitions)", want, len(defs))
			}
		}
		direct, err := discovery.NewDiscoveryClientForConfigOrDie(old.RESTConfig()).OpenAPISchema()
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range direct.GetDefinitions().GetAdditionalProperties() {
			if !defs[d.GetName()] {
				t.Errorf("/openapi/v2 through the proxy lacks %s, which %s has", d.GetName(), old.Version)
			}
		}
	})

	t.Run("KubectlGetWatch", func(t *testing.T) {
		wctx, wcancel := context.WithTimeout(ctx, 60*time.Second)
		defer wcancel()
		// The initial list shows marker: once it is printed, kubectl
		// watches from the list's resourceVersion, and watched, created
		// after, can only come as a watch event.
		cs := kubernetes.NewForConfigOrDie(p.certConfig(cp))
		if _, err := cs.CoreV1().ConfigMaps("default").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "marker"}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		bin, err := bins.Find(bins.Kubectl, newVersion)
		if err != nil {
			t.Fatal(err)
		}
		cmd := exec.CommandContext(wctx, bin, "--kubeconfig", p.Kubeconfig, "get", "configmaps", "-n", "default", "-w", "--output-watch-events", "-o", "name")
		stdout, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		defer func() { cmd.Process.Kill(); cmd.Wait() }()
		seen := make(chan string, 100)
		go func() {
			sc := bufio.NewScanner(stdout)
			for sc.Scan() {
				seen <- sc.Text()
			}
			close(seen)
		}()
		want := "configmap/marker"
		for line := range seen {
			if !strings.Contains(line, want) {
				continue
			}
			if want == "configmap/watched" {
				return
			}
			want = "configmap/watched"
			if _, err := cs.CoreV1().ConfigMaps("default").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "watched"}}, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
		}
		t.Errorf("kubectl get -w through the proxy never showed %s", want)
	})

	t.Run("Security", func(t *testing.T) { testSecurity(t, ctx, cp) })
}

// testSecurity runs a second proxy that trusts a CA of its own for client
// certificates and cuts slow headers after a second.
func testSecurity(t *testing.T, ctx context.Context, cp *framework.ControlPlane) {
	dir := t.TempDir()
	caCert, caKey := writeCA(t, dir)
	p := startProxy(t, cp, "--client-ca-file", filepath.Join(dir, "ca.pem"), "--read-header-timeout", "1s")
	mallory := clientCert(t, caCert, caKey, "mallory")

	pool, err := certutil.NewPoolFromBytes(p.CAData)
	if err != nil {
		t.Fatal(err)
	}
	client := func(cert *tls.Certificate) *http.Client {
		tc := &tls.Config{RootCAs: pool}
		if cert != nil {
			tc.Certificates = []tls.Certificate{*cert}
		}
		return &http.Client{Transport: &http.Transport{TLSClientConfig: tc}, Timeout: 30 * time.Second}
	}
	do := func(c *http.Client, req *http.Request) (int, string) {
		t.Helper()
		resp, err := c.Do(req.WithContext(ctx))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}

	t.Run("ClientCertIsImpersonatedNotTheProxy", func(t *testing.T) {
		req, err := http.NewRequest(http.MethodGet, p.URL+"/api/v1/namespaces/default/configmaps", nil)
		if err != nil {
			t.Fatal(err)
		}
		code, body := do(client(&mallory), req)
		if code != http.StatusForbidden || !strings.Contains(body, `User \"mallory\" cannot list resource \"configmaps\"`) {
			t.Errorf("mallory listing configmaps: %d %s, want the apiserver's 403 for mallory", code, body)
		}
	})
	t.Run("ForgedImpersonationIsForbidden", func(t *testing.T) {
		req, err := http.NewRequest(http.MethodGet, p.URL+"/api/v1/namespaces/default/configmaps", nil)
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Impersonate-User", "admin")
		req.Header.Set("Impersonate-Group", "system:masters")
		code, body := do(client(&mallory), req)
		if code != http.StatusForbidden || !strings.Contains(body, `User \"mallory\" cannot impersonate`) {
			t.Errorf("mallory impersonating admin: %d %s, want 403", code, body)
		}
	})
	t.Run("OversizedBodyIs413", func(t *testing.T) {
		big := `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"big"},"data":{"x":"` + strings.Repeat("x", 4<<20) + `"}}`
		req, err := http.NewRequest(http.MethodPost, p.URL+"/api/v1/namespaces/default/configmaps", strings.NewReader(big))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Authorization", "Bearer "+cp.PKI.Token)
		if code, body := do(client(nil), req); code != http.StatusRequestEntityTooLarge {
			t.Errorf("4 MiB body: %d %.300s, want 413", code, body)
		}
	})
	t.Run("SlowHeadersAreCut", func(t *testing.T) {
		conn, err := tls.Dial("tcp", strings.TrimPrefix(p.URL, "https://"), &tls.Config{RootCAs: pool, NextProtos: []string{"http/1.1"}})
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		io.WriteString(conn, "GET /api/v1/namespaces HTTP/1.1\r\nHost: x\r\n")
		conn.SetReadDeadline(time.Now().Add(15 * time.Second))
		start := time.Now()
		_, err = io.ReadAll(conn)
		if time.Since(start) >= 15*time.Second {
			t.Errorf("the connection was still open after 15s (%v)", err)
		}
	})
}

func writeCA(t *testing.T, dir string) (*x509.Certificate, *ecdsa.PrivateKey) {
	t.Helper()
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "e2e-proxy-clients"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "ca.pem"), pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o644); err != nil {
		t.Fatal(err)
	}
	cert, _ := x509.ParseCertificate(der)
	return cert, key
}

func clientCert(t *testing.T, ca *x509.Certificate, caKey *ecdsa.PrivateKey, user string, groups ...string) tls.Certificate {
	t.Helper()
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(time.Now().UnixNano()), Subject: pkix.Name{CommonName: user, Organization: groups},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}, KeyUsage: x509.KeyUsageDigitalSignature,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}
}
