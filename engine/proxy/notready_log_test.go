package proxy

import (
	"context"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mvpctl/mvpctl/engine/proxy/internal/proxytest"
)

// recordingHandler keeps every log record.
type recordingHandler struct {
	mu      sync.Mutex
	records []slog.Record
}

func (h *recordingHandler) Enabled(context.Context, slog.Level) bool { return true }
func (h *recordingHandler) WithAttrs([]slog.Attr) slog.Handler       { return h }
func (h *recordingHandler) WithGroup(string) slog.Handler            { return h }
func (h *recordingHandler) Handle(_ context.Context, r slog.Record) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.records = append(h.records, r.Clone())
	return nil
}

// notReady returns the reasons of the "backend not ready" warnings logged
// for a backend, in order.
func (h *recordingHandler) notReady(backend string) []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	var reasons []string
	for _, r := range h.records {
		if r.Level != slog.LevelWarn || r.Message != "backend not ready" {
			continue
		}
		attrs := map[string]string{}
		r.Attrs(func(a slog.Attr) bool {
			attrs[a.Key] = a.Value.String()
			return true
		})
		if attrs["backend"] == backend {
			reasons = append(reasons, attrs["reason"])
		}
	}
	return reasons
}

// TestProxy_LogsWhyBackendsAreNotReady: a backend that is not ready at
// start-up is logged at warn with the reason (refused, certificate, the
// HTTP status of /readyz), and again each time the reason changes, not at
// every probe.
func TestProxy_LogsWhyBackendsAreNotReady(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	refused := &url.URL{Scheme: "https", Host: ln.Addr().String()}
	ln.Close()

	untrusted := httptest.NewTLSServer(http.NotFoundHandler())
	t.Cleanup(untrusted.Close)
	untrustedURL, err := url.Parse(untrusted.URL)
	if err != nil {
		t.Fatal(err)
	}

	var readyzStatus atomic.Int64
	var readyzCalls atomic.Int64
	readyzStatus.Store(http.StatusInternalServerError)
	failing := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/readyz" {
			readyzCalls.Add(1)
			http.Error(w, "[-]etcd failed", int(readyzStatus.Load()))
			return
		}
		http.NotFound(w, r)
	}))
	t.Cleanup(failing.Close)
	failingURL, err := url.Parse(failing.URL)
	if err != nil {
		t.Fatal(err)
	}

	logs := &recordingHandler{}
	p, err := New(Options{
		Backends: []Backend{
			{Name: "refused", URL: refused},
			{Name: "untrusted", URL: untrustedURL},
			{Name: "failing", URL: failingURL},
		},
		HealthInterval: 20 * time.Millisecond,
		Logger:         slog.New(logs),
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	p.Run(ctx)

	for backend, want := range map[string]string{
		"refused":   "connection refused",
		"untrusted": "x509: certificate signed by unknown authority",
		"failing":   "/readyz: HTTP 500",
	} {
		proxytest.Poll(t, backend+" logged as not ready", func() bool { return len(logs.notReady(backend)) > 0 })
		if got := logs.notReady(backend)[0]; !strings.Contains(got, want) {
			t.Errorf("%s: reason %q, want it to say %q", backend, got, want)
		}
	}

	// More failed probes with the same reason log nothing more; a new
	// reason is logged once.
	seen := readyzCalls.Load()
	proxytest.Poll(t, "more probes of the failing backend", func() bool { return readyzCalls.Load() >= seen+3 })
	readyzStatus.Store(http.StatusServiceUnavailable)
	proxytest.Poll(t, "the new reason logged", func() bool { return len(logs.notReady("failing")) >= 2 })
	got := logs.notReady("failing")
	if len(got) != 2 || !strings.Contains(got[0], "HTTP 500") || !strings.Contains(got[1], "HTTP 503") {
		t.Errorf("failing backend logged %q, want one warning for HTTP 500, then one for HTTP 503", got)
	}
}
