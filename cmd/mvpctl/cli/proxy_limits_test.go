package cli

import (
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
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
)

// Limits that would mean "none" are refused in one line before anything
// listens, and so is a metrics address off loopback without a certificate.
func TestProxyCmd_LimitFlags(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--request-body-timeout", "0s"}, "--request-body-timeout must be positive"},
		{[]string{"--max-buffered-request-bytes", "3145728"}, "--max-buffered-request-bytes (3145728) must be larger than --max-request-body-bytes (3145728)"},
		{[]string{"--max-connections", "0"}, "--max-connections must be positive"},
		{[]string{"--max-upstream-connections-per-backend", "-1"}, "--max-upstream-connections-per-backend must be positive"},
		{[]string{"--max-object-bytes", "0"}, "--max-object-bytes must be positive"},
		{[]string{"--gc-percent", "0"}, "--gc-percent must be positive"},
		{[]string{"--metrics-listen", "0.0.0.0:0"}, "--metrics-listen 0.0.0.0:0 is not loopback"},
	} {
		var stdout, stderr bytes.Buffer
		code := Run(append([]string{"mvpctl", "proxy", "--backend", "https://127.0.0.1:1"}, tc.args...), &stdout, &stderr)
		if code != exitUsage || !strings.Contains(stderr.String(), tc.want) || strings.Count(strings.TrimSpace(stderr.String()), "\n") != 0 {
			t.Errorf("%v: exit %d, stderr %q; want %d and %q", tc.args, code, stderr.String(), exitUsage, tc.want)
		}
	}
}

// testPKI issues certificates for the proxy command tests.
type testPKI struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
}

func newTestPKI(t *testing.T, name string) *testPKI {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: name},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	return &testPKI{cert: cert, key: key}
}

// issue returns a certificate and key, PEM-encoded, for a client (cn) or
// for serving 127.0.0.1.
func (p *testPKI) issue(t *testing.T, cn string, serving bool) (certPEM, keyPEM []byte) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(time.Now().UnixNano()), Subject: pkix.Name{CommonName: cn},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}, KeyUsage: x509.KeyUsageDigitalSignature,
	}
	if serving {
		tmpl.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}
		tmpl.IPAddresses = []net.IP{net.ParseIP("127.0.0.1")}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, p.cert, &key.PublicKey, p.key)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER})
}

func (p *testPKI) caPEM() []byte {
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: p.cert.Raw})
}

// writeWhole replaces path with data at once, as a Secret volume does.
func writeWhole(t *testing.T, path string, data []byte) {
	t.Helper()
	if err := os.WriteFile(path+".new", data, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(path+".new", path); err != nil {
		t.Fatal(err)
	}
}

// A client CA replaced on disk verifies its users' certificates on new
// connections of the running proxy, without a restart.
func TestProxyCmd_ReloadsTheClientCA(t *testing.T) {
	var impersonated atomic.Value
	backend := configMapBackend(t, func(r *http.Request) {
		if u := r.Header.Get("Impersonate-User"); u != "" {
			impersonated.Store(u)
		}
	})
	kubeconfig := backendKubeconfig(t, backend, "proxy-token")
	serverCA, oldCA, newCA := newTestPKI(t, "serving-ca"), newTestPKI(t, "old-client-ca"), newTestPKI(t, "new-client-ca")
	dir := t.TempDir()
	certFile, keyFile, caFile := filepath.Join(dir, "tls.crt"), filepath.Join(dir, "tls.key"), filepath.Join(dir, "client-ca.crt")
	certPEM, keyPEM := serverCA.issue(t, "proxy", true)
	writeWhole(t, certFile, certPEM)
	writeWhole(t, keyFile, keyPEM)
	writeWhole(t, caFile, oldCA.caPEM())
	run := startProxyCmd(t, "--kubeconfig", kubeconfig, "--tls-cert-file", certFile, "--tls-private-key-file", keyFile, "--client-ca-file", caFile)
	host, _, _ := run.client(t)

	userCert, userKey := newCA.issue(t, "alice", false)
	user, err := tls.X509KeyPair(userCert, userKey)
	if err != nil {
		t.Fatal(err)
	}
	get := func() (int, error) {
		// Sent whether or not the server names its CA as acceptable.
		sendUser := func(*tls.CertificateRequestInfo) (*tls.Certificate, error) { return &user, nil }
		tr := &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true, GetClientCertificate: sendUser}, DisableKeepAlives: true}
		defer tr.CloseIdleConnections()
		resp, err := (&http.Client{Transport: tr, Timeout: 10 * time.Second}).Get(host + "/api/v1/namespaces/default/configmaps/x")
		if err != nil {
			return 0, err
		}
		defer resp.Body.Close()
		io.Copy(io.Discard, resp.Body)
		return resp.StatusCode, nil
	}
	if code, err := get(); err == nil {
		t.Fatalf("a certificate of a CA not yet trusted got an answer: %d", code)
	}
	writeWhole(t, caFile, newCA.caPEM())
	var code int
	err = wait.PollUntilContextTimeout(t.Context(), 20*time.Millisecond, 2*time.Minute, true, func(context.Context) (bool, error) {
		var err error
		code, err = get()
		return err == nil && code == http.StatusOK, nil
	})
	if err != nil {
		t.Fatalf("the new client CA was not taken: %d, %v; stderr: %s", code, err, run.stderr)
	}
	if got := impersonated.Load(); got != "alice" {
		t.Errorf("the backend saw Impersonate-User %v, want alice", got)
	}
}
