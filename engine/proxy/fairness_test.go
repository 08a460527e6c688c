package proxy

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	authorizationv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/mvpctl/mvpctl/engine/proxy/internal/proxytest"
)

// blockingFake is a fake whose ConfigMap requests named "block" and whose
// watches stay open until release is closed (or the request ends).
func blockingFake(t *testing.T) (*fakeAPIServer, func()) {
	t.Helper()
	f := newFake(t, "a", "v1.36.3", "v1/configmaps")
	release := make(chan struct{})
	var once sync.Once
	f.setHandler(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasSuffix(r.URL.Path, "/block") || r.URL.Query().Get("watch") == "true" {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusOK)
			http.NewResponseController(w).Flush()
			select {
			case <-release:
			case <-r.Context().Done():
			}
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"kind":"ConfigMap","apiVersion":"v1"}`))
	})
	stop := func() { once.Do(func() { close(release) }) }
	t.Cleanup(stop)
	return f, stop
}

// open sends req and returns its response once the headers arrived; the
// body stays open until the test ends.
func open(t *testing.T, req *http.Request) *http.Response {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	resp, err := http.DefaultClient.Do(req.WithContext(ctx))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	return resp
}

func bearer(token string) []string { return []string{"Authorization", "Bearer " + token} }

// wantTooMany checks a 429 as kube-apiserver's priority and fairness
// answers it: a TooManyRequests Status and Retry-After.
func wantTooMany(t *testing.T, what string, code int, hdr http.Header, body []byte) {
	t.Helper()
	var st metav1.Status
	if code != http.StatusTooManyRequests || hdr.Get("Retry-After") == "" || json.Unmarshal(body, &st) != nil || st.Reason != metav1.StatusReasonTooManyRequests {
		t.Errorf("%s: %d (Retry-After %q) %s; want 429 TooManyRequests with Retry-After", what, code, hdr.Get("Retry-After"), body)
	}
}

func (f *fairShare) queued(user string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	if s := f.users[user]; s != nil {
		return s.queue.Len()
	}
	return 0
}

func (f *fairShare) tracked() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.users)
}

// A user's requests past its in-flight slots queue behind its own, past the
// queue get 429 with Retry-After; another user's requests are answered
// meanwhile, and the queued one runs once a slot frees.
func TestFairShare_InFlightAndQueue(t *testing.T) {
	f, release := blockingFake(t)
	p, srv := startProxy(t, Options{Fairness: FairnessOptions{MaxInFlightPerUser: 2, MaxQueuedPerUser: 1, QueueWait: time.Hour}}, f)
	block := srv.URL + cmPath + "/block"
	for range 2 {
		if resp := open(t, proxytest.NewRequest(t, http.MethodGet, block, "", bearer("alice")...)); resp.StatusCode != http.StatusOK {
			t.Fatalf("in flight: %d", resp.StatusCode)
		}
	}
	alice := p.fair.userKey("", http.Header{"Authorization": {"Bearer alice"}})
	queued := make(chan int, 1)
	go func() {
		resp, err := http.DefaultClient.Do(proxytest.NewRequest(t, http.MethodGet, srv.URL+cmPath+"/a", "", bearer("alice")...))
		if err != nil {
			queued <- 0
			return
		}
		resp.Body.Close()
		queued <- resp.StatusCode
	}()
	proxytest.Poll(t, "a queued request", func() bool { return p.fair.queued(alice) == 1 })

	code, hdr, body := proxytest.Do(t, nil, proxytest.NewRequest(t, http.MethodGet, srv.URL+cmPath+"/a", "", bearer("alice")...))
	wantTooMany(t, "past the queue", code, hdr, body)
	// Other users, and anonymous requests, do not wait behind alice.
	for _, h := range [][]string{bearer("bob"), nil} {
		if code, _, body := proxytest.Do(t, nil, proxytest.NewRequest(t, http.MethodGet, srv.URL+cmPath+"/a", "", h...)); code != http.StatusOK {
			t.Errorf("another user (%v): %d %s", h, code, body)
		}
	}
	if got := proxytest.Counter(t, p.opts.Registry, "mvpctl_proxy_fair_share_rejections_total", map[string]string{"reason": rejectQueueFull}); got != 1 {
		t.Errorf("queue-full rejections = %v, want 1", got)
	}
	release()
	if code := <-queued; code != http.StatusOK {
		t.Errorf("the queued request: %d, want 200 once a slot freed", code)
	}
	proxytest.Poll(t, "the table emptied", func() bool { return p.fair.tracked() == 0 })
}

// A queued request waits at most QueueWait.
func TestFairShare_QueueWait(t *testing.T) {
	f, _ := blockingFake(t)
	p, srv := startProxy(t, Options{Fairness: FairnessOptions{MaxInFlightPerUser: 1, QueueWait: 50 * time.Millisecond}}, f)
	open(t, proxytest.NewRequest(t, http.MethodGet, srv.URL+cmPath+"/block", "", bearer("alice")...))
	code, hdr, body := proxytest.Do(t, nil, proxytest.NewRequest(t, http.MethodGet, srv.URL+cmPath+"/a", "", bearer("alice")...))
	wantTooMany(t, "after the queue wait", code, hdr, body)
	if got := proxytest.Counter(t, p.opts.Registry, "mvpctl_proxy_fair_share_rejections_total", map[string]string{"reason": rejectQueueWait}); got != 1 {
		t.Errorf("queue-timeout rejections = %v, want 1", got)
	}
}

// A user's long-running requests are bounded apart from its short ones;
// another user's watch and a short request of the same user still go.
func TestFairShare_LongRunning(t *testing.T) {
	f, _ := blockingFake(t)
	p, srv := startProxy(t, Options{Fairness: FairnessOptions{MaxLongRunningPerUser: 2}}, f)
	watch := srv.URL + cmPath + "?watch=true"
	for range 2 {
		if resp := open(t, proxytest.NewRequest(t, http.MethodGet, watch, "", bearer("alice")...)); resp.StatusCode != http.StatusOK {
			t.Fatalf("watch: %d", resp.StatusCode)
		}
	}
	code, hdr, body := proxytest.Do(t, nil, proxytest.NewRequest(t, http.MethodGet, watch, "", bearer("alice")...))
	wantTooMany(t, "a third watch", code, hdr, body)
	if resp := open(t, proxytest.NewRequest(t, http.MethodGet, watch, "", bearer("bob")...)); resp.StatusCode != http.StatusOK {
		t.Errorf("another user's watch: %d", resp.StatusCode)
	}
	if code, _, body := proxytest.Do(t, nil, proxytest.NewRequest(t, http.MethodGet, srv.URL+cmPath+"/a", "", bearer("alice")...)); code != http.StatusOK {
		t.Errorf("a GET of the user with its watches open: %d %s", code, body)
	}
	if got := proxytest.Counter(t, p.opts.Registry, "mvpctl_proxy_fair_share_rejections_total", map[string]string{"reason": rejectLongRunning}); got != 1 {
		t.Errorf("long-running rejections = %v, want 1", got)
	}
}

// The table of users holds only users with requests open: past its size a
// new user gets 429; once the others' requests end, it is served.
func TestFairShare_TrackedUsers(t *testing.T) {
	f, release := blockingFake(t)
	p, srv := startProxy(t, Options{Fairness: FairnessOptions{MaxTrackedUsers: 1}}, f)
	open(t, proxytest.NewRequest(t, http.MethodGet, srv.URL+cmPath+"/block", "", bearer("alice")...))
	code, hdr, body := proxytest.Do(t, nil, proxytest.NewRequest(t, http.MethodGet, srv.URL+cmPath+"/a", "", bearer("bob")...))
	wantTooMany(t, "a second user", code, hdr, body)
	if got := proxytest.Counter(t, p.opts.Registry, "mvpctl_proxy_fair_share_rejections_total", map[string]string{"reason": rejectUsers}); got != 1 {
		t.Errorf("tracked-users rejections = %v, want 1", got)
	}
	release()
	proxytest.Poll(t, "alice forgotten", func() bool { return p.fair.tracked() == 0 })
	if code, _, body := proxytest.Do(t, nil, proxytest.NewRequest(t, http.MethodGet, srv.URL+cmPath+"/a", "", bearer("bob")...)); code != http.StatusOK {
		t.Errorf("bob after alice's requests ended: %d %s", code, body)
	}
}

// Users are told apart by certificate user, by token (never kept in
// clear), and all anonymous requests are one.
func TestFairShare_UserKey(t *testing.T) {
	f, err := newFairShare(FairnessOptions{}, prometheus.NewRegistry())
	if err != nil {
		t.Fatal(err)
	}
	a := f.userKey("", http.Header{"Authorization": {"Bearer secret-a"}})
	b := f.userKey("", http.Header{"Authorization": {"Bearer secret-b"}})
	ws := f.userKey("", http.Header{"Sec-Websocket-Protocol": {"v5.channel.k8s.io, " + webSocketBearerPrefix + "c2VjcmV0"}})
	for _, k := range []string{a, b, ws} {
		if strings.Contains(k, "secret") || !strings.HasPrefix(k, "token:") {
			t.Errorf("token key %q", k)
		}
	}
	if a == b || a == ws {
		t.Error("two tokens share a key")
	}
	if got := f.userKey("", http.Header{"Sec-Websocket-Protocol": {"v5.channel.k8s.io"}}); got != "anonymous" {
		t.Errorf("no credentials: %q", got)
	}
	if got := f.userKey("mallory", http.Header{"Authorization": {"Bearer x"}}); got != "user:mallory" {
		t.Errorf("a certificate user: %q", got)
	}
}

// The proxy's own requests (probes, discovery) have their own pool: with
// every client connection in use, /readyz of the backend is still
// probed, the backend stays ready, and a client request past the budget
// gets 503 with Retry-After after a bounded wait, without taking the
// backend out of rotation.
func TestUpstream_OwnTrafficApartFromClients(t *testing.T) {
	f, _ := blockingFake(t)
	p, srv := startProxy(t, Options{MaxUpstreamConnsPerBackend: 1, UpstreamConnWait: 50 * time.Millisecond, RetryAfterSeconds: 1}, f)
	// The fake speaks HTTP/1.1: the request holds the pool's only connection.
	open(t, proxytest.NewRequest(t, http.MethodGet, srv.URL+cmPath+"/block", "", bearer("alice")...))
	b := p.list()[0]
	proxytest.Poll(t, "the client connection counted", func() bool {
		return upstreamConns(t, p, map[string]string{"backend": "a", "pool": poolClient}) == 1
	})
	code, hdr, body := proxytest.Do(t, nil, proxytest.NewRequest(t, http.MethodGet, srv.URL+cmPath+"/a", "", bearer("bob")...))
	if code != http.StatusServiceUnavailable || hdr.Get("Retry-After") != "1" || !strings.Contains(string(body), "all in use") {
		t.Errorf("past the budget: %d (Retry-After %q) %s; want 503 with Retry-After", code, hdr.Get("Retry-After"), body)
	}
	if !b.snapshot().ready {
		t.Errorf("the backend was taken out of rotation: %s", b.snapshot().lastError)
	}
	if err := b.readyz(t.Context()); err != nil {
		t.Errorf("the proxy's own probe: %v", err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	p.probe(ctx, b)
	if st := b.snapshot(); !st.ready {
		t.Errorf("after a probe: not ready: %s", st.lastError)
	}
	code, _, body = proxytest.Do(t, nil, proxytest.NewRequest(t, http.MethodGet, srv.URL+"/readyz", ""))
	if code != http.StatusOK {
		t.Errorf("/readyz = %d %s", code, body)
	}
}

// Upstream speaks HTTP/2 to a backend that offers it: many watches share
// one connection, and an upgrade goes over HTTP/1.1 (on a connection of
// the same pool's budget).
func TestUpstream_HTTP2(t *testing.T) {
	f := &fakeAPIServer{name: "h2", gitVersion: "v1.36.3", served: []string{"v1/configmaps", "v1/pods/exec"}, requests: make(chan *http.Request, 100)}
	protos := make(chan string, 100)
	release := make(chan struct{})
	f.setHandler(func(w http.ResponseWriter, r *http.Request) {
		protos <- r.Proto
		if r.Header.Get("Upgrade") != "" {
			w.WriteHeader(http.StatusBadRequest) // the proto is what is checked
			return
		}
		w.WriteHeader(http.StatusOK)
		http.NewResponseController(w).Flush()
		select {
		case <-release:
		case <-r.Context().Done():
		}
	})
	f.srv = httptest.NewUnstartedServer(f)
	f.srv.EnableHTTP2 = true
	f.srv.StartTLS()
	t.Cleanup(f.srv.Close)
	t.Cleanup(func() { close(release) })
	u, err := url.Parse(f.srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	roots.AddCert(f.srv.Certificate())
	p, err := New(Options{Backends: []Backend{{Name: "h2", URL: u, TLS: &tls.Config{RootCAs: roots}}}, HealthInterval: 20 * time.Millisecond, MaxUpstreamConnsPerBackend: 2})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	p.Run(ctx)
	if err := p.WaitReady(ctx); err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(p)
	t.Cleanup(srv.Close)

	const watches = 20
	for range watches {
		if resp := open(t, proxytest.NewRequest(t, http.MethodGet, srv.URL+cmPath+"?watch=true", "", bearer("alice")...)); resp.StatusCode != http.StatusOK {
			t.Fatalf("watch: %d", resp.StatusCode)
		}
		if proto := <-protos; proto != "HTTP/2.0" {
			t.Errorf("a watch went upstream over %s", proto)
		}
	}
	if got := upstreamConns(t, p, map[string]string{"backend": "h2", "pool": poolClient}); got != 1 {
		t.Errorf("%d watches over %v client connections, want 1", watches, got)
	}
	req := proxytest.NewRequest(t, http.MethodPost, srv.URL+"/api/v1/namespaces/default/pods/p/exec?command=true", "",
		"Connection", "Upgrade", "Upgrade", "SPDY/3.1")
	resp, err := http.DefaultClient.Do(req)
	if err == nil {
		resp.Body.Close()
	}
	if proto := <-protos; proto != "HTTP/1.1" {
		t.Errorf("an upgrade went upstream over %s, want HTTP/1.1", proto)
	}
}

// upstreamConns is the mvpctl_proxy_upstream_connections gauge with
// exactly these labels.
func upstreamConns(t *testing.T, p *Proxy, labels map[string]string) float64 {
	t.Helper()
	mfs, err := p.opts.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != "mvpctl_proxy_upstream_connections" {
			continue
		}
	metrics:
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if labels[l.GetName()] != l.GetValue() {
					continue metrics
				}
			}
			return m.GetGauge().GetValue()
		}
	}
	return -1
}

// A certificate user's impersonation checks (SubjectAccessReviews, made
// with the proxy's identity) happen within the user's share: past it the
// request gets 429 before any review is asked for, and another user is
// served meanwhile.
func TestFairShare_ImpersonationChecksWithinTheShare(t *testing.T) {
	ca := newTestCA(t)
	var reviews atomic.Int64
	entered, release := make(chan struct{}, 10), make(chan struct{})
	t.Cleanup(func() { close(release) })
	proxyURL, _, _ := startTLSProxyWith(t, ca, func(authorizationv1.ResourceAttributes) bool {
		reviews.Add(1)
		entered <- struct{}{}
		<-release
		return true
	}, Options{Fairness: FairnessOptions{MaxInFlightPerUser: 1, MaxQueuedPerUser: -1}}, ServeOptions{})
	alice, bob := ca.issue(t, "alice", nil).tls, ca.issue(t, "bob", nil).tls
	first := make(chan int, 1)
	go func() {
		resp, err := clientWith(&alice).Do(proxytest.NewRequest(t, http.MethodGet, proxyURL+cmPath+"/x", "", "Impersonate-User", "carol"))
		if err != nil {
			first <- 0
			return
		}
		resp.Body.Close()
		first <- resp.StatusCode
	}()
	<-entered // alice's first request waits for its review
	code, hdr, body := proxytest.Do(t, clientWith(&alice), proxytest.NewRequest(t, http.MethodGet, proxyURL+cmPath+"/x", "", "Impersonate-User", "carol"))
	wantTooMany(t, "alice's second request", code, hdr, body)
	if n := reviews.Load(); n != 1 {
		t.Errorf("%d reviews were asked for; want 1 (the refused request's none)", n)
	}
	if code, _, body := proxytest.Do(t, clientWith(&bob), proxytest.NewRequest(t, http.MethodGet, proxyURL+cmPath+"/x", "")); code != http.StatusOK {
		t.Errorf("bob meanwhile: %d %s", code, body)
	}
	release <- struct{}{}
	if code := <-first; code != http.StatusOK {
		t.Errorf("alice's first request: %d", code)
	}
}

// A user holds at most onBehalfPerUser of a backend's slots for the proxy's
// own requests it causes; the others stay for other users.
func TestOnBehalf_OneUserCannotHoldEverySlot(t *testing.T) {
	b := &backend{behalf: make(chan struct{}, onBehalfPerBackend)}
	mallory := context.WithValue(t.Context(), shareKey{}, &share{behalf: make(chan struct{}, onBehalfPerUser)})
	release, err := b.onBehalf(mallory)
	if err != nil {
		t.Fatal(err)
	}
	// Her next one waits for her own slot, not for the backend's.
	ctx, cancel := context.WithCancel(mallory)
	cancel()
	if _, err := b.onBehalf(ctx); err == nil {
		t.Fatal("a second concurrent request of the same user got a slot")
	}
	if n := len(b.behalf); n != 1 {
		t.Errorf("backend slots in use after her refused request: %d, want 1", n)
	}
	for i := range onBehalfPerBackend - 1 {
		other := context.WithValue(t.Context(), shareKey{}, &share{behalf: make(chan struct{}, onBehalfPerUser)})
		if _, err := b.onBehalf(other); err != nil {
			t.Fatalf("user %d: %v", i, err)
		}
	}
	release()
	if _, err := b.onBehalf(mallory); err != nil {
		t.Fatalf("after her release: %v", err)
	}
}
