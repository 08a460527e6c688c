package proxy

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	certutil "k8s.io/client-go/util/cert"

	"github.com/mvpctl/mvpctl/engine/proxy/internal/proxytest"
)

// The overhead benchmarks compare mvpctl's handler with a bare
// httputil.ReverseProxy in the same run, against one TLS backend that
// answers like kube-apiserver: a GET of a ~5 KB ConfigMap and a LIST of 500
// of them (2.5 MB, chunked). The bare proxy is the e2e benchmark's
// (e2e/proxy/bareproxy -tuned): the same upstream transport settings
// (HTTP/1.1, no compression, 256 idle connections), FlushInterval -1.
//
// A second baseline, floor, is a ReverseProxy with exactly mvpctl's
// transport, copy buffers and flushing: mvpctl minus floor is what the
// proxy's own code costs.
//
// The sides are measured in alternating phases and each reports its own
// figures: wall and CPU time (the process's, from getrusage: proxy, backend
// and client together) per request and allocations per request (at
// concurrency 1), plus mvpctl's ratios to bare and to floor. Two ways in:
//
//   - handler: ServeHTTP called in-process with a discarding
//     ResponseWriter: what the proxy's own code adds, without the client's
//     TLS and HTTP/2.
//   - h2: through the proxy's TLS listener (NewServer) with an HTTP/2
//     client, as client-go reaches it.
//   - code: ServeHTTP in-process, and the upstream transports answer from
//     memory (RegisterProtocol) instead of the network: the proxies' own
//     code alone, with little noise.
//
// go test ./engine/proxy -run '^$' -bench Overhead -benchtime 2000x -count 3

const benchNamespacePath = "/api/v1/namespaces/bench/configmaps"

// benchBackend is a TLS kube-apiserver stand-in: discovery and health from
// fakeAPIServer, the ConfigMaps answered from memory.
type benchBackend struct {
	srv  *httptest.Server
	item []byte // one ConfigMap
	list []byte // the LIST of 500
}

func newBenchBackend(b *testing.B) *benchBackend {
	b.Helper()
	payload := strings.Repeat("0123456789abcdef", 5000/16)
	cm := func(i int) string {
		return fmt.Sprintf(`{"kind":"ConfigMap","apiVersion":"v1","metadata":{"name":"cm-%03d","namespace":"bench","uid":"0b0e4a2c-1c0e-4f6b-9d7e-6d1b0d3f2a11","resourceVersion":"%d","creationTimestamp":"2026-11-29T18:55:07Z","managedFields":[{"manager":"bench","operation":"Update","apiVersion":"v1","time":"2026-11-29T18:55:07Z","fieldsType":"FieldsV1","fieldsV1":{"f:data":{".":{},"f:payload":{}}}}]},"data":{"payload":%q}}`, i, 1000+i, payload)
	}
	bb := &benchBackend{item: []byte(cm(1))}
	var list strings.Builder
	list.WriteString(`{"kind":"ConfigMapList","apiVersion":"v1","metadata":{"resourceVersion":"2000"},"items":[`)
	for i := range 500 {
		if i > 0 {
			list.WriteByte(',')
		}
		list.WriteString(cm(i))
	}
	list.WriteString("]}\n")
	bb.list = []byte(list.String())

	fake := &fakeAPIServer{name: "bench", gitVersion: "v1.35.4", served: []string{"v1/configmaps"}, requests: make(chan *http.Request, 1)}
	bb.srv = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.URL.Path == benchNamespacePath:
			// kube-apiserver streams a LIST: chunked, no Content-Length.
			w.Header().Set("Content-Type", "application/json")
			for rest := bb.list; len(rest) > 0; {
				n := min(len(rest), 32<<10)
				w.Write(rest[:n])
				rest = rest[n:]
			}
		case strings.HasPrefix(r.URL.Path, benchNamespacePath+"/"):
			w.Header().Set("Content-Type", "application/json")
			w.Header().Set("Content-Length", strconv.Itoa(len(bb.item)))
			w.Write(bb.item)
		default:
			fake.ServeHTTP(w, r)
		}
	}))
	bb.srv.StartTLS()
	b.Cleanup(bb.srv.Close)
	return bb
}

func (bb *benchBackend) backend(b *testing.B) Backend {
	b.Helper()
	u, err := url.Parse(bb.srv.URL)
	if err != nil {
		b.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AddCert(bb.srv.Certificate())
	return Backend{Name: "bench", URL: u, TLS: &tls.Config{RootCAs: pool}}
}

// benchMvpctl is mvpctl's handler over bb, ready.
func benchMvpctl(b *testing.B, bb *benchBackend) *Proxy {
	b.Helper()
	p, err := New(Options{Backends: []Backend{bb.backend(b)}})
	if err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	b.Cleanup(cancel)
	p.Run(ctx)
	if err := p.WaitReady(ctx); err != nil {
		b.Fatal(err)
	}
	proxytest.Poll(b, "the backend serving configmaps", func() bool { return p.serves(gvr{"", "v1", "configmaps"}) })
	return p
}

// benchFloor is httputil.ReverseProxy with exactly mvpctl's upstream
// transport, copy buffers and flushing, and nothing else: what mvpctl's own
// code (routing, capability checks, retries, metrics) adds is the
// difference to it.
func benchFloor(b *testing.B, bb *benchBackend) http.Handler {
	b.Helper()
	be := bb.backend(b)
	tr := newTransport(be.TLS.Clone(), (&net.Dialer{}).DialContext, 256, true)
	b.Cleanup(tr.CloseIdleConnections)
	return &httputil.ReverseProxy{
		Rewrite:    func(pr *httputil.ProxyRequest) { pr.SetURL(be.URL); pr.SetXForwarded(); pr.Out.Host = "" },
		Transport:  tr,
		BufferPool: bufferPool{},
	}
}

// benchBare is e2e/proxy/bareproxy -tuned over bb.
func benchBare(b *testing.B, bb *benchBackend) http.Handler {
	b.Helper()
	be := bb.backend(b)
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.TLSClientConfig = be.TLS.Clone()
	tr.ForceAttemptHTTP2 = false
	tr.TLSNextProto = map[string]func(string, *tls.Conn) http.RoundTripper{}
	tr.TLSClientConfig.NextProtos = []string{"http/1.1"}
	tr.DisableCompression = true
	tr.MaxIdleConns, tr.MaxIdleConnsPerHost = 256, 256
	b.Cleanup(tr.CloseIdleConnections)
	rp := httputil.NewSingleHostReverseProxy(be.URL)
	rp.Transport = tr
	rp.FlushInterval = -1
	return rp
}

// cannedResponses answers from memory what benchBackend would answer.
type cannedResponses struct{ bb *benchBackend }

func (c cannedResponses) RoundTrip(r *http.Request) (*http.Response, error) {
	body := c.bb.item
	h := http.Header{"Content-Type": {"application/json"}, "Audit-Id": {"0b0e4a2c-1c0e-4f6b-9d7e-6d1b0d3f2a11"}}
	n := int64(len(body))
	if r.URL.Path == benchNamespacePath {
		body, n = c.bb.list, -1
	} else {
		h.Set("Content-Length", strconv.Itoa(len(body)))
	}
	return &http.Response{
		StatusCode: http.StatusOK, Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		Header: h, Body: io.NopCloser(bytes.NewReader(body)), ContentLength: n, Request: r,
	}, nil
}

// discardWriter is a ResponseWriter that keeps only the status.
type discardWriter struct {
	h    http.Header
	code int
}

func (d *discardWriter) Header() http.Header         { return d.h }
func (d *discardWriter) Write(p []byte) (int, error) { return len(p), nil }
func (d *discardWriter) WriteHeader(code int) {
	if d.code == 0 {
		d.code = code
	}
}
func (d *discardWriter) Flush() {}

// overheadSide is one way of sending a request, and what it cost.
type overheadSide struct {
	name      string
	do        func() error // one request, response read and checked
	wall, cpu time.Duration
	n         int
	allocs    float64
}

// handlerSide sends requests in-process to h.
func handlerSide(name string, h http.Handler, path string) *overheadSide {
	return &overheadSide{name: name, do: func() error {
		r := httptest.NewRequest(http.MethodGet, path, nil)
		r.Header.Set("Authorization", "Bearer bench")
		r.Header.Set("Accept", "application/json")
		w := &discardWriter{h: http.Header{}}
		h.ServeHTTP(w, r)
		if w.code != 0 && w.code != http.StatusOK {
			return fmt.Errorf("%s %s: HTTP %d", name, path, w.code)
		}
		return nil
	}}
}

// h2Side serves h on the proxy's TLS listener and sends requests to it over
// HTTP/2.
func h2Side(b *testing.B, name string, h http.Handler, path string) *overheadSide {
	b.Helper()
	s := serveProxy(b, h, ServeOptions{})
	pool, err := certutil.NewPoolFromBytes(s.CACertPEM())
	if err != nil {
		b.Fatal(err)
	}
	tr := &http.Transport{
		TLSClientConfig:     &tls.Config{RootCAs: pool},
		ForceAttemptHTTP2:   true,
		MaxIdleConnsPerHost: 64,
		DisableCompression:  true,
	}
	b.Cleanup(tr.CloseIdleConnections)
	client := &http.Client{Transport: tr}
	u := "https://" + s.Addr().String() + path
	return &overheadSide{name: name, do: func() error {
		req, err := http.NewRequest(http.MethodGet, u, nil)
		if err != nil {
			return err
		}
		req.Header.Set("Authorization", "Bearer bench")
		req.Header.Set("Accept", "application/json")
		resp, err := client.Do(req)
		if err != nil {
			return err
		}
		_, err = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if err == nil && resp.StatusCode != http.StatusOK {
			err = fmt.Errorf("%s: HTTP %d", name, resp.StatusCode)
		}
		if err == nil && resp.ProtoMajor != 2 {
			err = fmt.Errorf("%s: %s, want HTTP/2", name, resp.Proto)
		}
		return err
	}}
}

func processCPU() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// runOverhead sends b.N requests through each side, conc at a time, in
// alternating phases, and reports each side's wall and CPU time and
// allocations per request, and the last side's ratios to each other.
func runOverhead(b *testing.B, conc int, sides ...*overheadSide) {
	b.Helper()
	for _, s := range sides {
		for range 50 { // connections, pools, capability checks
			if err := s.do(); err != nil {
				b.Fatal(err)
			}
		}
		if conc == 1 {
			s.allocs = testing.AllocsPerRun(100, func() {
				if err := s.do(); err != nil {
					b.Fatal(err)
				}
			})
		}
	}
	phase := max(32*conc, 64)
	b.ReportAllocs()
	b.ResetTimer()
	for done := 0; done < b.N; done += phase {
		k := min(phase, b.N-done)
		for _, s := range sides {
			cpu0, t0 := processCPU(), time.Now()
			var wg sync.WaitGroup
			var mu sync.Mutex
			var firstErr error
			for w := range conc {
				n := k / conc
				if w < k%conc {
					n++
				}
				wg.Go(func() {
					for range n {
						if err := s.do(); err != nil {
							mu.Lock()
							firstErr = err
							mu.Unlock()
							return
						}
					}
				})
			}
			wg.Wait()
			if firstErr != nil {
				b.Fatal(firstErr)
			}
			s.wall += time.Since(t0)
			s.cpu += processCPU() - cpu0
			s.n += k
		}
	}
	b.StopTimer()
	for _, s := range sides {
		b.ReportMetric(float64(s.wall.Nanoseconds())/float64(s.n), s.name+"-ns/req")
		b.ReportMetric(float64(s.cpu.Nanoseconds())/float64(s.n), s.name+"-cpu-ns/req")
		if conc == 1 {
			b.ReportMetric(s.allocs, s.name+"-allocs/req")
		}
	}
	last := sides[len(sides)-1]
	for _, s := range sides[:len(sides)-1] {
		b.ReportMetric((float64(last.wall)/float64(last.n))/(float64(s.wall)/float64(s.n)), last.name+"/"+s.name+"-wall")
		b.ReportMetric((float64(last.cpu)/float64(last.n))/(float64(s.cpu)/float64(s.n)), last.name+"/"+s.name+"-cpu")
	}
}

func BenchmarkOverhead(b *testing.B) {
	bb := newBenchBackend(b)
	p := benchMvpctl(b, bb)
	bare, floor := benchBare(b, bb), benchFloor(b, bb)

	// The same proxies with upstream transports that answer from memory.
	cannedBB := newBenchBackend(b)
	cannedP := benchMvpctl(b, cannedBB)
	for _, be := range cannedP.list() {
		canned := newTransport(be.plain.h1.TLSClientConfig.Clone(), (&net.Dialer{}).DialContext, 256, false)
		canned.RegisterProtocol("https", cannedResponses{cannedBB})
		be.plain.h2 = canned
	}
	cannedBare, cannedFloor := benchBare(b, cannedBB), benchFloor(b, cannedBB)
	cannedBare.(*httputil.ReverseProxy).Transport.(*http.Transport).RegisterProtocol("https", cannedResponses{cannedBB})
	cannedFloorTr := newTransport(cannedBB.backend(b).TLS.Clone(), (&net.Dialer{}).DialContext, 256, false)
	cannedFloorTr.RegisterProtocol("https", cannedResponses{cannedBB})
	cannedFloor.(*httputil.ReverseProxy).Transport = cannedFloorTr
	get := benchNamespacePath + "/cm-001"
	for _, sc := range []struct {
		name string
		path string
		conc int
	}{
		{"GET/c1", get, 1},
		{"GET/c16", get, 16},
		{"LIST/c4", benchNamespacePath, 4},
	} {
		b.Run("handler/"+sc.name, func(b *testing.B) {
			runOverhead(b, sc.conc, handlerSide("bare", bare, sc.path), handlerSide("floor", floor, sc.path), handlerSide("mvpctl", p, sc.path))
		})
		if sc.conc == 1 || sc.name == "LIST/c4" {
			b.Run("code/"+strings.Split(sc.name, "/")[0], func(b *testing.B) {
				runOverhead(b, 1, handlerSide("bare", cannedBare, sc.path), handlerSide("floor", cannedFloor, sc.path), handlerSide("mvpctl", cannedP, sc.path))
			})
		}
		b.Run("h2/"+sc.name, func(b *testing.B) {
			runOverhead(b, sc.conc, h2Side(b, "bare", bare, sc.path), h2Side(b, "floor", floor, sc.path), h2Side(b, "mvpctl", p, sc.path))
		})
	}
}
