package proxy

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"runtime/debug"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/net/http/httpguts"
	authorizationv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/mvpctl/mvpctl/engine"
	"github.com/mvpctl/mvpctl/engine/proxy/internal/proxytest"
	"github.com/mvpctl/mvpctl/engine/proxy/internal/response"
)

// FuzzProxyRequest sends arbitrary requests (method, request target,
// headers, body) through a Proxy whose migration rules are those shipped in
// rules/builtin plus the seed example's customresources rule, so that
// emulation is exercised, in front of a fake apiserver. The request bytes go
// through net/http's own request parser and the checks its server makes
// before calling a handler, so the proxy sees only what a real listener
// would hand it. The mode byte picks the fake's behaviour (low 3 bits) and
// whether the client presented a verified certificate (bit 3). The hops
// word adds identity headers (Authorization, Impersonate-*, X-Remote-*), a
// WebSocket bearer token, Te and Upgrade, and a Connection header naming any
// of them (see fuzzHopHeaders), so that they are tried together.
//
// Properties, for every input:
//   - no panic (http.ErrAbortHandler, the server's "abort this response",
//     only when the fake sent a broken body to be converted);
//   - the request finishes (bounded by fuzzRequestTimeout);
//   - no connection to any address but the fake's: the backends' dialers
//     are hooked, and a sentinel listener, whose address the seeds put in
//     absolute request targets, Host and X-Forwarded-* headers, must never
//     be dialed;
//   - no 5xx unless the fake caused it: allowed are (a) any 5xx when the
//     fake answered 5xx or sent a body that is not JSON for a request of
//     this input, and (b) 503 with a Status of reason ServiceUnavailable and
//     Retry-After when the fake answered "404 page not found" for a
//     resource it lists (the proxy's "no ready kube-apiserver serves it").
//     Everything else is the client's request, however malformed, and must
//     get a 4xx or the fake's own answer;
//   - an error the proxy answers itself (the fake's answers carry a marker
//     header) is a metav1.Status with the response's code;
//   - the fake stays in rotation: no request takes a backend out;
//   - every request the fake receives but the proxy's own (its polls and
//     SubjectAccessReviews, User-Agent mvpctl-proxy, which a client's
//     request never has here) carries either the client's own credentials
//     (its Authorization and Impersonate-* headers, not the proxy's token) or
//     the proxy's token impersonating exactly the client: the certificate's
//     user and group, or the client's own Impersonate-* headers when the
//     fake's SubjectAccessReviews allow each of them (only user
//     fuzz-allowed and group fuzz-allowed-group); never X-Remote-*, and no
//     WebSocket bearer token next to the proxy's.
func FuzzProxyRequest(f *testing.F) {
	h := newFuzzHarness(f)
	for _, s := range fuzzSeeds() {
		f.Add(s.mode, s.method, s.target, s.headers, []byte(s.body), uint32(0))
	}
	for _, s := range fuzzHopSeeds() {
		f.Add(s.mode, s.method, s.target, s.headers, []byte(s.body), s.hops)
	}
	f.Fuzz(func(t *testing.T, mode uint8, method, target, headers string, body []byte, hops uint32) {
		h.run(t, mode, method, target, headers+fuzzHopHeaders(hops), body)
	})
}

// fuzzHopLines are the header lines that bits 0-9 of the hops word add.
var fuzzHopLines = []string{
	"Authorization: Bearer client-token",
	"Impersonate-User: " + fuzzAllowedUser,
	"Impersonate-Group: system:masters",
	"Impersonate-Uid: 0",
	"Impersonate-Extra-Example.com%2fscopes: all",
	"X-Remote-User: system:admin",
	"X-Remote-Group: system:masters",
	"X-Remote-Extra-Scopes: all",
	"Te: trailers",
	"Sec-WebSocket-Protocol: " + webSocketBearerPrefix + "Y2xpZW50LXRva2Vu, v5.channel.k8s.io",
}

// fuzzUpgrades are the Upgrade headers of bits 10-11.
var fuzzUpgrades = []string{"", "websocket", "SPDY/3.1", "h2c"}

// fuzzConnectionTokens are what bits 12-27 put in a Connection header.
var fuzzConnectionTokens = []string{
	"keep-alive", "close", "Upgrade", "Te", "Authorization", "Impersonate-User", "impersonate-group", "Impersonate-Uid",
	"Impersonate-Extra-Example.com%2fscopes", "X-Remote-User", "x-remote-group", "Sec-WebSocket-Protocol",
	"User-Agent", "X-Forwarded-For", "Content-Type", "upgrade",
}

// fuzzHopHeaders renders the header lines a hops word asks for.
func fuzzHopHeaders(hops uint32) string {
	var b strings.Builder
	for i, line := range fuzzHopLines {
		if hops&(1<<i) != 0 {
			b.WriteString(line + "\n")
		}
	}
	if up := fuzzUpgrades[hops>>10&3]; up != "" {
		b.WriteString("Upgrade: " + up + "\n")
	}
	var tokens []string
	for i, tok := range fuzzConnectionTokens {
		if hops&(1<<(12+i)) != 0 {
			tokens = append(tokens, tok)
		}
	}
	if len(tokens) > 0 {
		b.WriteString("Connection: " + strings.Join(tokens, ", ") + "\n")
	}
	return b.String()
}

// fuzzRequestTimeout bounds one request: the fake answers at once, so only
// a hang in the proxy reaches it.
const fuzzRequestTimeout = 10 * time.Second

// Fake behaviours, the low 3 bits of the mode byte.
const (
	fakeNormal        = iota // answers like an apiserver (0-3)
	fakeInternalError = 4    // 500 Status
	fakeUnavailable   = 5    // 503 Status with Retry-After
	fakeRouteNotFound = 6    // "404 page not found" for every resource request
	fakeBrokenJSON    = 7    // 200 with a body that is not JSON
)

const (
	fuzzModeClientCert  = 8 // the client presented a verified certificate
	fuzzCertUser        = "fuzz-user"
	fuzzCertGroup       = "fuzz-group"
	fuzzProxyToken      = "proxy-identity-token"
	fuzzAllowedUser     = "fuzz-allowed" // the fake lets anyone impersonate it
	fuzzAllowedGroup    = "fuzz-allowed-group"
	fuzzFakeMarker      = "X-Fuzz-Fake"
	sentinelPlaceholder = "SENTINEL"
)

type fuzzHarness struct {
	p        *Proxy
	fake     *fakeAPIServer
	fakeAddr string
	sentinel string
	cert     *x509.Certificate

	strayDials atomic.Int64 // dials to any address but the fake's
	sentinelIn atomic.Int64 // connections the sentinel accepted
	strayMu    sync.Mutex
	strayAddrs []string

	mu       sync.Mutex
	mode     uint8
	seen     []fuzzSeen // requests the fake's resource handler got for this input
	upstream []fuzzSeen // every request the fake got for this input
}

// fuzzSeen is what the fake saw of one request.
type fuzzSeen struct {
	method, path string
	header       http.Header
	status       int
}

func newFuzzHarness(tb testing.TB) *fuzzHarness {
	h := &fuzzHarness{}
	h.fake = &fakeAPIServer{name: "fake", gitVersion: "v1.36.3", requests: make(chan *http.Request, 100), served: []string{
		"v1/pods", "v1/pods/exec", "v1/pods/log", "v1/pods/attach", "v1/pods/portforward", "v1/configmaps", "v1/namespaces",
		"apps/v1/deployments", "batch/v1/cronjobs",
		"policy/v1/poddisruptionbudgets", "policy/v1/poddisruptionbudgets/status",
		"myapps.example.com/v1beta1/customresources", "myapps.example.com/v1beta1/customresources/status",
		"networking.k8s.io/v1/ingresses", "autoscaling/v2/horizontalpodautoscalers",
		"authorization.k8s.io/v1/subjectaccessreviews",
	}, kinds: fuzzKinds, openAPIV2: `{"swagger":"2.0","info":{"title":"Kubernetes","version":"v1.36.3"},"paths":{},"definitions":{}}`}
	h.fake.handler = h.serveFake
	h.fake.srv = httptest.NewServer(http.HandlerFunc(h.serveAll))
	tb.Cleanup(h.fake.srv.Close)
	h.fakeAddr = h.fake.srv.Listener.Addr().String()

	sentinel, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { sentinel.Close() })
	h.sentinel = sentinel.Addr().String()
	go func() {
		for {
			c, err := sentinel.Accept()
			if err != nil {
				return
			}
			h.sentinelIn.Add(1)
			c.Close()
		}
	}()

	conv, err := engine.Load(engine.Options{}, "../../rules/builtin", "internal/proxytest/testdata/seed-rules.yaml")
	if err != nil {
		tb.Fatal(err)
	}
	b := h.fake.backend(tb)
	b.BearerToken = fuzzProxyToken
	p, err := New(Options{
		Backends:               []Backend{b},
		Rules:                  Rules{Converter: conv},
		ImpersonateClientCerts: true,
		HealthInterval:         time.Second,
	})
	if err != nil {
		tb.Fatal(err)
	}
	// Every connection the proxy opens to a backend goes through these
	// dialers; nothing may be dialed but the fake.
	for _, be := range p.list() {
		for _, tr := range be.transports() {
			dial := tr.DialContext
			tr.DialContext = func(ctx context.Context, network, addr string) (net.Conn, error) {
				if addr != h.fakeAddr {
					h.strayDials.Add(1)
					h.strayMu.Lock()
					h.strayAddrs = append(h.strayAddrs, addr)
					h.strayMu.Unlock()
				}
				return dial(ctx, network, addr)
			}
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	tb.Cleanup(cancel)
	p.Run(ctx)
	if err := p.WaitReady(ctx); err != nil {
		tb.Fatal(err)
	}
	h.p = p
	proxytest.Poll(tb, "the emulated versions", func() bool { return p.emulates(gvr{"policy", "v1beta1", "poddisruptionbudgets"}) })
	h.cert = &x509.Certificate{Subject: pkix.Name{CommonName: fuzzCertUser, Organization: []string{fuzzCertGroup}}}
	return h
}

var fuzzKinds = map[string]string{
	"pods": "Pod", "configmaps": "ConfigMap", "namespaces": "Namespace", "deployments": "Deployment",
	"cronjobs": "CronJob", "poddisruptionbudgets": "PodDisruptionBudget", "customresources": "CustomResource",
	"ingresses": "Ingress", "horizontalpodautoscalers": "HorizontalPodAutoscaler", "subjectaccessreviews": "SubjectAccessReview",
}

// fuzzSpecs are the stored objects' contents in the served versions.
var fuzzSpecs = map[string]string{
	"poddisruptionbudgets":     `{"minAvailable":1,"selector":{"matchLabels":{"app":"x"}}}`,
	"customresources":          `{"config":{"requestTimeoutSeconds":30},"stateManagement":"stateless"}`,
	"ingresses":                `{"rules":[{"host":"a.example.com","http":{"paths":[{"path":"/","pathType":"Prefix","backend":{"service":{"name":"s","port":{"number":80}}}}]}}]}`,
	"cronjobs":                 `{"schedule":"* * * * *","jobTemplate":{"spec":{"template":{"spec":{"containers":[{"name":"c","image":"i"}],"restartPolicy":"Never"}}}}}`,
	"horizontalpodautoscalers": `{"scaleTargetRef":{"apiVersion":"apps/v1","kind":"Deployment","name":"d"},"minReplicas":1,"maxReplicas":3,"metrics":[{"type":"Resource","resource":{"name":"cpu","target":{"type":"Utilization","averageUtilization":50}}}]}`,
}

// serveAll records every request the fake gets on a client's behalf.
func (h *fuzzHarness) serveAll(w http.ResponseWriter, r *http.Request) {
	if r.Header.Get("User-Agent") != proxyUserAgent {
		h.mu.Lock()
		h.upstream = append(h.upstream, fuzzSeen{method: r.Method, path: r.URL.Path, header: r.Header.Clone()})
		h.mu.Unlock()
	}
	h.fake.ServeHTTP(w, r)
}

// serveFake answers the fake's resource requests as the mode says.
func (h *fuzzHarness) serveFake(w http.ResponseWriter, r *http.Request) {
	h.mu.Lock()
	mode := h.mode
	h.mu.Unlock()
	body, _ := io.ReadAll(r.Body)
	w.Header().Set(fuzzFakeMarker, "1")
	code := h.answer(w, r, mode&7, body)
	h.mu.Lock()
	h.seen = append(h.seen, fuzzSeen{method: r.Method, path: r.URL.Path, header: r.Header.Clone(), status: code})
	h.mu.Unlock()
}

func (h *fuzzHarness) answer(w http.ResponseWriter, r *http.Request, behaviour uint8, body []byte) int {
	status := func(code int, reason metav1.StatusReason, retryAfter int) int {
		response.WriteStatus(w, code, reason, "from the fake", retryAfter)
		return code
	}
	switch behaviour {
	case fakeInternalError:
		return status(http.StatusInternalServerError, metav1.StatusReasonInternalError, 0)
	case fakeUnavailable:
		return status(http.StatusServiceUnavailable, metav1.StatusReasonServiceUnavailable, 1)
	case fakeRouteNotFound:
		http.NotFound(w, r)
		return http.StatusNotFound
	case fakeBrokenJSON:
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"apiVersion":`)
		return http.StatusOK
	}
	info, _ := infoFactory.NewRequestInfo(r)
	if !info.IsResourceRequest {
		// /healthz, /logs, /openapi/v3/...
		io.WriteString(w, "ok")
		return http.StatusOK
	}
	if info.Resource == "subjectaccessreviews" && r.Method == http.MethodPost {
		var sar authorizationv1.SubjectAccessReview
		if err := json.Unmarshal(body, &sar); err != nil {
			return status(http.StatusBadRequest, metav1.StatusReasonBadRequest, 0)
		}
		a := sar.Spec.ResourceAttributes
		sar.Status.Allowed = a != nil && (a.Resource == "users" && a.Name == fuzzAllowedUser || a.Resource == "groups" && a.Name == fuzzAllowedGroup)
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusCreated)
		json.NewEncoder(w).Encode(sar)
		return http.StatusCreated
	}
	gv := strings.TrimPrefix(info.APIGroup+"/"+info.APIVersion, "/")
	kind := fuzzKinds[info.Resource]
	name := info.Name
	if name == "" {
		name = "x"
	}
	stored := func() map[string]any {
		obj := map[string]any{"apiVersion": gv, "kind": kind,
			"metadata": map[string]any{"name": name, "namespace": info.Namespace, "resourceVersion": "7"}}
		if spec, ok := fuzzSpecs[info.Resource]; ok {
			obj["spec"] = json.RawMessage(spec)
		}
		return obj
	}
	write := func(code int, v any) int {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(code)
		json.NewEncoder(w).Encode(v)
		return code
	}
	if info.Subresource == "exec" || info.Subresource == "attach" || info.Subresource == "portforward" {
		// What the apiserver answers for a stream request that did not
		// upgrade.
		return status(http.StatusBadRequest, metav1.StatusReasonBadRequest, 0)
	}
	switch info.Verb {
	case "get":
		return write(http.StatusOK, stored())
	case "list":
		return write(http.StatusOK, map[string]any{"apiVersion": gv, "kind": kind + "List",
			"metadata": map[string]any{"resourceVersion": "7"}, "items": []any{stored()}})
	case "watch":
		return write(http.StatusOK, map[string]any{"type": "ADDED", "object": stored()})
	case "delete", "deletecollection":
		return write(http.StatusOK, metav1.Status{TypeMeta: metav1.TypeMeta{Kind: "Status", APIVersion: "v1"}, Status: metav1.StatusSuccess})
	case "create", "update", "patch":
		var obj map[string]any
		if err := json.Unmarshal(body, &obj); err != nil || obj == nil {
			// A body that is not a JSON object (YAML, protobuf, a
			// patch): answer with the stored object.
			return write(http.StatusOK, stored())
		}
		if info.Verb == "create" {
			return write(http.StatusCreated, obj)
		}
		return write(http.StatusOK, obj)
	}
	return write(http.StatusOK, stored())
}

// run sends one input through the proxy and checks the properties.
func (h *fuzzHarness) run(t *testing.T, mode uint8, method, target, headers string, body []byte) {
	req, ok := h.parse(method, target, headers, body)
	if !ok {
		return // net/http's server answers 400 itself
	}
	if slices.Contains(req.Header.Values("User-Agent"), proxyUserAgent) {
		req.Header.Set("User-Agent", "fuzz-client") // the proxy's own requests are told by it
	}
	h.mu.Lock()
	h.mode, h.seen, h.upstream = mode, nil, nil
	h.mu.Unlock()
	if mode&fuzzModeClientCert != 0 {
		req.TLS = &tls.ConnectionState{HandshakeComplete: true, VerifiedChains: [][]*x509.Certificate{{h.cert}}}
	}
	ctx, cancel := context.WithTimeout(context.Background(), fuzzRequestTimeout)
	defer cancel()
	req = req.WithContext(ctx)
	clientHeader := req.Header.Clone()
	rec := httptest.NewRecorder()
	aborted := h.serve(t, rec, req)
	if ctx.Err() != nil {
		t.Fatalf("the request did not finish within %s", fuzzRequestTimeout)
	}
	h.mu.Lock()
	seen := slices.Clone(h.seen)
	upstream := slices.Clone(h.upstream)
	h.mu.Unlock()
	behaviour := mode & 7
	fakeFailed := slices.ContainsFunc(seen, func(s fuzzSeen) bool {
		return s.status >= 500 || behaviour == fakeBrokenJSON
	})
	routeNotFound := behaviour == fakeRouteNotFound && len(seen) > 0

	if n := h.strayDials.Load(); n > 0 {
		h.strayMu.Lock()
		t.Fatalf("the proxy dialed %v, not only the fake at %s", h.strayAddrs, h.fakeAddr)
	}
	if n := h.sentinelIn.Load(); n > 0 {
		t.Fatalf("the sentinel listener at %s was dialed %d times", h.sentinel, n)
	}
	if aborted && !fakeFailed {
		t.Fatalf("the response was aborted (http.ErrAbortHandler) but the fake answered normally: %+v", seen)
	}
	for _, b := range h.p.list() {
		if st := b.snapshot(); !st.ready {
			t.Fatalf("backend %s was taken out of rotation: %s", b.name, st.lastError)
		}
	}

	res := rec.Result()
	resBody := rec.Body.Bytes()
	code := res.StatusCode
	fromFake := res.Header.Get(fuzzFakeMarker) != ""
	if code >= 500 && !fakeFailed {
		unavailable := code == http.StatusServiceUnavailable && routeNotFound && res.Header.Get("Retry-After") != "" &&
			isStatus(resBody, code, metav1.StatusReasonServiceUnavailable)
		if !unavailable {
			t.Fatalf("%d for a request the fake answered normally (fake saw %d requests): %s", code, len(seen), truncate(resBody, 500))
		}
	}
	if code >= 400 && !fromFake && !aborted && len(resBody) > 0 && string(resBody) != "404 page not found\n" && !isStatus(resBody, code, "") {
		t.Fatalf("the proxy's own %d answer is not a metav1.Status with that code: %s", code, truncate(resBody, 500))
	}

	for _, s := range upstream {
		checkUpstreamIdentity(t, mode, clientHeader, s)
	}
}

// serve calls the proxy as net/http's server does, reporting whether the
// handler aborted the response with http.ErrAbortHandler; any other panic
// fails the test with its stack.
func (h *fuzzHarness) serve(t *testing.T, w http.ResponseWriter, r *http.Request) (aborted bool) {
	defer func() {
		if v := recover(); v != nil {
			if v == http.ErrAbortHandler {
				aborted = true
				return
			}
			t.Fatalf("panic: %v\n%s", v, debug.Stack())
		}
	}()
	h.p.ServeHTTP(w, r)
	return false
}

// checkUpstreamIdentity: a request the fake got on a client's behalf
// carries the client's own credentials or the proxy's token impersonating
// exactly the client, and no X-Remote-* header.
func checkUpstreamIdentity(t *testing.T, mode uint8, client http.Header, s fuzzSeen) {
	t.Helper()
	for k := range s.header {
		if hasPrefixFold(k, "X-Remote-") {
			t.Fatalf("%s %s reached the fake with %s", s.method, s.path, k)
		}
	}
	got, own := impersonation(s.header), impersonation(client)
	if mode&fuzzModeClientCert == 0 {
		if !slices.Equal(s.header["Authorization"], client["Authorization"]) || fmt.Sprint(got) != fmt.Sprint(own) {
			t.Fatalf("%s %s reached the fake without the client's own credentials: Authorization %q (the client's %q), impersonation %v (the client's %v)",
				s.method, s.path, s.header["Authorization"], client["Authorization"], got, own)
		}
		return
	}
	if !slices.Equal(s.header["Authorization"], []string{"Bearer " + fuzzProxyToken}) {
		t.Fatalf("%s %s of a certificate client reached the fake with Authorization %q, not the proxy's", s.method, s.path, s.header["Authorization"])
	}
	want := map[string][]string{"Impersonate-User": {fuzzCertUser}, "Impersonate-Group": {fuzzCertGroup}}
	if len(own) > 0 {
		if !fuzzImpersonationAllowed(own) {
			t.Fatalf("%s %s reached the fake with an impersonation the SubjectAccessReviews refused: %v", s.method, s.path, own)
		}
		want = own
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("%s %s reached the fake with the proxy's identity and impersonation %v; want exactly %v", s.method, s.path, got, want)
	}
	if strings.Contains(s.header.Get("Sec-Websocket-Protocol"), webSocketBearerPrefix) {
		t.Fatalf("%s %s reached the fake with the proxy's identity and a client's WebSocket token", s.method, s.path)
	}
}

// impersonation collects the Impersonate-* headers under canonical keys.
func impersonation(h http.Header) map[string][]string {
	out := map[string][]string{}
	for k, v := range h {
		if ck := http.CanonicalHeaderKey(k); strings.HasPrefix(ck, "Impersonate-") {
			out[ck] = append(out[ck], v...)
		}
	}
	return out
}

// fuzzImpersonationAllowed is what the fake's SubjectAccessReviews allow:
// user fuzz-allowed, with groups fuzz-allowed-group only.
func fuzzImpersonationAllowed(imp map[string][]string) bool {
	for k, vs := range imp {
		switch k {
		case "Impersonate-User":
			if vs[0] != fuzzAllowedUser {
				return false
			}
		case "Impersonate-Group":
			for _, v := range vs {
				if v != fuzzAllowedGroup {
					return false
				}
			}
		default:
			return false
		}
	}
	return len(imp["Impersonate-User"]) > 0
}

// isStatus reports whether body is a metav1.Status JSON with code (and
// reason, if given).
func isStatus(body []byte, code int, reason metav1.StatusReason) bool {
	var st metav1.Status
	if err := json.Unmarshal(body, &st); err != nil {
		return false
	}
	return st.Kind == "Status" && int(st.Code) == code && (reason == "" || st.Reason == reason)
}

// parse turns the input into a request the way net/http's HTTP/1.1 server
// does (http.ReadRequest, then the server's own checks before the handler
// runs); false means the server would have answered 400 itself.
func (h *fuzzHarness) parse(method, target, headers string, body []byte) (*http.Request, bool) {
	target = strings.ReplaceAll(target, sentinelPlaceholder, h.sentinel)
	headers = strings.ReplaceAll(headers, sentinelPlaceholder, h.sentinel)
	var raw bytes.Buffer
	fmt.Fprintf(&raw, "%s %s HTTP/1.1\r\n", method, target)
	hasHost, hasLength := false, false
	for _, line := range strings.Split(headers, "\n") {
		line = strings.TrimSuffix(line, "\r")
		if line == "" {
			continue
		}
		name, _, _ := strings.Cut(line, ":")
		switch strings.ToLower(strings.TrimSpace(name)) {
		case "host":
			hasHost = true
		case "content-length", "transfer-encoding":
			hasLength = true
		}
		raw.WriteString(line + "\r\n")
	}
	if !hasHost {
		raw.WriteString("Host: proxy.test\r\n")
	}
	if !hasLength && len(body) > 0 {
		fmt.Fprintf(&raw, "Content-Length: %d\r\n", len(body))
	}
	raw.WriteString("\r\n")
	raw.Write(body)
	req, err := http.ReadRequest(bufio.NewReader(&raw))
	if err != nil || req.ProtoMajor != 1 {
		return nil, false
	}
	if !httpguts.ValidHostHeader(req.Host) {
		return nil, false
	}
	for k, vv := range req.Header {
		if !httpguts.ValidHeaderFieldName(k) {
			return nil, false
		}
		for _, v := range vv {
			if !httpguts.ValidHeaderFieldValue(v) {
				return nil, false
			}
		}
	}
	if req.Method == http.MethodOptions && req.RequestURI == "*" {
		return nil, false // the server answers OPTIONS * itself
	}
	req.RemoteAddr = "127.0.0.1:40000"
	return req, true
}

type fuzzSeed struct {
	mode                    uint8
	method, target, headers string
	body                    string
}

// fuzzHopSeed is a seed with a hops word.
type fuzzHopSeed struct {
	fuzzSeed
	hops uint32
}

// fuzzSeeds cover the paths, headers and bodies worth mutating: discovery,
// emulated and passed-through resources, stream subresources, path tricks,
// every Accept the apiserver knows, impersonation, upgrades, framing
// headers, and requests aimed at another host (SENTINEL).
func fuzzSeeds() []fuzzSeed {
	const (
		pdbs     = "/apis/policy/v1beta1/namespaces/x/poddisruptionbudgets"
		crs      = "/apis/myapps.example.com/v1alpha1/namespaces/ns/customresources"
		exec     = "/api/v1/namespaces/default/pods/x/exec?command=ls&stdout=true"
		pdbBody  = `{"apiVersion":"policy/v1beta1","kind":"PodDisruptionBudget","metadata":{"name":"a"},"spec":{"minAvailable":1,"selector":{}}}`
		crBody   = `{"apiVersion":"myapps.example.com/v1alpha1","kind":"CustomResource","metadata":{"name":"a"},"spec":{"config":{"legacyTimeout":30},"stateManagement":"ephemeral"}}`
		jsonType = "Content-Type: application/json\n"
	)
	s := []fuzzSeed{
		{0, "GET", "/api", "", ""},
		{0, "GET", "/apis", "Accept: application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,application/json\n", ""},
		{0, "GET", "/apis/policy", "", ""},
		{0, "GET", "/apis/policy/v1beta1", "", ""},
		{0, "GET", "/api/v1", "Accept: application/vnd.kubernetes.protobuf\n", ""},
		{0, "GET", "/version", "", ""},
		{0, "GET", "/openapi/v2", "Accept: application/com.github.proto-openapi.spec.v2@v1.0+protobuf\n", ""},
		{0, "GET", "/openapi/v3", "", ""},
		{0, "GET", "/openapi/v3/apis/policy/v1beta1?hash=0", "", ""},
		{0, "GET", "/healthz", "", ""},
		{0, "GET", "/logs/", "", ""},
		{0, "GET", pdbs, "", ""},
		{0, "GET", pdbs + "/a", "Accept: application/json;as=Table;v=v1;g=meta.k8s.io\n", ""},
		{0, "GET", pdbs + "?watch=1&resourceVersion=0", "", ""},
		{0, "GET", pdbs + "?fieldSelector=spec.minAvailable%3D1&labelSelector=a%3Db", "", ""},
		{0, "GET", pdbs + "/a", "Accept: application/vnd.kubernetes.protobuf\n", ""},
		{0, "GET", pdbs + "/a", "Accept: application/cbor\n", ""},
		{0, "HEAD", pdbs + "/a", "", ""},
		{0, "POST", pdbs, jsonType, pdbBody},
		{0, "POST", pdbs, jsonType, `{"apiVersion":"policy/v1beta1","kind":`},
		{0, "POST", pdbs, "Content-Type: application/yaml\n", "apiVersion: policy/v1beta1\nkind: PodDisruptionBudget\nmetadata: {name: a}\n"},
		{0, "POST", pdbs, "Content-Type: application/vnd.kubernetes.protobuf\n", "k8s\x00\x0a\x0e"},
		{0, "POST", pdbs, "Content-Type: application/cbor\n", "\xd9\xd9\xf7\xa0"},
		{0, "POST", pdbs, jsonType, strings.Repeat("[", 300) + strings.Repeat("]", 300)},
		{0, "POST", pdbs, jsonType, `{"apiVersion":"policy/v1","kind":"PodDisruptionBudget"}`},
		{0, "PUT", pdbs + "/a", jsonType, pdbBody},
		{0, "PUT", pdbs + "/a/status", jsonType, pdbBody},
		{0, "PATCH", pdbs + "/a", "Content-Type: application/merge-patch+json\n", `{"spec":{"minAvailable":2}}`},
		{0, "PATCH", pdbs + "/a", "Content-Type: application/json-patch+json\n", `[{"op":"replace","path":"/spec/minAvailable","value":2}]`},
		{0, "PATCH", pdbs + "/a", "Content-Type: application/strategic-merge-patch+json\n", `{"spec":{"minAvailable":2}}`},
		{0, "PATCH", pdbs + "/a?fieldManager=m", "Content-Type: application/apply-patch+yaml\n", pdbBody},
		{0, "PATCH", pdbs + "/a", "Content-Type: application/merge-patch+json\n", `{"metadata":{"resourceVersion":"1"},"apiVersion":"v1"}`},
		{0, "DELETE", pdbs + "/a", jsonType, `{"kind":"DeleteOptions","apiVersion":"v1","preconditions":{"uid":"u"}}`},
		{0, "DELETE", pdbs, "", ""},
		{0, "GET", pdbs + "/a/scale", "", ""},
		{0, "POST", crs, jsonType, crBody},
		{0, "POST", crs, jsonType, strings.Replace(crBody, "30", `"abc"`, 1)},
		{0, "PATCH", crs + "/a", "Content-Type: application/merge-patch+json\n", `{"spec":{"config":{"legacyTimeout":"soon"}}}`},
		{0, "POST", "/apis/networking.k8s.io/v1beta1/namespaces/x/ingresses", jsonType, `{"apiVersion":"networking.k8s.io/v1beta1","kind":"Ingress","metadata":{"name":"a"},"spec":{"backend":{"serviceName":"s","servicePort":"http"}}}`},
		{0, "GET", "/apis/extensions/v1beta1/namespaces/x/ingresses?watch=true", "", ""},
		{0, "GET", "/apis/batch/v1beta1/cronjobs", "", ""},
		{0, "PUT", "/apis/autoscaling/v1/namespaces/x/horizontalpodautoscalers/h", jsonType, `{"apiVersion":"autoscaling/v1","kind":"HorizontalPodAutoscaler","metadata":{"name":"h","annotations":{"autoscaling.alpha.kubernetes.io/metrics":"[{"}},"spec":{"maxReplicas":3}}`},
		{0, "GET", "/apis/autoscaling/v2beta2/namespaces/x/horizontalpodautoscalers", "Accept: application/json;as=Table;v=v1;g=meta.k8s.io, application/json\n", ""},
		{0, "POST", exec, "Connection: Upgrade\nUpgrade: SPDY/3.1\nX-Stream-Protocol-Version: v4.channel.k8s.io\n", ""},
		{0, "GET", exec, "Connection: Upgrade\nUpgrade: websocket\nSec-Websocket-Version: 13\nSec-Websocket-Key: dGhlIHNhbXBsZSBub25jZQ==\nSec-Websocket-Protocol: v5.channel.k8s.io\n", ""},
		{0, "GET", "/api/v1/namespaces/default/pods/x/log?follow=true", "Upgrade: foo/1\nConnection: upgrade\n", ""},
		{0, "GET", "/api/v1/namespaces/default/pods/../../../secrets", "", ""},
		{0, "GET", "/api/v1/namespaces/default/pods/%2E%2E/x", "", ""},
		{0, "GET", "/apis/policy/v1beta1/namespaces/x%2Fy/poddisruptionbudgets", "", ""},
		{0, "GET", "/apis/policy%2Fv1beta1/namespaces/x/poddisruptionbudgets", "", ""},
		{0, "GET", "//api//v1//namespaces//x//pods", "", ""},
		{0, "GET", "/api/v1/namespaces/\xff\xfe/pods", "", ""},
		{0, "GET", "/api/v1/namespaces/%ff%fe/configmaps/%c0%af", "", ""},
		{0, "GET", "/api/v1/namespaces/" + strings.Repeat("a", 8000) + "/pods", "", ""},
		{0, "GET", "/apis/" + strings.Repeat("g/", 2000), "", ""},
		{0, "GET", "*", "", ""},
		{0, "GET", "api/v1/pods", "", ""},
		{0, "GET", "http://" + sentinelPlaceholder + "/api/v1/pods", "", ""},
		{0, "GET", "https://" + sentinelPlaceholder + pdbs, "", ""},
		{0, "GET", "/api/v1/pods", "Host: " + sentinelPlaceholder + "\nX-Forwarded-Host: " + sentinelPlaceholder + "\nX-Forwarded-For: 10.0.0.1\nForwarded: host=" + sentinelPlaceholder + "\n", ""},
		{0, "CONNECT", sentinelPlaceholder, "", ""},
		{0, "OPTIONS", "/api/v1/pods", "", ""},
		{0, "TRACE", "/api/v1/pods", "", ""},
		{0, "BREW", pdbs, "", ""},
		{0, "get", "/api/v1/pods", "", ""},
		{0, "POST", "/api/v1/namespaces/x/configmaps", "Transfer-Encoding: chunked\n", "5\r\n{\"a\":\r\n2\r\n1}\r\n0\r\n\r\n"},
		{0, "POST", "/api/v1/namespaces/x/configmaps", "Transfer-Encoding: chunked\nContent-Length: 3\n", "0\r\n\r\n"},
		{0, "POST", "/api/v1/namespaces/x/configmaps", "Content-Length: 10\n", "{}"},
		{0, "POST", "/api/v1/namespaces/x/configmaps", "Expect: 100-continue\n" + jsonType, `{"kind":"ConfigMap"}`},
		{0, "GET", "/api/v1/namespaces/x/configmaps", "Impersonate-User: system:admin\nImpersonate-Group: system:masters\nAuthorization: Bearer sekret-token-123\n", ""},
		{fuzzModeClientCert, "GET", "/api/v1/namespaces/x/configmaps", "", ""},
		{fuzzModeClientCert, "GET", "/api/v1/namespaces/x/configmaps", "Impersonate-User: system:admin\nImpersonate-Group: system:masters\n", ""},
		{fuzzModeClientCert, "GET", "/api/v1/namespaces/x/configmaps", "Impersonate-Extra-Scopes: all\nImpersonate-Uid: 0\n", ""},
		{fuzzModeClientCert, "GET", "/api/v1/namespaces/x/configmaps", "Impersonate-Group: system:masters\nAuthorization: Bearer sekret-token-123\n", ""},
		{fuzzModeClientCert, "POST", pdbs, jsonType + "Impersonate-User: system:admin\n", pdbBody},
		{fuzzModeClientCert, "GET", pdbs, "", ""},
		{fuzzModeClientCert, "POST", "/apis/authorization.k8s.io/v1/subjectaccessreviews", jsonType, `{"spec":{"user":"x"}}`},
		{fakeInternalError, "GET", pdbs + "/a", "", ""},
		{fakeInternalError | fuzzModeClientCert, "GET", "/api/v1/pods", "Impersonate-User: u\n", ""},
		{fakeUnavailable, "GET", "/api/v1/pods", "", ""},
		{fakeRouteNotFound, "GET", pdbs, "", ""},
		{fakeRouteNotFound, "GET", "/api/v1/namespaces/x/pods/p", "", ""},
		{fakeRouteNotFound, "PATCH", pdbs + "/a", "Content-Type: application/merge-patch+json\n", `{}`},
		{fakeBrokenJSON, "GET", pdbs, "", ""},
		{fakeBrokenJSON, "GET", pdbs + "/a", "", ""},
		{fakeBrokenJSON, "GET", pdbs + "?watch=1", "", ""},
	}
	return s
}

// fuzzHopSeeds put identity and hop-by-hop headers together
// (fuzzHopHeaders) on certificate and token clients.
func fuzzHopSeeds() []fuzzHopSeed {
	const (
		pdbs     = "/apis/policy/v1beta1/namespaces/x/poddisruptionbudgets"
		crs      = "/apis/myapps.example.com/v1alpha1/namespaces/ns/customresources"
		exec     = "/api/v1/namespaces/default/pods/x/exec?command=ls&stdout=true"
		pdbBody  = `{"apiVersion":"policy/v1beta1","kind":"PodDisruptionBudget","metadata":{"name":"a"},"spec":{"minAvailable":1,"selector":{}}}`
		crBody   = `{"apiVersion":"myapps.example.com/v1alpha1","kind":"CustomResource","metadata":{"name":"a"},"spec":{"config":{"legacyTimeout":30},"stateManagement":"ephemeral"}}`
		jsonType = "Content-Type: application/json\n"
	)
	lines := func(is ...int) (v uint32) {
		for _, i := range is {
			v |= 1 << i
		}
		return v
	}
	conn := func(is ...int) (v uint32) {
		for _, i := range is {
			v |= 1 << (12 + i)
		}
		return v
	}
	const ws, spdy = 1 << 10, 2 << 10
	const cm = "/api/v1/namespaces/x/configmaps"
	wsHeaders := "Sec-Websocket-Version: 13\nSec-Websocket-Key: dGhlIHNhbXBsZSBub25jZQ==\n"
	return []fuzzHopSeed{
		{fuzzSeed{fuzzModeClientCert, "GET", cm, "", ""}, conn(0, 5, 6)},
		{fuzzSeed{fuzzModeClientCert, "GET", cm, "", ""}, lines(1) | conn(5)},
		{fuzzSeed{fuzzModeClientCert, "GET", cm, "", ""}, lines(1)},
		{fuzzSeed{fuzzModeClientCert, "GET", cm, "Impersonate-Group: " + fuzzAllowedGroup + "\n", ""}, lines(1)},
		{fuzzSeed{fuzzModeClientCert, "GET", cm, "", ""}, lines(1, 2, 4) | conn(1)},
		{fuzzSeed{fuzzModeClientCert, "POST", exec, "X-Stream-Protocol-Version: v4.channel.k8s.io\n", ""}, lines(5, 6, 7) | spdy | conn(2)},
		{fuzzSeed{fuzzModeClientCert, "GET", exec, wsHeaders, ""}, lines(0, 9) | ws | conn(2)},
		{fuzzSeed{fuzzModeClientCert, "GET", exec, wsHeaders, ""}, lines(9) | ws | conn(2, 5, 6)},
		{fuzzSeed{0, "GET", exec, wsHeaders, ""}, lines(9) | ws | conn(2)},
		{fuzzSeed{0, "GET", exec, wsHeaders, ""}, lines(9) | ws | conn(2, 11)},
		{fuzzSeed{0, "GET", cm, "", ""}, lines(0, 1, 2, 5) | conn(4)},
		{fuzzSeed{0, "GET", cm, "", ""}, lines(0, 5, 6, 7)},
		{fuzzSeed{0, "POST", pdbs, jsonType, pdbBody}, lines(0, 8) | conn(3)},
		{fuzzSeed{0, "POST", crs, jsonType, crBody}, lines(1, 2)},
		{fuzzSeed{fuzzModeClientCert, "POST", pdbs, jsonType, pdbBody}, lines(5, 8) | conn(3, 13)},
		{fuzzSeed{fuzzModeClientCert, "PATCH", pdbs + "/a", "Content-Type: application/merge-patch+json\n", `{"spec":{"minAvailable":2}}`}, lines(1, 5) | conn(0, 1)},
		{fuzzSeed{0, "GET", "/apis", "", ""}, lines(9) | ws | conn(2, 11)},
		{fuzzSeed{fuzzModeClientCert, "GET", "/openapi/v2", "", ""}, lines(3, 4) | conn(12)},
		{fuzzSeed{0, "GET", cm, "User-Agent: " + proxyUserAgent + "\n", ""}, conn(12)},
		{fuzzSeed{fuzzModeClientCert, "GET", cm, "", ""}, lines(0, 1, 2, 3, 4, 5, 6, 7, 8, 9) | spdy | 0xffff<<12},
	}
}
