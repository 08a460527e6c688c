package proxy

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mvpctl/mvpctl/engine/proxy/internal/proxytest"
)

// testUpstreamLimits are the defaults of Options, for backends made
// directly.
var testUpstreamLimits = upstreamLimits{maxIdle: 2, maxConns: DefaultMaxUpstreamConnsPerBackend, maxObject: DefaultMaxObjectBytes}

// startLimitsEnv is the proxy's TLS listener over a fake apiserver (with
// myapps.example.com/v1alpha1 emulated) with the limits of opts and sopts.
func startLimitsEnv(t *testing.T, opts Options, sopts ServeOptions) (*badInputEnv, *Server) {
	t.Helper()
	f := newFake(t, "a", "v1.36.3", "v1/configmaps",
		"myapps.example.com/v1beta1/customresources", "myapps.example.com/v1beta1/customresources/status")
	opts.Rules.Converter = proxytest.SeedConverter(t)
	p, _ := startProxy(t, opts, f)
	srv := serveProxy(t, p, sopts)
	env := &badInputEnv{
		addr: srv.Addr().String(),
		p:    p,
		fake: f,
		h2: &http.Client{Timeout: badInputTimeout, Transport: &http.Transport{
			TLSClientConfig: &tls.Config{InsecureSkipVerify: true}, ForceAttemptHTTP2: true}},
		h1: &http.Client{Timeout: badInputTimeout, Transport: &http.Transport{
			TLSClientConfig: &tls.Config{InsecureSkipVerify: true, NextProtos: []string{"http/1.1"}},
			TLSNextProto:    map[string]func(string, *tls.Conn) http.RoundTripper{}}},
	}
	t.Cleanup(env.h2.CloseIdleConnections)
	t.Cleanup(env.h1.CloseIdleConnections)
	return env, srv
}

// slowBody opens an HTTP/1.1 connection and sends a POST whose body never
// completes: its headers and first byte only. size < 0 sends it chunked.
func (e *badInputEnv) slowBody(t *testing.T, path string, size int) *tls.Conn {
	t.Helper()
	conn := e.rawConn(t)
	head := "POST " + path + " HTTP/1.1\r\nHost: proxy\r\nContent-Type: application/json\r\n"
	if size < 0 {
		head += "Transfer-Encoding: chunked\r\n\r\n1\r\n{\r\n"
	} else {
		head += fmt.Sprintf("Content-Length: %d\r\n\r\n{", size)
	}
	if _, err := io.WriteString(conn, head); err != nil {
		t.Fatal(err)
	}
	return conn
}

// readResponse reads one response from a raw connection.
func readResponse(t *testing.T, conn net.Conn) (*http.Response, []byte) {
	t.Helper()
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		if isTimeout(err) {
			t.Fatalf("no answer after %s", badInputTimeout)
		}
		t.Fatalf("no answer: %v", err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	return resp, body
}

// Slow bodies from many connections hold at most the budget of buffered
// request bytes; past it the proxy answers 429 with Retry-After at once,
// and requests that need no more than what is left still get through.
func TestProxy_MaxBufferedRequestBytes_SlowBodiesGet429(t *testing.T) {
	const bodySize, holders = 32 << 10, 4
	share := int64(bodySize + 1) // what a body of known length reserves
	env, _ := startLimitsEnv(t, Options{
		MaxRequestBodyBytes:     64 << 10,
		MaxBufferedRequestBytes: holders*share + 4096,
	}, ServeOptions{})

	var slow []net.Conn
	for i := 1; i <= holders; i++ {
		slow = append(slow, env.slowBody(t, plainCMs, bodySize))
		proxytest.Poll(t, fmt.Sprintf("%d slow bodies to hold the budget", i), func() bool {
			return env.p.limits.held.Load() == int64(i)*share
		})
	}
	for _, path := range []string{plainCMs, emulatedCRs} {
		for _, size := range []int{bodySize, -1} {
			resp, body := readResponse(t, env.slowBody(t, path, size))
			st := wantStatus(t, http.StatusTooManyRequests, resp.StatusCode, body)
			if resp.Header.Get("Retry-After") != "1" || st.Details == nil || st.Details.RetryAfterSeconds != 1 {
				t.Errorf("%s (size %d): 429 without Retry-After 1: %v %s", path, size, resp.Header, body)
			}
		}
	}
	if held := env.p.limits.held.Load(); held != holders*share {
		t.Errorf("refused requests hold %d bytes of the budget", held-holders*share)
	}

	for _, c := range []*http.Client{env.h2, env.h1} {
		env.checkServes(t)
		code, _, body := proxytest.Do(t, c, proxytest.NewRequest(t, http.MethodPost, env.url(plainCMs), `{"kind":"ConfigMap"}`, "Content-Type", "application/json"))
		if code != http.StatusOK || answeredBy(t, body) != "a" {
			t.Fatalf("a small POST while the budget is nearly used: %d %s", code, body)
		}
	}

	for _, conn := range slow {
		conn.Close()
	}
	proxytest.Poll(t, "closed connections to return their share", func() bool { return env.p.limits.held.Load() == 0 })
}

// A body that stops arriving ends at the deadline with 408 and returns its
// share of the budget, whatever path reads it: buffered for replay,
// streamed upstream, read whole for emulation; HTTP/1.1 and HTTP/2.
func TestProxy_RequestBodyTimeout_SlowBodyGets408(t *testing.T) {
	env, _ := startLimitsEnv(t, Options{RequestBodyTimeout: 100 * time.Millisecond}, ServeOptions{})
	streamed := replayLimit + 4096
	cases := []struct {
		name string
		path string
		size int // < 0: chunked
	}{
		{"buffered", plainCMs, 1024},
		{"buffered chunked", plainCMs, -1},
		{"streamed upstream", plainCMs, streamed},
		{"emulated", emulatedCRs, 1024},
		{"emulated chunked", emulatedCRs, -1},
	}
	for _, tc := range cases {
		t.Run("HTTP/1.1 "+tc.name, func(t *testing.T) {
			resp, body := readResponse(t, env.slowBody(t, tc.path, tc.size))
			wantStatus(t, http.StatusRequestTimeout, resp.StatusCode, body)
		})
		t.Run("HTTP/2 "+tc.name, func(t *testing.T) {
			pr, pw := io.Pipe()
			defer pw.Close()
			req, err := http.NewRequest(http.MethodPost, env.url(tc.path), pr)
			if err != nil {
				t.Fatal(err)
			}
			req.Header.Set("Content-Type", "application/json")
			req.ContentLength = int64(tc.size)
			go pw.Write([]byte("{"))
			resp, err := env.h2.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.ProtoMajor != 2 {
				t.Fatalf("served over %s", resp.Proto)
			}
			wantStatus(t, http.StatusRequestTimeout, resp.StatusCode, body)
		})
	}
	proxytest.Poll(t, "the budget to be returned", func() bool { return env.p.limits.held.Load() == 0 })
	env.checkServes(t)
}

// The deadline covers the body only: a request whose body arrived in time
// succeeds however long its answer takes. Left on an HTTP/1.1 connection,
// the deadline would cancel the request when it passes. The body is one
// small write, read at once; the deadline is far longer than that read.
func TestProxy_RequestBodyTimeout_LiftedOnceTheBodyArrived(t *testing.T) {
	const timeout = time.Second
	env, _ := startLimitsEnv(t, Options{RequestBodyTimeout: timeout}, ServeOptions{})
	env.fake.setHandler(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		time.Sleep(2 * timeout) // past the deadline, had it stayed
		io.WriteString(w, `{"backend":"a"}`)
	})
	if code, _, body := proxytest.Do(t, env.h1, proxytest.NewRequest(t, http.MethodPost, env.url(plainCMs), `{"kind":"ConfigMap"}`, "Content-Type", "application/json")); code != http.StatusOK {
		t.Fatalf("%d %s", code, body)
	}
}

// deadlineWriter records the read deadlines set through
// http.ResponseController.
type deadlineWriter struct {
	http.ResponseWriter
	set []time.Time
}

func (w *deadlineWriter) SetReadDeadline(t time.Time) error {
	w.set = append(w.set, t)
	return nil
}

// The deadline is set when the proxy starts reading a body and lifted when
// the body ends: once buffered, or for a streamed body when the transport
// reads its end; and not touched again when the handler is done.
func TestPrepareBody_LiftsTheDeadlineAtTheEndOfTheBody(t *testing.T) {
	f := newFake(t, "a", "v1.36.3", "v1/configmaps")
	p, err := New(Options{Backends: []Backend{f.backend(t)}})
	if err != nil {
		t.Fatal(err)
	}
	for _, size := range []int{1024, replayLimit + 4096} {
		w := &deadlineWriter{ResponseWriter: httptest.NewRecorder()}
		r := httptest.NewRequest(http.MethodPost, "/api/v1/namespaces/ns/configmaps", bytes.NewReader(make([]byte, size)))
		done, err := p.prepareBody(w, r, &route{})
		if err != nil {
			t.Fatal(err)
		}
		if len(w.set) == 0 || w.set[0].IsZero() {
			t.Fatalf("%d bytes: no deadline set: %v", size, w.set)
		}
		if n, err := io.Copy(io.Discard, r.Body); err != nil || n != int64(size) {
			t.Fatalf("%d bytes: read %d, %v", size, n, err)
		}
		if len(w.set) != 2 || !w.set[1].IsZero() {
			t.Errorf("%d bytes: the deadline is not lifted at the end of the body: %v", size, w.set)
		}
		done()
		if len(w.set) != 2 {
			t.Errorf("%d bytes: the deadline was touched again: %v", size, w.set)
		}
	}
}

// Past --max-connections the listener stops accepting: a further
// connection gets no answer until one of the open ones closes.
func TestServer_MaxConnections_ExtraConnectionWaits(t *testing.T) {
	env, srv := startLimitsEnv(t, Options{}, ServeOptions{MaxConnections: 2})
	get := func(conn net.Conn) int {
		if _, err := io.WriteString(conn, "GET "+plainCMs+"/x HTTP/1.1\r\nHost: proxy\r\n\r\n"); err != nil {
			t.Error(err)
			return 0
		}
		resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
		if err != nil {
			t.Error(err)
			return 0
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp.StatusCode
	}
	first, second := env.rawConn(t), env.rawConn(t)
	for _, c := range []net.Conn{first, second} {
		if code := get(c); code != http.StatusOK {
			t.Fatalf("GET on an open connection: %d", code)
		}
	}

	var answered atomic.Bool
	third := make(chan int, 1)
	go func() {
		d := &net.Dialer{Deadline: time.Now().Add(badInputTimeout)}
		conn, err := tls.DialWithDialer(d, "tcp", env.addr, &tls.Config{InsecureSkipVerify: true, NextProtos: []string{"http/1.1"}})
		if err != nil {
			t.Error(err)
			third <- 0
			return
		}
		defer conn.Close()
		if err := conn.SetDeadline(time.Now().Add(badInputTimeout)); err != nil {
			t.Error(err)
			third <- 0
			return
		}
		code := get(conn)
		answered.Store(true)
		third <- code
	}()
	proxytest.Poll(t, "the listener to wait for a free connection, or the third connection to be answered", func() bool {
		return srv.ln.waiting.Load() || answered.Load()
	})
	if answered.Load() {
		t.Fatal("a third connection was served while two were open")
	}
	first.Close()
	if code := <-third; code != http.StatusOK {
		t.Fatalf("the third connection, once one closed: %d", code)
	}
	if n := srv.ln.open.Load(); n > 2 {
		t.Errorf("%d connections open", n)
	}
}

// A body of unknown length reserves its buffer as it grows (the old buffer
// counts until it is copied); past the budget the read fails, and release
// returns every byte.
func TestReservation_ReadAll(t *testing.T) {
	l := newBodyLimits(time.Second, 512<<10)
	res := &reservation{l: l}
	body, err := res.readAll(&patternReader{n: 200 << 10}, -1, 1<<20)
	if err != nil || len(body) != 200<<10 {
		t.Fatalf("read %d bytes, %v", len(body), err)
	}
	if held := l.held.Load(); held != 256<<10 {
		t.Errorf("holds %d bytes for a 200 KiB body in a 256 KiB buffer", held)
	}
	other := &reservation{l: l}
	_, err = other.readAll(&patternReader{n: 200 << 10}, -1, 1<<20)
	var budget *bodyBudgetError
	if !errors.As(err, &budget) {
		t.Fatalf("a second body past the budget: %v", err)
	}
	other.release()
	res.release()
	if held := l.held.Load(); held != 0 {
		t.Errorf("%d bytes held after release", held)
	}
	if !l.budget.TryAcquire(512 << 10) {
		t.Error("the whole budget is not free after release")
	}
}

// Each backend's transports cap their connections.
func TestNew_UpstreamConnectionsAreCapped(t *testing.T) {
	f := newFake(t, "a", "v1.36.3", "v1/configmaps")
	for _, tc := range []struct {
		opts           Options
		maxConns, idle int
	}{
		{Options{}, DefaultMaxUpstreamConnsPerBackend, 256},
		{Options{MaxUpstreamConnsPerBackend: 100}, 100, 100},
	} {
		tc.opts.Backends = []Backend{f.backend(t)}
		p, err := New(tc.opts)
		if err != nil {
			t.Fatal(err)
		}
		for _, b := range p.list() {
			for _, u := range []*upstreamPool{b.identity, b.plain} {
				if got := cap(u.budget.slots); got != tc.maxConns || u.h2.MaxIdleConnsPerHost != tc.idle || u.h1.MaxIdleConnsPerHost != tc.idle {
					t.Errorf("%s: budget %d, MaxIdleConnsPerHost %d/%d; want %d, %d", u.name, got, u.h2.MaxIdleConnsPerHost, u.h1.MaxIdleConnsPerHost, tc.maxConns, tc.idle)
				}
			}
			if got := cap(b.own.budget.slots); got != DefaultOwnConnsPerBackend {
				t.Errorf("the proxy's own pool has a budget of %d; want %d", got, DefaultOwnConnsPerBackend)
			}
		}
	}
	if _, err := New(Options{Backends: []Backend{f.backend(t)}, MaxRequestBodyBytes: 4 << 20, MaxBufferedRequestBytes: 4 << 20}); err == nil {
		t.Error("a budget of buffered bytes no larger than one body was accepted")
	}
}

// An object over MaxObjectBytes is refused with a Status that names the
// limit, not truncated into a conversion error.
func TestProxy_MaxObjectBytes(t *testing.T) {
	f := newFake(t, "a", "v1.36.3", "myapps.example.com/v1beta1/customresources")
	big := strings.Replace(proxytest.ServedObject, `"stateless"`, `"stateless","pad":"`+strings.Repeat("x", 4096)+`"`, 1)
	f.setHandler(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		if strings.HasSuffix(r.URL.Path, "/big") {
			io.WriteString(w, big)
			return
		}
		io.WriteString(w, proxytest.ServedObject)
	})
	_, srv := startProxy(t, Options{Rules: Rules{Converter: proxytest.SeedConverter(t)}, MaxObjectBytes: 4096}, f)
	code, _, body := proxytest.Do(t, nil, proxytest.NewRequest(t, http.MethodGet, srv.URL+"/apis/myapps.example.com/v1alpha1/namespaces/ns/customresources/a", ""))
	if code != http.StatusOK {
		t.Fatalf("an object within the limit: %d %s", code, body)
	}
	code, _, body = proxytest.Do(t, nil, proxytest.NewRequest(t, http.MethodGet, srv.URL+"/apis/myapps.example.com/v1alpha1/namespaces/ns/customresources/big", ""))
	st := wantStatus(t, http.StatusInternalServerError, code, body)
	if !strings.Contains(st.Message, "--max-object-bytes") {
		t.Errorf("the Status does not name the limit: %s", st.Message)
	}
}

// Discovery over MaxObjectBytes keeps the backend out of rotation with an
// error that names the limit.
func TestProxy_MaxObjectBytes_Discovery(t *testing.T) {
	f := newFake(t, "a", "v1.36.3", "v1/configmaps", "v1/pods", "v1/secrets", "apps/v1/deployments")
	p, err := New(Options{Backends: []Backend{f.backend(t)}, HealthInterval: 20 * time.Millisecond, MaxObjectBytes: 256})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	p.Run(ctx)
	proxytest.Poll(t, "the discovery error", func() bool {
		return strings.Contains(p.Capabilities().Backends[0].LastError, "--max-object-bytes")
	})
	if p.Capabilities().Backends[0].Ready {
		t.Error("a backend whose discovery was not read is ready")
	}
}
