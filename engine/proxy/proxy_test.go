package proxy

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/mvpctl/mvpctl/engine/proxy/internal/proxytest"
	"github.com/mvpctl/mvpctl/rules"
)

const (
	mapPath = "/apis/admissionregistration.k8s.io/v1/mutatingadmissionpolicies"
	cmPath  = "/api/v1/namespaces/default/configmaps"
)

func TestProxy_RoutesOnlyToBackendsServingTheGVR(t *testing.T) {
	old := newFake(t, "old", "v1.35.4", "v1/configmaps")
	neu := newFake(t, "new", "v1.36.3", "v1/configmaps", "admissionregistration.k8s.io/v1/mutatingadmissionpolicies")
	_, srv := startProxy(t, Options{}, old, neu)

	for range 20 {
		code, _, body := proxytest.Do(t, nil, proxytest.NewRequest(t, http.MethodGet, srv.URL+mapPath, ""))
		if code != http.StatusOK || answeredBy(t, body) != "new" {
			t.Fatalf("GET mutatingadmissionpolicies = %d %s, want 200 from new", code, body)
		}
	}
	if n := old.hits.Load(); n != 0 {
		t.Errorf("old got %d requests for a resource it does not serve", n)
	}
	seen := map[string]bool{}
	for range 20 {
		_, _, body := proxytest.Do(t, nil, proxytest.NewRequest(t, http.MethodGet, srv.URL+cmPath, ""))
		seen[answeredBy(t, body)] = true
	}
	if !seen["old"] || !seen["new"] {
		t.Errorf("configmaps went only to %v, want both backends", seen)
	}
}

func TestProxy_UnavailableIs503NotFalse404(t *testing.T) {
	old := newFake(t, "old", "v1.35.4", "v1/configmaps")
	neu := newFake(t, "new", "v1.36.3", "v1/configmaps", "admissionregistration.k8s.io/v1/mutatingadmissionpolicies")
	p, srv := startProxy(t, Options{}, old, neu)

	neu.notReady.Store(true)
	proxytest.Poll(t, "new not ready", func() bool { return !p.list()[1].snapshot().ready })

	code, hdr, body := proxytest.Do(t, nil, proxytest.NewRequest(t, http.MethodGet, srv.URL+mapPath+"/x", ""))
	if code != http.StatusServiceUnavailable {
		t.Fatalf("code = %d, want 503; body %s", code, body)
	}
	if hdr.Get("Retry-After") != "1" {
		t.Errorf("Retry-After = %q, want 1", hdr.Get("Retry-After"))
	}
	var st metav1.Status
	if err := json.Unmarshal(body, &st); err != nil || st.Kind != "Status" || st.Reason != metav1.StatusReasonServiceUnavailable || st.Code != 503 {
		t.Errorf("body is not a 503 Status: %s (%v)", body, err)
	}
	if old.hits.Load() != 0 {
		t.Error("the request went to a backend that does not serve it")
	}
	// Resources the ready backend serves still work.
	if code, _, body := proxytest.Do(t, nil, proxytest.NewRequest(t, http.MethodGet, srv.URL+cmPath, "")); code != 200 || answeredBy(t, body) != "old" {
		t.Errorf("configmaps = %d %s, want 200 from old", code, body)
	}
}

func TestProxy_RetriesRefusedConnectionOnAnotherBackend(t *testing.T) {
	gone := newFake(t, "gone", "v1.36.3", "v1/configmaps")
	alive := newFake(t, "alive", "v1.35.4", "v1/configmaps")
	// Prefer the backend that will refuse, so it is the first candidate.
	p, srv := startProxy(t, Options{
		HealthInterval: 1e9 * 3600,
		Rules:          Rules{Routing: []rules.RoutingRule{{APIGroup: "", Resource: "configmaps", PreferAPIServerVersion: "v1.36.y"}}},
	}, gone, alive)
	gone.srv.Close() // the port now refuses connections; the proxy has not noticed yet

	code, _, body := proxytest.Do(t, nil, proxytest.NewRequest(t, http.MethodPost, srv.URL+cmPath, `{"kind":"ConfigMap"}`))
	if code != http.StatusOK {
		t.Fatalf("POST = %d %s, want 200", code, body)
	}
	var e echo
	if err := json.Unmarshal(body, &e); err != nil {
		t.Fatalf("%v: %s", err, body)
	}
	if e.Backend != "alive" || e.Body != `{"kind":"ConfigMap"}` {
		t.Errorf("POST answered by %q with body %q, want alive with the original body", e.Backend, e.Body)
	}
	if p.list()[0].snapshot().ready {
		t.Error("the refusing backend is still marked ready")
	}
	if got := counterValue(t, p, "decision", "retried"); got != 1 {
		t.Errorf("retried requests = %v, want 1", got)
	}
}

func TestProxy_RetriesStreamedBodyNotYetRead(t *testing.T) {
	gone := newFake(t, "gone", "v1.36.3", "v1/configmaps")
	alive := newFake(t, "alive", "v1.35.4", "v1/configmaps")
	_, srv := startProxy(t, Options{
		HealthInterval: 1e9 * 3600,
		Rules:          Rules{Routing: []rules.RoutingRule{{Resource: "*", PreferAPIServerVersion: ">=1.36"}}},
	}, gone, alive)
	gone.srv.Close()

	// Larger than what the proxy keeps in memory: the body streams, and the
	// retry is possible because the refused attempt read none of it.
	big := `{"kind":"ConfigMap","data":{"a":"` + strings.Repeat("x", replayLimit+512) + `"}}`
	code, _, body := proxytest.Do(t, nil, proxytest.NewRequest(t, http.MethodPut, srv.URL+cmPath+"/a", big))
	var e echo
	if err := json.Unmarshal(body, &e); err != nil {
		t.Fatalf("%v: %s", err, body)
	}
	if code != 200 || e.Backend != "alive" || e.Body != big {
		t.Errorf("PUT = %d from %q with %d body bytes, want 200 from alive with %d: %.300s", code, e.Backend, len(e.Body), len(big), body)
	}
}

func TestProxy_RoutingRulePrefersServerVersion(t *testing.T) {
	old := newFake(t, "old", "v1.35.4", "apps/v1/deployments")
	neu := newFake(t, "new", "v1.36.3", "apps/v1/deployments")
	_, srv := startProxy(t, Options{Rules: Rules{Routing: []rules.RoutingRule{
		{APIGroup: "apps", Resource: "deployments", ClientVersion: "v1", PreferAPIServerVersion: "v1.36.y"},
	}}}, old, neu)
	for range 20 {
		_, _, body := proxytest.Do(t, nil, proxytest.NewRequest(t, http.MethodGet, srv.URL+"/apis/apps/v1/namespaces/x/deployments", ""))
		if b := answeredBy(t, body); b != "new" {
			t.Fatalf("answered by %s, want new (preferred)", b)
		}
	}
	neu.notReady.Store(true)
	proxytest.Poll(t, "the preferred backend falls back", func() bool {
		_, _, body := proxytest.Do(t, nil, proxytest.NewRequest(t, http.MethodGet, srv.URL+"/apis/apps/v1/namespaces/x/deployments", ""))
		return answeredBy(t, body) == "old"
	})
}

func TestProxy_LeastOutstandingAmongEquals(t *testing.T) {
	a := newFake(t, "a", "v1.35.4", "v1/configmaps")
	b := newFake(t, "b", "v1.35.4", "v1/configmaps")
	release := make(chan struct{})
	block := func(name string) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			if strings.HasSuffix(r.URL.Path, "/slow") {
				<-release
			}
			w.Header().Set("Content-Type", "application/json")
			json.NewEncoder(w).Encode(map[string]string{"backend": name})
		}
	}
	a.setHandler(block("a"))
	b.setHandler(block("b"))
	p, srv := startProxy(t, Options{}, a, b)

	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		proxytest.Do(t, nil, proxytest.NewRequest(t, http.MethodGet, srv.URL+cmPath+"/slow", ""))
	}()
	proxytest.Poll(t, "the slow request in flight", func() bool { return p.list()[0].outstanding.Load()+p.list()[1].outstanding.Load() == 1 })
	busy := "a"
	if p.list()[1].outstanding.Load() == 1 {
		busy = "b"
	}
	for range 10 {
		_, _, body := proxytest.Do(t, nil, proxytest.NewRequest(t, http.MethodGet, srv.URL+cmPath+"/fast", ""))
		if answeredBy(t, body) == busy {
			t.Fatalf("a request went to %s, which has one outstanding, while the other had none", busy)
		}
	}
	close(release)
	wg.Wait()
}

func TestProxy_UnknownResourceGoesToAnyReadyBackend(t *testing.T) {
	a := newFake(t, "a", "v1.35.4", "v1/configmaps")
	_, srv := startProxy(t, Options{}, a)
	// A CRD created a moment ago: the server serves it, discovery was read before.
	a.setServed("v1/configmaps", "example.com/v1/widgets")
	code, _, body := proxytest.Do(t, nil, proxytest.NewRequest(t, http.MethodGet, srv.URL+"/apis/example.com/v1/widgets", ""))
	if code != 200 || answeredBy(t, body) != "a" {
		t.Errorf("GET widgets = %d %s, want 200 from a", code, body)
	}
}

func TestProxy_RouteNotFoundRefreshesAndRetries(t *testing.T) {
	stale := newFake(t, "stale", "v1.35.4", "v1/configmaps", "example.com/v1/widgets")
	fresh := newFake(t, "fresh", "v1.35.4", "v1/configmaps", "example.com/v1/widgets")
	p, srv := startProxy(t, Options{HealthInterval: 1e9 * 3600, RefreshInterval: 1e9 * 3600}, stale, fresh)
	stale.setServed("v1/configmaps") // the CRD's version went away on this server only

	for range 10 {
		code, _, body := proxytest.Do(t, nil, proxytest.NewRequest(t, http.MethodGet, srv.URL+"/apis/example.com/v1/widgets", ""))
		if code != 200 || answeredBy(t, body) != "fresh" {
			t.Fatalf("GET widgets = %d %s, want 200 from fresh", code, body)
		}
	}
	proxytest.Poll(t, "stale's map refreshed", func() bool {
		return !p.list()[0].snapshot().caps.serves(gvr{"example.com", "v1", "widgets"})
	})
}

func TestProxy_LegacyDiscoveryFallback(t *testing.T) {
	legacy := newFake(t, "legacy", "v1.26.0", "v1/configmaps", "v1/pods", "v1/pods/log", "batch/v1/jobs")
	legacy.legacyOnly = true
	p, srv := startProxy(t, Options{}, legacy)
	st := p.Capabilities().Backends[0]
	if st.AggregatedDiscovery {
		t.Error("aggregatedDiscovery = true for a legacy-only server")
	}
	want := []string{"batch/v1/jobs", "v1/configmaps", "v1/pods/log"}
	for _, w := range want {
		found := false
		for _, s := range st.Serves {
			found = found || s == w
		}
		if !found {
			t.Errorf("capabilities %v lack %s", st.Serves, w)
		}
	}
	if code, _, _ := proxytest.Do(t, nil, proxytest.NewRequest(t, http.MethodGet, srv.URL+"/apis/batch/v1/namespaces/x/jobs", "")); code != 200 {
		t.Errorf("GET jobs = %d", code)
	}
}

func TestProxy_BodyOverLimitIs413(t *testing.T) {
	a := newFake(t, "a", "v1.35.4", "v1/configmaps")
	_, srv := startProxy(t, Options{MaxRequestBodyBytes: 1024}, a)
	big := strings.Repeat("x", 2048)
	if code, _, body := proxytest.Do(t, nil, proxytest.NewRequest(t, http.MethodPost, srv.URL+cmPath, big)); code != http.StatusRequestEntityTooLarge {
		t.Errorf("POST with Content-Length 2048 = %d %s, want 413", code, body)
	}
	req, err := http.NewRequest(http.MethodPost, srv.URL+cmPath, io.MultiReader(strings.NewReader(big)))
	if err != nil {
		t.Fatal(err)
	}
	if code, _, body := proxytest.Do(t, nil, req); code != http.StatusRequestEntityTooLarge {
		t.Errorf("chunked POST of 2048 bytes = %d %s, want 413", code, body)
	}
	if a.hits.Load() != 0 {
		t.Errorf("the backend got %d oversized requests", a.hits.Load())
	}
}

func TestProxy_PassesBytesThroughUnchanged(t *testing.T) {
	a := newFake(t, "a", "v1.35.4", "v1/configmaps")
	payload := []byte("k8s\x00\n\x0c\n\x02v1\x12\x06Status\x12\x00\x1a\x00\"\x00\xff\xfe")
	var got []byte
	var gotHeader http.Header
	a.setHandler(func(w http.ResponseWriter, r *http.Request) {
		got, _ = io.ReadAll(r.Body)
		gotHeader = r.Header.Clone()
		w.Header().Set("Content-Type", "application/vnd.kubernetes.protobuf")
		w.Write(payload)
	})
	_, srv := startProxy(t, Options{}, a)
	req, err := http.NewRequest(http.MethodPost, srv.URL+cmPath, bytes.NewReader(payload))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/vnd.kubernetes.protobuf")
	req.Header.Set("Accept", "application/vnd.kubernetes.protobuf")
	tr := &http.Transport{DisableCompression: true}
	defer tr.CloseIdleConnections()
	resp, err := tr.RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !bytes.Equal(got, payload) || !bytes.Equal(body, payload) {
		t.Errorf("bytes changed: request %q, response %q, want %q", got, body, payload)
	}
	if ct := resp.Header.Get("Content-Type"); ct != "application/vnd.kubernetes.protobuf" {
		t.Errorf("response Content-Type = %q", ct)
	}
	if ae := gotHeader.Get("Accept-Encoding"); ae != "" {
		t.Errorf("the proxy asked the backend for Accept-Encoding %q on the client's behalf", ae)
	}
}

func TestProxy_WatchEndsCleanlyWhenBackendDies(t *testing.T) {
	a := newFake(t, "a", "v1.35.4", "v1/configmaps")
	a.setHandler(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(200)
		w.(http.Flusher).Flush()
		for _, ev := range []string{`{"type":"ADDED","object":{"kind":"ConfigMap"}}` + "\n", `{"type":"BOOKMARK","object":{"kind":"ConfigMap"}}` + "\n", `{"type":"MODIFIED","obj`} {
			w.Write([]byte(ev))
			w.(http.Flusher).Flush()
		}
		// Die in the middle of the third event.
		conn, _, err := http.NewResponseController(w).Hijack()
		if err != nil {
			t.Errorf("hijacking: %v", err)
			return
		}
		conn.Close()
	})
	_, srv := startProxy(t, Options{}, a)
	resp, err := http.Get(srv.URL + cmPath + "?watch=true")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("watch ended with an error: %v", err)
	}
	want := `{"type":"ADDED","object":{"kind":"ConfigMap"}}` + "\n" + `{"type":"BOOKMARK","object":{"kind":"ConfigMap"}}` + "\n"
	if string(body) != want {
		t.Errorf("watch stream = %q, want the two complete events %q", body, want)
	}
}

func TestProxy_WatchIsFlushedPerEvent(t *testing.T) {
	a := newFake(t, "a", "v1.35.4", "v1/configmaps")
	next := make(chan struct{})
	a.setHandler(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		for i := range 3 {
			w.Write([]byte(`{"type":"ADDED","object":{}}` + "\n"))
			w.(http.Flusher).Flush()
			if i < 2 {
				<-next // the next event waits until the client saw this one
			}
		}
	})
	_, srv := startProxy(t, Options{}, a)
	resp, err := http.Get(srv.URL + cmPath + "?watch=1")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	rd := bufio.NewReader(resp.Body)
	for i := range 3 {
		if _, err := rd.ReadString('\n'); err != nil {
			t.Fatalf("event %d: %v", i, err)
		}
		if i < 2 {
			next <- struct{}{}
		}
	}
}

func TestSplitLengthPrefixed(t *testing.T) {
	frame := func(s string) []byte { return append([]byte{0, 0, 0, byte(len(s))}, s...) }
	b := append(append(frame("abc"), frame("de")...), 0, 0, 0, 9, 'x')
	if got, want := splitLengthPrefixed(b), 4+3+4+2; got != want {
		t.Errorf("splitLengthPrefixed = %d, want %d", got, want)
	}
}

func TestProxy_UpgradeIsSpliced(t *testing.T) {
	for _, proto := range []string{"SPDY/3.1", "websocket"} {
		t.Run(proto, func(t *testing.T) {
			a := newFake(t, "a", "v1.35.4", "v1/pods", "v1/pods/exec", "v1/pods/portforward")
			a.setHandler(func(w http.ResponseWriter, r *http.Request) {
				if r.Header.Get("Upgrade") != proto {
					http.Error(w, "want an upgrade", 400)
					return
				}
				conn, brw, err := http.NewResponseController(w).Hijack()
				if err != nil {
					return
				}
				defer conn.Close()
				brw.WriteString("HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: " + proto + "\r\n\r\n")
				brw.Flush()
				io.Copy(conn, brw) // echo
			})
			p, srv := startProxy(t, Options{}, a)
			conn, err := net.Dial("tcp", strings.TrimPrefix(srv.URL, "http://"))
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			if _, err := io.WriteString(conn, "GET /api/v1/namespaces/x/pods/p/exec?command=sh HTTP/1.1\r\nHost: x\r\nConnection: Upgrade\r\nUpgrade: "+proto+"\r\n\r\n"); err != nil {
				t.Fatal(err)
			}
			br := bufio.NewReader(conn)
			resp, err := http.ReadResponse(br, nil)
			if err != nil {
				t.Fatal(err)
			}
			if resp.StatusCode != http.StatusSwitchingProtocols {
				t.Fatalf("status %d, want 101", resp.StatusCode)
			}
			if p.list()[0].longRunning.Load() != 1 {
				t.Errorf("the upgraded connection is not counted as long-running")
			}
			if _, err := io.WriteString(conn, "ping\n"); err != nil {
				t.Fatal(err)
			}
			line, err := br.ReadString('\n')
			if err != nil || line != "ping\n" {
				t.Errorf("echo = %q, %v", line, err)
			}
		})
	}
}

func TestProxy_RejectsConnect(t *testing.T) {
	a := newFake(t, "a", "v1.35.4", "v1/configmaps")
	_, srv := startProxy(t, Options{}, a)
	conn, err := net.Dial("tcp", strings.TrimPrefix(srv.URL, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := io.WriteString(conn, "CONNECT example.com:443 HTTP/1.1\r\nHost: example.com:443\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusMethodNotAllowed {
		t.Errorf("CONNECT = %d, want 405", resp.StatusCode)
	}
	// An absolute-form URI for another host still goes to a backend.
	if _, err := io.WriteString(conn, "GET http://example.com/api/v1/namespaces/default/configmaps HTTP/1.1\r\nHost: example.com\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	resp, err = http.ReadResponse(bufio.NewReader(conn), nil)
	if err == nil {
		body, _ := io.ReadAll(resp.Body)
		if !strings.Contains(string(body), `"backend":"a"`) {
			t.Errorf("absolute-form request answered %d %s, want the backend's answer", resp.StatusCode, body)
		}
	}
}

func counterValue(t *testing.T, p *Proxy, label, value string) float64 {
	t.Helper()
	mfs, err := p.metrics.registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	sum := 0.0
	for _, mf := range mfs {
		if mf.GetName() != "mvpctl_proxy_requests_total" {
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == label && l.GetValue() == value {
					sum += m.GetCounter().GetValue()
				}
			}
		}
	}
	return sum
}

// closingBackend answers GETs and closes the connection without an answer
// for anything else, as a server closing an idle keep-alive connection does
// to a request written at that moment.
func closingBackend(t *testing.T) *fakeAPIServer {
	f := newFake(t, "closing", "v1.36.3", "v1/configmaps")
	f.setHandler(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet {
			w.Header().Set("Content-Type", "application/json")
			io.WriteString(w, `{"backend":"closing"}`)
			return
		}
		io.Copy(io.Discard, r.Body)
		conn, _, err := http.NewResponseController(w).Hijack()
		if err != nil {
			t.Errorf("hijacking: %v", err)
			return
		}
		conn.Close()
	})
	return f
}

func TestProxy_RetriesUnansweredRequestOnReusedConnection(t *testing.T) {
	closing := closingBackend(t)
	alive := newFake(t, "alive", "v1.35.4", "v1/configmaps")
	p, srv := startProxy(t, Options{
		HealthInterval: 1e9 * 3600,
		Rules:          Rules{Routing: []rules.RoutingRule{{Resource: "*", PreferAPIServerVersion: ">=1.36"}}},
	}, closing, alive)
	// Open a keep-alive connection to the closing backend.
	if _, _, body := proxytest.Do(t, nil, proxytest.NewRequest(t, http.MethodGet, srv.URL+cmPath+"/a", "")); answeredBy(t, body) != "closing" {
		t.Fatalf("GET answered by %s", body)
	}
	code, _, body := proxytest.Do(t, nil, proxytest.NewRequest(t, http.MethodPut, srv.URL+cmPath+"/a", `{"kind":"ConfigMap","metadata":{"resourceVersion":"7"}}`))
	var e echo
	if err := json.Unmarshal(body, &e); err != nil {
		t.Fatalf("%v: %s", err, body)
	}
	if code != 200 || e.Backend != "alive" || e.Body != `{"kind":"ConfigMap","metadata":{"resourceVersion":"7"}}` {
		t.Errorf("PUT = %d %s, want 200 from alive with the body", code, body)
	}
	if got := counterValue(t, p, "decision", "retried"); got != 1 {
		t.Errorf("retried = %v, want 1", got)
	}
}

func TestProxy_DoesNotRepeatJSONPatchOrGenerateName(t *testing.T) {
	for _, tc := range []struct{ method, contentType, body string }{
		{http.MethodPatch, "application/json-patch+json", `[{"op":"add","path":"/data/x","value":"1"}]`},
		{http.MethodPost, "application/json", `{"kind":"ConfigMap","metadata":{"generateName":"x-"}}`},
	} {
		t.Run(tc.method, func(t *testing.T) {
			closing := closingBackend(t)
			alive := newFake(t, "alive", "v1.35.4", "v1/configmaps")
			_, srv := startProxy(t, Options{
				HealthInterval: 1e9 * 3600,
				Rules:          Rules{Routing: []rules.RoutingRule{{Resource: "*", PreferAPIServerVersion: ">=1.36"}}},
			}, closing, alive)
			proxytest.Do(t, nil, proxytest.NewRequest(t, http.MethodGet, srv.URL+cmPath+"/a", ""))
			code, _, _ := proxytest.Do(t, nil, proxytest.NewRequest(t, tc.method, srv.URL+cmPath, tc.body, "Content-Type", tc.contentType))
			if code != http.StatusBadGateway || alive.hits.Load() != 0 {
				t.Errorf("%s = %d with %d requests to alive, want 502 and none", tc.method, code, alive.hits.Load())
			}
		})
	}
}

func TestIsRouteNotFound(t *testing.T) {
	tests := []struct {
		contentType, body string
		want              bool
	}{
		{"text/plain; charset=utf-8", "404 page not found\n", true},
		{"application/json", `{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"the server could not find the requested resource","reason":"NotFound","details":{},"code":404}`, true},
		{"application/json", `{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"configmaps \"x\" not found","reason":"NotFound","details":{"name":"x","kind":"configmaps"},"code":404}`, false},
		{"application/vnd.kubernetes.protobuf", "k8s\x00\n\x0c\n\x02v1\x12\x06Status\x12\x04\n\x00\x12\x00\x1a\x07Failure\"0the server could not find the requested resource*\x08NotFound", true},
	}
	for _, tt := range tests {
		resp := &http.Response{StatusCode: 404, Header: http.Header{"Content-Type": {tt.contentType}}, Body: io.NopCloser(strings.NewReader(tt.body))}
		if got := isRouteNotFound(resp); got != tt.want {
			t.Errorf("isRouteNotFound(%q) = %v, want %v", tt.body, got, tt.want)
		}
		if rest, _ := io.ReadAll(resp.Body); string(rest) != tt.body {
			t.Errorf("body after the peek = %q, want it whole", rest)
		}
	}
}

func TestProxy_UnknownResourceIs503WhileAServerIsNotReady(t *testing.T) {
	old := newFake(t, "old", "v1.35.4", "v1/configmaps")
	restarting := newFake(t, "restarting", "v1.35.4", "v1/configmaps")
	p, srv := startProxy(t, Options{}, old, restarting)
	// restarting comes back as v1.36 with a new resource, and the proxy has
	// not read its discovery yet: the new resource is unknown to every map.
	restarting.notReady.Store(true)
	proxytest.Poll(t, "restarting not ready", func() bool { return !p.list()[1].snapshot().ready })
	restarting.gitVersion = "v1.36.3"
	restarting.setServed("v1/configmaps", "admissionregistration.k8s.io/v1/mutatingadmissionpolicies")

	code, hdr, body := proxytest.Do(t, nil, proxytest.NewRequest(t, http.MethodPost, srv.URL+mapPath, `{"kind":"MutatingAdmissionPolicy"}`))
	if code != http.StatusServiceUnavailable || hdr.Get("Retry-After") == "" {
		t.Errorf("POST = %d %s, want 503 with Retry-After while a server is not ready", code, body)
	}
	restarting.notReady.Store(false)
	proxytest.Poll(t, "the new resource routed", func() bool {
		code, _, _ := proxytest.Do(t, nil, proxytest.NewRequest(t, http.MethodPost, srv.URL+mapPath, `{"kind":"MutatingAdmissionPolicy"}`))
		return code == http.StatusOK
	})
}

func TestProxy_UnknownResourceIs404WhenEveryServerIsReady(t *testing.T) {
	a := newFake(t, "a", "v1.35.4", "v1/configmaps")
	_, srv := startProxy(t, Options{}, a)
	if code, _, body := proxytest.Do(t, nil, proxytest.NewRequest(t, http.MethodGet, srv.URL+"/apis/example.com/v1/nothere", "")); code != http.StatusNotFound {
		t.Errorf("GET of a resource nobody serves = %d %s, want the server's 404", code, body)
	}
}

func TestProxy_OutstandingCountersReturnToZero(t *testing.T) {
	gone := newFake(t, "gone", "v1.36.3", "v1/configmaps")
	a := newFake(t, "a", "v1.35.4", "v1/configmaps")
	p, srv := startProxy(t, Options{
		HealthInterval: 1e9 * 3600,
		Rules:          Rules{Routing: []rules.RoutingRule{{Resource: "*", PreferAPIServerVersion: ">=1.36"}}},
	}, gone, a)
	gone.srv.Close()
	for range 5 {
		proxytest.Do(t, nil, proxytest.NewRequest(t, http.MethodGet, srv.URL+cmPath, ""))
		proxytest.Do(t, nil, proxytest.NewRequest(t, http.MethodPost, srv.URL+cmPath, `{}`))
		proxytest.Do(t, nil, proxytest.NewRequest(t, http.MethodGet, srv.URL+cmPath+"?watch=true", ""))
	}
	for _, b := range p.list() {
		if n, l := b.outstanding.Load(), b.longRunning.Load(); n != 0 || l != 0 {
			t.Errorf("%s: %d short and %d long-running requests still counted", b.name, n, l)
		}
	}
}
