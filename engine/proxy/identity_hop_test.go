package proxy

import (
	"crypto/tls"
	"encoding/base64"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"

	authorizationv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/mvpctl/mvpctl/engine/proxy/internal/proxytest"
	"github.com/mvpctl/mvpctl/engine/proxy/internal/response"
)

func allowUsers(names ...string) func(authorizationv1.ResourceAttributes) bool {
	return func(a authorizationv1.ResourceAttributes) bool {
		for _, n := range names {
			if a.Resource == "users" && a.Name == n {
				return true
			}
		}
		return false
	}
}

// A Connection header makes httputil.ReverseProxy remove the headers it
// names. Naming an identity header is refused: it would otherwise take the
// impersonation off a certificate client's request (which then reached the
// backend as the proxy itself) or the token off a token client's.
func TestProxy_ConnectionHeaderCannotDropTheIdentity(t *testing.T) {
	ca := newTestCA(t)
	g := newIdentityRig(t, ca, Options{}, allowUsers("carol"), "v1/configmaps")
	alice := ca.issue(t, "alice", []string{"team-a"}).tls
	tests := []struct {
		name   string
		cert   *tls.Certificate
		header []string
		named  string
	}{
		{"certificate, both impersonation headers", &alice, []string{"Connection", "keep-alive, Impersonate-User, Impersonate-Group"}, "Impersonate-User"},
		{"certificate, lower case", &alice, []string{"Connection", "close,impersonate-group"}, "impersonate-group"},
		{"certificate, in a second Connection header", &alice, []string{"Connection", "keep-alive", "Connection", "Impersonate-User"}, "Impersonate-User"},
		{"certificate, its allowed impersonation", &alice, []string{"Impersonate-User", "carol", "Connection", "Impersonate-User"}, "Impersonate-User"},
		{"certificate, an extra", &alice, []string{"Connection", "Impersonate-Extra-Scopes"}, "Impersonate-Extra-Scopes"},
		{"certificate, a front-proxy header", &alice, []string{"X-Remote-User", "system:admin", "Connection", "X-Remote-User"}, "X-Remote-User"},
		{"token", nil, []string{"Authorization", "Bearer abc", "Connection", "Authorization"}, "Authorization"},
		{"token with impersonation", nil, []string{"Authorization", "Bearer abc", "Impersonate-User", "bob", "Connection", "Impersonate-User"}, "Impersonate-User"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			code, body := g.do(t, tc.cert, false, http.MethodGet, cmPath+"/x", "", tc.header...)
			wantStatusReason(t, code, body, http.StatusBadRequest, metav1.StatusReasonBadRequest, `the Connection header names "`+tc.named+`"`)
			if seen, _ := g.take(); len(seen) > 0 {
				t.Errorf("the request reached the backend: %+v", seen)
			}
		})
	}
	t.Run("other hop-by-hop headers", func(t *testing.T) {
		code, body := g.do(t, &alice, false, http.MethodGet, cmPath+"/x", "", "Connection", "keep-alive, Te, X-Custom", "Te", "trailers", "X-Custom", "1")
		if code != http.StatusOK {
			t.Fatalf("got %d %s", code, body)
		}
		seen, _ := g.take()
		wantImpersonating(t, seen, "alice", "team-a")
	})
}

// Upgrades (exec, attach, port-forward over SPDY or WebSocket) go the same
// way: the identity is set after the hop-by-hop headers are removed and the
// Upgrade and Connection headers put back.
func TestProxy_UpgradeCarriesTheIdentity(t *testing.T) {
	ca := newTestCA(t)
	g := newIdentityRig(t, ca, Options{}, allowUsers(), "v1/pods", "v1/pods/exec")
	alice := ca.issue(t, "alice", []string{"team-a"}).tls
	const exec = "/api/v1/namespaces/x/pods/p/exec?command=ls&stdout=true"

	code, body := g.upgrade(t, &alice, exec, "Connection", "Upgrade, Impersonate-User, Impersonate-Group", "Upgrade", "SPDY/3.1")
	wantStatusReason(t, code, body, http.StatusBadRequest, metav1.StatusReasonBadRequest, `the Connection header names "Impersonate-User"`)
	if seen, _ := g.take(); len(seen) > 0 {
		t.Fatalf("the upgrade reached the backend: %+v", seen)
	}

	bearer := "base64url.bearer.authorization.k8s.io." + base64.RawURLEncoding.EncodeToString([]byte("someone-elses-token"))
	for _, h := range [][]string{
		{"Connection", "Upgrade", "Upgrade", "SPDY/3.1", "X-Stream-Protocol-Version", "v4.channel.k8s.io", "X-Remote-User", "system:admin", "X-Remote-Group", "system:masters"},
		{"Connection", "Upgrade", "Upgrade", "websocket", "Sec-WebSocket-Version", "13", "Sec-WebSocket-Key", "dGhlIHNhbXBsZSBub25jZQ==",
			"Sec-WebSocket-Protocol", bearer + ", v5.channel.k8s.io", "Authorization", "Bearer abc"},
	} {
		if code, body := g.upgrade(t, &alice, exec, h...); code != http.StatusSwitchingProtocols {
			t.Fatalf("%v: got %d %s, want 101", h, code, body)
		}
		seen, _ := g.take()
		wantImpersonating(t, seen, "alice", "team-a")
		for _, s := range seen {
			if p := s.header.Get("Sec-Websocket-Protocol"); strings.Contains(p, "bearer") {
				t.Errorf("the client's WebSocket token went along with the proxy's identity: %q", p)
			}
		}
	}
}

// X-Remote-* are kube-apiserver's default front-proxy headers: they never
// go upstream, whoever sends them.
func TestProxy_FrontProxyHeadersNeverReachTheBackend(t *testing.T) {
	ca := newTestCA(t)
	g := newIdentityRig(t, ca, Options{}, allowUsers(), "v1/configmaps")
	alice := ca.issue(t, "alice", nil).tls
	forged := []string{"X-Remote-User", "system:admin", "X-Remote-Group", "system:masters", "X-Remote-Extra-Scopes", "all", "x-remote-uid", "0"}
	for _, h2 := range []bool{true, false} {
		for _, cert := range []*tls.Certificate{nil, &alice} {
			if code, body := g.do(t, cert, h2, http.MethodGet, cmPath+"/x", "", append([]string{"Authorization", "Bearer abc"}, forged...)...); code != http.StatusOK {
				t.Fatalf("got %d %s", code, body)
			}
			seen, _ := g.take()
			if len(seen) == 0 {
				t.Fatal("no request reached the backend")
			}
			for _, s := range seen {
				for k := range s.header {
					if strings.HasPrefix(k, "X-Remote-") {
						t.Errorf("h2 %v, certificate %v: %s reached the backend", h2, cert != nil, k)
					}
				}
			}
		}
	}
}

// kube-apiserver reads the key of Impersonate-Extra-<key> lower-cased and
// percent-decoded; the proxy checks the same key.
func TestProxy_ImpersonatedExtraKeysAreReadAsTheAPIServerReadsThem(t *testing.T) {
	ca := newTestCA(t)
	g := newIdentityRig(t, ca, Options{}, func(a authorizationv1.ResourceAttributes) bool {
		return a.Resource == "users" && a.Name == "carol" ||
			a.Resource == "userextras" && a.Subresource == "example.com/scopes" && a.Name == "read"
	}, "v1/configmaps")
	alice := ca.issue(t, "alice", nil).tls
	for _, header := range []string{"Impersonate-Extra-Example.com%2fscopes", "Impersonate-Extra-EXAMPLE.COM%2FSCOPES"} {
		code, body := g.do(t, &alice, true, http.MethodGet, cmPath+"/x", "", "Impersonate-User", "carol", header, "read")
		if code != http.StatusOK {
			t.Fatalf("%s: got %d %s", header, code, body)
		}
		seen, sars := g.take()
		var subresources []string
		for _, a := range sars {
			if a.Resource == "userextras" {
				subresources = append(subresources, a.Subresource)
			}
		}
		if strings.Join(subresources, ",") != "example.com/scopes" {
			t.Errorf("%s: the extra was checked as %q, want example.com/scopes", header, subresources)
		}
		if len(seen) != 1 || seen[0].header.Get("Impersonate-User") != "carol" || seen[0].header.Get(header) != "read" {
			t.Errorf("%s: the backend saw %+v", header, seen)
		}
	}
	code, body := g.do(t, &alice, true, http.MethodGet, cmPath+"/x", "", "Impersonate-User", "carol", "Impersonate-Extra-Example.com%2fwrite", "all")
	wantStatusReason(t, code, body, http.StatusForbidden, metav1.StatusReasonForbidden, `cannot impersonate resource "userextras/example.com/write"`)
}

const crPath = "/apis/myapps.example.com/v1alpha1/namespaces/ns/customresources"

// A certificate client uses an emulated version like any other: the
// emulation's reads and writes go with the identity decided for the
// client's request, not authenticated again (which asked whether alice may
// impersonate alice, and cost a SubjectAccessReview each).
func TestEmulation_ClientCertificateUsersAreAuthenticatedOnce(t *testing.T) {
	ca := newTestCA(t)
	g := newIdentityRig(t, ca, Options{Rules: Rules{Converter: proxytest.SeedConverter(t)}}, allowUsers("carol"),
		"myapps.example.com/v1beta1/customresources", "myapps.example.com/v1beta1/customresources/status")
	alice := ca.issue(t, "alice", []string{"team-a"}).tls
	requests := []struct{ method, path, body, contentType string }{
		{http.MethodGet, crPath + "/a", "", ""},
		{http.MethodGet, crPath, "", ""},
		{http.MethodPost, crPath, proxytest.ClientObject, "application/json"},
		{http.MethodPut, crPath + "/a", proxytest.ClientObject, "application/json"},
		{http.MethodPatch, crPath + "/a", `{"spec":{"stateManagement":"ephemeral"}}`, "application/merge-patch+json"},
	}
	for _, as := range []struct {
		header []string
		user   string
		groups []string
		sars   int
	}{
		{nil, "alice", []string{"team-a"}, 0},
		{[]string{"Impersonate-User", "carol"}, "carol", nil, 1},
	} {
		for _, rq := range requests {
			header := as.header
			if rq.contentType != "" {
				header = append([]string{"Content-Type", rq.contentType}, header...)
			}
			code, body := g.do(t, &alice, true, rq.method, rq.path, rq.body, header...)
			if code != http.StatusOK && code != http.StatusCreated {
				t.Fatalf("%s %s as %s: got %d %s", rq.method, rq.path, as.user, code, body)
			}
			if !strings.Contains(string(body), `"myapps.example.com/v1alpha1"`) {
				t.Errorf("%s %s as %s: not converted: %s", rq.method, rq.path, as.user, body)
			}
			seen, sars := g.take()
			wantImpersonating(t, seen, as.user, as.groups...)
			if len(sars) != as.sars {
				t.Errorf("%s %s as %s: %d SubjectAccessReviews (%v), want %d", rq.method, rq.path, as.user, len(sars), sars, as.sars)
			}
		}
	}
}

// Before the proxy buffers and converts a body for an emulated version, a
// backend authenticates the client's own credentials (a SelfSubjectReview);
// its "yes" is remembered for a while, its 401 is the client's answer.
func TestEmulation_WritesWaitForABackendToAuthenticateTheClient(t *testing.T) {
	var reviews, writes atomic.Int64
	var anonymous atomic.Bool // whether the cluster allows anonymous requests
	f := newFake(t, "a", "v1.36.3", "myapps.example.com/v1beta1/customresources", "authentication.k8s.io/v1/selfsubjectreviews")
	f.setHandler(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasSuffix(r.URL.Path, "/selfsubjectreviews") {
			reviews.Add(1)
			switch auth := r.Header.Get("Authorization"); {
			case auth == "Bearer good":
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(http.StatusCreated)
				io.WriteString(w, `{"kind":"SelfSubjectReview","apiVersion":"authentication.k8s.io/v1","status":{"userInfo":{"username":"good"}}}`)
			case auth == "" && anonymous.Load():
				response.WriteStatus(w, http.StatusForbidden, metav1.StatusReasonForbidden, `selfsubjectreviews.authentication.k8s.io is forbidden: User "system:anonymous" cannot create resource`, 0)
			default:
				response.WriteStatus(w, http.StatusUnauthorized, metav1.StatusReasonUnauthorized, "Unauthorized", 0)
			}
			return
		}
		if r.Method != http.MethodGet {
			writes.Add(1)
		}
		body, _ := io.ReadAll(r.Body)
		w.Header().Set("Content-Type", "application/json")
		if r.Method == http.MethodGet {
			io.WriteString(w, proxytest.ServedObject)
			return
		}
		w.WriteHeader(http.StatusCreated)
		w.Write(body)
	})
	_, srv := startProxy(t, Options{Rules: Rules{Converter: proxytest.SeedConverter(t)}}, f)
	post := func(header ...string) (int, string) {
		t.Helper()
		header = append([]string{"Content-Type", "application/json"}, header...)
		code, _, body := proxytest.Do(t, nil, proxytest.NewRequest(t, http.MethodPost, srv.URL+crPath, proxytest.ClientObject, header...))
		return code, string(body)
	}

	code, body := post("Authorization", "Bearer bad")
	wantStatusReason(t, code, []byte(body), http.StatusUnauthorized, metav1.StatusReasonUnauthorized, "Unauthorized")
	if reviews.Load() != 1 || writes.Load() != 0 {
		t.Fatalf("a bad token: %d reviews, %d writes; want 1 review and no write", reviews.Load(), writes.Load())
	}
	for range 3 {
		if code, body := post("Authorization", "Bearer good"); code != http.StatusCreated || !strings.Contains(body, "v1alpha1") {
			t.Fatalf("a good token: %d %s", code, body)
		}
	}
	if reviews.Load() != 2 || writes.Load() != 3 {
		t.Errorf("three writes with a good token: %d reviews in all, %d writes; want 2 (the first review remembered) and 3", reviews.Load(), writes.Load())
	}
	// Reads need no conversion of a body: no review.
	if code, _, body := proxytest.Do(t, nil, proxytest.NewRequest(t, http.MethodGet, srv.URL+crPath+"/a", "", "Authorization", "Bearer bad")); code != http.StatusOK {
		t.Fatalf("a read: %d %s", code, body)
	}
	if reviews.Load() != 2 {
		t.Errorf("a read was reviewed")
	}

	// Without credentials: refused when the cluster refuses anonymous
	// requests, let through (to the apiserver's own answer) when it does not.
	code, body = post()
	wantStatusReason(t, code, []byte(body), http.StatusUnauthorized, metav1.StatusReasonUnauthorized, "Unauthorized")
	if writes.Load() != 3 {
		t.Errorf("an anonymous write reached the backend while the cluster refuses anonymous requests")
	}
	anonymous.Store(true)
	if code, body := post(); code != http.StatusCreated {
		t.Errorf("an anonymous write on a cluster that allows anonymous requests: %d %s", code, body)
	}
	if writes.Load() != 4 {
		t.Errorf("%d writes, want 4", writes.Load())
	}
}

// The discovery access cache keys on every credential: a bearer token
// offered as a WebSocket subprotocol too.
func TestDiscovery_WebSocketTokenIsPartOfTheAccessCacheKey(t *testing.T) {
	f := newFake(t, "a", "v1.36.3", "myapps.example.com/v1beta1/customresources")
	inner := f.srv.Config.Handler
	f.srv.Config.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/apis" && r.Header.Get("User-Agent") != "mvpctl-proxy" {
			token := strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")
			for _, p := range strings.Split(r.Header.Get("Sec-Websocket-Protocol"), ",") {
				if enc, ok := strings.CutPrefix(strings.TrimSpace(p), "base64url.bearer.authorization.k8s.io."); ok {
					b, err := base64.RawURLEncoding.DecodeString(enc)
					if err != nil {
						t.Errorf("a WebSocket token: %v", err)
					}
					token = string(b)
				}
			}
			if token != "good" {
				response.WriteStatus(w, http.StatusForbidden, metav1.StatusReasonForbidden, `forbidden: User "system:anonymous" cannot get path "/apis"`, 0)
				return
			}
		}
		inner.ServeHTTP(w, r)
	})
	_, srv := startProxy(t, Options{Rules: Rules{Converter: proxytest.SeedConverter(t)}}, f)
	ws := "base64url.bearer.authorization.k8s.io." + base64.RawURLEncoding.EncodeToString([]byte("good"))
	if code, _, body := proxytest.Do(t, nil, proxytest.NewRequest(t, http.MethodGet, srv.URL+"/apis", "", "Connection", "Upgrade", "Upgrade", "websocket", "Sec-WebSocket-Protocol", ws)); code != http.StatusOK {
		t.Fatalf("/apis with a WebSocket token: %d %s", code, body)
	}
	if code, _, body := proxytest.Do(t, nil, proxytest.NewRequest(t, http.MethodGet, srv.URL+"/apis", "")); code != http.StatusForbidden {
		t.Errorf("/apis without credentials after a WebSocket token's: %d %s", code, body)
	}
}

// /openapi/v2 is authorized as /openapi/v2: RBAC may grant /openapi/v3
// alone.
func TestDiscovery_OpenAPIV2IsAuthorizedAsItself(t *testing.T) {
	f := newFake(t, "a", "v1.36.3", "myapps.example.com/v1beta1/customresources")
	f.openAPIV2 = `{"swagger":"2.0","info":{"title":"Kubernetes","version":"v1.36.3"},"paths":{},"definitions":{}}`
	var conditional atomic.Int64
	inner := f.srv.Config.Handler
	f.srv.Config.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/openapi/v2" && r.Header.Get("Authorization") == "Bearer v3-only" {
			response.WriteStatus(w, http.StatusForbidden, metav1.StatusReasonForbidden, `forbidden: User "v3" cannot get path "/openapi/v2"`, 0)
			return
		}
		if r.URL.Path == "/openapi/v2" && r.Header.Get("Authorization") == "Bearer both" && r.Header.Get("If-None-Match") == "*" {
			conditional.Add(1)
		}
		inner.ServeHTTP(w, r)
	})
	_, srv := startProxy(t, Options{Rules: Rules{Converter: proxytest.SeedConverter(t)}}, f)
	if code, _, body := proxytest.Do(t, nil, proxytest.NewRequest(t, http.MethodGet, srv.URL+"/openapi/v2", "", "Authorization", "Bearer v3-only")); code != http.StatusForbidden {
		t.Errorf("/openapi/v2 for a client allowed /openapi/v3 only: %d %.200s", code, body)
	}
	if code, _, body := proxytest.Do(t, nil, proxytest.NewRequest(t, http.MethodGet, srv.URL+"/openapi/v2", "", "Authorization", "Bearer both")); code != http.StatusOK || !strings.Contains(string(body), `"swagger"`) {
		t.Errorf("/openapi/v2 for an allowed client: %d %.200s", code, body)
	}
	if conditional.Load() != 1 {
		t.Errorf("the access check asked for the document %d times with If-None-Match: *, want once (a server answers 304 without the document)", conditional.Load())
	}
}

// Go's HTTP/2 server gives every request a Body, also one that sent none: a
// read of an emulated version has no body to convert, so no backend is asked
// to authenticate the client first (over HTTP/1.1 the Body is http.NoBody).
func TestEmulation_ReadsAreNotReviewedOverEitherProtocol(t *testing.T) {
	ca := newTestCA(t)
	g := newIdentityRig(t, ca, Options{Rules: Rules{Converter: proxytest.SeedConverter(t)}}, allowUsers(),
		"myapps.example.com/v1beta1/customresources")
	for _, h2 := range []bool{false, true} {
		code, body := g.do(t, nil, h2, http.MethodGet, crPath+"/a", "", "Authorization", "Bearer someone")
		if code != http.StatusOK || !strings.Contains(string(body), `"myapps.example.com/v1alpha1"`) {
			t.Fatalf("h2 %v: got %d %s", h2, code, body)
		}
		seen, _ := g.take()
		for _, s := range seen {
			if strings.HasSuffix(s.path, "/selfsubjectreviews") {
				t.Errorf("h2 %v: a read without a body was reviewed first (%s %s)", h2, s.method, s.path)
			}
		}
	}
}
