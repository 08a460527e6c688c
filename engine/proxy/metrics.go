package proxy

import (
	"net/http"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

type metrics struct {
	registry *prometheus.Registry
	requests *prometheus.CounterVec
	overhead *prometheus.HistogramVec
	usage    *usageRecorder
}

func newMetrics(reg *prometheus.Registry, p *Proxy) (*metrics, error) {
	m := &metrics{
		registry: reg,
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "mvpctl", Subsystem: "proxy", Name: "requests_total",
			Help: "Requests by backend, group, version, resource, verb, HTTP code and routing decision (local, rerouted, retried, unavailable, proxy, emulated).",
		}, []string{"backend", "group", "version", "resource", "verb", "code", "decision"}),
		overhead: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Namespace: "mvpctl", Subsystem: "proxy", Name: "overhead_seconds",
			Help:    "Latency the proxy adds to a request: from its arrival to the first upstream attempt, plus from the upstream response headers to the client's.",
			Buckets: []float64{10e-6, 25e-6, 50e-6, 100e-6, 250e-6, 500e-6, 1e-3, 2.5e-3, 5e-3, 10e-3, 25e-3, 100e-3, 1},
		}, []string{"verb"}),
	}
	for _, c := range []prometheus.Collector{m.requests, m.overhead, &backendCollector{p: p}} {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	var err error
	if m.usage, err = newUsageRecorder(reg, p.opts.UsageTableSize); err != nil {
		return nil, err
	}
	// The Go runtime's and the process's metrics (go_goroutines,
	// process_resident_memory_bytes, process_open_fds, ...), unless the
	// registry has them already (then registering fails, which is fine).
	_ = reg.Register(collectors.NewGoCollector())
	_ = reg.Register(collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m, nil
}

// MetricsHandler serves the proxy's metrics in the Prometheus format. Serve it
// on its own address, not through the proxy.
func (p *Proxy) MetricsHandler() http.Handler {
	return promhttp.HandlerFor(p.metrics.registry, promhttp.HandlerOpts{Registry: p.metrics.registry})
}

var (
	descHealthy = prometheus.NewDesc("mvpctl_proxy_backend_ready",
		"1 when the backend's /readyz succeeds and its capabilities are current.", []string{"backend", "version"}, nil)
	descCapAge = prometheus.NewDesc("mvpctl_proxy_capability_map_age_seconds",
		"Age of the backend's capability map (time since its discovery was last read).", []string{"backend"}, nil)
	descOutstanding = prometheus.NewDesc("mvpctl_proxy_backend_outstanding_requests",
		"Requests in flight to the backend.", []string{"backend", "kind"}, nil)
	descServed = prometheus.NewDesc("mvpctl_proxy_backend_served_resources",
		"Group/version/resources (subresources included) in the backend's discovery.", []string{"backend"}, nil)
)

// backendCollector reports backend state at scrape time.
type backendCollector struct{ p *Proxy }

func (c *backendCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- descHealthy
	ch <- descCapAge
	ch <- descOutstanding
	ch <- descServed
}

func (c *backendCollector) Collect(ch chan<- prometheus.Metric) {
	for _, b := range c.p.list() {
		st := b.snapshot()
		ver := ""
		if st.versionInfo != nil {
			ver = st.versionInfo.GitVersion
		}
		ready := 0.0
		if st.ready {
			ready = 1
		}
		ch <- prometheus.MustNewConstMetric(descHealthy, prometheus.GaugeValue, ready, b.name, ver)
		if st.caps != nil {
			ch <- prometheus.MustNewConstMetric(descCapAge, prometheus.GaugeValue, time.Since(st.caps.fetched).Seconds(), b.name)
			ch <- prometheus.MustNewConstMetric(descServed, prometheus.GaugeValue, float64(len(st.caps.served)), b.name)
		}
		ch <- prometheus.MustNewConstMetric(descOutstanding, prometheus.GaugeValue, float64(b.outstanding.Load()), b.name, "short")
		ch <- prometheus.MustNewConstMetric(descOutstanding, prometheus.GaugeValue, float64(b.longRunning.Load()), b.name, "long-running")
	}
}

// observe records one finished request: the metrics and, at debug level, a
// log line with the routing decision.
func (p *Proxy) observe(rec *recorder, r *http.Request, rt *route) {
	code := rec.code
	if rt.status == http.StatusSwitchingProtocols && (code == 0 || code == http.StatusSwitchingProtocols) {
		code = http.StatusSwitchingProtocols
	}
	if code == 0 {
		code = http.StatusOK
	}
	backendName := ""
	if rt.backend != nil {
		backendName = rt.backend.name
	}
	group, version, resource, verb := "", "", "", ""
	if rt.info != nil {
		verb = rt.info.Verb
		if rt.info.IsResourceRequest {
			group, version, resource = rt.info.APIGroup, rt.info.APIVersion, rt.key.resource
			// Bound the label values to what discovery lists: a client must not
			// be able to create series at will.
			if !p.anyKnows(rt.key) && !p.emulates(rt.key) {
				resource = "unknown"
				if !p.knowsGroupVersion(group, version) {
					group, version = "unknown", "unknown"
				}
			}
		}
	}
	if outer, inner := r.Context().Value(innerKey{}).(*route); !inner {
		p.metrics.requests.WithLabelValues(backendName, group, version, resource, verb, strconv.Itoa(code), rt.decision).Inc()
		p.recordUsage(r, rt, code)
	} else if outer != nil && rt.backend != nil {
		// An emulation's requests to the served version are not counted;
		// the client's request is, under the backend that answered the last.
		outer.backend = rt.backend
	}
	if !rt.sent.IsZero() && !rt.received.IsZero() && !rec.written.IsZero() {
		over := rt.sent.Sub(rt.start)
		if rec.written.After(rt.received) {
			over += rec.written.Sub(rt.received)
		}
		p.metrics.overhead.WithLabelValues(verb).Observe(over.Seconds())
	}
	if p.log.Enabled(r.Context(), -4) {
		attrs := []any{"method", r.Method, "path", r.URL.Path, "verb", verb, "decision", rt.decision, "backend", backendName,
			"code", code, "attempts", rt.attempts, "duration", time.Since(rt.start)}
		if rt.info != nil && rt.info.IsResourceRequest {
			attrs = append(attrs, "gvr", rt.key.String())
		}
		if rt.err != nil {
			attrs = append(attrs, "error", rt.err.Error())
		}
		p.log.Debug("request", attrs...)
	}
}

func (p *Proxy) knowsGroupVersion(group, version string) bool {
	for _, b := range p.list() {
		caps := b.snapshot().caps
		if caps == nil {
			continue
		}
		for _, g := range caps.groups {
			if g.Name != group {
				continue
			}
			for _, v := range g.Versions {
				if v.Version == version {
					return true
				}
			}
		}
	}
	return false
}
