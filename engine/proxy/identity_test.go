package proxy

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"io"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

type testCA struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
	pool *x509.CertPool
}

func newTestCA(t *testing.T) *testCA {
	t.Helper()
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "test-ca"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, _ := x509.ParseCertificate(der)
	pool := x509.NewCertPool()
	pool.AddCert(cert)
	return &testCA{cert: cert, key: key, pool: pool}
}

func (ca *testCA) client(t *testing.T, user string, groups ...string) tls.Certificate {
	t.Helper()
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(time.Now().UnixNano()), Subject: pkix.Name{CommonName: user, Organization: groups},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}, KeyUsage: x509.KeyUsageDigitalSignature,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &key.PublicKey, ca.key)
	if err != nil {
		t.Fatal(err)
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}
}

// seenRequest is what a TLS backend saw of a proxied request.
type seenRequest struct {
	header     http.Header
	clientCert string // CN of the certificate the proxy presented, if any
}

// startTLSProxy runs a TLS backend that requests client certificates and a
// proxy with the identity "mvpctl-proxy" in front of it, serving TLS with
// client certificates of clientCA impersonated.
func startTLSProxy(t *testing.T, ca *testCA, sarAllowed func(authorizationv1.ResourceAttributes) bool) (proxyURL string, seen chan seenRequest) {
	t.Helper()
	proxyURL, seen, _ = startTLSProxyWith(t, ca, sarAllowed, Options{}, ServeOptions{})
	return proxyURL, seen
}

// startTLSProxyWith is startTLSProxy with more options (the backend, the
// identity and client certificates are always its own).
func startTLSProxyWith(t *testing.T, ca *testCA, sarAllowed func(authorizationv1.ResourceAttributes) bool, opts Options, sopts ServeOptions) (proxyURL string, seen chan seenRequest, p *Proxy) {
	t.Helper()
	seen = make(chan seenRequest, 10)
	f := &fakeAPIServer{name: "tls", gitVersion: "v1.36.3", served: []string{"v1/configmaps", "authorization.k8s.io/v1/subjectaccessreviews"}, requests: make(chan *http.Request, 100)}
	f.handler = func(w http.ResponseWriter, r *http.Request) {
		if strings.HasSuffix(r.URL.Path, "/subjectaccessreviews") {
			var sar authorizationv1.SubjectAccessReview
			json.NewDecoder(r.Body).Decode(&sar)
			sar.Status.Allowed = sarAllowed(*sar.Spec.ResourceAttributes)
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusCreated)
			json.NewEncoder(w).Encode(sar)
			return
		}
		s := seenRequest{header: r.Header.Clone()}
		if len(r.TLS.PeerCertificates) > 0 {
			s.clientCert = r.TLS.PeerCertificates[0].Subject.CommonName
		}
		seen <- s
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"kind":"ConfigMap"}`)
	}
	f.srv = httptest.NewUnstartedServer(f)
	f.srv.TLS = &tls.Config{ClientAuth: tls.RequestClientCert}
	f.srv.StartTLS()
	t.Cleanup(f.srv.Close)

	backendRoots := x509.NewCertPool()
	backendRoots.AddCert(f.srv.Certificate())
	u, _ := url.Parse(f.srv.URL)
	opts.Backends = []Backend{{Name: "tls", URL: u, TLS: &tls.Config{
		RootCAs: backendRoots, Certificates: []tls.Certificate{ca.client(t, "mvpctl-proxy")},
	}}}
	opts.HealthInterval = 20 * time.Millisecond
	opts.ImpersonateClientCerts = true
	p, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	p.Run(ctx)
	if err := p.WaitReady(ctx); err != nil {
		t.Fatal(err)
	}
	sopts.Listen, sopts.ClientCA, sopts.ReadHeaderTimeout = "127.0.0.1:0", ca.pool, 200*time.Millisecond
	srv, err := NewServer(p, sopts)
	if err != nil {
		t.Fatal(err)
	}
	go srv.Serve(ctx)
	return "https://" + srv.Addr().String(), seen, p
}

func clientWith(cert *tls.Certificate) *http.Client {
	tc := &tls.Config{InsecureSkipVerify: true}
	if cert != nil {
		tc.Certificates = []tls.Certificate{*cert}
	}
	return &http.Client{Transport: &http.Transport{TLSClientConfig: tc}, Timeout: 10 * time.Second}
}

func TestProxy_ClientCertificateBecomesImpersonation(t *testing.T) {
	ca := newTestCA(t)
	proxyURL, seen := startTLSProxy(t, ca, func(authorizationv1.ResourceAttributes) bool { return false })
	cert := ca.client(t, "alice", "team-a", "team-b")
	req, _ := http.NewRequest(http.MethodGet, proxyURL+cmPath+"/x", nil)
	resp, err := clientWith(&cert).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	s := <-seen
	if s.clientCert != "mvpctl-proxy" {
		t.Errorf("backend saw client certificate %q, want the proxy's", s.clientCert)
	}
	if got := s.header.Get("Impersonate-User"); got != "alice" {
		t.Errorf("Impersonate-User = %q, want alice", got)
	}
	if got := s.header.Values("Impersonate-Group"); strings.Join(got, ",") != "team-a,team-b" {
		t.Errorf("Impersonate-Group = %v, want team-a, team-b", got)
	}
}

func TestProxy_BearerTokenPassesThroughWithoutProxyIdentity(t *testing.T) {
	ca := newTestCA(t)
	proxyURL, seen := startTLSProxy(t, ca, func(authorizationv1.ResourceAttributes) bool { return false })
	req, _ := http.NewRequest(http.MethodGet, proxyURL+cmPath+"/x", nil)
	req.Header.Set("Authorization", "Bearer abc")
	req.Header.Set("Impersonate-User", "bob")
	resp, err := clientWith(nil).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	s := <-seen
	if s.clientCert != "" {
		t.Errorf("backend saw client certificate %q with a client's token: x509 would win over the token", s.clientCert)
	}
	if s.header.Get("Authorization") != "Bearer abc" || s.header.Get("Impersonate-User") != "bob" {
		t.Errorf("headers changed: Authorization %q, Impersonate-User %q", s.header.Get("Authorization"), s.header.Get("Impersonate-User"))
	}
}

func TestProxy_ForgedImpersonationWithClientCertIsForbidden(t *testing.T) {
	ca := newTestCA(t)
	proxyURL, seen := startTLSProxy(t, ca, func(a authorizationv1.ResourceAttributes) bool { return false })
	cert := ca.client(t, "mallory")
	req, _ := http.NewRequest(http.MethodGet, proxyURL+cmPath+"/x", nil)
	req.Header.Set("Impersonate-User", "system:admin")
	resp, err := clientWith(&cert).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	var st metav1.Status
	json.Unmarshal(body, &st)
	if resp.StatusCode != http.StatusForbidden || st.Reason != metav1.StatusReasonForbidden ||
		!strings.Contains(st.Message, `User "mallory" cannot impersonate resource "users"`) {
		t.Errorf("got %d %s, want 403 naming mallory", resp.StatusCode, body)
	}
	select {
	case s := <-seen:
		t.Errorf("the request reached the backend with Impersonate-User %q", s.header.Get("Impersonate-User"))
	default:
	}
}

func TestProxy_AllowedImpersonationWithClientCertIsForwarded(t *testing.T) {
	ca := newTestCA(t)
	proxyURL, seen := startTLSProxy(t, ca, func(a authorizationv1.ResourceAttributes) bool {
		return a.Resource == "users" && a.Name == "carol" || a.Resource == "groups" && a.Name == "ops"
	})
	cert := ca.client(t, "alice")
	req, _ := http.NewRequest(http.MethodGet, proxyURL+cmPath+"/x", nil)
	req.Header.Set("Impersonate-User", "carol")
	req.Header.Set("Impersonate-Group", "ops")
	resp, err := clientWith(&cert).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	s := <-seen
	if s.header.Get("Impersonate-User") != "carol" || s.header.Get("Impersonate-Group") != "ops" || s.clientCert != "mvpctl-proxy" {
		t.Errorf("backend saw %q/%q as %q, want carol/ops as the proxy", s.header.Get("Impersonate-User"), s.header.Get("Impersonate-Group"), s.clientCert)
	}
}

func TestServer_SlowHeadersAreCut(t *testing.T) {
	ca := newTestCA(t)
	proxyURL, _ := startTLSProxy(t, ca, func(authorizationv1.ResourceAttributes) bool { return false })
	conn, err := tls.Dial("tcp", strings.TrimPrefix(proxyURL, "https://"), &tls.Config{InsecureSkipVerify: true, NextProtos: []string{"http/1.1"}})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	io.WriteString(conn, "GET /api/v1/namespaces HTTP/1.1\r\nHost: x\r\n") // and never finish
	conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	_, err = io.ReadAll(conn)
	if ne, ok := err.(net.Error); ok && ne.Timeout() {
		t.Fatal("the connection was still open after 10s")
	}
}

func TestServer_HTTP2ToClients(t *testing.T) {
	ca := newTestCA(t)
	proxyURL, seen := startTLSProxy(t, ca, func(authorizationv1.ResourceAttributes) bool { return false })
	tr := &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}, ForceAttemptHTTP2: true}
	resp, err := (&http.Client{Transport: tr}).Get(proxyURL + cmPath + "/x")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	<-seen
	if resp.ProtoMajor != 2 {
		t.Errorf("protocol %s, want HTTP/2", resp.Proto)
	}
}
