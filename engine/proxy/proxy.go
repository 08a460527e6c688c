package proxy

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httputil"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/cache"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apiserver/pkg/endpoints/request"

	"github.com/mvpctl/mvpctl/engine"
	"github.com/mvpctl/mvpctl/engine/proxy/internal/emulation"
	"github.com/mvpctl/mvpctl/engine/proxy/internal/response"
	"github.com/mvpctl/mvpctl/rules"
)

// DefaultMaxRequestBodyBytes is kube-apiserver's own limit on request bodies.
const DefaultMaxRequestBodyBytes = 3 << 20

// replayLimit bounds the request bodies kept in memory so that a request can
// be sent again when its first backend closed the connection before reading
// it. API objects are far smaller; larger bodies stream and are retried only
// when no byte was read.
const replayLimit = 1 << 20

// Options configures a [Proxy].
type Options struct {
	// Backends are the kube-apiservers. At least one is required.
	Backends []Backend
	// Rules are the initial routing rules and converter; [Proxy.SetRules]
	// replaces them. The zero value routes without preferences and
	// emulates nothing.
	Rules Rules
	// RefreshInterval is how often each backend's discovery is read again.
	// Zero means 30s. Discovery is also read when a backend becomes ready, when
	// its version changes and when it answers 404 for a resource it listed.
	RefreshInterval time.Duration
	// HealthInterval is how often /readyz and /version of a ready backend are
	// polled; a backend that is not ready is polled four times as often. Zero
	// means 1s.
	HealthInterval time.Duration
	// MaxRequestBodyBytes limits request bodies (413 beyond). Zero means 3 MiB.
	MaxRequestBodyBytes int64
	// RequestBodyTimeout is how long a request body may take to arrive,
	// from the moment the proxy starts reading it (408 beyond). Zero means
	// [DefaultRequestBodyTimeout].
	RequestBodyTimeout time.Duration
	// MaxBufferedRequestBytes bounds the request bodies held in memory at
	// once, across all requests: a request whose body does not fit gets 429
	// with Retry-After. At least MaxRequestBodyBytes+1; zero means
	// [DefaultMaxBufferedRequestBytes].
	MaxBufferedRequestBytes int64
	// MaxUpstreamConnsPerBackend bounds the connections to one backend in
	// each of its two client pools (certificate users impersonated with the
	// proxy's identity; clients' own credentials); the proxy's own requests
	// have [DefaultOwnConnsPerBackend] of their own. Requests past it wait
	// for a connection, at most UpstreamConnWait, and
	// MaxIdleConnsPerBackend is lowered to it. Upstream is HTTP/2 where the
	// backend offers it: a connection carries many requests and watches.
	// Zero means [DefaultMaxUpstreamConnsPerBackend].
	MaxUpstreamConnsPerBackend int
	// UpstreamConnWait is how long a request waits for a connection when
	// its pool's MaxUpstreamConnsPerBackend are in use, before the answer
	// is 503 with Retry-After. Zero means [DefaultUpstreamConnWait].
	UpstreamConnWait time.Duration
	// Fairness bounds what one client (a certificate user, a bearer token,
	// or all anonymous requests together) may hold of the proxy, so that
	// no one waits behind another. The zero value means the defaults.
	Fairness FairnessOptions
	// MaxObjectBytes bounds one object, Table or document read whole from
	// a backend (to convert it, or for the capability map and OpenAPI).
	// Zero means [DefaultMaxObjectBytes].
	MaxObjectBytes int64
	// RetryAfterSeconds is the Retry-After of a 503. Zero means 1.
	RetryAfterSeconds int
	// MaxIdleConnsPerBackend is the upstream connection pool size. Zero means 256.
	MaxIdleConnsPerBackend int
	// ImpersonateClientCerts forwards a request authenticated by a verified
	// client certificate with the proxy's own identity and Impersonate-User /
	// Impersonate-Group from the certificate. The certificates are verified
	// by the TLS server ([ServeOptions.ClientCA]).
	ImpersonateClientCerts bool
	// Logger receives one line per routing decision at debug level. Nil
	// means no logging.
	Logger *slog.Logger
	// Registry receives the proxy's metrics. Nil means a private registry,
	// still served by [Proxy.MetricsHandler].
	Registry *prometheus.Registry
	// UsageTableSize is how many clients of old API versions /debug/clients
	// remembers (by user, user agent and group/version/resource), at most
	// MaxUsageTableSize and 100 per user. Zero means none are remembered
	// (the mvpctl_proxy_old_version_requests_total metric still counts them).
	UsageTableSize int
	// OpenAPIV3 holds OpenAPI v3 documents of versions that may be emulated,
	// keyed by their /openapi/v3 path (apis/policy/v1beta1), e.g. from an
	// older cluster or release ([OpenAPIV3Path] finds the key). A document is
	// served, listed in the /openapi/v3 index and converted into /openapi/v2
	// while its version is emulated and no backend lists it. It takes
	// precedence over the schema a CRD keeps for a version it no longer
	// serves, which is used otherwise. Nil means only those.
	OpenAPIV3 map[string][]byte
}

// Rules are what the proxy takes from a rule set: the apiRoutingRules and
// the converter of the migration rules. [Proxy.SetRules] replaces both at
// once, so that a request never routes by one set and converts by another.
type Rules struct {
	// Routing orders the candidates for a request (apiRoutingRules).
	Routing []rules.RoutingRule
	// Converter serves the API versions of its migration rules that no
	// ready backend serves, converting requests and responses to a version
	// a backend does serve (see docs/emulation.md). Nil means no emulation.
	Converter *engine.Converter
}

// activeRules is one [Rules] ready for use. A request loads it once and
// keeps it to the end: a reload never changes the rules under a request.
type activeRules struct {
	routing []compiledRule
	emu     *emulation.Rules // nil without a converter
}

// Proxy routes Kubernetes API requests to the kube-apiservers that serve
// them. It is an http.Handler; [Proxy.Run] keeps its capability map fresh.
type Proxy struct {
	opts    Options
	log     *slog.Logger
	set     atomic.Pointer[[]*backend] // the backends; replaced as a whole
	rules   atomic.Pointer[activeRules]
	infos   *request.RequestInfoFactory
	rp      *httputil.ReverseProxy
	metrics *metrics
	emu     *emulation.Emulator
	fair    *fairShare // each user's share of the proxy
	rr      atomic.Uint64

	draining    atomic.Bool           // set by Drain: /readyz fails
	limits      *bodyLimits           // request body deadline and memory budget
	access      accessCache           // who may read discovery from the union
	established *cache.LRUExpireCache // credentials a backend authenticated

	disc      discoveryCache
	openAPIV2 openAPIV2Cache

	mu      sync.Mutex // guards runCtx and pollers
	runCtx  context.Context
	pollers map[*backend]context.CancelFunc
}

type compiledRule struct {
	rule    rules.RoutingRule
	pattern rules.ServerVersionPattern
}

// New validates opts and builds a proxy. It does not contact the backends;
// call [Proxy.Run] (all backends start as not ready).
func New(opts Options) (*Proxy, error) {
	if len(opts.Backends) == 0 {
		return nil, fmt.Errorf("no backends")
	}
	if opts.RefreshInterval <= 0 {
		opts.RefreshInterval = 30 * time.Second
	}
	if opts.HealthInterval <= 0 {
		opts.HealthInterval = time.Second
	}
	if opts.MaxRequestBodyBytes <= 0 {
		opts.MaxRequestBodyBytes = DefaultMaxRequestBodyBytes
	}
	if opts.RetryAfterSeconds <= 0 {
		opts.RetryAfterSeconds = 1
	}
	if opts.MaxIdleConnsPerBackend <= 0 {
		opts.MaxIdleConnsPerBackend = 256
	}
	if err := defaultLimits(&opts); err != nil {
		return nil, err
	}
	if opts.Registry == nil {
		opts.Registry = prometheus.NewRegistry()
	}
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	p := &Proxy{
		opts: opts,
		log:  log,
		infos: &request.RequestInfoFactory{
			APIPrefixes:          sets.NewString("api", "apis"),
			GrouplessAPIPrefixes: sets.NewString("api"),
		},
		pollers:     map[*backend]context.CancelFunc{},
		limits:      newBodyLimits(opts.RequestBodyTimeout, opts.MaxBufferedRequestBytes),
		established: cache.NewLRUExpireCache(maxEstablished),
	}
	fair, err := newFairShare(opts.Fairness, opts.Registry)
	if err != nil {
		return nil, err
	}
	p.fair = fair
	if err := opts.Registry.Register(upstreamCollector{p}); err != nil {
		return nil, err
	}
	emu, err := emulation.New(emulationHost{p}, emulation.Options{
		MaxRequestBodyBytes: opts.MaxRequestBodyBytes, MaxObjectBytes: opts.MaxObjectBytes,
		OpenAPIV3: opts.OpenAPIV3, Logger: log, Registry: opts.Registry,
	})
	if err != nil {
		return nil, err
	}
	p.emu = emu
	if err := p.SetBackends(opts.Backends); err != nil {
		return nil, err
	}
	if err := p.SetRules(opts.Rules); err != nil {
		return nil, err
	}
	m, err := newMetrics(opts.Registry, p)
	if err != nil {
		return nil, err
	}
	p.metrics = m
	if err := p.limits.register(opts.Registry); err != nil {
		return nil, err
	}
	p.rp = &httputil.ReverseProxy{
		Rewrite:   p.rewrite,
		Transport: &routingTransport{p: p},
		// Streaming responses (watches, chunked lists, logs: no
		// Content-Length) are flushed after every write whatever this says;
		// FlushInterval -1 would also flush each write of a response whose
		// length is known, which costs HTTP/2 clients a frame write (a
		// syscall) per write for nothing (BENCHMARKS.md, "What was tried").
		FlushInterval:  0,
		ErrorHandler:   p.upstreamErrorHandler,
		ModifyResponse: p.modifyResponse,
		ErrorLog:       slog.NewLogLogger(log.Handler(), slog.LevelWarn),
		BufferPool:     bufferPool{},
	}
	return p, nil
}

// Run polls the backends until ctx ends. It returns at once; use
// [Proxy.WaitReady] to wait for the first capability map.
func (p *Proxy) Run(ctx context.Context) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.runCtx != nil {
		return
	}
	p.runCtx = ctx
	for _, b := range p.list() {
		p.startPoller(b)
	}
	go func() {
		<-ctx.Done()
		for _, b := range p.list() {
			b.close()
		}
	}()
}

// Close closes every upstream connection, in use or not. Call it once the
// servers in front have stopped: a stream that ended after Run's context
// was done leaves an HTTP/2 connection that nothing else would close.
func (p *Proxy) Close() {
	for _, b := range p.list() {
		for _, u := range b.pools() {
			u.closeAll()
		}
	}
}

// stopping is the context of Run, done when the proxy stops; nil before
// Run.
func (p *Proxy) stopping() context.Context {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.runCtx
}

// list is the current set of backends.
func (p *Proxy) list() []*backend { return *p.set.Load() }

func (p *Proxy) startPoller(b *backend) {
	ctx, cancel := context.WithCancel(p.runCtx)
	p.pollers[b] = cancel
	go p.poll(ctx, b)
}

// SetBackends replaces the set of backends, e.g. when they are discovered
// from the cluster. A backend whose URL stays keeps its state and
// connections; a new one starts not ready and is used once polled; a removed
// one is no longer polled or chosen (requests in flight to it finish).
func (p *Proxy) SetBackends(cfgs []Backend) error {
	if len(cfgs) == 0 {
		return fmt.Errorf("no backends")
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	current := map[string]*backend{}
	if cur := p.set.Load(); cur != nil {
		for _, b := range *cur {
			current[b.url.String()] = b
		}
	}
	var next, added []*backend
	names := map[string]bool{}
	for _, cfg := range cfgs {
		b, err := newBackend(cfg, upstreamLimits{
			maxIdle: p.opts.MaxIdleConnsPerBackend, maxConns: p.opts.MaxUpstreamConnsPerBackend,
			ownConns: DefaultOwnConnsPerBackend, connWait: p.opts.UpstreamConnWait, maxObject: p.opts.MaxObjectBytes,
		})
		if err != nil {
			return err
		}
		if kept, ok := current[b.url.String()]; ok {
			b = kept
			delete(current, b.url.String())
		} else {
			added = append(added, b)
		}
		if names[b.name] {
			return fmt.Errorf("backend name %q used twice", b.name)
		}
		names[b.name] = true
		next = append(next, b)
	}
	p.set.Store(&next)
	for _, b := range current {
		if cancel := p.pollers[b]; cancel != nil {
			cancel()
			delete(p.pollers, b)
		}
		b.close()
		p.log.Info("backend removed", "backend", b.name)
	}
	if p.runCtx != nil {
		for _, b := range added {
			p.startPoller(b)
			p.log.Info("backend added", "backend", b.name)
		}
	}
	p.disc.invalidate()
	return nil
}

// SetRules replaces the routing rules and the converter, e.g. when the
// rules files or TransformationRules objects change. Requests already
// running finish with the rules they started with; discovery shows the new
// set's emulated versions from the next request on. Rules that do not
// validate leave the active ones in place.
func (p *Proxy) SetRules(r Rules) error {
	ar := &activeRules{}
	for i, rr := range r.Routing {
		pat, err := rules.ParseServerVersionPattern(rr.PreferAPIServerVersion)
		if err != nil {
			return fmt.Errorf("apiRoutingRules[%d].preferApiServerVersion: %w", i, err)
		}
		ar.routing = append(ar.routing, compiledRule{rule: rr, pattern: pat})
	}
	if r.Converter != nil {
		ar.emu = p.emu.Rules(r.Converter)
	}
	p.rules.Store(ar)
	p.disc.invalidate()
	return nil
}

// WaitReady waits until at least one backend is ready, or ctx ends.
func (p *Proxy) WaitReady(ctx context.Context) error {
	t := time.NewTicker(20 * time.Millisecond)
	defer t.Stop()
	for {
		for _, b := range p.list() {
			if b.snapshot().ready {
				return nil
			}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("no backend became ready: %w", ctx.Err())
		case <-t.C:
		}
	}
}

// routeKey is the context key of a request's *route.
type routeKey struct{}

// route is what the handler decided for one request, shared with the
// transport and the response hooks through the request context.
type route struct {
	info        *request.RequestInfo
	key         gvr
	candidates  []*backend
	id          *identity // who the request goes upstream as
	longRunning bool
	decision    string
	known       bool // some backend's discovery lists the resource

	start     time.Time
	sent      time.Time    // first upstream attempt began
	received  time.Time    // response headers arrived
	status    int          // the backend's status code
	body      *trackedBody // a streamed request body
	bodyBytes []byte       // a request body kept in memory
	backend   *backend     // the backend that answered (or failed last)
	attempts  int
	err       error

	deadline *bodyDeadline // the request body's read deadline
	release  func()        // gives back the user's share; nil: none taken
}

func routeFrom(ctx context.Context) *route {
	rt, _ := ctx.Value(routeKey{}).(*route)
	return rt
}

// Routing decisions, the "decision" label of the request metrics.
const (
	decisionLocal       = "local"       // every ready backend could have served it
	decisionRerouted    = "rerouted"    // capabilities or rules narrowed the candidates
	decisionRetried     = "retried"     // a first backend could not be reached; sent to another
	decisionUnavailable = "unavailable" // 503: no ready backend serves it
	decisionProxy       = "proxy"       // answered by the proxy itself (discovery, errors)
	decisionEmulated    = "emulated"    // converted to and from a served version
)

// ServeHTTP routes one request: the proxy answers what it answers itself
// (refusals, its health, discovery), emulates a version no ready backend
// serves, and forwards the rest to the candidates of its route.
func (p *Proxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	rec := &recorder{ResponseWriter: w}
	rt := &route{start: time.Now(), decision: decisionLocal}
	defer func() { p.observe(rec, r, rt) }()
	defer func() {
		if rt.release != nil {
			rt.release()
		}
	}()
	w = rec

	var answered bool
	if r, answered = p.serveItself(w, r, rt); answered {
		rt.decision = decisionProxy
		return
	}
	if rt.longRunning {
		var stop func()
		r, stop = p.endAtStop(r)
		defer stop()
	}
	p.forward(w, r, rt)
}

// serveItself answers the requests the proxy answers itself: those it
// refuses, its own /livez and /readyz, those past their user's fair share,
// and discovery. It reports true when it has answered; otherwise it returns
// r carrying the client's identity, with rt.info and rt.id set and the
// user's share taken.
func (p *Proxy) serveItself(w http.ResponseWriter, r *http.Request, rt *route) (*http.Request, bool) {
	if p.refuse(w, r) || p.serveHealth(w, r) {
		return r, true
	}
	info, err := p.infos.NewRequestInfo(r)
	if err != nil {
		response.WriteStatus(w, http.StatusBadRequest, metav1.StatusReasonBadRequest, err.Error(), 0)
		return r, true
	}
	rt.info = info
	// The user's share is taken before anything is done for the request:
	// an impersonation check or a discovery probe is work for it too.
	rt.longRunning = isLongRunning(r, info)
	r, ok := p.admit(w, r, rt)
	if !ok {
		return r, true
	}
	withID, ok := p.identify(w, r)
	if !ok {
		return r, true
	}
	r, rt.id = withID, identityFrom(withID.Context())
	return r, p.serveDiscovery(w, r, info)
}

// refuse answers the requests the proxy does not forward whatever they
// ask for, and reports whether r is one.
func (p *Proxy) refuse(w http.ResponseWriter, r *http.Request) bool {
	if r.Method == http.MethodConnect {
		response.WriteStatus(w, http.StatusMethodNotAllowed, metav1.StatusReasonMethodNotAllowed, "CONNECT is not supported: this is a Kubernetes API proxy, not a forward proxy", 0)
		return true
	}
	if name, ok := connectionNamesIdentity(r.Header); ok {
		response.WriteStatus(w, http.StatusBadRequest, metav1.StatusReasonBadRequest,
			fmt.Sprintf("the Connection header names %q: identity headers are end-to-end, not hop-by-hop", name), 0)
		return true
	}
	if up := upgradeProtocol(r.Header); up != "" && !printableASCII(up) {
		// httputil.ReverseProxy refuses to forward it and reports an error
		// that would become a 502; it is the client's malformed request.
		response.WriteStatus(w, http.StatusBadRequest, metav1.StatusReasonBadRequest, fmt.Sprintf("invalid Upgrade protocol %q", up), 0)
		return true
	}
	if r.ContentLength > p.opts.MaxRequestBodyBytes {
		response.WriteStatus(w, http.StatusRequestEntityTooLarge, metav1.StatusReasonRequestEntityTooLarge,
			fmt.Sprintf("the request body is %d bytes, larger than the limit of %d", r.ContentLength, p.opts.MaxRequestBodyBytes), 0)
		return true
	}
	return false
}

// endAtStop ends a long-running request (a watch, logs, an upgraded
// connection) when the proxy stops (Run's context), as kube-apiserver ends
// them at shutdown: clients resume elsewhere instead of holding the
// shutdown until its grace period runs out. stop releases what it holds.
func (p *Proxy) endAtStop(r *http.Request) (_ *http.Request, stop func()) {
	stopping := p.stopping()
	if stopping == nil {
		return r, func() {}
	}
	ctx, cancel := context.WithCancel(r.Context())
	unhook := context.AfterFunc(stopping, cancel)
	return r.WithContext(ctx), func() {
		unhook()
		cancel()
	}
}

// forward routes a request to a backend: to the candidates of its route,
// by emulation when no ready backend serves its version, or to no one (a
// 503) when no ready backend can take it.
func (p *Proxy) forward(w http.ResponseWriter, r *http.Request, rt *route) {
	info := rt.info
	if info.IsResourceRequest {
		rt.key = gvr{info.APIGroup, info.APIVersion, info.Resource}
		if info.Subresource != "" {
			rt.key.resource += "/" + info.Subresource
		}
	}
	rt.candidates, rt.decision, rt.known = p.candidates(p.rules.Load(), rt.key, info, r)
	// A version no ready backend serves is emulated when the rules lead from
	// it to a version a ready backend serves: one nobody lists, and one whose
	// servers are all down, such as the last old server of a rolling upgrade.
	if info.IsResourceRequest && (!rt.known || len(rt.candidates) == 0) && p.emulate(w, r, info, rt) {
		rt.decision = decisionEmulated
		return
	}
	if len(rt.candidates) == 0 {
		rt.decision = decisionUnavailable
		msg := "no kube-apiserver is ready"
		if info.IsResourceRequest && rt.known {
			msg = fmt.Sprintf("no ready kube-apiserver serves %s at the moment; it is served by a server that is not ready", rt.key)
		}
		response.WriteStatus(w, http.StatusServiceUnavailable, metav1.StatusReasonServiceUnavailable, msg, p.opts.RetryAfterSeconds)
		return
	}
	if r.Body != nil && r.Body != http.NoBody {
		done, err := p.prepareBody(w, r, rt)
		defer done()
		if err != nil {
			rt.decision = decisionProxy
			p.writeBodyError(w, err)
			return
		}
	}
	p.rp.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), routeKey{}, rt)))
}

// anyNotReady reports whether some backend is not ready, so that what the
// ready ones serve may not be all the cluster serves.
func (p *Proxy) anyNotReady() bool {
	for _, b := range p.list() {
		if !b.snapshot().ready {
			return true
		}
	}
	return false
}

// refreshAll asks every backend's poller to read discovery again.
func (p *Proxy) refreshAll() {
	for _, b := range p.list() {
		b.requestRefresh()
	}
}

// unavailableResponse is the proxy's 503 as an upstream response.
func (p *Proxy) unavailableResponse(req *http.Request, msg string) *http.Response {
	body := response.StatusBody(http.StatusServiceUnavailable, metav1.StatusReasonServiceUnavailable, msg, p.opts.RetryAfterSeconds)
	h := http.Header{}
	h.Set("Content-Type", "application/json")
	h.Set("Cache-Control", "no-cache, private")
	h.Set("Retry-After", strconv.Itoa(p.opts.RetryAfterSeconds))
	return &http.Response{
		Status: "503 Service Unavailable", StatusCode: http.StatusServiceUnavailable,
		Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		Header: h, Body: io.NopCloser(bytes.NewReader(body)), ContentLength: int64(len(body)), Request: req,
	}
}

// prepareReplay makes the request body readable again for a second attempt:
// bodies up to replayLimit are read into memory first (which also turns a
// chunked body over the size limit into a 413 before anything is sent),
// within res; larger ones stream, wrapped so that an attempt that read
// nothing can be repeated and the body's deadline is lifted at its end.
func prepareReplay(r *http.Request, rt *route, res *reservation) error {
	if r.ContentLength <= replayLimit {
		buf, err := res.readAll(r.Body, r.ContentLength, replayLimit+1)
		rt.deadline.observe(err)
		if err != nil {
			return err
		}
		if len(buf) <= replayLimit {
			rt.deadline.lift()
			rt.bodyBytes = buf
			r.ContentLength = int64(len(buf))
			r.Body = io.NopCloser(bytes.NewReader(buf))
			r.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(buf)), nil }
			return nil
		}
		r.Body = struct {
			io.Reader
			io.Closer
		}{io.MultiReader(bytes.NewReader(buf), r.Body), r.Body}
	}
	rt.body = &trackedBody{rc: &deadlineBody{ReadCloser: r.Body, d: rt.deadline}}
	rt.body.read.Store(r.ContentLength < 0) // part of it was read above
	r.Body = rt.body
	return nil
}

// trackedBody remembers whether it was read. Close is a no-op: the server
// closes the request body when the handler returns, and a transport that
// failed before reading must not close it under a retry.
type trackedBody struct {
	rc   io.ReadCloser
	read atomic.Bool
}

func (t *trackedBody) Read(p []byte) (int, error) {
	t.read.Store(true)
	return t.rc.Read(p)
}

func (t *trackedBody) Close() error { return nil }

func (p *Proxy) writeBodyError(w http.ResponseWriter, err error) {
	var mbe *http.MaxBytesError
	var budget *bodyBudgetError
	switch {
	case errors.As(err, &mbe):
		response.WriteStatus(w, http.StatusRequestEntityTooLarge, metav1.StatusReasonRequestEntityTooLarge,
			fmt.Sprintf("the request body is larger than the limit of %d bytes", mbe.Limit), 0)
		return
	case errors.As(err, &budget):
		response.WriteStatus(w, http.StatusTooManyRequests, metav1.StatusReasonTooManyRequests, budget.Error(), p.opts.RetryAfterSeconds)
		return
	case errors.Is(err, os.ErrDeadlineExceeded):
		p.limits.writeTimeout(w)
		return
	}
	response.WriteStatus(w, http.StatusBadRequest, metav1.StatusReasonBadRequest, "reading the request body: "+err.Error(), 0)
}

// upgradeProtocol is the protocol a request asks to switch to: its Upgrade
// header when Connection lists "upgrade", as httputil.ReverseProxy reads it.
func upgradeProtocol(h http.Header) string {
	for _, v := range h["Connection"] {
		for _, tok := range strings.Split(v, ",") {
			if strings.EqualFold(strings.TrimSpace(tok), "upgrade") {
				return h.Get("Upgrade")
			}
		}
	}
	return ""
}

func printableASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < ' ' || s[i] > '~' {
			return false
		}
	}
	return true
}

// isLongRunning tells requests that stay open (watches, streaming logs,
// upgraded connections, proxied traffic) from short ones, which alone count
// towards least-outstanding balancing.
func isLongRunning(r *http.Request, info *request.RequestInfo) bool {
	if r.Header.Get("Upgrade") != "" {
		return true
	}
	if !info.IsResourceRequest {
		return strings.HasPrefix(info.Path, "/logs")
	}
	switch info.Verb {
	case "watch", "proxy":
		return true
	}
	switch info.Subresource {
	case "exec", "attach", "portforward", "proxy":
		return true
	case "log":
		return r.URL.Query().Get("follow") == "true"
	}
	return false
}

// rewrite points the outgoing request at the first candidate; the transport
// moves it to another one when it retries.
func (p *Proxy) rewrite(pr *httputil.ProxyRequest) {
	rt := routeFrom(pr.In.Context())
	pr.SetURL(rt.candidates[0].url)
	pr.SetXForwarded()
	pr.Out.Host = ""
	// After httputil.ReverseProxy removed the hop-by-hop headers: a
	// Connection header cannot take the identity off.
	rt.id.set(pr.Out.Header)
}

// recorder captures the status code and when the response headers were
// written, for metrics. Unwrap lets http.ResponseController reach the
// connection for flushing and hijacking (upgrades).
type recorder struct {
	http.ResponseWriter
	code    int
	written time.Time
}

func (r *recorder) WriteHeader(code int) {
	if r.code == 0 || r.code == http.StatusSwitchingProtocols {
		r.code = code
		r.written = time.Now()
	}
	r.ResponseWriter.WriteHeader(code)
}

func (r *recorder) Write(b []byte) (int, error) {
	if r.code == 0 {
		r.code = http.StatusOK
		r.written = time.Now()
	}
	return r.ResponseWriter.Write(b)
}

func (r *recorder) Flush() {
	if r.code == 0 {
		r.code = http.StatusOK
		r.written = time.Now()
	}
	if f, ok := r.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

func (r *recorder) Unwrap() http.ResponseWriter { return r.ResponseWriter }

type bufferPool struct{}

var copyBuffers = sync.Pool{New: func() any { b := make([]byte, 32<<10); return &b }}

func (bufferPool) Get() []byte  { return *copyBuffers.Get().(*[]byte) }
func (bufferPool) Put(b []byte) { copyBuffers.Put(&b) }
