package proxy

import (
	"bytes"
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer/protobuf"

	"github.com/mvpctl/mvpctl/engine/proxy/internal/proxytest"
	"github.com/mvpctl/mvpctl/rules"
)

// protobufConfigMap encodes a ConfigMap as client-go's typed clients send
// it.
func protobufConfigMap(t *testing.T, meta metav1.ObjectMeta) []byte {
	t.Helper()
	scheme := runtime.NewScheme()
	if err := corev1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	cm := &corev1.ConfigMap{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"}, ObjectMeta: meta, Data: map[string]string{"k": "generateName"}}
	var buf bytes.Buffer
	if err := protobuf.NewSerializer(scheme, scheme).Encode(cm, &buf); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func TestGeneratesName(t *testing.T) {
	const pb = "application/vnd.kubernetes.protobuf"
	for _, tc := range []struct {
		name, contentType string
		body              []byte
		want              bool
	}{
		{"JSON generateName", "application/json", []byte(`{"kind":"ConfigMap","metadata":{"generateName":"x-"}}`), true},
		{"JSON name", "application/json", []byte(`{"kind":"ConfigMap","metadata":{"name":"x"}}`), false},
		{"JSON generateName of a template only", "application/json", []byte(`{"kind":"Job","metadata":{"name":"j"},"spec":{"template":{"metadata":{"generateName":"p-"}}}}`), false},
		{"JSON with charset", "application/json; charset=utf-8", []byte(`{"metadata":{"generateName":"x-"}}`), true},
		{"YAML generateName", "application/yaml", []byte("kind: ConfigMap\nmetadata:\n  generateName: x-\n"), true},
		{"YAML name", "application/yaml", []byte("kind: ConfigMap\nmetadata:\n  name: x\n"), false},
		{"protobuf generateName", pb, protobufConfigMap(t, metav1.ObjectMeta{GenerateName: "gen-", Annotations: map[string]string{"a": "b"}}), true},
		{"protobuf name", pb, protobufConfigMap(t, metav1.ObjectMeta{Name: "x", Annotations: map[string]string{"a": "generateName"}}), false},
		{"protobuf name and generateName", pb, protobufConfigMap(t, metav1.ObjectMeta{Name: "x", GenerateName: "x-"}), true},
		{"protobuf without the magic", pb, []byte("\x0a\x02hi"), true},
		{"protobuf truncated", pb, protobufConfigMap(t, metav1.ObjectMeta{Name: "x"})[:12], true},
		{"JSON that does not parse", "application/json", []byte(`{"metadata":`), true},
		{"CBOR, not read", "application/cbor", []byte{0xa1}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := generatesName(tc.body, tc.contentType); got != tc.want {
				t.Errorf("generatesName = %v, want %v", got, tc.want)
			}
		})
	}
}

// A create that reached a server that died without answering is sent on
// only when it names its object: a protobuf generateName create (what
// client-go sends) would otherwise be applied twice.
func TestProxy_UnansweredProtobufCreateIsRepeatedOnlyWithAName(t *testing.T) {
	for _, tc := range []struct {
		name     string
		meta     metav1.ObjectMeta
		repeated bool
	}{
		{"generateName", metav1.ObjectMeta{GenerateName: "gen-"}, false},
		{"name", metav1.ObjectMeta{Name: "named"}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			closing := closingBackend(t)
			alive := newFake(t, "alive", "v1.35.4", "v1/configmaps")
			_, srv := startProxy(t, Options{
				HealthInterval: 1e9 * 3600,
				Rules:          Rules{Routing: []rules.RoutingRule{{Resource: "*", PreferAPIServerVersion: ">=1.36"}}},
			}, closing, alive)
			proxytest.Do(t, nil, proxytest.NewRequest(t, http.MethodGet, srv.URL+cmPath+"/a", "")) // a keep-alive connection to closing
			req, err := http.NewRequest(http.MethodPost, srv.URL+cmPath, bytes.NewReader(protobufConfigMap(t, tc.meta)))
			if err != nil {
				t.Fatal(err)
			}
			req.Header.Set("Content-Type", "application/vnd.kubernetes.protobuf")
			code, _, _ := proxytest.Do(t, nil, req)
			want, wantHits := http.StatusBadGateway, int64(0)
			if tc.repeated {
				want, wantHits = http.StatusOK, 1
			}
			if code != want || alive.hits.Load() != wantHits {
				t.Errorf("POST = %d with %d requests to alive, want %d and %d", code, alive.hits.Load(), want, wantHits)
			}
		})
	}
}

// flakyConn fails every write once broken, having written nothing: what a
// keep-alive connection the server has just closed looks like to net/http.
type flakyConn struct {
	net.Conn
	broken *atomic.Bool
}

func (c flakyConn) Write(b []byte) (int, error) {
	if c.broken.Load() {
		return 0, syscall.EPIPE
	}
	return c.Conn.Write(b)
}

// net/http sends a request it could not write on a reused connection again
// on a new one; when that dial is refused, the request never reached a
// server, however far the first attempt got: the client gets 503 with
// Retry-After (repeat it), not 502 (it may have been applied).
func TestProxy_RequestWhoseRedialIsRefusedWasNotSent(t *testing.T) {
	f := newFake(t, "restarting", "v1.36.3", "v1/configmaps")
	p, err := New(Options{Backends: []Backend{f.backend(t)}, HealthInterval: time.Hour, RetryAfterSeconds: 1})
	if err != nil {
		t.Fatal(err)
	}
	var broken atomic.Bool
	for _, b := range p.list() {
		for _, tr := range b.transports() {
			dial := (&net.Dialer{}).DialContext
			tr.DialContext = func(ctx context.Context, network, addr string) (net.Conn, error) {
				if broken.Load() {
					return nil, &net.OpError{Op: "dial", Net: network, Err: syscall.ECONNREFUSED}
				}
				c, err := dial(ctx, network, addr)
				return flakyConn{Conn: c, broken: &broken}, err
			}
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	p.Run(ctx)
	if err := p.WaitReady(ctx); err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(p)
	t.Cleanup(srv.Close)

	if code, _, body := proxytest.Do(t, nil, proxytest.NewRequest(t, http.MethodGet, srv.URL+cmPath+"/a", "")); code != http.StatusOK {
		t.Fatalf("GET = %d %s", code, body)
	}
	broken.Store(true)
	code, hdr, body := proxytest.Do(t, nil, proxytest.NewRequest(t, http.MethodDelete, srv.URL+cmPath+"/a", ""))
	if code != http.StatusServiceUnavailable || hdr.Get("Retry-After") != "1" {
		t.Errorf("DELETE = %d (Retry-After %q) %s, want 503 with Retry-After 1", code, hdr.Get("Retry-After"), body)
	}
}
