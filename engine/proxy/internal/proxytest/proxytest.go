// Package proxytest holds what the tests of the proxy and of its emulation
// share: the seed's rules, CRD and objects (testdata/), and one helper each
// for sending a request, waiting for a condition and comparing JSON.
package proxytest

import (
	"bytes"
	"context"
	"embed"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/mvpctl/mvpctl/engine"
)

//go:embed testdata
var testdata embed.FS

func mustRead(name string) string {
	b, err := testdata.ReadFile("testdata/" + name)
	if err != nil {
		panic(err)
	}
	return string(b)
}

var (
	// SeedRules are the seed article's migration rules: myapps.example.com
	// customresources from v1alpha1 to v1beta1 (a converting rename and a
	// modify).
	SeedRules = mustRead("seed-rules.yaml")
	// LoopRules convert the seed's resource with programs that never end.
	LoopRules = mustRead("loop-rules.yaml")
	// SeedCRD is the seed resource's CRD: v1beta1 served, v1alpha1 no
	// longer served but kept with its schema.
	SeedCRD = mustRead("seed-crd.yaml")
	// ServedObject is a v1beta1 object as the apiserver stores it.
	ServedObject = strings.TrimSpace(mustRead("served.json"))
	// ClientObject is ServedObject in v1alpha1.
	ClientObject = strings.TrimSpace(mustRead("client.json"))
)

// Converter compiles rulesYAML.
func Converter(t testing.TB, rulesYAML string, opts engine.Options) *engine.Converter {
	t.Helper()
	path := filepath.Join(t.TempDir(), "rules.yaml")
	if err := os.WriteFile(path, []byte(rulesYAML), 0o644); err != nil {
		t.Fatal(err)
	}
	c, err := engine.Load(opts, path)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// SeedConverter compiles [SeedRules].
func SeedConverter(t testing.TB) *engine.Converter {
	t.Helper()
	return Converter(t, SeedRules, engine.Options{})
}

// Poll waits until cond holds, asking again every few milliseconds, and
// fails the test when it does not within ten seconds or the test ends.
func Poll(t testing.TB, what string, cond func() bool) {
	t.Helper()
	err := wait.PollUntilContextTimeout(t.Context(), 5*time.Millisecond, 10*time.Second, true,
		func(context.Context) (bool, error) { return cond(), nil })
	if err != nil {
		t.Fatalf("waiting for %s: %v", what, err)
	}
}

// NewRequest is http.NewRequest for a test: body "" means none, header
// holds name, value pairs (a pair with an empty value is left out).
func NewRequest(t testing.TB, method, url, body string, header ...string) *http.Request {
	t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, url, rd)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i+1 < len(header); i += 2 {
		if header[i+1] != "" {
			req.Header.Add(header[i], header[i+1])
		}
	}
	return req
}

// Do sends req with c (nil: http.DefaultClient) and returns the answer's
// code, header and whole body. Failing to send it or to read the body fails
// the test.
func Do(t testing.TB, c *http.Client, req *http.Request) (int, http.Header, []byte) {
	t.Helper()
	if c == nil {
		c = http.DefaultClient
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, resp.Header, body
}

// SameJSON fails the test when want and got are not the same JSON value.
func SameJSON(t testing.TB, want, got string) {
	t.Helper()
	var w, g any
	if err := json.Unmarshal([]byte(want), &w); err != nil {
		t.Fatalf("want: %v: %s", err, want)
	}
	if err := json.Unmarshal([]byte(got), &g); err != nil {
		t.Fatalf("got: %v: %s", err, got)
	}
	if diff := cmp.Diff(w, g); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

// Buffer is a bytes.Buffer that a logger may write from many goroutines.
type Buffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *Buffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *Buffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// Counter is the value of the counter name with exactly these labels; 0 if
// there is none.
func Counter(t testing.TB, g prometheus.Gatherer, name string, labels map[string]string) float64 {
	t.Helper()
	mfs, err := g.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
	metrics:
		for _, m := range mf.GetMetric() {
			if len(m.GetLabel()) != len(labels) {
				continue
			}
			for _, l := range m.GetLabel() {
				if labels[l.GetName()] != l.GetValue() {
					continue metrics
				}
			}
			return m.GetCounter().GetValue()
		}
	}
	return 0
}
