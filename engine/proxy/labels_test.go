package proxy

import (
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apiserver/pkg/endpoints/request"

	"github.com/mvpctl/mvpctl/engine/proxy/internal/usage"
)

// seriesOf counts the series of each mvpctl_proxy_* metric family.
func seriesOf(t *testing.T, reg *prometheus.Registry) map[string]int {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]int{}
	for _, mf := range mfs {
		if strings.HasPrefix(mf.GetName(), "mvpctl_proxy_") {
			out[mf.GetName()] = len(mf.GetMetric())
		}
	}
	return out
}

// labelValues lists the values of label in mvpctl_proxy_requests_total.
func labelValues(t *testing.T, reg *prometheus.Registry, label string) map[string]bool {
	t.Helper()
	out := map[string]bool{}
	for k := range requestCounts(t, reg) {
		for _, kv := range strings.Split(k, ",") {
			if name, value, _ := strings.Cut(kv, "="); name == label {
				out[value] = true
			}
		}
	}
	return out
}

// do sends method to url with a bearer token (none if empty) and returns
// the status code.
func doAs(t *testing.T, method, url, token, agent string) int {
	t.Helper()
	req, err := http.NewRequest(method, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	req.Header.Set("User-Agent", agent)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

// Clients without credentials that are refused, and unknown tokens (401),
// are counted in mvpctl_proxy_unauthenticated_requests_total by code
// class, and nowhere else, whatever method and path they invent; a client
// with credentials adds series only within the known verbs, codes,
// resources and subresources.
func TestMetrics_LabelsBounded(t *testing.T) {
	f, _ := usageBackend(t, "v1.36.3", "v1/configmaps", "v1/pods", "v1/pods/status", "policy/v1/poddisruptionbudgets")
	reg := prometheus.NewRegistry()
	_, srv := startProxy(t, Options{Registry: reg, UsageTableSize: 100}, f)
	// A first round of every kind of request makes the series there are.
	round := func(i int) {
		for _, token := range []string{"", "forged", "alice-token"} {
			for _, method := range []string{"GET", fmt.Sprintf("FROB%d", i), "PROPFIND"} {
				for _, path := range []string{
					"/api/v1/namespaces/default/configmaps",
					fmt.Sprintf("/api/v1/namespaces/default/pods/p/sub%d", i),
					fmt.Sprintf("/api/v1/namespaces/default/unique%d", i),
					fmt.Sprintf("/apis/made.up%d/v%d/things", i, i),
					fmt.Sprintf("/apis/policy/v1beta1/namespaces/default/poddisruptionbudgets/x/sub%d", i),
					fmt.Sprintf("/healthz/unique%d", i),
				} {
					doAs(t, method, srv.URL+path, token, fmt.Sprintf("agent-%d", i))
				}
			}
		}
	}
	round(0)
	before := seriesOf(t, reg)
	for i := 1; i <= 20; i++ {
		round(i)
	}
	after := seriesOf(t, reg)
	// A few series may come from the proxy's own state (a request retried
	// on a closed keep-alive connection); none from what clients invent.
	for name, n := range after {
		if n > before[name]+3 {
			t.Errorf("%s: %d series after 20 more rounds, %d after the first", name, n, before[name])
		}
	}
	if after["mvpctl_proxy_unauthenticated_requests_total"] == 0 {
		t.Error("no unauthenticated requests counted")
	}
	for label, allowed := range map[string]func(string) bool{
		"verb":     func(v string) bool { return v == "" || v == otherLabel || knownVerbs[v] },
		"code":     func(v string) bool { return v == otherLabel || http.StatusText(atoi(v)) != "" },
		"resource": func(v string) bool { return !strings.Contains(v, "sub") && !strings.Contains(v, "unique") },
		"group":    func(v string) bool { return !strings.Contains(v, "made.up") },
	} {
		for v := range labelValues(t, reg, label) {
			if !allowed(v) {
				t.Errorf("%s label %q", label, v)
			}
		}
	}
	lists := 0.0
	for k, n := range requestCounts(t, reg) {
		if strings.Contains(k, ",code=200,") && strings.Contains(k, ",resource=configmaps,verb=list,") {
			lists += n
		}
	}
	if lists != 21*2 {
		t.Errorf("anonymous and alice's lists of configmaps: %v, want %d", lists, 21*2)
	}
}

func atoi(s string) int {
	var n int
	fmt.Sscan(s, &n)
	return n
}

// The old-version metric and the table name a subresource only from the
// known set: a removed version's request with an invented subresource
// adds no series and no entry.
func TestUsage_SubresourceBounded(t *testing.T) {
	f, _ := usageBackend(t, "v1.36.3", "policy/v1/poddisruptionbudgets")
	p, srv := startProxy(t, Options{UsageTableSize: 100}, f)
	base := srv.URL + "/apis/policy/v1beta1/namespaces/default/poddisruptionbudgets/x"
	for i := range 20 {
		doAs(t, "GET", fmt.Sprintf("%s/made-up-%d", base, i), "alice-token", "client/1.0")
	}
	doAs(t, "GET", base+"/status", "alice-token", "client/1.0")
	var resources []string
	for _, e := range p.Clients().Clients {
		resources = append(resources, e.Resource)
	}
	slices.Sort(resources)
	if strings.Join(resources, " ") != "poddisruptionbudgets/other poddisruptionbudgets/status" {
		t.Errorf("entries for %v, want poddisruptionbudgets/status and poddisruptionbudgets/other", resources)
	}
	wantMetrics(t, p,
		`mvpctl_proxy_old_version_requests_total{emulated="false",group="policy",resource="poddisruptionbudgets/other",version="v1beta1"} 20`,
		`mvpctl_proxy_old_version_requests_total{emulated="false",group="policy",resource="poddisruptionbudgets/status",version="v1beta1"} 1`)
}

// One user rotating its User-Agent header keeps at most its quota of
// entries and evicts nobody else's; 403s of a version that is served add
// nothing.
func TestUsage_UserAgentRotationKeepsOthers(t *testing.T) {
	f, _ := usageBackend(t, "v1.33.2", "v1/endpoints")
	p, srv := startProxy(t, Options{UsageTableSize: 2 * usage.DefaultPerUser}, f)
	list := srv.URL + "/api/v1/namespaces/default/endpoints"
	if code := doAs(t, "GET", list, "bob-token", "kubectl/v1.20.0"); code != http.StatusOK {
		t.Fatalf("bob: %d", code)
	}
	for i := range 3 * usage.DefaultPerUser {
		doAs(t, "GET", list, "alice-token", fmt.Sprintf("rotating/%d", i))
	}
	byUser := map[string]int{}
	for _, e := range p.Clients().Clients {
		byUser[e.User]++
	}
	if byUser["bob"] != 1 || byUser["alice"] != usage.DefaultPerUser {
		t.Errorf("entries by user %v, want bob 1 and alice %d", byUser, usage.DefaultPerUser)
	}
}

// FuzzCleanVerb: whatever the verb, code or subresource, the label is one
// of the known set.
func FuzzCleanVerb(f *testing.F) {
	for _, s := range []string{"get", "FROBNICATE", "", "watch", "deletecollection", "Get", "\x00", "list\n"} {
		f.Add(s, 200)
	}
	f.Add("status", 599)
	f.Add("exec", -1)
	f.Fuzz(func(t *testing.T, s string, code int) {
		if v := verbLabel(s); v != otherLabel && !knownVerbs[v] {
			t.Fatalf("verbLabel(%q) = %q", s, v)
		}
		if c := codeLabel(code); c != otherLabel && http.StatusText(atoi(c)) == "" {
			t.Fatalf("codeLabel(%d) = %q", code, c)
		}
		if c := codeClass(code); c != otherLabel && (len(c) != 3 || c[0] < '1' || c[0] > '5' || c[1:] != "xx") {
			t.Fatalf("codeClass(%d) = %q", code, c)
		}
		got := subresourceLabel(gvr{"", "v1", "pods"}, s, func(k gvr) bool { return k.resource == "pods/resize" })
		if sub, ok := strings.CutPrefix(got, "pods/"); got != "pods" && (!ok || sub != otherLabel && sub != "resize" && !knownSubresources[sub]) {
			t.Fatalf("subresourceLabel(%q) = %q", s, got)
		}
		if got == "pods" && s != "" {
			t.Fatalf("subresourceLabel(%q) = %q", s, got)
		}
	})
}

// The known verbs are those k8s.io/apiserver's request parsing yields.
func TestVerbLabel(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"get", "get"}, {"list", "list"}, {"watch", "watch"}, {"deletecollection", "deletecollection"},
		{"proxy", "proxy"}, {"post", "post"}, {"options", "options"},
		{strings.ToLower(request.MethodWatchList), "watchlist"},
		{"frobnicate", "other"}, {"GET", "other"}, {"", "other"},
	} {
		if got := verbLabel(tc.in); got != tc.want {
			t.Errorf("verbLabel(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}
