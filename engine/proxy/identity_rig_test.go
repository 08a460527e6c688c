package proxy

import (
	"bufio"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	jsonpatch "gopkg.in/evanphx/json-patch.v4"
	authorizationv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/mvpctl/mvpctl/engine/proxy/internal/proxytest"
	"github.com/mvpctl/mvpctl/engine/proxy/internal/response"
)

// rigProxyToken is the bearer token of the identity rig's proxy, next to
// its client certificate "mvpctl-proxy".
const rigProxyToken = "rig-proxy-token"

// upstreamRequest is what the rig's backend saw of one request.
type upstreamRequest struct {
	method, path string
	header       http.Header
	cert         string // CN of the certificate the proxy presented, if any
}

// identityRig is a TLS backend that requests client certificates and
// records every request that reaches it except the proxy's own polls and
// SubjectAccessReviews, and a proxy in front of it whose identity is a
// client certificate and a bearer token, serving TLS with client
// certificates of ca impersonated.
type identityRig struct {
	p    *Proxy
	url  string
	fake *fakeAPIServer

	allow func(authorizationv1.ResourceAttributes) bool

	mu   sync.Mutex
	seen []upstreamRequest
	sars []authorizationv1.ResourceAttributes
}

func newIdentityRig(t *testing.T, ca *testCA, opts Options, allow func(authorizationv1.ResourceAttributes) bool, served ...string) *identityRig {
	t.Helper()
	g := &identityRig{allow: allow}
	g.fake = &fakeAPIServer{name: "tls", gitVersion: "v1.36.3", requests: make(chan *http.Request, 100),
		served: append([]string{"authorization.k8s.io/v1/subjectaccessreviews"}, served...)}
	g.fake.handler = rigResource
	g.fake.srv = httptest.NewUnstartedServer(http.HandlerFunc(g.serveBackend))
	g.fake.srv.TLS = &tls.Config{ClientAuth: tls.RequestClientCert}
	g.fake.srv.StartTLS()
	t.Cleanup(g.fake.srv.Close)

	roots := x509.NewCertPool()
	roots.AddCert(g.fake.srv.Certificate())
	u, err := url.Parse(g.fake.srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	opts.Backends = []Backend{{Name: "tls", URL: u, BearerToken: rigProxyToken, TLS: &tls.Config{
		RootCAs: roots, Certificates: []tls.Certificate{ca.issue(t, "mvpctl-proxy", nil).tls},
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
	srv := serveProxy(t, p, ServeOptions{ClientCA: ca.pool})
	g.p, g.url = p, "https://"+srv.Addr().String()
	return g
}

func (g *identityRig) serveBackend(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path == "/apis/authorization.k8s.io/v1/subjectaccessreviews" {
		var sar authorizationv1.SubjectAccessReview
		if err := json.NewDecoder(r.Body).Decode(&sar); err != nil || sar.Spec.ResourceAttributes == nil {
			response.WriteStatus(w, http.StatusBadRequest, metav1.StatusReasonBadRequest, fmt.Sprint("not a SubjectAccessReview: ", err), 0)
			return
		}
		g.mu.Lock()
		g.sars = append(g.sars, *sar.Spec.ResourceAttributes)
		g.mu.Unlock()
		sar.Status.Allowed = g.allow(*sar.Spec.ResourceAttributes)
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusCreated)
		json.NewEncoder(w).Encode(sar)
		return
	}
	if r.Header.Get("User-Agent") != "mvpctl-proxy" {
		s := upstreamRequest{method: r.Method, path: r.URL.Path, header: r.Header.Clone()}
		if len(r.TLS.PeerCertificates) > 0 {
			s.cert = r.TLS.PeerCertificates[0].Subject.CommonName
		}
		g.mu.Lock()
		g.seen = append(g.seen, s)
		g.mu.Unlock()
	}
	g.fake.ServeHTTP(w, r)
}

// rigResource answers resource requests: an upgrade with 101, a read of a
// custom resource with proxytest.ServedObject, a write with its body.
func rigResource(w http.ResponseWriter, r *http.Request) {
	if up := r.Header.Get("Upgrade"); up != "" {
		conn, buf, err := http.NewResponseController(w).Hijack()
		if err != nil {
			return
		}
		fmt.Fprintf(buf, "HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: %s\r\n\r\n", up)
		buf.Flush()
		conn.Close()
		return
	}
	w.Header().Set("Content-Type", "application/json")
	body, _ := io.ReadAll(r.Body)
	switch {
	case r.Method == http.MethodGet && strings.HasSuffix(r.URL.Path, "/customresources"):
		io.WriteString(w, `{"apiVersion":"myapps.example.com/v1beta1","kind":"CustomresourceList","metadata":{"resourceVersion":"42"},"items":[`+proxytest.ServedObject+`]}`)
	case r.Method == http.MethodGet && strings.Contains(r.URL.Path, "/customresources/"):
		io.WriteString(w, proxytest.ServedObject)
	case r.Method == http.MethodPost:
		w.WriteHeader(http.StatusCreated)
		w.Write(body)
	case r.Method == http.MethodPatch && r.Header.Get("Content-Type") == "application/json-patch+json":
		// An emulated patch's write: the served object's change.
		patch, err := jsonpatch.DecodePatch(body)
		if err == nil {
			body, err = patch.Apply([]byte(proxytest.ServedObject))
		}
		if err != nil {
			w.WriteHeader(http.StatusUnprocessableEntity)
			io.WriteString(w, `{"kind":"Status","apiVersion":"v1","status":"Failure","code":422}`)
			return
		}
		w.Write(body)
	case len(body) > 0:
		w.Write(body)
	default:
		io.WriteString(w, `{"kind":"ConfigMap","apiVersion":"v1","metadata":{"name":"x"}}`)
	}
}

// take returns and forgets what the backend saw.
func (g *identityRig) take() ([]upstreamRequest, []authorizationv1.ResourceAttributes) {
	g.mu.Lock()
	defer g.mu.Unlock()
	seen, sars := g.seen, g.sars
	g.seen, g.sars = nil, nil
	return seen, sars
}

// do sends one request through the rig's proxy over HTTP/2 or HTTP/1.1;
// header holds name/value pairs, set as given.
func (g *identityRig) do(t *testing.T, cert *tls.Certificate, h2 bool, method, path, body string, header ...string) (int, []byte) {
	t.Helper()
	tr := &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}, ForceAttemptHTTP2: h2}
	if !h2 {
		tr.TLSNextProto = map[string]func(string, *tls.Conn) http.RoundTripper{}
	}
	if cert != nil {
		tr.TLSClientConfig.Certificates = []tls.Certificate{*cert}
	}
	defer tr.CloseIdleConnections()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, g.url+path, rd)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header[header[i]] = append(req.Header[header[i]], header[i+1])
	}
	resp, err := (&http.Client{Transport: tr, Timeout: 10 * time.Second}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	if resp.ProtoMajor == 2 != h2 {
		t.Fatalf("the request went over %s", resp.Proto)
	}
	return resp.StatusCode, data
}

// upgrade sends a GET asking to switch protocols over a raw HTTP/1.1
// connection and returns the proxy's answer (its body read when it is not
// a 101).
func (g *identityRig) upgrade(t *testing.T, cert *tls.Certificate, path string, header ...string) (int, []byte) {
	t.Helper()
	tc := &tls.Config{InsecureSkipVerify: true, NextProtos: []string{"http/1.1"}}
	if cert != nil {
		tc.Certificates = []tls.Certificate{*cert}
	}
	conn, err := tls.Dial("tcp", strings.TrimPrefix(g.url, "https://"), tc)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if err := conn.SetDeadline(time.Now().Add(10 * time.Second)); err != nil {
		t.Fatal(err)
	}
	var raw strings.Builder
	fmt.Fprintf(&raw, "GET %s HTTP/1.1\r\nHost: proxy.test\r\n", path)
	for i := 0; i+1 < len(header); i += 2 {
		fmt.Fprintf(&raw, "%s: %s\r\n", header[i], header[i+1])
	}
	raw.WriteString("\r\n")
	if _, err := io.WriteString(conn, raw.String()); err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode == http.StatusSwitchingProtocols {
		return resp.StatusCode, nil
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, body
}

// wantStatusReason fails unless body is a metav1.Status with code and reason whose
// message holds want.
func wantStatusReason(t *testing.T, code int, body []byte, wantCode int, reason metav1.StatusReason, want string) {
	t.Helper()
	var st metav1.Status
	if code != wantCode || json.Unmarshal(body, &st) != nil || st.Kind != "Status" || int(st.Code) != wantCode || st.Reason != reason || !strings.Contains(st.Message, want) {
		t.Errorf("got %d %s, want a %d Status %s with %q", code, body, wantCode, reason, want)
	}
}

// wantImpersonating fails unless every request the backend saw went with
// the proxy's identity, impersonating exactly user and groups.
func wantImpersonating(t *testing.T, seen []upstreamRequest, user string, groups ...string) {
	t.Helper()
	if len(seen) == 0 {
		t.Fatal("no request reached the backend")
	}
	want := map[string][]string{"Impersonate-User": {user}}
	if len(groups) > 0 {
		want["Impersonate-Group"] = groups
	}
	for _, s := range seen {
		got := map[string][]string{}
		for k, v := range s.header {
			if strings.HasPrefix(k, "Impersonate-") || strings.HasPrefix(k, "X-Remote-") {
				got[k] = v
			}
		}
		if s.cert != "mvpctl-proxy" || s.header.Get("Authorization") != "Bearer "+rigProxyToken || fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("%s %s reached the backend as %q with Authorization %q and %v; want the proxy impersonating %v",
				s.method, s.path, s.cert, s.header.Get("Authorization"), got, want)
		}
	}
}
