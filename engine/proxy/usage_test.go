package proxy

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	"k8s.io/apimachinery/pkg/util/cache"

	"github.com/mvpctl/mvpctl/engine/proxy/internal/proxytest"
	"github.com/mvpctl/mvpctl/engine/proxy/internal/response"
)

// usageTokens are the bearer tokens the usage tests' backend knows.
var usageTokens = map[string]string{"alice-token": "alice", "bob-token": "bob"}

// usageBackend is a fake kube-apiserver of gitVersion with authentication
// in front of its resources, as kube-apiserver has: an unknown bearer token
// gets 401, no token is anonymous (allowed to read, as some clusters
// allow). It answers SelfSubjectReviews with the token's user, and 403 to
// anonymous clients and to impersonation, which nobody may do here. It
// returns the tokens the reviews came with.
func usageBackend(t *testing.T, gitVersion string, served ...string) (*fakeAPIServer, func() []string) {
	t.Helper()
	f := newFake(t, "a", gitVersion, append([]string{"authentication.k8s.io/v1/selfsubjectreviews"}, served...)...)
	var mu sync.Mutex
	var reviewed []string
	f.setHandler(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		token, hasToken := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
		if r.URL.Path == selfSubjectReviewPath {
			mu.Lock()
			reviewed = append(reviewed, token)
			mu.Unlock()
		}
		name, known := usageTokens[token]
		if hasToken && !known {
			response.WriteStatus(w, http.StatusUnauthorized, "Unauthorized", "Unauthorized", 0)
			return
		}
		if r.URL.Path == selfSubjectReviewPath {
			if !hasToken || r.Header.Get("Impersonate-User") != "" {
				response.WriteStatus(w, http.StatusForbidden, "Forbidden", "forbidden", 0)
				return
			}
			w.WriteHeader(http.StatusCreated)
			json.NewEncoder(w).Encode(authenticationv1.SelfSubjectReview{Status: authenticationv1.SelfSubjectReviewStatus{UserInfo: authenticationv1.UserInfo{Username: name}}})
			return
		}
		if r.Header.Get("Impersonate-User") != "" {
			response.WriteStatus(w, http.StatusForbidden, "Forbidden", "cannot impersonate", 0)
			return
		}
		switch {
		case strings.HasSuffix(r.URL.Path, "/customresources"):
			io.WriteString(w, `{"apiVersion":"myapps.example.com/v1beta1","kind":"CustomresourceList","metadata":{"resourceVersion":"42"},"items":[`+proxytest.ServedObject+`]}`)
		case strings.Contains(r.URL.Path, "/customresources/"):
			io.WriteString(w, proxytest.ServedObject)
		default:
			io.WriteString(w, `{"kind":"EndpointsList","apiVersion":"v1","metadata":{},"items":[]}`)
		}
	})
	return f, func() []string {
		mu.Lock()
		defer mu.Unlock()
		return append([]string(nil), reviewed...)
	}
}

// getAs sends a GET with a bearer token (none if empty), a user agent and
// more headers (name, value pairs), and returns the status code.
func getAs(t *testing.T, url, token, agent string, header ...string) int {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	req.Header.Set("User-Agent", agent)
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode
}

// usageRow is what the tests compare of an entry.
type usageRow struct {
	Version, Resource, User, UserAgent string
	Count, Emulated                    uint64
	Verbs                              map[string]uint64
}

func usageRows(p *Proxy) []usageRow {
	var out []usageRow
	for _, e := range p.Clients().Clients {
		out = append(out, usageRow{e.Group + "/" + e.Version, e.Resource, e.User, e.UserAgent, e.Count, e.Emulated, e.Verbs})
	}
	return out
}

var sortRows = cmpopts.SortSlices(func(a, b usageRow) bool { return a.User+a.UserAgent < b.User+b.UserAgent })

// Requests for an emulated version are counted by the user a backend names
// for the client's token and by user agent. Clients nobody vouches for
// (anonymous, impersonation the backend refuses) are in the metric only, an
// unknown token in the unauthenticated counter only: they cannot fill the
// table with names of their choice.
func TestUsage_EmulatedRequestsByUser(t *testing.T) {
	f, reviewed := usageBackend(t, "v1.36.3", "myapps.example.com/v1beta1/customresources")
	p, srv := startProxy(t, Options{Rules: Rules{Converter: proxytest.SeedConverter(t)}, UsageTableSize: 10}, f)
	list := srv.URL + "/apis/myapps.example.com/v1alpha1/namespaces/ns/customresources"
	for _, c := range []struct {
		token, agent string
		header       []string
		code         int
	}{
		{"alice-token", "old-controller/1.0", nil, http.StatusOK},
		{"alice-token", "old-controller/1.0", nil, http.StatusOK},
		{"bob-token", "kubectl/v1.20.0", nil, http.StatusOK},
		{"", "anonymous-junk-1", nil, http.StatusOK},
		{"forged", "forged-junk", nil, http.StatusUnauthorized},
		{"alice-token", "claims-mallory", []string{"Impersonate-User", "mallory"}, http.StatusForbidden},
	} {
		if code := getAs(t, list, c.token, c.agent, c.header...); code != c.code {
			t.Fatalf("%s as %q: %d, want %d", c.agent, c.token, code, c.code)
		}
	}
	if code := getAs(t, list+"/a", "alice-token", "old-controller/1.0"); code != http.StatusOK {
		t.Fatalf("get: %d", code)
	}
	want := []usageRow{
		{"myapps.example.com/v1alpha1", "customresources", "alice", "old-controller/1.0", 3, 3, map[string]uint64{"list": 2, "get": 1}},
		{"myapps.example.com/v1alpha1", "customresources", "bob", "kubectl/v1.20.0", 1, 1, map[string]uint64{"list": 1}},
	}
	if diff := cmp.Diff(want, usageRows(p), sortRows); diff != "" {
		t.Errorf("/debug/clients (-want +got):\n%s", diff)
	}
	// The unknown token's 401 is counted apart, not as a request for the
	// old version.
	wantMetrics(t, p, oldCRRequests+" 6", `mvpctl_proxy_unauthenticated_requests_total{code="4xx"} 1`)
	for _, tok := range reviewed() {
		if tok == "forged" {
			t.Error("a SelfSubjectReview was sent for a token the backend had refused")
		}
	}
}

// A version counts when the lifecycle table deprecates or removes it in the
// release of the backend that answered: v1 Endpoints from v1.33 on, and
// policy/v1beta1 (removed in v1.25) even when nothing serves it any more.
// Current versions are not counted at all.
func TestUsage_DeprecatedAtTheBackendsRelease(t *testing.T) {
	for _, tc := range []struct {
		name, gitVersion, served, path string
		counted                        bool
	}{
		{"endpoints deprecated", "v1.33.2", "v1/endpoints", "/api/v1/namespaces/default/endpoints", true},
		{"endpoints before their deprecation", "v1.32.9", "v1/endpoints", "/api/v1/namespaces/default/endpoints", false},
		{"removed version", "v1.36.3", "policy/v1/poddisruptionbudgets", "/apis/policy/v1beta1/namespaces/default/poddisruptionbudgets", true},
		{"current version", "v1.36.3", "policy/v1/poddisruptionbudgets", "/apis/policy/v1/namespaces/default/poddisruptionbudgets", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f, _ := usageBackend(t, tc.gitVersion, tc.served)
			p, srv := startProxy(t, Options{UsageTableSize: 10}, f)
			getAs(t, srv.URL+tc.path, "alice-token", "client/1.0")
			rows := usageRows(p)
			if !tc.counted {
				if len(rows) != 0 {
					t.Errorf("counted: %+v", rows)
				}
				return
			}
			parts := strings.Split(strings.TrimPrefix(strings.TrimPrefix(tc.path, "/api/"), "/apis/"), "/")
			gv := strings.Join(parts[:len(parts)-3], "/")
			if gv == "v1" {
				gv = "/v1"
			}
			want := []usageRow{{gv, parts[len(parts)-1], "alice", "client/1.0", 1, 0, map[string]uint64{"list": 1}}}
			if diff := cmp.Diff(want, rows); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

// A verified client certificate names its user; no SelfSubjectReview is
// needed (the rig's backend would answer one with the user "test").
func TestUsage_ClientCertificateUser(t *testing.T) {
	ca := newTestCA(t)
	g := newIdentityRig(t, ca, Options{Rules: Rules{Converter: proxytest.SeedConverter(t)}, UsageTableSize: 10},
		func(a authorizationv1.ResourceAttributes) bool { return a.Resource == "users" && a.Name == "carol" },
		"myapps.example.com/v1beta1/customresources")
	alice := ca.issue(t, "alice", []string{"team-a"}).tls
	path := "/apis/myapps.example.com/v1alpha1/namespaces/ns/customresources/a"
	if code, body := g.do(t, &alice, true, http.MethodGet, path, "", "User-Agent", "cert-client/2.0"); code != http.StatusOK {
		t.Fatalf("%d %s", code, body)
	}
	// alice may impersonate carol: the request ran as carol.
	if code, body := g.do(t, &alice, false, http.MethodGet, path, "", "User-Agent", "cert-client/2.0", "Impersonate-User", "carol"); code != http.StatusOK {
		t.Fatalf("%d %s", code, body)
	}
	want := []usageRow{
		{"myapps.example.com/v1alpha1", "customresources", "alice", "cert-client/2.0", 1, 1, map[string]uint64{"get": 1}},
		{"myapps.example.com/v1alpha1", "customresources", "carol", "cert-client/2.0", 1, 1, map[string]uint64{"get": 1}},
	}
	if diff := cmp.Diff(want, usageRows(g.p), sortRows); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

// With a table size of zero nothing is remembered, and no client is
// reviewed for it; the metric still counts.
func TestUsage_TableOff(t *testing.T) {
	f, reviewed := usageBackend(t, "v1.36.3", "myapps.example.com/v1beta1/customresources")
	p, srv := startProxy(t, Options{Rules: Rules{Converter: proxytest.SeedConverter(t)}}, f)
	getAs(t, srv.URL+"/apis/myapps.example.com/v1alpha1/namespaces/ns/customresources", "alice-token", "x")
	if r := p.Clients(); len(r.Clients) != 0 || r.Capacity != 0 {
		t.Errorf("table off: %+v", r)
	}
	if n := len(reviewed()); n != 0 {
		t.Errorf("%d SelfSubjectReviews with the table off", n)
	}
	wantMetrics(t, p, oldCRRequests+" 1")
}

// /debug/clients off loopback is protected like the other debug endpoints:
// 401 without credentials, 403 for users the cluster does not allow (also
// one allowed /metrics only), the table for an allowed user.
func TestClientsHandler_AccessControl(t *testing.T) {
	f, _ := usageBackend(t, "v1.36.3", "myapps.example.com/v1beta1/customresources")
	p, srv := startProxy(t, Options{Rules: Rules{Converter: proxytest.SeedConverter(t)}, UsageTableSize: 10}, f)
	getAs(t, srv.URL+"/apis/myapps.example.com/v1alpha1/namespaces/ns/customresources", "alice-token", "old/1.0")

	rev := startFakeReviewer(t)
	ca := newTestCA(t)
	files := writeCertFiles(t, ca, ca)
	mux := http.NewServeMux()
	mux.Handle("/metrics", p.MetricsHandler())
	mux.Handle("/debug/clients", p.ClientsHandler())
	s, err := newMetricsServer(mux, MetricsServeOptions{
		Listen: "127.0.0.1:0", CertFile: files.cert, KeyFile: files.key, ClientCAFile: files.ca, Auth: rev.config(),
	}, true)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { s.Serve(ctx); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
	url := "https://" + s.Addr().String() + "/debug/clients"
	c := clientWith(nil)
	t.Cleanup(c.CloseIdleConnections)

	code, _, body := proxytest.Do(t, c, proxytest.NewRequest(t, http.MethodGet, url, "", "Authorization", bearerToken("")))
	wantStatus(t, http.StatusUnauthorized, code, body)
	code, _, body = proxytest.Do(t, c, proxytest.NewRequest(t, http.MethodGet, url, "", "Authorization", bearerToken("stranger")))
	wantStatus(t, http.StatusForbidden, code, body)
	code, _, body = proxytest.Do(t, c, proxytest.NewRequest(t, http.MethodGet, url, "", "Authorization", bearerToken("reader"))) // may get /metrics only
	wantStatus(t, http.StatusForbidden, code, body)

	admin := ca.issue(t, "operator", []string{"system:masters"}).tls
	ac := clientWith(&admin)
	t.Cleanup(ac.CloseIdleConnections)
	code, _, body = proxytest.Do(t, ac, proxytest.NewRequest(t, http.MethodGet, url, "", "Authorization", bearerToken("")))
	var report ClientsReport
	if err := json.Unmarshal(body, &report); code != http.StatusOK || err != nil {
		t.Fatalf("%d %s (%v)", code, body, err)
	}
	if len(report.Clients) != 1 || report.Clients[0].User != "alice" || report.Capacity != 10 {
		t.Errorf("report: %s", body)
	}
}

// The table's metrics are on /metrics, the evictions counted.
func TestUsage_Metrics(t *testing.T) {
	f, _ := usageBackend(t, "v1.36.3", "myapps.example.com/v1beta1/customresources")
	p, srv := startProxy(t, Options{Rules: Rules{Converter: proxytest.SeedConverter(t)}, UsageTableSize: 1}, f)
	list := srv.URL + "/apis/myapps.example.com/v1alpha1/namespaces/ns/customresources"
	for _, agent := range []string{"a", "b", "c"} {
		getAs(t, list, "alice-token", agent)
	}
	wantMetrics(t, p, oldCRRequests+" 3", "mvpctl_proxy_usage_table_evictions_total 2", "mvpctl_proxy_usage_table_entries 1")
	if r := p.Clients(); r.Evicted != 2 || len(r.Clients) != 1 || r.Clients[0].UserAgent != "c" {
		t.Errorf("report %+v", r)
	}
}

const oldCRRequests = `mvpctl_proxy_old_version_requests_total{emulated="true",group="myapps.example.com",resource="customresources",version="v1alpha1"}`

// wantMetrics fails unless /metrics has each line.
func wantMetrics(t *testing.T, p *Proxy, lines ...string) {
	t.Helper()
	rec := httptest.NewRecorder()
	p.MetricsHandler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	for _, want := range lines {
		if !strings.Contains(rec.Body.String(), want+"\n") {
			t.Errorf("/metrics lacks %s", want)
		}
	}
}

// frozenClock never moves: what a cache remembers stays.
type frozenClock struct{ t time.Time }

func (c frozenClock) Now() time.Time { return c.t }

// A server without SelfSubjectReviews (Kubernetes before 1.28) names no
// token client: the client is asked about once, not on every request, and
// is in the metric only.
func TestUsage_ServerWithoutSelfSubjectReviews(t *testing.T) {
	f := newFake(t, "a", "v1.27.3", "authentication.k8s.io/v1/selfsubjectreviews", "v1/componentstatuses")
	var mu sync.Mutex
	reviews := 0
	f.setHandler(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == selfSubjectReviewPath {
			mu.Lock()
			reviews++
			mu.Unlock()
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"kind":"ComponentStatusList","apiVersion":"v1","metadata":{},"items":[]}`)
	})
	p, srv := startProxy(t, Options{UsageTableSize: 10}, f)
	p.metrics.usage.unnamed = cache.NewLRUExpireCacheWithClock(maxEstablished, frozenClock{time.Now()})
	// v1 ComponentStatus has been deprecated since v1.19.
	for range 3 {
		if code := getAs(t, srv.URL+"/api/v1/componentstatuses", "alice-token", "old/1.0"); code != http.StatusOK {
			t.Fatalf("code %d", code)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if reviews != 1 {
		t.Errorf("%d SelfSubjectReviews for 3 requests of one client, want 1", reviews)
	}
	if rows := usageRows(p); len(rows) != 0 {
		t.Errorf("recorded without a user: %+v", rows)
	}
	wantMetrics(t, p, `mvpctl_proxy_old_version_requests_total{emulated="false",group="",resource="componentstatuses",version="v1"} 3`)
}
