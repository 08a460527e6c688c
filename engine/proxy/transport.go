package proxy

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/http/httptrace"
	"sync/atomic"
	"syscall"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/mvpctl/mvpctl/engine/proxy/internal/emulation"
	"github.com/mvpctl/mvpctl/engine/proxy/internal/response"
)

// routingTransport sends a request to the candidates of its route in turn:
// the next one is tried only when the request cannot have reached the
// previous (nothing was written), or when the previous answered "404 page
// not found" for a resource it had listed (it did not serve the request, so
// nothing happened) and the body can be sent again.
type routingTransport struct{ p *Proxy }

func (t *routingTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	rt := routeFrom(req.Context())
	rt.sent = time.Now()
	var lastErr error
	for i, b := range rt.candidates {
		out := req
		if i > 0 {
			var ok bool
			if out, ok = replay(req); !ok {
				break
			}
		}
		out.URL.Scheme, out.URL.Host = b.url.Scheme, b.url.Host
		// The last line: nothing leaves without the client's identity.
		if err := rt.id.check(out.Header); err != nil {
			return nil, err
		}
		if rt.id.proxy {
			b.setIdentity(out.Header)
		}
		var conn connStory
		out = out.WithContext(httptrace.WithClientTrace(out.Context(), conn.trace()))

		rt.backend = b
		rt.attempts++
		counter := &b.outstanding
		if rt.longRunning {
			counter = &b.longRunning
		}
		counter.Add(1)
		resp, err := b.roundTripper(rt.id.proxy).RoundTrip(out)
		if err != nil {
			counter.Add(-1)
			lastErr = err
			if req.Context().Err() != nil {
				return nil, err
			}
			notSent := !conn.wrote.Load()
			unanswered := conn.reused.Load() && !conn.answered.Load() && isConnectionClosed(err)
			// A pool whose connections are all in use is busy, not down:
			// the backend stays in rotation for everyone else.
			var busy *connBudgetError
			if (notSent || unanswered) && !errors.As(err, &busy) {
				b.markDown(err.Error())
			}
			if (notSent || safeToRepeat(req) || unanswered && repeatableUnanswered(req, rt)) && i+1 < len(rt.candidates) {
				rt.decision = decisionRetried
				t.p.log.Debug("retrying on another backend", "backend", b.name, "path", req.URL.Path, "error", err)
				continue
			}
			return nil, &upstreamError{backend: b.name, err: err, notSent: notSent}
		}
		if resp.StatusCode == http.StatusNotFound && rt.info.IsResourceRequest && isRouteNotFound(resp) {
			// The server has no handler for the resource: nothing happened.
			// Its discovery changed since it was read, or (for a resource no
			// map lists) a server that is not ready yet may serve it.
			b.requestRefresh()
			if rt.known && i+1 < len(rt.candidates) && replayable(req) {
				drain(resp)
				counter.Add(-1)
				rt.decision = decisionRetried
				continue
			}
			if rt.known || t.p.anyNotReady() {
				drain(resp)
				counter.Add(-1)
				rt.decision = decisionUnavailable
				rt.status = http.StatusServiceUnavailable
				rt.received = time.Now()
				t.p.refreshAll()
				return t.p.unavailableResponse(req, fmt.Sprintf("%s is not served by a ready kube-apiserver at the moment", rt.key)), nil
			}
		}
		rt.received = time.Now()
		rt.status = resp.StatusCode
		countUntilClosed(resp, counter)
		return resp, nil
	}
	if lastErr == nil {
		lastErr = errors.New("no backend could take the request")
	}
	return nil, &upstreamError{backend: rt.backend.name, err: lastErr, notSent: true}
}

// connStory is what happened to the connection of one attempt.
type connStory struct{ wrote, reused, answered atomic.Bool }

// trace records the story. net/http retries on a new connection a request
// it could not write on a reused one (headers buffered, flush failed): what
// counts is the last connection's story, so each one starts it afresh.
func (c *connStory) trace() *httptrace.ClientTrace {
	return &httptrace.ClientTrace{
		GetConn: func(string) {
			c.wrote.Store(false)
			c.reused.Store(false)
			c.answered.Store(false)
		},
		GotConn:              func(ci httptrace.GotConnInfo) { c.reused.Store(ci.Reused) },
		WroteHeaders:         func() { c.wrote.Store(true) },
		GotFirstResponseByte: func() { c.answered.Store(true) },
	}
}

// countUntilClosed makes resp take counter, an outstanding-request count,
// back down once its body (or upgraded connection) is closed.
func countUntilClosed(resp *http.Response, counter *atomic.Int64) {
	if resp.StatusCode == http.StatusSwitchingProtocols {
		if rwc, ok := resp.Body.(io.ReadWriteCloser); ok {
			resp.Body = &countedConn{ReadWriteCloser: rwc, counter: counter}
			return
		}
	}
	resp.Body = &countedBody{rc: resp.Body, counter: counter}
}

// safeToRepeat: a read (GET/HEAD, not an upgrade) may be sent again even when
// the connection broke after it was written.
func safeToRepeat(req *http.Request) bool {
	return (req.Method == http.MethodGet || req.Method == http.MethodHead) && req.Header.Get("Upgrade") == ""
}

// isConnectionClosed: the server closed the connection (or reset it).
func isConnectionClosed(err error) bool {
	return errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE)
}

// repeatableUnanswered decides whether a request written on a reused
// connection that the server then closed without answering may go to
// another server. kube-apiserver (Go's http.Server) closes a connection
// without an answer only when it was idle, i.e. it had not read the request
// (a graceful shutdown closing idle keep-alive connections races with a
// request being written), when the request could not be read, or when the
// process dies. Only the last case can have applied the request; a second
// attempt is then harmless for an update (409, its resourceVersion no longer
// matches), a delete (404) or a create with a name (409), and it is not made
// where a repeat would change the outcome: JSON patches and creates with
// generateName (in whatever encoding, see generatesName).
func repeatableUnanswered(req *http.Request, rt *route) bool {
	if !replayable(req) {
		return false
	}
	switch req.Method {
	case http.MethodPut, http.MethodDelete:
		return true
	case http.MethodPatch:
		mt, _, _ := mime.ParseMediaType(req.Header.Get("Content-Type"))
		return mt != "application/json-patch+json"
	case http.MethodPost:
		return rt.bodyBytes != nil && !generatesName(rt.bodyBytes, req.Header.Get("Content-Type"))
	}
	return false
}

func replayable(req *http.Request) bool {
	if req.Body == nil || req.Body == http.NoBody || req.GetBody != nil {
		return true
	}
	rt := routeFrom(req.Context())
	return rt != nil && rt.body != nil && !rt.body.read.Load()
}

// replay clones req for another attempt with a fresh body.
func replay(req *http.Request) (*http.Request, bool) {
	if !replayable(req) {
		return nil, false
	}
	out := req.Clone(req.Context())
	if req.GetBody != nil {
		body, err := req.GetBody()
		if err != nil {
			return nil, false
		}
		out.Body = body
	} else if rt := routeFrom(req.Context()); rt != nil && rt.body != nil {
		// ReverseProxy's wrapper of the body refuses reads once the failed
		// attempt closed it; the tracked body itself ignores Close.
		out.Body = rt.body
	}
	return out, true
}

// routeNotFoundMessage is the message of the Status kube-apiserver answers
// for a resource it has no handler for, in whatever encoding the client asked
// for; a missing object's message names it instead ("configmaps \"x\" not
// found").
var routeNotFoundMessage = []byte("the server could not find the requested resource")

// isRouteNotFound tells the apiserver's 404 for a path it has no handler for
// ("404 page not found", or a Status with routeNotFoundMessage) from a 404
// for a missing object. It peeks at the start of the body and leaves the
// body whole.
func isRouteNotFound(resp *http.Response) bool {
	mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	if mt == "text/plain" {
		return true
	}
	prefix, err := io.ReadAll(io.LimitReader(resp.Body, 4096))
	resp.Body = struct {
		io.Reader
		io.Closer
	}{io.MultiReader(bytes.NewReader(prefix), errReader{err}, resp.Body), resp.Body}
	return bytes.Contains(prefix, routeNotFoundMessage)
}

// errReader returns err (nil: io.EOF, so that MultiReader moves on).
type errReader struct{ err error }

func (e errReader) Read([]byte) (int, error) {
	if e.err == nil {
		return 0, io.EOF
	}
	return 0, e.err
}

func drain(resp *http.Response) {
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	resp.Body.Close()
}

// upstreamError is a request that no backend answered.
type upstreamError struct {
	backend string
	err     error
	notSent bool
}

func (e *upstreamError) Error() string {
	return fmt.Sprintf("backend %s: %v", e.backend, e.err)
}

func (e *upstreamError) Unwrap() error { return e.err }

// errorHandler answers for a request that got no response: 413 for a body
// over the limit, 500 for a request refused for want of its client's
// identity, 503 with Retry-After when the request was never sent (the client
// may repeat it safely), 502 when a connection broke after the request was
// written (it may or may not have been applied).
func (p *Proxy) errorHandler(w http.ResponseWriter, r *http.Request, err error) {
	rt := routeFrom(r.Context())
	var mbe *http.MaxBytesError
	var ie *identityError
	switch {
	case errors.As(err, &mbe):
		p.writeBodyError(w, err)
	case errors.As(err, &ie):
		rt.err = err
		p.log.Error("refused to send a request upstream", "path", r.URL.Path, "error", err)
		response.WriteStatus(w, http.StatusInternalServerError, metav1.StatusReasonInternalError,
			"the proxy refused to send the request: "+err.Error(), 0)
	case errors.Is(err, context.Canceled) && r.Context().Err() != nil:
		// The client went away; nobody reads the answer.
		rt.err = err
		w.WriteHeader(499)
	default:
		rt.err = err
		var ue *upstreamError
		var busy *connBudgetError
		if errors.As(err, &busy) {
			rt.decision = decisionUnavailable
			response.WriteStatus(w, http.StatusServiceUnavailable, metav1.StatusReasonServiceUnavailable,
				"the proxy's connections to the kube-apiservers are all in use: "+busy.Error(), p.opts.RetryAfterSeconds)
			return
		}
		if errors.As(err, &ue) && ue.notSent {
			rt.decision = decisionUnavailable
			response.WriteStatus(w, http.StatusServiceUnavailable, metav1.StatusReasonServiceUnavailable,
				"no kube-apiserver could be reached: "+err.Error(), p.opts.RetryAfterSeconds)
			return
		}
		p.log.Warn("upstream request failed", "path", r.URL.Path, "error", err)
		response.WriteStatus(w, http.StatusBadGateway, metav1.StatusReasonInternalError,
			"the connection to the kube-apiserver broke after the request was sent: "+err.Error(), 0)
	}
}

// modifyResponse keeps watch streams whole: when the backend goes away in
// the middle of a watch, the client sees the stream end cleanly after the
// last complete event (and watches again) instead of a broken stream.
func (p *Proxy) modifyResponse(resp *http.Response) error {
	if err := p.keepWatchEventsWhole(resp); err != nil {
		return err
	}
	return emulation.ConvertResponse(resp)
}

func (p *Proxy) keepWatchEventsWhole(resp *http.Response) error {
	rt := routeFrom(resp.Request.Context())
	if rt == nil || rt.info == nil || rt.info.Verb != "watch" || resp.StatusCode != http.StatusOK {
		return nil
	}
	mt, params, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	var split func([]byte) int
	switch {
	case mt == "application/json":
		split = splitLines
	case mt == "application/vnd.kubernetes.protobuf" && params["stream"] == "watch":
		split = splitLengthPrefixed
	default:
		split = func(b []byte) int { return len(b) }
	}
	resp.Body = &eventBody{rc: resp.Body, split: split}
	return nil
}

// countedBody decrements an outstanding-request counter once, when the
// response body is closed.
type countedBody struct {
	rc      io.ReadCloser
	counter *atomic.Int64
	done    atomic.Bool
}

func (c *countedBody) Read(p []byte) (int, error) { return c.rc.Read(p) }

func (c *countedBody) Close() error {
	if c.done.CompareAndSwap(false, true) {
		c.counter.Add(-1)
	}
	return c.rc.Close()
}

// countedConn is countedBody for an upgraded connection, which must stay an
// io.ReadWriteCloser for httputil.ReverseProxy to splice it.
type countedConn struct {
	io.ReadWriteCloser
	counter *atomic.Int64
	done    atomic.Bool
}

func (c *countedConn) Close() error {
	if c.done.CompareAndSwap(false, true) {
		c.counter.Add(-1)
	}
	return c.ReadWriteCloser.Close()
}

// maxHeldFrame bounds how much of one event is held back waiting for its end;
// beyond it bytes pass through as they come.
const maxHeldFrame = 32 << 20

// eventBody passes a watch stream through whole events at a time (as the
// server sent them, so nothing is delayed) and ends it with io.EOF, dropping
// an incomplete last event, when the backend's stream breaks.
type eventBody struct {
	rc    io.ReadCloser
	split func([]byte) int // length of the complete events at the start
	buf   []byte
	ready int
	err   error
}

func (e *eventBody) Read(p []byte) (int, error) {
	for e.ready == 0 {
		if e.err != nil {
			return 0, e.err
		}
		if len(e.buf) == cap(e.buf) {
			if cap(e.buf) >= maxHeldFrame {
				e.ready = len(e.buf)
				break
			}
			nb := make([]byte, len(e.buf), max(2*cap(e.buf), 32<<10))
			copy(nb, e.buf)
			e.buf = nb
		}
		n, err := e.rc.Read(e.buf[len(e.buf):cap(e.buf)])
		e.buf = e.buf[:len(e.buf)+n]
		e.ready = e.split(e.buf)
		if err != nil {
			// A clean end and a broken connection both end the watch
			// cleanly; the client resumes from the last event it saw.
			e.err = io.EOF
		}
	}
	n := copy(p, e.buf[:e.ready])
	e.buf = e.buf[:copy(e.buf, e.buf[n:])]
	e.ready -= n
	return n, nil
}

func (e *eventBody) Close() error { return e.rc.Close() }

// splitLines: JSON watch events each end with a newline.
func splitLines(b []byte) int { return bytes.LastIndexByte(b, '\n') + 1 }

// splitLengthPrefixed: protobuf watch events are framed by a 4-byte
// big-endian length.
func splitLengthPrefixed(b []byte) int {
	n := 0
	for len(b)-n >= 4 {
		l := int(binary.BigEndian.Uint32(b[n:]))
		if len(b)-n-4 < l {
			break
		}
		n += 4 + l
	}
	return n
}

// requestRefresh asks the poller to read the backend's discovery again.
func (b *backend) requestRefresh() {
	b.refresh.Store(true)
	b.kick()
}
