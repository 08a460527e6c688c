package proxy

import (
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/mvpctl/mvpctl/engine/proxy/internal/proxytest"
)

// requestCounts reads mvpctl_proxy_requests_total as "label=value,..." → count.
func requestCounts(t *testing.T, reg *prometheus.Registry) map[string]float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]float64{}
	for _, mf := range mfs {
		if mf.GetName() != "mvpctl_proxy_requests_total" {
			continue
		}
		for _, m := range mf.GetMetric() {
			var labels []string
			for _, l := range m.GetLabel() {
				labels = append(labels, l.GetName()+"="+l.GetValue())
			}
			out[strings.Join(labels, ",")] += m.GetCounter().GetValue()
		}
	}
	return out
}

// An emulated request is counted once, under the backend that answered its
// (last) request to the served version.
func TestEmulation_MetricsNameTheBackend(t *testing.T) {
	f := newFake(t, "a", "v1.36.3", "myapps.example.com/v1beta1/customresources")
	// The object as it is read, and as the patch leaves it.
	f.setHandler(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, proxytest.ServedObject)
	})
	reg := prometheus.NewRegistry()
	_, srv := startProxy(t, Options{Rules: Rules{Converter: proxytest.SeedConverter(t)}, Registry: reg}, f)
	obj := srv.URL + "/apis/myapps.example.com/v1alpha1/namespaces/ns/customresources/a"
	if code, _, body := proxytest.Do(t, nil, proxytest.NewRequest(t, "GET", obj, "")); code != http.StatusOK {
		t.Fatalf("GET: %d %s", code, body)
	}
	code, _, body := proxytest.Do(t, nil, proxytest.NewRequest(t, "PATCH", obj, `{"spec":{"config":{"legacyTimeout":60}}}`, "Content-Type", "application/merge-patch+json"))
	if code != http.StatusOK {
		t.Fatalf("PATCH: %d %s", code, body)
	}
	got := requestCounts(t, reg)
	for _, verb := range []string{"get", "patch"} {
		key := "backend=a,code=200,decision=emulated,group=myapps.example.com,resource=customresources,verb=" + verb + ",version=v1alpha1"
		if got[key] != 1 {
			t.Errorf("%s: %v, want 1; all: %v", key, got[key], got)
		}
	}
	for k := range got {
		if strings.Contains(k, "version=v1beta1") {
			t.Errorf("an inner request was counted: %s", k)
		}
	}
}
