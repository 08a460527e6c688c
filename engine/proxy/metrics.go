package proxy

import (
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"k8s.io/apiserver/pkg/endpoints/request"
)

type metrics struct {
	registry        *prometheus.Registry
	requests        *prometheus.CounterVec
	unauthenticated *prometheus.CounterVec
	overhead        *prometheus.HistogramVec
	usage           *usageRecorder
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
		unauthenticated: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "mvpctl", Subsystem: "proxy", Name: "unauthenticated_requests_total",
			Help: "Requests refused as unauthenticated (401), and requests without credentials that were refused, by class of HTTP code (4xx, 5xx); no other metric counts them.",
		}, []string{"code"}),
	}
	for _, c := range []prometheus.Collector{m.requests, m.unauthenticated, m.overhead, &backendCollector{p: p}} {
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
	verb := ""
	if rt.info != nil {
		verb = verbLabel(rt.info.Verb)
	}
	unauthenticated := isUnauthenticated(rt.id, code)
	if outer, inner := r.Context().Value(innerKey{}).(*route); !inner {
		if unauthenticated {
			p.metrics.unauthenticated.WithLabelValues(codeClass(code)).Inc()
		} else {
			group, version, resource := "", "", ""
			if rt.info != nil && rt.info.IsResourceRequest {
				group, version, resource = p.resourceLabels(rt.info)
			}
			p.metrics.requests.WithLabelValues(backendName, group, version, resource, verb, codeLabel(code), rt.decision).Inc()
			p.recordUsage(r, rt, code)
		}
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
		if !unauthenticated {
			p.metrics.overhead.WithLabelValues(verb).Observe(over.Seconds())
		}
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

// Label values are bounded: a client must not create series at will, with
// an invented method, a long unique path or a made-up subresource. The
// bounds are kube-apiserver's (k8s.io/apiserver endpoints/metrics: unknown
// verbs are "other", codes are those HTTP defines).

// knownVerbs are the verbs k8s.io/apiserver's request parsing yields (the
// request.Method* verbs in lower case, and OPTIONS for non-resource paths).
var knownVerbs = func() map[string]bool {
	out := map[string]bool{"options": true}
	for _, m := range []string{request.MethodApply, request.MethodConnect, request.MethodCreate, request.MethodDelete,
		request.MethodDeleteCollection, request.MethodGet, request.MethodHead, request.MethodList, request.MethodPatch,
		request.MethodPost, request.MethodProxy, request.MethodPut, request.MethodUpdate, request.MethodWatch, request.MethodWatchList} {
		out[strings.ToLower(m)] = true
	}
	return out
}()

// otherLabel stands for any value outside a label's known set.
const otherLabel = "other"

// verbLabel is v if Kubernetes defines it, "other" otherwise.
func verbLabel(v string) string {
	if knownVerbs[v] {
		return v
	}
	return otherLabel
}

// codeLabel is code if HTTP defines it, "other" otherwise.
func codeLabel(code int) string {
	if http.StatusText(code) == "" {
		return otherLabel
	}
	return strconv.Itoa(code)
}

// codeClass is the class of code ("4xx"), "other" outside 100 to 599.
func codeClass(code int) string {
	if code < 100 || code > 599 {
		return otherLabel
	}
	return strconv.Itoa(code/100) + "xx"
}

// knownSubresources are the subresources Kubernetes' built-in resources
// and CustomResourceDefinitions have; a subresource a backend's discovery
// lists is known too.
var knownSubresources = map[string]bool{
	"status": true, "scale": true, "log": true, "exec": true, "attach": true, "portforward": true, "proxy": true,
	"binding": true, "eviction": true, "ephemeralcontainers": true, "resize": true, "token": true, "approval": true,
	"finalize": true,
}

// resourceLabels are the group, version and resource labels of a resource
// request: the resource as the capability map knows it (a backend serves
// it, or the rules emulate it), with its subresource when that is known and
// "other" in its place when not; "unknown" for what nobody serves (its
// group and version too when nobody serves them).
func (p *Proxy) resourceLabels(info *request.RequestInfo) (group, version, resource string) {
	group, version = info.APIGroup, info.APIVersion
	parent := gvr{group, version, info.Resource}
	if !p.anyKnows(parent) && !p.emulates(parent) {
		if !p.knowsGroupVersion(group, version) {
			return "unknown", "unknown", "unknown"
		}
		return group, version, "unknown"
	}
	return group, version, subresourceLabel(parent, info.Subresource, p.anyKnows)
}

// subresourceLabel is parent's resource with sub, bounded as resourceLabels
// says; served says whether a backend's discovery lists a resource.
func subresourceLabel(parent gvr, sub string, served func(gvr) bool) string {
	switch {
	case sub == "":
		return parent.resource
	case knownSubresources[sub] || served(gvr{parent.group, parent.version, parent.resource + "/" + sub}):
		return parent.resource + "/" + sub
	}
	return parent.resource + "/" + otherLabel
}

// isUnauthenticated says whether a request's client is not known to be
// anyone: refused as unauthenticated (401), or without credentials (and no
// verified certificate) and refused. Such requests are counted in one
// counter only, so that clients without credentials cannot add series or
// entries. Requests without credentials that a server allows (anonymous
// access some clusters grant to /version, /healthz) are counted as others.
func isUnauthenticated(id *identity, code int) bool {
	if code == http.StatusUnauthorized {
		return true
	}
	credentials := id != nil && (id.proxy || len(id.header) > 0)
	return !credentials && code >= 400
}
