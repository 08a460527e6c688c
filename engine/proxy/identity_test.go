package proxy

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/mvpctl/mvpctl/engine/proxy/internal/proxytest"
)

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
			if err := json.NewDecoder(r.Body).Decode(&sar); err != nil || sar.Spec.ResourceAttributes == nil {
				t.Errorf("a SubjectAccessReview without resource attributes (%v)", err)
				http.Error(w, "bad review", http.StatusBadRequest)
				return
			}
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
	u, err := url.Parse(f.srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	opts.Backends = []Backend{{Name: "tls", URL: u, TLS: &tls.Config{
		RootCAs: backendRoots, Certificates: []tls.Certificate{ca.issue(t, "mvpctl-proxy", nil).tls},
	}}}
	opts.HealthInterval = 20 * time.Millisecond
	opts.ImpersonateClientCerts = true
	p, err = New(opts)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	p.Run(ctx)
	if err := p.WaitReady(ctx); err != nil {
		t.Fatal(err)
	}
	sopts.ClientCA, sopts.ReadHeaderTimeout = ca.pool, 200*time.Millisecond
	srv := serveProxy(t, p, sopts)
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
	cert := ca.issue(t, "alice", []string{"team-a", "team-b"}).tls
	proxytest.Do(t, clientWith(&cert), proxytest.NewRequest(t, http.MethodGet, proxyURL+cmPath+"/x", ""))
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
	proxytest.Do(t, clientWith(nil), proxytest.NewRequest(t, http.MethodGet, proxyURL+cmPath+"/x", "", "Authorization", "Bearer abc", "Impersonate-User", "bob"))
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
	cert := ca.issue(t, "mallory", nil).tls
	code, _, body := proxytest.Do(t, clientWith(&cert), proxytest.NewRequest(t, http.MethodGet, proxyURL+cmPath+"/x", "", "Impersonate-User", "system:admin"))
	var st metav1.Status
	if err := json.Unmarshal(body, &st); err != nil {
		t.Fatalf("%v: %s", err, body)
	}
	if code != http.StatusForbidden || st.Reason != metav1.StatusReasonForbidden ||
		!strings.Contains(st.Message, `User "mallory" cannot impersonate resource "users"`) {
		t.Errorf("got %d %s, want 403 naming mallory", code, body)
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
	cert := ca.issue(t, "alice", nil).tls
	proxytest.Do(t, clientWith(&cert), proxytest.NewRequest(t, http.MethodGet, proxyURL+cmPath+"/x", "", "Impersonate-User", "carol", "Impersonate-Group", "ops"))
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
	// Headers that never finish.
	if _, err := io.WriteString(conn, "GET /api/v1/namespaces HTTP/1.1\r\nHost: x\r\n"); err != nil {
		t.Fatal(err)
	}
	if err := conn.SetReadDeadline(time.Now().Add(10 * time.Second)); err != nil {
		t.Fatal(err)
	}
	_, err = io.ReadAll(conn)
	if ne, ok := err.(net.Error); ok && ne.Timeout() {
		t.Fatal("the connection was still open after 10s")
	}
}

func TestServer_HTTP2ToClients(t *testing.T) {
	ca := newTestCA(t)
	proxyURL, seen := startTLSProxy(t, ca, func(authorizationv1.ResourceAttributes) bool { return false })
	tr := &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}, ForceAttemptHTTP2: true}
	t.Cleanup(tr.CloseIdleConnections)
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
