package proxy

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Connection pools to one backend, the "pool" label of
// mvpctl_proxy_upstream_connections. Each holds one kind of credential, so
// that no connection ever carries requests of two kinds.
const (
	// poolOwn carries the proxy's own requests (health probes, /version,
	// discovery, OpenAPI, CRDs, SubjectAccessReviews) with its own
	// identity: a small budget of its own, never queued behind clients.
	poolOwn = "own"
	// poolImpersonating carries the requests of verified certificate users:
	// the proxy's identity plus Impersonate-* headers.
	poolImpersonating = "impersonating"
	// poolClient carries requests with the client's own credentials (a
	// bearer token, or none), without the proxy's client certificate.
	poolClient = "client"
)

// DefaultOwnConnsPerBackend bounds the connections of the proxy's own
// traffic to one backend. Over HTTP/2 one carries all of it; the rest
// covers HTTP/1.1 backends and a stalled connection.
const DefaultOwnConnsPerBackend = 8

// onBehalfPerBackend bounds the proxy's own requests to one backend that
// clients cause (impersonation checks, OpenAPI revalidation, CRD reads) in
// flight at once: they share the own pool with the health probes and
// discovery reads, and half its connections (over HTTP/1.1, one request
// each) always remain for those.
const onBehalfPerBackend = DefaultOwnConnsPerBackend / 2

// onBehalf takes one of the backend's slots for a request of the proxy's
// own that a client caused, waiting while ctx lasts; release gives it back.
// The client's user first takes its own slot (onBehalfPerUser), so that
// one user's flood of such requests cannot hold every backend slot while
// another user's impersonation check waits.
func (b *backend) onBehalf(ctx context.Context) (release func(), err error) {
	user := shareFrom(ctx)
	if user != nil {
		select {
		case user.behalf <- struct{}{}:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	select {
	case b.behalf <- struct{}{}:
		return func() {
			<-b.behalf
			if user != nil {
				<-user.behalf
			}
		}, nil
	case <-ctx.Done():
		if user != nil {
			<-user.behalf
		}
		return nil, ctx.Err()
	}
}

// DefaultUpstreamConnWait is how long a request waits for a connection when
// its pool's budget is in use, before it is answered 503 with Retry-After.
const DefaultUpstreamConnWait = 5 * time.Second

// h2StreamWindow is the HTTP/2 receive window of one upstream stream: what
// one response may have buffered in the proxy while its client does not
// read. The connection's window (Go's default, 1 GiB) holds more than
// kube-apiserver's streams per connection (100 by default, its
// --http2-max-streams-per-connection) times this, so streams a client stops
// reading never stall the others on their connection.
const h2StreamWindow = 1 << 20

// upstreamPool is one credential kind's connections to one backend: an
// HTTP/2 transport (kube-apiserver offers h2 and allows 100 streams on a
// connection, so thousands of watches share tens of connections) and an HTTP/1.1-only one for upgrades (exec, attach,
// port-forward over SPDY or WebSocket), dialing within one budget.
type upstreamPool struct {
	name   string
	budget *connBudget
	h2     *http.Transport
	h1     *http.Transport
}

func newUpstreamPool(name string, tlsConfig *tls.Config, maxIdle, maxConns int, wait time.Duration) *upstreamPool {
	budget := &connBudget{slots: make(chan struct{}, maxConns), wait: wait,
		dialer: &net.Dialer{Timeout: 5 * time.Second, KeepAlive: 30 * time.Second}}
	h2 := newTransport(tlsConfig.Clone(), budget.dial, maxIdle, true)
	h1 := newTransport(tlsConfig.Clone(), budget.dial, maxIdle, false)
	return &upstreamPool{name: name, budget: budget, h2: h2, h1: h1}
}

// RoundTrip sends an upgrade over HTTP/1.1, anything else over HTTP/2 when
// the backend offers it.
func (u *upstreamPool) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Header.Get("Upgrade") != "" {
		return u.h1.RoundTrip(req)
	}
	return u.h2.RoundTrip(req)
}

func (u *upstreamPool) closeIdle() {
	u.h2.CloseIdleConnections()
	u.h1.CloseIdleConnections()
}

// closeAll closes the pool's connections, idle or not.
func (u *upstreamPool) closeAll() {
	u.closeIdle()
	u.budget.closeAll()
}

// newTransport is a transport tuned for a proxy in front of one server:
// compression is left to the client (otherwise Go asks for gzip on the
// client's behalf and unzips it), and enough idle HTTP/1.1 connections are
// kept that a busy proxy does not dial per request. With h2 it speaks
// HTTP/2 to a server that offers it (ALPN), opening another connection only
// when the open ones carry as many streams as the server allows, and pings
// a connection that has been silent, as client-go does, so that a dead one
// is found; without, HTTP/1.1 only. Its connections are bounded by its
// dialer (connBudget), not here.
func newTransport(tlsConfig *tls.Config, dial func(ctx context.Context, network, addr string) (net.Conn, error), maxIdle int, h2 bool) *http.Transport {
	protocols := new(http.Protocols)
	protocols.SetHTTP1(true)
	tlsConfig.NextProtos = []string{"http/1.1"}
	if h2 {
		protocols.SetHTTP2(true)
		tlsConfig.NextProtos = []string{"h2", "http/1.1"}
	}
	return &http.Transport{
		Proxy:                 nil,
		DialContext:           dial,
		TLSClientConfig:       tlsConfig,
		TLSHandshakeTimeout:   5 * time.Second,
		Protocols:             protocols,
		DisableCompression:    true,
		MaxIdleConns:          maxIdle,
		MaxIdleConnsPerHost:   maxIdle,
		IdleConnTimeout:       90 * time.Second,
		ExpectContinueTimeout: time.Second,
		ReadBufferSize:        32 << 10,
		WriteBufferSize:       32 << 10,
		HTTP2: &http.HTTP2Config{
			MaxReceiveBufferPerStream: h2StreamWindow,
			SendPingTimeout:           30 * time.Second,
			PingTimeout:               15 * time.Second,
		},
	}
}

// connBudget bounds the connections a pool has open: a dial past it waits
// for one to close, at most wait, and then fails with a connBudgetError,
// which the client gets as 503 with Retry-After. The bound is kept here,
// in the dialer, because http.Transport's MaxConnsPerHost does not bound
// HTTP/2 connections and lets requests wait without end.
type connBudget struct {
	slots  chan struct{}
	wait   time.Duration
	dialer *net.Dialer
	waits  atomic.Uint64 // dials that found the budget in use

	mu   sync.Mutex
	live map[*budgetConn]struct{} // for closeAll
}

// connBudgetError is a request that found no connection within its pool's
// budget in time. Nothing was sent.
type connBudgetError struct {
	max  int
	wait time.Duration
}

func (e *connBudgetError) Error() string {
	return fmt.Sprintf("all %d upstream connections of this kind are in use (waited %s; --max-upstream-connections-per-backend)", e.max, e.wait)
}

func (c *connBudget) open() int { return len(c.slots) }

func (c *connBudget) dial(ctx context.Context, network, addr string) (net.Conn, error) {
	select {
	case c.slots <- struct{}{}:
	default:
		c.waits.Add(1)
		t := time.NewTimer(c.wait)
		defer t.Stop()
		select {
		case c.slots <- struct{}{}:
		case <-t.C:
			return nil, &connBudgetError{max: cap(c.slots), wait: c.wait}
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	conn, err := c.dialer.DialContext(ctx, network, addr)
	if err != nil {
		<-c.slots
		return nil, err
	}
	bc := &budgetConn{Conn: conn, budget: c}
	c.mu.Lock()
	if c.live == nil {
		c.live = map[*budgetConn]struct{}{}
	}
	c.live[bc] = struct{}{}
	c.mu.Unlock()
	return bc, nil
}

// closeAll closes every connection of the budget, in use or not: when the
// proxy stops, an HTTP/2 connection whose last stream ended after the
// transports' idle connections were closed would otherwise stay open.
func (c *connBudget) closeAll() {
	c.mu.Lock()
	conns := make([]*budgetConn, 0, len(c.live))
	for bc := range c.live {
		conns = append(conns, bc)
	}
	c.mu.Unlock()
	for _, bc := range conns {
		_ = bc.Close()
	}
}

// budgetConn gives its slot back when it is closed.
type budgetConn struct {
	net.Conn
	budget *connBudget
	once   sync.Once
}

func (c *budgetConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(func() {
		c.budget.mu.Lock()
		delete(c.budget.live, c)
		c.budget.mu.Unlock()
		<-c.budget.slots
	})
	return err
}

// upstreamCollector reports the open upstream connections of every
// backend's pools: one series per backend and pool.
type upstreamCollector struct{ p *Proxy }

var (
	descUpstreamConns = prometheus.NewDesc("mvpctl_proxy_upstream_connections",
		"Connections open to a backend, by pool: own (the proxy's probes, discovery and reviews), impersonating (certificate users), client (clients' own credentials).",
		[]string{"backend", "pool"}, nil)
	descUpstreamWaits = prometheus.NewDesc("mvpctl_proxy_upstream_connection_waits_total",
		"Dials that found the pool's connection budget in use and waited (past the wait: 503).",
		[]string{"backend", "pool"}, nil)
)

func (c upstreamCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- descUpstreamConns
	ch <- descUpstreamWaits
}

func (c upstreamCollector) Collect(ch chan<- prometheus.Metric) {
	for _, b := range c.p.list() {
		for _, u := range b.pools() {
			ch <- prometheus.MustNewConstMetric(descUpstreamConns, prometheus.GaugeValue, float64(u.budget.open()), b.name, u.name)
			ch <- prometheus.MustNewConstMetric(descUpstreamWaits, prometheus.CounterValue, float64(u.budget.waits.Load()), b.name, u.name)
		}
	}
}
