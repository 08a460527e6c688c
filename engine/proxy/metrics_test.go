package proxy

import (
	"net/http/httptest"
	"strings"
	"testing"
)

func TestProxy_MetricsHandler_ServesRuntimeAndProcessMetrics(t *testing.T) {
	p, _ := startProxy(t, Options{}, newFake(t, "a", "v1.36.3", "v1/configmaps"))
	rec := httptest.NewRecorder()
	p.MetricsHandler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	body := rec.Body.String()
	for _, name := range []string{"go_goroutines ", "process_resident_memory_bytes ", "process_open_fds ", "mvpctl_proxy_backend_ready{"} {
		if !strings.Contains(body, "\n"+name) {
			t.Errorf("/metrics has no %s", strings.TrimSpace(name))
		}
	}
}
