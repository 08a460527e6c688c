package proxy

import (
	"bufio"
	"bytes"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/mvpctl/mvpctl/engine/proxy/internal/proxytest"
)

// badInputTimeout bounds every connection and request of these tests; the
// server's own timeouts are far shorter.
const badInputTimeout = 10 * time.Second

// badInputEnv is the proxy's real TLS listener (HTTP/2 and HTTP/1.1) in
// front of a fake apiserver, with the seed rules emulating
// myapps.example.com/v1alpha1.
type badInputEnv struct {
	addr string
	p    *Proxy
	fake *fakeAPIServer
	h2   *http.Client
	h1   *http.Client
}

const (
	emulatedCRs = "/apis/myapps.example.com/v1alpha1/namespaces/ns/customresources"
	plainCMs    = "/api/v1/namespaces/ns/configmaps"
)

func startBadInputEnv(t *testing.T) *badInputEnv {
	t.Helper()
	f := newFake(t, "a", "v1.36.3", "v1/configmaps", "v1/pods", "v1/pods/exec",
		"myapps.example.com/v1beta1/customresources", "myapps.example.com/v1beta1/customresources/status")
	p, _ := startProxy(t, Options{Rules: Rules{Converter: proxytest.SeedConverter(t)}}, f) // served through its TLS listener
	srv := serveProxy(t, p, ServeOptions{ReadHeaderTimeout: 200 * time.Millisecond})
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
	return env
}

func (e *badInputEnv) url(path string) string { return "https://" + e.addr + path }

// checkServes asserts that a normal GET through both protocols still works.
func (e *badInputEnv) checkServes(t *testing.T) {
	t.Helper()
	for _, c := range []*http.Client{e.h2, e.h1} {
		code, _, body := proxytest.Do(t, c, proxytest.NewRequest(t, http.MethodGet, e.url(plainCMs+"/after"), ""))
		if code != http.StatusOK || answeredBy(t, body) != "a" {
			t.Fatalf("a normal GET afterwards: %d %s", code, body)
		}
	}
}

// rawConn is an HTTP/1.1 connection over TLS for what a well-behaved client
// would not send.
func (e *badInputEnv) rawConn(t *testing.T) *tls.Conn {
	t.Helper()
	conn, err := tls.DialWithDialer(&net.Dialer{Timeout: badInputTimeout}, "tcp", e.addr, &tls.Config{InsecureSkipVerify: true, NextProtos: []string{"http/1.1"}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	if err := conn.SetDeadline(time.Now().Add(badInputTimeout)); err != nil {
		t.Fatal(err)
	}
	return conn
}

// rawRoundTrip writes req as is and reads one response; a nil response
// means the server closed the connection without one.
func (e *badInputEnv) rawRoundTrip(t *testing.T, req string) (*http.Response, []byte) {
	t.Helper()
	conn := e.rawConn(t)
	if _, err := io.WriteString(conn, req); err != nil {
		t.Fatalf("write: %v", err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		if isTimeout(err) {
			t.Fatalf("no answer and the connection still open after %s", badInputTimeout)
		}
		return nil, nil
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("reading the answer: %v", err)
	}
	return resp, body
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// wantStatus asserts a metav1.Status answer with code.
func wantStatus(t *testing.T, code int, gotCode int, body []byte, codes ...int) metav1.Status {
	t.Helper()
	var st metav1.Status
	if err := json.Unmarshal(body, &st); err != nil || st.Kind != "Status" {
		t.Fatalf("%d, not a Status: %s", gotCode, truncate(body, 300))
	}
	ok := gotCode == code
	for _, c := range codes {
		ok = ok || gotCode == c
	}
	if !ok || int(st.Code) != gotCode {
		t.Fatalf("got %d (Status code %d) %s, want %d %v", gotCode, st.Code, st.Message, code, codes)
	}
	return st
}

// patternReader yields n bytes of a JSON-ish pattern without holding them,
// counting what was read.
type patternReader struct {
	n, read int64
}

func (r *patternReader) Read(p []byte) (int, error) {
	if r.read >= r.n {
		return 0, io.EOF
	}
	if rem := r.n - r.read; int64(len(p)) > rem {
		p = p[:rem]
	}
	for i := range p {
		p[i] = "0123456789"[i%10]
	}
	atomic.AddInt64(&r.read, int64(len(p)))
	return len(p), nil
}

// TestProxy_BadInput sends what a client should not send, one named case
// at a time, to one proxy behind its TLS listener: each gets the answer
// kube-apiserver would give (or a closed connection), and the proxy serves
// a normal request over both protocols afterwards.
func TestProxy_BadInput(t *testing.T) {
	env := startBadInputEnv(t)
	for _, tc := range []struct {
		name string
		run  func(*testing.T, *badInputEnv)
	}{
		{"MalformedJSONOnAnEmulatedPath", badInputMalformedJSON},
		{"InvalidUTF8OnAnEmulatedPath", badInputInvalidUTF8},
		{"DeeplyNestedJSONOnAnEmulatedPath", badInputDeeplyNestedJSON},
		{"HugeBodyWithItsLength", badInputHugeBodyWithItsLength},
		{"HugeChunkedBodyOverHTTP1", badInputHugeChunkedBodyOverHTTP1},
		{"HugeChunkedBodyOnAnEmulatedPathOverHTTP2", badInputHugeChunkedBodyOnAnEmulatedPath},
		{"TooManyHeaderBytesOverHTTP1", badInputTooManyHeaderBytes},
		{"ManySmallHeadersAreForwarded", badInputManySmallHeaders},
		{"SlowlorisWithoutTLSHandshake", badInputNoTLSHandshake},
		{"SlowlorisHeadersOneByteAtATime", badInputSlowHeaders},
		{"SlowlorisHTTP2HeadersNeverComplete", badInputHTTP2HeadersNeverComplete},
		{"ContentLengthAndTransferEncoding", badInputContentLengthAndTransferEncoding},
		{"UpgradeToAnUnknownProtocolGoesToTheBackend", badInputUnknownUpgrade},
		{"UpgradeToAProtocolThatIsNotASCII", badInputNonASCIIUpgrade},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.run(t, env)
			env.checkServes(t)
		})
	}
}

// emulatedObject is an object of the emulated version with spec.
func emulatedObject(spec string) string {
	return `{"apiVersion":"myapps.example.com/v1alpha1","kind":"Customresource","metadata":{"name":"a"},"spec":` + spec + `}`
}

// post sends body to path over HTTP/2 and returns the answer.
func (e *badInputEnv) post(t *testing.T, path, body string) (int, []byte) {
	t.Helper()
	code, _, data := proxytest.Do(t, e.h2, proxytest.NewRequest(t, http.MethodPost, e.url(path), body, "Content-Type", "application/json"))
	return code, data
}

// Bodies that are not one JSON object are a 400 and never reach the
// backend.
func badInputMalformedJSON(t *testing.T, env *badInputEnv) {
	for _, body := range []string{
		`{"apiVersion":`,
		`[]`,
		`null`,
		`"a string"`,
		"{\"apiVersion\":\"myapps.example.com/v1alpha1\",\"kind\":\"Customresource\",\"metadata\":{\"name\":\"\xff\"}", // unclosed
		emulatedObject(`{"config":{"legacyTimeout":30}`),
		emulatedObject(`{"config":{"legacyTimeout":30}}`) + `{}`,
		emulatedObject(`{"a":1,}`),
		`{"apiVersion":"myapps.example.com/v1alpha1","kind":"Customresource","metadata":{"name":"a"},"spec":{"a":'1'}}`,
	} {
		before := env.fake.hits.Load()
		code, data := env.post(t, emulatedCRs, body)
		wantStatus(t, http.StatusBadRequest, code, data)
		if env.fake.hits.Load() != before {
			t.Errorf("%q reached the backend", body)
		}
	}
}

// Invalid UTF-8 in a string is not malformed for Go's JSON decoders, the
// apiserver's included: the bytes become U+FFFD and validation judges the
// value.
func badInputInvalidUTF8(t *testing.T, env *badInputEnv) {
	code, data := env.post(t, emulatedCRs, emulatedObject("{\"x\":\"\xff\"}"))
	var e echo
	if err := json.Unmarshal(data, &e); err != nil || code != http.StatusOK || !strings.Contains(e.Body, "\"x\":\"\ufffd\"") {
		t.Fatalf("%d %s, want the object forwarded with U+FFFD", code, data)
	}
}

// JSON nested 10,000 deep is refused before it reaches the backend.
func badInputDeeplyNestedJSON(t *testing.T, env *badInputEnv) {
	const depth = 10000
	before := env.fake.hits.Load()
	code, data := env.post(t, emulatedCRs, emulatedObject(strings.Repeat(`{"a":`, depth)+"1"+strings.Repeat("}", depth)))
	wantStatus(t, http.StatusBadRequest, code, data, http.StatusUnprocessableEntity)
	if env.fake.hits.Load() != before {
		t.Errorf("the object reached the backend")
	}
}

// A declared length over the limit is a 413 before the body is read.
func badInputHugeBodyWithItsLength(t *testing.T, env *badInputEnv) {
	body := &patternReader{n: 100 << 20}
	req, err := http.NewRequest(http.MethodPost, env.url(plainCMs), body)
	if err != nil {
		t.Fatal(err)
	}
	req.ContentLength = body.n
	code, _, data := proxytest.Do(t, env.h2, req)
	wantStatus(t, http.StatusRequestEntityTooLarge, code, data)
}

// A chunked body over the limit is cut where the limit is reached: a 413,
// and the server stops reading long before the client's 100 MiB.
func badInputHugeChunkedBodyOverHTTP1(t *testing.T, env *badInputEnv) {
	conn := env.rawConn(t)
	var sent atomic.Int64
	wrote := make(chan struct{})
	go func() {
		defer close(wrote)
		if _, err := fmt.Fprintf(conn, "POST %s HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n", plainCMs); err != nil {
			return
		}
		chunk := []byte(fmt.Sprintf("8000\r\n%s\r\n", strings.Repeat("0", 0x8000)))
		for sent.Load() < 100<<20 {
			if _, err := conn.Write(chunk); err != nil {
				return
			}
			sent.Add(0x8000)
		}
		io.WriteString(conn, "0\r\n\r\n")
	}()
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatalf("no answer: %v", err)
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	conn.Close()
	<-wrote
	if err != nil {
		t.Fatalf("reading the answer: %v", err)
	}
	wantStatus(t, http.StatusRequestEntityTooLarge, resp.StatusCode, body)
	if sent.Load() >= 100<<20 {
		t.Errorf("the server read the whole 100 MiB")
	}
}

// The same over HTTP/2 on an emulated path, whose body is read whole.
func badInputHugeChunkedBodyOnAnEmulatedPath(t *testing.T, env *badInputEnv) {
	body := &patternReader{n: 100 << 20}
	req, err := http.NewRequest(http.MethodPost, env.url(emulatedCRs), io.NopCloser(body))
	if err != nil {
		t.Fatal(err)
	}
	req.ContentLength = -1
	code, _, data := proxytest.Do(t, env.h2, req)
	wantStatus(t, http.StatusRequestEntityTooLarge, code, data)
	if atomic.LoadInt64(&body.read) >= body.n {
		t.Errorf("the server read the whole 100 MiB")
	}
}

// 10,000 headers over 1 MiB are refused with a 431 or a closed connection.
func badInputTooManyHeaderBytes(t *testing.T, env *badInputEnv) {
	var b strings.Builder
	fmt.Fprintf(&b, "GET %s HTTP/1.1\r\nHost: x\r\n", plainCMs)
	for i := range 10000 {
		fmt.Fprintf(&b, "X-Bad-%05d: %s\r\n", i, strings.Repeat("v", 100))
	}
	b.WriteString("\r\n")
	resp, _ := env.rawRoundTrip(t, b.String())
	if resp != nil && resp.StatusCode != http.StatusRequestHeaderFieldsTooLarge {
		t.Fatalf("got %s, want 431 or a closed connection", resp.Status)
	}
}

// 10,000 small headers, under the 1 MiB header limit (kube-apiserver's
// too), are passed on like any others, over both protocols.
func badInputManySmallHeaders(t *testing.T, env *badInputEnv) {
	defer env.fake.setHandler(nil)
	for _, c := range []*http.Client{env.h2, env.h1} {
		got := make(chan int, 1)
		env.fake.setHandler(func(w http.ResponseWriter, r *http.Request) {
			// The proxy may send a GET again when its first connection
			// broke: keep the first count.
			select {
			case got <- len(r.Header):
			default:
			}
			w.Header().Set("Content-Type", "application/json")
			io.WriteString(w, `{"kind":"ConfigMap"}`)
		})
		header := make([]string, 0, 2*10000)
		for i := range 10000 {
			header = append(header, fmt.Sprintf("X-Many-%05d", i), "v")
		}
		code, _, body := proxytest.Do(t, c, proxytest.NewRequest(t, http.MethodGet, env.url(plainCMs+"/many"), "", header...))
		if code != http.StatusOK {
			t.Fatalf("%d: %s", code, body)
		}
		if n := <-got; n < 10000 {
			t.Errorf("the backend got %d headers", n)
		}
	}
}

// A connection that never starts its TLS handshake is closed.
func badInputNoTLSHandshake(t *testing.T, env *badInputEnv) {
	conn, err := net.DialTimeout("tcp", env.addr, badInputTimeout)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if err := conn.SetReadDeadline(time.Now().Add(badInputTimeout)); err != nil {
		t.Fatal(err)
	}
	if _, err := io.ReadAll(conn); isTimeout(err) {
		t.Fatalf("still open after %s", badInputTimeout)
	}
}

// Headers sent one byte at a time are cut at the header timeout: the
// server closes the connection long before the request is complete.
func badInputSlowHeaders(t *testing.T, env *badInputEnv) {
	conn := env.rawConn(t)
	req := "GET " + plainCMs + " HTTP/1.1\r\nHost: x\r\n" + strings.Repeat("X-Slow: y\r\n", 1000)
	closed := make(chan error, 1)
	go func() {
		_, err := io.ReadAll(conn)
		closed <- err
	}()
	for i := 0; i < len(req); i++ {
		if _, err := conn.Write([]byte{req[i]}); err != nil {
			break
		}
		select {
		case err := <-closed:
			if isTimeout(err) {
				t.Fatalf("still open after %s", badInputTimeout)
			}
			return
		case <-time.After(20 * time.Millisecond): // the pace of the slow client
		}
	}
	t.Fatal("the server read the whole slow request")
}

// HTTP/2 has no header timeout: a connection without a whole request is
// idle, and closed after IdleTimeout.
func badInputHTTP2HeadersNeverComplete(t *testing.T, env *badInputEnv) {
	srv := serveProxy(t, env.p, ServeOptions{IdleTimeout: 300 * time.Millisecond})
	conn, err := tls.DialWithDialer(&net.Dialer{Timeout: badInputTimeout}, "tcp", srv.Addr().String(), &tls.Config{InsecureSkipVerify: true, NextProtos: []string{"h2"}})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if err := conn.SetDeadline(time.Now().Add(badInputTimeout)); err != nil {
		t.Fatal(err)
	}
	if _, err := io.WriteString(conn, http2.ClientPreface); err != nil {
		t.Fatal(err)
	}
	fr := http2.NewFramer(conn, conn)
	if err := fr.WriteSettings(); err != nil {
		t.Fatal(err)
	}
	var block bytes.Buffer
	enc := hpack.NewEncoder(&block)
	for _, f := range []hpack.HeaderField{{Name: ":method", Value: "GET"}, {Name: ":scheme", Value: "https"}, {Name: ":path", Value: plainCMs}} {
		if err := enc.WriteField(f); err != nil {
			t.Fatal(err)
		}
	}
	// No END_HEADERS, and no CONTINUATION.
	if err := fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 1, BlockFragment: block.Bytes(), EndStream: true}); err != nil {
		t.Fatal(err)
	}
	for {
		f, err := fr.ReadFrame()
		if isTimeout(err) {
			t.Fatalf("still open after %s", badInputTimeout)
		}
		if err != nil {
			return // closed
		}
		if h, ok := f.(*http2.HeadersFrame); ok {
			t.Fatalf("the incomplete request was answered: %v", h)
		}
	}
}

// Go's server, kube-apiserver's too, lets Transfer-Encoding win over
// Content-Length and drops the latter (RFC 9112 6.3); the proxy forwards
// the body it read, so the backend sees one framing.
func badInputContentLengthAndTransferEncoding(t *testing.T, env *badInputEnv) {
	type seen struct {
		length int64
		te     []string
		body   string
	}
	got := make(chan seen, 1)
	env.fake.setHandler(func(w http.ResponseWriter, r *http.Request) {
		b, err := io.ReadAll(r.Body)
		if err != nil {
			t.Errorf("the backend reading the body: %v", err)
		}
		got <- seen{r.ContentLength, r.TransferEncoding, string(b)}
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"kind":"ConfigMap"}`)
	})
	defer env.fake.setHandler(nil)
	resp, body := env.rawRoundTrip(t, "POST "+plainCMs+" HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"+
		"Content-Length: 40\r\nTransfer-Encoding: chunked\r\n\r\n2\r\n{}\r\n0\r\n\r\n")
	if resp == nil || resp.StatusCode == http.StatusBadRequest {
		return // closed, or refused: as good
	}
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("got %s %s, want 400, a closed connection, or the chunked body forwarded", resp.Status, body)
	}
	// net/http's client writes one framing, never both headers.
	if s := <-got; s.body != "{}" || !(s.length == 2 || len(s.te) == 1 && s.te[0] == "chunked") {
		t.Errorf("the backend got %+v, want the 2-byte chunked body", s)
	}
}

// As in kube-apiserver, only stream subresources upgrade, and the node
// answers an unknown protocol there; anywhere else the header is ignored:
// either way the backend answers.
func badInputUnknownUpgrade(t *testing.T, env *badInputEnv) {
	got := make(chan http.Header, 1)
	env.fake.setHandler(func(w http.ResponseWriter, r *http.Request) {
		got <- r.Header.Clone()
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusBadRequest)
		io.WriteString(w, `{"kind":"Status","apiVersion":"v1","status":"Failure","message":"unable to upgrade: missing upgrade headers in request","reason":"BadRequest","code":400}`)
	})
	defer env.fake.setHandler(nil)
	for _, path := range []string{plainCMs + "/up", "/api/v1/namespaces/ns/pods/p/exec?command=ls"} {
		resp, body := env.rawRoundTrip(t, "GET "+path+" HTTP/1.1\r\nHost: x\r\nConnection: Upgrade\r\nUpgrade: foo/1\r\n\r\n")
		if resp == nil {
			t.Fatal("connection closed without an answer")
		}
		h := <-got
		if resp.StatusCode != http.StatusBadRequest || !strings.Contains(string(body), "unable to upgrade") {
			t.Errorf("%s: got %s %s, want the backend's answer", path, resp.Status, body)
		}
		if h.Get("Upgrade") != "foo/1" || !strings.EqualFold(h.Get("Connection"), "upgrade") {
			t.Errorf("%s: the backend got Upgrade %q, Connection %q", path, h.Get("Upgrade"), h.Get("Connection"))
		}
	}
}

// An Upgrade protocol that is not printable ASCII is the client's
// malformed request: a 400, not the 502 httputil.ReverseProxy would cause.
func badInputNonASCIIUpgrade(t *testing.T, env *badInputEnv) {
	resp, body := env.rawRoundTrip(t, "GET "+plainCMs+"/up HTTP/1.1\r\nHost: x\r\nConnection: Upgrade\r\nUpgrade: \xab\r\n\r\n")
	if resp == nil {
		t.Fatal("connection closed without an answer")
	}
	wantStatus(t, http.StatusBadRequest, resp.StatusCode, body)
}
