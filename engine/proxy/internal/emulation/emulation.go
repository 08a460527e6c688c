// Package emulation serves API versions that no ready kube-apiserver
// serves, from a version one does serve, by converting with migration rules
// ([engine.Converter]): the request's URL is rewritten to the served
// version, bodies are converted forward, answers back (objects whole, lists
// and Tables item by item, watches event by event), and patches are applied
// by read-convert-patch-convert-write. It also builds the OpenAPI of the
// emulated versions.
//
// It knows nothing of backends, routing or identity: what it needs of the
// proxy it asks through one interface, [Host].
//
// # Lifetimes
//
//   - An [Emulator] lives as long as the proxy: its host, limits, log and
//     metrics.
//   - [Rules] are one converter's emulation, replaced when the rules are.
//   - A [View] is what one set of rules emulates over one union of the
//     backends' discovery, rebuilt whenever that union is; discovery shows
//     it and requests are served by it, so both follow the same rules.
package emulation

import (
	"context"
	"log/slog"
	"net/http"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	apidiscoveryv2 "k8s.io/api/apidiscovery/v2"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/endpoints/request"

	"github.com/mvpctl/mvpctl/engine"
	"github.com/mvpctl/mvpctl/engine/proxy/internal/apidoc"
)

// Host is the proxy as an emulation sees it: the few things it needs of the
// kube-apiservers behind the proxy and of a client's request. The proxy
// implements it; the package's tests give a fake one.
type Host interface {
	// ServeInner serves a request the emulation sends on behalf of a
	// client's request, of which it is a clone: it is routed like any
	// other request, with the client's identity (its context carries it),
	// without authenticating it again or counting it as a client's request.
	// When its context carries an emulation, its answer goes through
	// [ConvertResponse].
	ServeInner(w http.ResponseWriter, r *http.Request)
	// Serves reports whether a ready backend serves resource in gv.
	Serves(gv schema.GroupVersion, resource string) bool
	// ReadBody reads a client's request body whole, once a backend has
	// authenticated the client, within the proxy's bounds on its size, the
	// time it takes to arrive and the memory all requests hold. When it
	// cannot, it has answered the client and reports false. release gives
	// the memory back once body is no longer used.
	ReadBody(w http.ResponseWriter, r *http.Request) (body []byte, release func(), ok bool)
	// CRD reads a CustomResourceDefinition with the proxy's own identity.
	// It returns nil and no error when there is none, or when the proxy may
	// not read it.
	CRD(ctx context.Context, name string) (*apiextensionsv1.CustomResourceDefinition, error)
}

// Options are the settings of an [Emulator].
type Options struct {
	// MaxRequestBodyBytes bounds the object a patch would write, as the
	// proxy bounds a client's request body.
	MaxRequestBodyBytes int64
	// MaxObjectBytes bounds one object or Table read whole from a backend
	// to convert it.
	MaxObjectBytes int64
	// OpenAPIV3 holds OpenAPI v3 documents of versions that may be
	// emulated, keyed by their /openapi/v3 path; see the proxy's Options.
	OpenAPIV3 map[string][]byte
	// Logger receives warnings (an ignored round-trip annotation, a CRD
	// that could not be read). Nil means none.
	Logger *slog.Logger
	// Registry receives the emulation's metrics. Nil means none.
	Registry prometheus.Registerer
}

// Emulator is what every emulation of one proxy shares: the host, the
// limits, the log and the metrics.
type Emulator struct {
	host Host
	opts Options
	log  *slog.Logger
	// dataIgnored counts round-trip annotations the emulation ignored.
	dataIgnored *prometheus.CounterVec
	dataWarn    dataWarnings
	// convFailures counts the served objects that did not convert back
	// for a client; failWarn keeps their log short.
	convFailures *prometheus.CounterVec
	failWarn     dataWarnings
	// openAPIV2 caches the OpenAPI v2 form of the Options.OpenAPIV3
	// documents: path → convertedV2.
	openAPIV2 sync.Map
}

// New returns the emulator of a proxy. It registers the emulation's
// metrics and bounds json-patch's copies for the process, as kube-apiserver
// does when it starts.
func New(host Host, opts Options) (*Emulator, error) {
	e := &Emulator{host: host, opts: opts, log: opts.Logger, dataWarn: newDataWarnings(), convFailures: newConversionFailures(), failWarn: newDataWarnings()}
	if e.log == nil {
		e.log = slog.New(slog.DiscardHandler)
	}
	e.dataIgnored = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: "mvpctl", Subsystem: "proxy", Name: "conversion_data_ignored_total",
		Help: "Objects whose round-trip annotation (mvp.k8s.io/conversion-data) version emulation ignored as malformed, oversized or not fitting the object, by the object's group, version and resource.",
	}, []string{"group", "version", "resource"})
	if opts.Registry != nil {
		for _, c := range []prometheus.Collector{e.dataIgnored, e.convFailures} {
			if err := opts.Registry.Register(c); err != nil {
				return nil, err
			}
		}
	}
	limitJSONPatchCopies()
	return e, nil
}

// Rules are the emulation of one converter's migration rules.
type Rules struct {
	e    *Emulator
	conv *engine.Converter
}

// Rules returns the emulation of conv's rules. Objects are anyone's to
// write: a bad round-trip annotation costs that object its round trip
// (counted and logged), never the response around it.
func (e *Emulator) Rules(conv *engine.Converter) *Rules {
	o := conv.Options()
	o.InvalidConversionData = e.conversionDataIgnored
	return &Rules{e: e, conv: conv.WithOptions(o)}
}

// View is what one set of rules emulates over one union of the backends'
// discovery. A nil View emulates nothing.
type View struct {
	rules   *Rules
	targets map[schema.GroupVersionResource]target
	openAPI openAPICache
}

// View finds what the rules emulate over groups, the union of the
// backends' discovery. It returns the view and groups with the emulated
// versions no backend lists added, each as the last (least preferred)
// version of its group.
func (rs *Rules) View(groups []apidiscoveryv2.APIGroupDiscovery) (*View, []apidiscoveryv2.APIGroupDiscovery) {
	v := &View{rules: rs, targets: rs.targets(groups)}
	var aliases []apidoc.Alias
	for _, t := range v.targets {
		if t.unlisted {
			aliases = append(aliases, apidoc.Alias{Version: t.requested, Of: t.served, Resource: t.resource, Kind: t.kind})
		}
	}
	return v, apidoc.AddAliases(groups, aliases)
}

// Emulates reports whether the view can emulate resource in gv.
func (v *View) Emulates(gv schema.GroupVersion, resource string) bool {
	if v == nil {
		return false
	}
	_, ok := v.targets[gv.WithResource(resource)]
	return ok
}

// Serve serves a request for a version no ready backend serves when the
// rules lead from it to one that a ready backend serves. It reports false,
// having written nothing, when they do not.
func (v *View) Serve(w http.ResponseWriter, r *http.Request, info *request.RequestInfo) bool {
	if v == nil {
		return false
	}
	t, ok := v.targets[schema.GroupVersionResource{Group: info.APIGroup, Version: info.APIVersion, Resource: info.Resource}]
	if !ok || !v.rules.e.host.Serves(t.served, t.resource) {
		return false
	}
	em := &emulation{rules: v.rules, t: t, info: info}
	em.serve(w, r)
	return true
}
