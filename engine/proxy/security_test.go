package proxy

import (
	"bufio"
	"crypto/tls"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/mvpctl/mvpctl/engine/proxy/internal/proxytest"
)

// TestProxy_ImpersonationHeadersNeverRideOnTheProxysIdentity covers the
// forged-impersonation cases the identity tests leave out: a client's
// Impersonate-* headers either go upstream on a connection without the
// proxy's credentials (no client certificate: the apiserver authorizes the
// client) or are checked one by one with SubjectAccessReviews first (a
// client certificate: the proxy's identity carries the request).
func TestProxy_ImpersonationHeadersNeverRideOnTheProxysIdentity(t *testing.T) {
	ca := newTestCA(t)
	// carol may be impersonated, and nothing else.
	proxyURL, seen := startTLSProxy(t, ca, func(a authorizationv1.ResourceAttributes) bool {
		return a.Resource == "users" && a.Name == "carol"
	})
	alice := ca.issue(t, "alice", []string{"team-a"}).tls
	noCN := ca.issue(t, "", []string{"team-a"}).tls
	tests := []struct {
		name    string
		cert    *tls.Certificate
		header  map[string][]string // keys as given: net/http canonicalizes them on the server
		code    int
		forward bool // the backend gets the request
		want    string
	}{
		{name: "anonymous client: headers passed on without the proxy's identity", header: map[string][]string{
			"Impersonate-User": {"system:admin"}, "Impersonate-Group": {"system:masters"}, "Impersonate-Extra-Scopes": {"all"}},
			code: http.StatusOK, forward: true},
		{name: "certificate, group without user", cert: &alice, header: map[string][]string{"Impersonate-Group": {"system:masters"}},
			code: http.StatusBadRequest, want: "without impersonating a user"},
		{name: "certificate, uid without user", cert: &alice, header: map[string][]string{"Impersonate-Uid": {"0"}},
			code: http.StatusBadRequest, want: "without impersonating a user"},
		{name: "certificate, extra without user", cert: &alice, header: map[string][]string{"Impersonate-Extra-Scopes": {"all"}},
			code: http.StatusBadRequest, want: "without impersonating a user"},
		{name: "certificate, allowed user with a denied group", cert: &alice, header: map[string][]string{
			"Impersonate-User": {"carol"}, "Impersonate-Group": {"system:masters"}},
			code: http.StatusForbidden, want: `cannot impersonate resource "groups"`},
		{name: "certificate, allowed user with a denied extra", cert: &alice, header: map[string][]string{
			"Impersonate-User": {"carol"}, "Impersonate-Extra-Scopes": {"all"}},
			code: http.StatusForbidden, want: `cannot impersonate resource "userextras/scopes"`},
		{name: "certificate, allowed user with a denied uid", cert: &alice, header: map[string][]string{
			"Impersonate-User": {"carol"}, "Impersonate-Uid": {"0"}},
			code: http.StatusForbidden, want: `cannot impersonate resource "uids"`},
		{name: "certificate, service account", cert: &alice, header: map[string][]string{"Impersonate-User": {"system:serviceaccount:kube-system:admin"}},
			code: http.StatusForbidden, want: `cannot impersonate resource "serviceaccounts" in API group "" in the namespace "kube-system"`},
		{name: "certificate, lower-case header name", cert: &alice, header: map[string][]string{"impersonate-user": {"system:admin"}},
			code: http.StatusForbidden, want: `cannot impersonate resource "users"`},
		{name: "certificate and a bearer token, forged user", cert: &alice, header: map[string][]string{
			"Authorization": {"Bearer sekret-token-123"}, "Impersonate-User": {"system:admin"}},
			code: http.StatusForbidden, want: `User "alice" cannot impersonate`},
		{name: "certificate and a bearer token: the token is dropped", cert: &alice, header: map[string][]string{
			"Authorization": {"Bearer sekret-token-123"}},
			code: http.StatusOK, forward: true},
		{name: "certificate without a common name", cert: &noCN, header: map[string][]string{"Impersonate-User": {"system:admin"}},
			code: http.StatusUnauthorized, want: "no common name"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			for _, proto := range []string{"h2", "http/1.1"} {
				tr := &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true, NextProtos: []string{proto}}, ForceAttemptHTTP2: proto == "h2"}
				if tc.cert != nil {
					tr.TLSClientConfig.Certificates = []tls.Certificate{*tc.cert}
				}
				if proto != "h2" {
					tr.TLSNextProto = map[string]func(string, *tls.Conn) http.RoundTripper{}
				}
				req, err := http.NewRequest(http.MethodGet, proxyURL+cmPath+"/x", nil)
				if err != nil {
					t.Fatal(err)
				}
				for k, v := range tc.header {
					req.Header[k] = v
				}
				code, _, body := proxytest.Do(t, &http.Client{Transport: tr, Timeout: 10 * time.Second}, req)
				tr.CloseIdleConnections()
				if code != tc.code {
					t.Fatalf("%s: got %d %s, want %d", proto, code, body, tc.code)
				}
				if tc.code != http.StatusOK {
					var st metav1.Status
					if json.Unmarshal(body, &st); st.Kind != "Status" || int(st.Code) != tc.code || !strings.Contains(st.Message, tc.want) {
						t.Errorf("%s: want a Status with code %d and %q: %s", proto, tc.code, tc.want, body)
					}
				}
				var s *seenRequest
				if tc.forward {
					got := <-seen
					s = &got
				} else {
					select {
					case got := <-seen:
						s = &got
						t.Fatalf("%s: the request reached the backend as %q with %v", proto, got.clientCert, got.header)
					default:
					}
					continue
				}
				switch {
				case tc.cert == nil:
					if s.clientCert != "" {
						t.Errorf("%s: an anonymous request went upstream as %q", proto, s.clientCert)
					}
					for k, v := range tc.header {
						if got := s.header.Values(k); strings.Join(got, ",") != strings.Join(v, ",") {
							t.Errorf("%s: %s = %v upstream, want the client's %v", proto, k, got, v)
						}
					}
				default:
					if s.clientCert != "mvpctl-proxy" || s.header.Get("Impersonate-User") != "alice" ||
						strings.Join(s.header.Values("Impersonate-Group"), ",") != "team-a" || s.header.Get("Authorization") != "" {
						t.Errorf("%s: upstream as %q with Impersonate-User %q, groups %v, Authorization %q; want the proxy as alice of team-a, no token",
							proto, s.clientCert, s.header.Get("Impersonate-User"), s.header.Values("Impersonate-Group"), s.header.Get("Authorization"))
					}
				}
			}
		})
	}
}

// TestProxy_CredentialsStayOutOfLogsAndMetrics runs the proxy with a
// debug-level logger (one line per request, the HTTP server's errors too)
// and sends requests that carry a bearer token or a client certificate down
// every path: forwarded, not found, refused, rejected, too large. Neither the
// token nor the certificate's subject may appear in the log or in /metrics.
func TestProxy_CredentialsStayOutOfLogsAndMetrics(t *testing.T) {
	const (
		token = "sekret-token-123"
		cn    = "cn-secret-4f1d"
		org   = "org-secret-9b2c"
	)
	var logs proxytest.Buffer
	log := slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	ca := newTestCA(t)
	proxyURL, seen, p := startTLSProxyWith(t, ca, func(authorizationv1.ResourceAttributes) bool { return false },
		Options{Logger: log}, ServeOptions{Logger: log})
	stop := make(chan struct{})
	t.Cleanup(func() { close(stop) })
	go func() {
		for {
			select {
			case <-seen:
			case <-stop:
				return
			}
		}
	}()
	cert := ca.issue(t, cn, []string{org}).tls
	type request struct {
		method, path, body string
		header             map[string]string
		cert               bool
		otherCA            bool // a certificate the server does not trust: a TLS error in the server's log
		h1                 bool // HTTP/1.1: Connection and Upgrade are not HTTP/2 headers
	}
	bearer := map[string]string{"Authorization": "Bearer " + token}
	requests := []request{
		{method: "GET", path: cmPath + "/x", header: bearer},
		{method: "GET", path: cmPath + "?watch=1&timeoutSeconds=1", header: bearer},
		{method: "GET", path: "/apis/nothing.example.com/v1/namespaces/x/things", header: bearer},
		{method: "POST", path: cmPath, body: strings.Repeat("x", 4<<20), header: bearer},
		{method: "GET", path: cmPath + "/x", header: map[string]string{"Authorization": "Bearer " + token, "Connection": "Upgrade", "Upgrade": "\xab"}, h1: true},
		{method: "CONNECT", path: "/", header: bearer},
		{method: "GET", path: "/api/v1/namespaces/x/pods/p/exec?command=" + token, header: map[string]string{"Sec-Websocket-Protocol": "base64url.bearer.authorization.k8s.io." + token}},
		{method: "GET", path: cmPath + "/x", cert: true},
		{method: "GET", path: cmPath + "/x", cert: true, header: map[string]string{"Impersonate-User": "system:admin"}},
		{method: "GET", path: cmPath + "/x", cert: true, header: map[string]string{"Authorization": "Bearer " + token, "Impersonate-Group": "system:masters"}},
		{method: "GET", path: cmPath + "/x", otherCA: true},
	}
	strange := newTestCA(t).issue(t, cn, []string{org}).tls
	for _, r := range requests {
		tc := &tls.Config{InsecureSkipVerify: true}
		if r.cert {
			tc.Certificates = []tls.Certificate{cert}
		}
		if r.otherCA {
			tc.Certificates = []tls.Certificate{strange}
		}
		tr := &http.Transport{TLSClientConfig: tc, ForceAttemptHTTP2: !r.h1}
		if r.h1 {
			tr.TLSNextProto = map[string]func(string, *tls.Conn) http.RoundTripper{}
		}
		var body io.Reader
		if r.body != "" {
			body = strings.NewReader(r.body)
		}
		req, err := http.NewRequest(r.method, proxyURL+r.path, body)
		if err != nil {
			t.Fatal(err)
		}
		for k, v := range r.header {
			req.Header.Set(k, v)
		}
		if resp, err := (&http.Client{Transport: tr, Timeout: 10 * time.Second}).Do(req); err == nil {
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}
		tr.CloseIdleConnections()
	}
	// A client that never finishes its headers makes the server log.
	if conn, err := tls.Dial("tcp", strings.TrimPrefix(proxyURL, "https://"), &tls.Config{InsecureSkipVerify: true, NextProtos: []string{"http/1.1"}}); err == nil {
		if _, err := io.WriteString(conn, "GET "+cmPath+" HTTP/1.1\r\nAuthorization: Bearer "+token+"\r\n"); err != nil {
			t.Fatal(err)
		}
		if err := conn.SetReadDeadline(time.Now().Add(10 * time.Second)); err != nil {
			t.Fatal(err)
		}
		bufio.NewReader(conn).ReadString('\n')
		conn.Close()
	}

	rec := httptest.NewRecorder()
	p.MetricsHandler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	metricsText := rec.Body.String()
	logText := logs.String()
	if !strings.Contains(logText, "msg=request") || !strings.Contains(metricsText, "mvpctl_proxy_requests_total{") {
		t.Fatalf("nothing to check: log %d bytes, metrics %d bytes", len(logText), len(metricsText))
	}
	for _, secret := range []string{token, cn, org} {
		if strings.Contains(logText, secret) {
			t.Errorf("the log holds %q:\n%s", secret, logText)
		}
		if strings.Contains(metricsText, secret) {
			t.Errorf("/metrics holds %q", secret)
		}
	}
}

// TestServer_RefusesTLSBelow12: the server refuses a TLS 1.1 (or 1.0)
// handshake with "protocol version not supported"; 1.2 and 1.3 connect.
func TestServer_RefusesTLSBelow12(t *testing.T) {
	p, _ := startProxy(t, Options{}, newFake(t, "a", "v1.36.3", "v1/configmaps"))
	srv := serveProxy(t, p, ServeOptions{})
	for _, tc := range []struct {
		version uint16
		ok      bool
	}{
		{tls.VersionTLS10, false}, {tls.VersionTLS11, false}, {tls.VersionTLS12, true}, {tls.VersionTLS13, true},
	} {
		conn, err := tls.Dial("tcp", srv.Addr().String(), &tls.Config{InsecureSkipVerify: true, MinVersion: tc.version, MaxVersion: tc.version})
		if err == nil {
			conn.Close()
		}
		// The server's alert, not a client that gave up by itself.
		refused := err != nil && strings.Contains(err.Error(), "remote error: tls: protocol version not supported")
		if tc.ok && err != nil || !tc.ok && !refused {
			t.Errorf("%s: handshake error %v, want success %v", tls.VersionName(tc.version), err, tc.ok)
		}
	}
}
