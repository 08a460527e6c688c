package proxy

import (
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"golang.org/x/sync/semaphore"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/mvpctl/mvpctl/engine/proxy/internal/response"
)

// The proxy's bounds on what clients may hold of it (docs/proxy.md#limits).
const (
	// DefaultRequestBodyTimeout is how long a request body may take to
	// arrive: kube-apiserver's --request-timeout.
	DefaultRequestBodyTimeout = 60 * time.Second
	// DefaultMaxBufferedRequestBytes bounds the request bodies held in
	// memory at once, across all requests.
	DefaultMaxBufferedRequestBytes = 128 << 20
	// DefaultMaxUpstreamConnsPerBackend bounds the connections to one
	// backend, per client connection pool (certificate users impersonated,
	// clients' own credentials). Over HTTP/2 each carries up to the
	// server's stream limit (kube-apiserver: 100) of requests and watches;
	// over HTTP/1.1 (upgrades, a backend without h2) one.
	DefaultMaxUpstreamConnsPerBackend = 1024
	// DefaultMaxObjectBytes bounds one object, Table or discovery document
	// read whole from a backend (etcd's default request limit is 1.5 MiB;
	// Tables and aggregated discovery are larger).
	DefaultMaxObjectBytes = 64 << 20
)

// bodyLimits bounds request bodies: the time they may take to arrive and
// the bytes held in memory across all requests.
type bodyLimits struct {
	timeout time.Duration
	max     int64 // the budget's size
	budget  *semaphore.Weighted
	held    atomic.Int64 // bytes of the budget in use, for the metric
}

func newBodyLimits(timeout time.Duration, budget int64) *bodyLimits {
	return &bodyLimits{timeout: timeout, max: budget, budget: semaphore.NewWeighted(budget)}
}

func (l *bodyLimits) register(reg prometheus.Registerer) error {
	return reg.Register(prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Namespace: "mvpctl", Subsystem: "proxy", Name: "buffered_request_bytes",
		Help: "Bytes of request bodies held in memory, of the --max-buffered-request-bytes budget.",
	}, func() float64 { return float64(l.held.Load()) }))
}

// bodyBudgetError is a request refused because the budget of buffered
// request bytes is in use: 429 with Retry-After, as kube-apiserver answers
// past its max-in-flight.
type bodyBudgetError struct{ budget int64 }

func (e *bodyBudgetError) Error() string {
	return fmt.Sprintf("the proxy holds its limit of %d bytes of request bodies in memory; try again later", e.budget)
}

// reservation is the part of the budget one request holds. Without
// limits it counts nothing.
type reservation struct {
	l     *bodyLimits
	bytes int64
}

func (r *reservation) grow(n int64) error {
	if r.l == nil {
		return nil
	}
	if !r.l.budget.TryAcquire(n) {
		return &bodyBudgetError{budget: r.l.max}
	}
	r.bytes += n
	r.l.held.Add(n)
	return nil
}

// release returns what the request held; the request's buffers are no
// longer used.
func (r *reservation) release() {
	if r == nil || r.l == nil || r.bytes == 0 {
		return
	}
	r.l.budget.Release(r.bytes)
	r.l.held.Add(-r.bytes)
	r.bytes = 0
}

// shrink returns n bytes of the budget: a buffer replaced by a larger one.
func (r *reservation) shrink(n int64) {
	if r.l == nil {
		return
	}
	r.l.budget.Release(n)
	r.l.held.Add(-n)
	r.bytes -= n
}

// readAll reads body into memory, at most max bytes (one more than a
// caller's limit tells a larger body), reserving every byte of buffer
// before it is allocated: for a body of known length all at once, before
// anything is read; for one of unknown length as its buffer grows.
func (r *reservation) readAll(body io.Reader, contentLength, max int64) ([]byte, error) {
	size := min(int64(64<<10), max)
	if contentLength >= 0 {
		size = min(contentLength+1, max) // +1: room to read io.EOF
	}
	if err := r.grow(size); err != nil {
		return nil, err
	}
	buf := make([]byte, 0, size)
	for {
		n, err := body.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		switch {
		case err == io.EOF:
			return buf, nil
		case err != nil:
			return buf, err
		case len(buf) < cap(buf):
			continue
		case int64(len(buf)) >= max:
			return buf, nil
		}
		old, next := int64(cap(buf)), min(2*int64(cap(buf)), max)
		if err := r.grow(next); err != nil {
			return nil, err
		}
		grown := make([]byte, len(buf), next)
		copy(grown, buf)
		buf = grown
		r.shrink(old)
	}
}

// bodyDeadline is the read deadline of one request's body, set when the
// proxy starts reading it. It is lifted as soon as the body has been read,
// and never touched once the handler has returned: left on an HTTP/1.1
// connection, it would cancel the request when it passes (the server
// reads ahead for a closed connection), and an HTTP/2 stream's deadline may
// only be changed while its handler runs.
type bodyDeadline struct {
	rc      *http.ResponseController
	mu      sync.Mutex
	active  bool // a deadline is set and the handler runs
	expired atomic.Bool
}

// startBody sets the read deadline of r's body on w. An emulation's inner
// request, whose body is in memory, and response writers without
// deadlines leave it unset.
func (l *bodyLimits) startBody(w http.ResponseWriter, r *http.Request) *bodyDeadline {
	d := &bodyDeadline{rc: http.NewResponseController(w)}
	if l.timeout > 0 && !isInner(r) && d.rc.SetReadDeadline(time.Now().Add(l.timeout)) == nil {
		d.active = true
	}
	return d
}

// lift clears the deadline: the body was read, or the handler returns.
func (d *bodyDeadline) lift() {
	if d == nil {
		return
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.active {
		d.active = false
		_ = d.rc.SetReadDeadline(time.Time{})
	}
}

// observe notes a read error that is the deadline passing, and lifts the
// deadline at the end of the body.
func (d *bodyDeadline) observe(err error) {
	if err == nil {
		return
	}
	if errors.Is(err, os.ErrDeadlineExceeded) {
		d.expired.Store(true)
	}
	d.lift()
}

// timedOut reports whether reading the body failed at its deadline.
func (d *bodyDeadline) timedOut() bool { return d != nil && d.expired.Load() }

// deadlineBody is a request body that the transport streams upstream: the
// deadline is lifted at its end, from the transport's goroutine, while the
// handler still runs (lift locks against the handler's own lift).
type deadlineBody struct {
	io.ReadCloser
	d *bodyDeadline
}

func (b *deadlineBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	b.d.observe(err)
	return n, err
}

// writeTimeout answers 408 for a body that did not arrive in time.
func (l *bodyLimits) writeTimeout(w http.ResponseWriter) {
	response.WriteStatus(w, http.StatusRequestTimeout, metav1.StatusReasonTimeout,
		fmt.Sprintf("the request body did not arrive within %s", l.timeout), 0)
}

// prepareBody limits the request body (size, deadline, budget) and makes
// it replayable. done lifts the deadline and returns the budget; the
// handler calls it before it returns.
func (p *Proxy) prepareBody(w http.ResponseWriter, r *http.Request, rt *route) (done func(), err error) {
	r.Body = http.MaxBytesReader(w, r.Body, p.opts.MaxRequestBodyBytes)
	res := p.reserve(r)
	rt.deadline = p.limits.startBody(w, r)
	done = func() {
		rt.deadline.lift()
		res.release()
	}
	err = prepareReplay(r, rt, res)
	if err != nil {
		closeUnread(w, r)
	}
	return done, err
}

// closeUnread ends an HTTP/1.x connection after the answer to a request
// whose body was not read to its end (refused, timed out): the server would
// otherwise read the rest of it before answering, which a slow client never
// sends. HTTP/2 ends the stream alone.
func closeUnread(w http.ResponseWriter, r *http.Request) {
	if r.ProtoMajor == 1 {
		w.Header().Set("Connection", "close")
	}
}

// readBody reads a request body whole (an emulated request's, to convert
// it), at most MaxRequestBodyBytes, under the deadline and the budget.
// release returns the budget once body is no longer used.
func (p *Proxy) readBody(w http.ResponseWriter, r *http.Request) (body []byte, release func(), err error) {
	limit := p.opts.MaxRequestBodyBytes
	res := p.reserve(r)
	d := p.limits.startBody(w, r)
	body, err = res.readAll(http.MaxBytesReader(w, r.Body, limit), r.ContentLength, limit+1)
	d.observe(err)
	d.lift()
	if err != nil {
		res.release()
		closeUnread(w, r)
		return nil, func() {}, err
	}
	return body, res.release, nil
}

// reserve starts a request's share of the budget. An emulation's inner
// request carries a body converted from one its client's request already
// holds, so it is not counted twice.
func (p *Proxy) reserve(r *http.Request) *reservation {
	if isInner(r) {
		return &reservation{}
	}
	return &reservation{l: p.limits}
}

// isInner tells the requests an emulation sends through the proxy.
func isInner(r *http.Request) bool {
	_, inner := r.Context().Value(innerKey{}).(*route)
	return inner
}

// defaultLimits fills in the limits opts leaves zero and checks that they
// fit together.
func defaultLimits(o *Options) error {
	if o.RequestBodyTimeout <= 0 {
		o.RequestBodyTimeout = DefaultRequestBodyTimeout
	}
	if o.MaxBufferedRequestBytes <= 0 {
		o.MaxBufferedRequestBytes = DefaultMaxBufferedRequestBytes
	}
	if o.MaxBufferedRequestBytes <= o.MaxRequestBodyBytes {
		return fmt.Errorf("the budget of buffered request bytes (%d) must be larger than the largest request body (%d): an emulated request's body is read whole", o.MaxBufferedRequestBytes, o.MaxRequestBodyBytes)
	}
	if o.MaxUpstreamConnsPerBackend <= 0 {
		o.MaxUpstreamConnsPerBackend = DefaultMaxUpstreamConnsPerBackend
	}
	o.MaxIdleConnsPerBackend = min(o.MaxIdleConnsPerBackend, o.MaxUpstreamConnsPerBackend)
	if o.UpstreamConnWait <= 0 {
		o.UpstreamConnWait = DefaultUpstreamConnWait
	}
	o.Fairness.defaults()
	if o.MaxObjectBytes <= 0 {
		o.MaxObjectBytes = DefaultMaxObjectBytes
	}
	return nil
}

// upstreamErrorHandler answers for a request that got no response when the
// cause is a limit: 408 for a streamed body that did not arrive in time (the
// transport's read of it failed), 500 for an answer over MaxObjectBytes.
// Other failures are errorHandler's.
func (p *Proxy) upstreamErrorHandler(w http.ResponseWriter, r *http.Request, err error) {
	rt := routeFrom(r.Context())
	var big *response.ObjectTooLargeError
	switch {
	case rt != nil && rt.deadline.timedOut():
		rt.err = err
		closeUnread(w, r)
		p.limits.writeTimeout(w)
	case rt != nil && errors.As(err, &big):
		rt.err = err
		response.WriteStatus(w, http.StatusInternalServerError, metav1.StatusReasonInternalError, big.Error(), 0)
	default:
		p.errorHandler(w, r, err)
	}
}

// limitListener accepts at most n connections at once, as
// golang.org/x/net/netutil's LimitListener: past them it stops accepting,
// and new connections wait in the kernel's accept queue until one closes.
// It also tells how many are open and whether it waits.
type limitListener struct {
	net.Listener
	sem       chan struct{}
	done      chan struct{}
	closeOnce sync.Once
	open      atomic.Int64
	waiting   atomic.Bool // every slot is taken and Accept waits for one
	waits     atomic.Uint64
}

func newLimitListener(ln net.Listener, n int) *limitListener {
	return &limitListener{Listener: ln, sem: make(chan struct{}, n), done: make(chan struct{})}
}

func (l *limitListener) register(reg prometheus.Registerer) error {
	for _, c := range []prometheus.Collector{
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Namespace: "mvpctl", Subsystem: "proxy", Name: "open_connections",
			Help: "Client connections open on the proxy's listener (at most --max-connections).",
		}, func() float64 { return float64(l.open.Load()) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{
			Namespace: "mvpctl", Subsystem: "proxy", Name: "connection_limit_waits_total",
			Help: "Times the listener stopped accepting connections because --max-connections were open.",
		}, func() float64 { return float64(l.waits.Load()) }),
	} {
		if err := reg.Register(c); err != nil {
			return err
		}
	}
	return nil
}

// acquire takes a slot, waiting for one when all are taken; false means
// the listener was closed.
func (l *limitListener) acquire() bool {
	select {
	case l.sem <- struct{}{}:
		return true
	default:
	}
	l.waits.Add(1)
	l.waiting.Store(true)
	defer l.waiting.Store(false)
	select {
	case l.sem <- struct{}{}:
		return true
	case <-l.done:
		return false
	}
}

func (l *limitListener) Accept() (net.Conn, error) {
	if !l.acquire() {
		return nil, net.ErrClosed
	}
	c, err := l.Listener.Accept()
	if err != nil {
		<-l.sem
		return nil, err
	}
	l.open.Add(1)
	return &limitConn{Conn: c, l: l}, nil
}

func (l *limitListener) Close() error {
	l.closeOnce.Do(func() { close(l.done) })
	return l.Listener.Close()
}

// limitConn gives its slot back when closed (hijacked connections too:
// upgrades count until they end).
type limitConn struct {
	net.Conn
	l        *limitListener
	released sync.Once
}

func (c *limitConn) Close() error {
	err := c.Conn.Close()
	c.released.Do(func() {
		c.l.open.Add(-1)
		<-c.l.sem
	})
	return err
}

// LoopbackAddress reports whether a listen address (host:port) is on
// loopback only: localhost or a loopback IP. An empty host or an unspecified
// IP listens on every interface.
func LoopbackAddress(listen string) (bool, error) {
	host, _, err := net.SplitHostPort(listen)
	if err != nil {
		return false, err
	}
	if host == "localhost" {
		return true, nil
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback(), nil
}
