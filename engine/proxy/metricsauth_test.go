package proxy

import (
	"crypto/tls"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	"k8s.io/client-go/rest"

	"github.com/mvpctl/mvpctl/engine/proxy/internal/proxytest"
)

func TestLoopbackAddress(t *testing.T) {
	for addr, want := range map[string]bool{
		"127.0.0.1:9464": true,
		"127.0.0.2:9464": true,
		"[::1]:9464":     true,
		"localhost:9464": true,
		"0.0.0.0:9464":   false,
		":9464":          false,
		"[::]:9464":      false,
		"10.0.0.1:9464":  false,
		"metrics:9464":   false,
	} {
		got, err := LoopbackAddress(addr)
		if err != nil || got != want {
			t.Errorf("%s: %v, %v; want %v", addr, got, err, want)
		}
	}
	if _, err := LoopbackAddress("9464"); err == nil {
		t.Error("an address without a port was accepted")
	}
}

// fakeReviewer answers TokenReviews and SubjectAccessReviews like a
// kube-apiserver: the token "reader" is prometheus, "stranger" is
// stranger; prometheus (by token or certificate) may get /metrics only.
type fakeReviewer struct {
	srv  *httptest.Server
	mu   sync.Mutex
	sars []authorizationv1.SubjectAccessReviewSpec
}

func startFakeReviewer(t *testing.T) *fakeReviewer {
	t.Helper()
	f := &fakeReviewer{}
	f.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		switch r.URL.Path {
		case "/apis/authentication.k8s.io/v1/tokenreviews":
			var tr authenticationv1.TokenReview
			if err := json.NewDecoder(r.Body).Decode(&tr); err != nil {
				http.Error(w, err.Error(), http.StatusBadRequest)
				return
			}
			switch tr.Spec.Token {
			case "reader":
				tr.Status = authenticationv1.TokenReviewStatus{Authenticated: true, User: authenticationv1.UserInfo{Username: "prometheus", Groups: []string{"system:serviceaccounts"}}}
			case "stranger":
				tr.Status = authenticationv1.TokenReviewStatus{Authenticated: true, User: authenticationv1.UserInfo{Username: "stranger"}}
			}
			w.WriteHeader(http.StatusCreated)
			json.NewEncoder(w).Encode(tr)
		case "/apis/authorization.k8s.io/v1/subjectaccessreviews":
			var sar authorizationv1.SubjectAccessReview
			if err := json.NewDecoder(r.Body).Decode(&sar); err != nil {
				http.Error(w, err.Error(), http.StatusBadRequest)
				return
			}
			f.mu.Lock()
			f.sars = append(f.sars, sar.Spec)
			f.mu.Unlock()
			na := sar.Spec.NonResourceAttributes
			sar.Status.Allowed = sar.Spec.User == "prometheus" && na != nil && na.Path == "/metrics" && na.Verb == "get"
			w.WriteHeader(http.StatusCreated)
			json.NewEncoder(w).Encode(sar)
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(f.srv.Close)
	return f
}

func (f *fakeReviewer) config() *rest.Config { return &rest.Config{Host: f.srv.URL} }

// bearerToken is the Authorization of a token; none for "".
func bearerToken(token string) string {
	if token == "" {
		return ""
	}
	return "Bearer " + token
}

var metricsOK = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "served "+r.URL.Path) })

// Unauthenticated requests get 401, users the cluster does not allow to get
// the path 403 (both as Status), allowed users the endpoint; the
// authorization asked is get on the non-resource URL.
func TestWithDelegatedAuth(t *testing.T) {
	rev := startFakeReviewer(t)
	authn, authz, err := DelegatedAuth(rev.config(), nil)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(WithDelegatedAuth(metricsOK, authn, authz))
	t.Cleanup(srv.Close)
	for _, tc := range []struct {
		path, token string
		code        int
	}{
		{"/metrics", "", http.StatusUnauthorized},
		{"/metrics", "forged", http.StatusUnauthorized},
		{"/metrics", "stranger", http.StatusForbidden},
		{"/debug/capabilities", "reader", http.StatusForbidden},
		{"/metrics", "reader", http.StatusOK},
	} {
		code, _, body := proxytest.Do(t, srv.Client(), proxytest.NewRequest(t, http.MethodGet, srv.URL+tc.path, "", "Authorization", bearerToken(tc.token)))
		if tc.code == http.StatusOK {
			if code != http.StatusOK || string(body) != "served "+tc.path {
				t.Errorf("%s with %q: %d %s", tc.path, tc.token, code, body)
			}
			continue
		}
		wantStatus(t, tc.code, code, body)
	}
	rev.mu.Lock()
	defer rev.mu.Unlock()
	for _, sar := range rev.sars {
		if na := sar.NonResourceAttributes; na == nil || na.Verb != "get" || sar.ResourceAttributes != nil {
			t.Errorf("SubjectAccessReview for %s is not get on a non-resource URL: %+v", sar.User, sar)
		}
	}
}

// Off loopback the metrics listener serves TLS; /healthz is open, the rest
// needs a bearer token or a client certificate the cluster allows.
func TestNewMetricsServer_Protected(t *testing.T) {
	rev := startFakeReviewer(t)
	ca := newTestCA(t)
	files := writeCertFiles(t, ca, ca)
	s, err := newMetricsServer(metricsOK, MetricsServeOptions{
		Listen: "127.0.0.1:0", CertFile: files.cert, KeyFile: files.key, ClientCAFile: files.ca, Auth: rev.config(),
	}, true)
	if err != nil {
		t.Fatal(err)
	}
	serve(t, s)
	base := "https://" + s.Addr().String()
	client := func(cert *tls.Certificate) *http.Client {
		c := clientWith(cert)
		t.Cleanup(c.CloseIdleConnections)
		return c
	}

	if code, _, body := proxytest.Do(t, client(nil), proxytest.NewRequest(t, http.MethodGet, base+"/healthz", "")); code != http.StatusOK {
		t.Errorf("/healthz without credentials: %d %s", code, body)
	}
	code, _, body := proxytest.Do(t, client(nil), proxytest.NewRequest(t, http.MethodGet, base+"/metrics", ""))
	wantStatus(t, http.StatusUnauthorized, code, body)
	code, _, body = proxytest.Do(t, client(nil), proxytest.NewRequest(t, http.MethodGet, base+"/metrics", "", "Authorization", "Bearer stranger"))
	wantStatus(t, http.StatusForbidden, code, body)
	if code, _, body := proxytest.Do(t, client(nil), proxytest.NewRequest(t, http.MethodGet, base+"/metrics", "", "Authorization", "Bearer reader")); code != http.StatusOK {
		t.Errorf("/metrics with an allowed token: %d %s", code, body)
	}
	prometheus, stranger := ca.issue(t, "prometheus", nil).tls, ca.issue(t, "stranger", nil).tls
	if code, _, body := proxytest.Do(t, client(&prometheus), proxytest.NewRequest(t, http.MethodGet, base+"/metrics", "")); code != http.StatusOK {
		t.Errorf("/metrics with an allowed client certificate: %d %s", code, body)
	}
	code, _, body = proxytest.Do(t, client(&stranger), proxytest.NewRequest(t, http.MethodGet, base+"/metrics", ""))
	wantStatus(t, http.StatusForbidden, code, body)
}

// On loopback the endpoints stay open, over HTTP, as before.
func TestNewMetricsServer_LoopbackIsOpen(t *testing.T) {
	s, err := NewMetricsServer(metricsOK, MetricsServeOptions{Listen: "127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	serve(t, s)
	c := &http.Client{Transport: &http.Transport{}}
	t.Cleanup(c.CloseIdleConnections)
	if code, _, body := proxytest.Do(t, c, proxytest.NewRequest(t, http.MethodGet, "http://"+s.Addr().String()+"/metrics", "")); code != http.StatusOK {
		t.Errorf("/metrics on loopback: %d %s", code, body)
	}
}

// Off loopback, a listener without a certificate or without a cluster to
// ask is refused before it listens.
func TestNewMetricsServer_OffLoopbackNeedsCertificateAndCluster(t *testing.T) {
	ca := newTestCA(t)
	files := writeCertFiles(t, ca, nil)
	for _, opts := range []MetricsServeOptions{
		{Listen: "0.0.0.0:0", Auth: &rest.Config{Host: "https://127.0.0.1:1"}},
		{Listen: "0.0.0.0:0", CertFile: files.cert, KeyFile: files.key},
	} {
		if _, err := NewMetricsServer(metricsOK, opts); err == nil || !strings.Contains(err.Error(), "not loopback") {
			t.Errorf("%+v: %v", opts, err)
		}
	}
}
