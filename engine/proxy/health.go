package proxy

import (
	"errors"
	"fmt"
	"net/http"
	"strings"
)

// serveHealth answers /livez and /readyz for the proxy itself, in
// kube-apiserver's format (?verbose lists the checks): load balancers and
// kubelet probes ask whether the proxy can serve, not whichever backend a
// pass-through would reach. Named checks below these paths (/readyz/etcd)
// and the deprecated /healthz still go to a backend.
func (p *Proxy) serveHealth(w http.ResponseWriter, r *http.Request) bool {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		return false
	}
	var checks []healthCheck
	switch r.URL.Path {
	case "/livez":
		checks = []healthCheck{{name: "ping"}}
	case "/readyz":
		checks = p.readyChecks()
	default:
		return false
	}
	failed := false
	var b strings.Builder
	for _, c := range checks {
		if c.err != nil {
			failed = true
			fmt.Fprintf(&b, "[-]%s failed: %v\n", c.name, c.err)
		} else {
			fmt.Fprintf(&b, "[+]%s ok\n", c.name)
		}
	}
	check := strings.TrimPrefix(r.URL.Path, "/")
	h := w.Header()
	h.Set("Content-Type", "text/plain; charset=utf-8")
	h.Set("Cache-Control", "no-cache, private")
	h.Set("X-Content-Type-Options", "nosniff")
	switch {
	case failed:
		w.WriteHeader(http.StatusInternalServerError)
		fmt.Fprintf(w, "%s%s check failed\n", b.String(), check)
	case r.URL.Query().Has("verbose"):
		fmt.Fprintf(w, "%s%s check passed\n", b.String(), check)
	default:
		fmt.Fprint(w, "ok")
	}
	return true
}

type healthCheck struct {
	name string
	err  error
}

// Drain makes /readyz fail from now on, while requests are still served:
// called when the proxy is asked to stop, it gives load balancers and
// Endpoints time to stop sending new requests before the listener closes.
func (p *Proxy) Drain() { p.draining.Store(true) }

// readyChecks are the conditions for sending the proxy traffic: it is not
// shutting down, and some backend is ready (else every request would be a
// 503).
func (p *Proxy) readyChecks() []healthCheck {
	ready, total := 0, 0
	for _, b := range p.list() {
		total++
		if b.snapshot().ready {
			ready++
		}
	}
	backends := healthCheck{name: "backends"}
	if ready == 0 {
		backends.err = fmt.Errorf("none of %d kube-apiservers is ready", total)
	}
	shutdown := healthCheck{name: "shutdown"}
	if p.draining.Load() {
		shutdown.err = errors.New("the proxy is shutting down")
	}
	return []healthCheck{{name: "ping"}, backends, shutdown}
}
