package emulation

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	apidiscoveryv2 "k8s.io/api/apidiscovery/v2"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apiserver/pkg/endpoints/request"

	"github.com/mvpctl/mvpctl/engine"
	"github.com/mvpctl/mvpctl/engine/proxy/internal/proxytest"
	"github.com/mvpctl/mvpctl/engine/proxy/internal/response"
)

// fakeHost is the proxy for the emulation's tests: one fake kube-apiserver
// serving the seed resource in one version, which gets the inner requests
// through httputil.ReverseProxy with ConvertResponse, as the proxy sends
// them.
type fakeHost struct {
	served  schema.GroupVersion
	maxBody int64
	rp      *httputil.ReverseProxy
	// crds are the CustomResourceDefinitions CRD reads (absent: none);
	// crdErr fails that many reads first.
	mu       sync.Mutex
	crds     map[string]*apiextensionsv1.CustomResourceDefinition
	crdErr   int
	crdReads atomic.Int64
}

func (h *fakeHost) ServeInner(w http.ResponseWriter, r *http.Request) { h.rp.ServeHTTP(w, r) }

func (h *fakeHost) Serves(gv schema.GroupVersion, resource string) bool {
	return gv == h.served && resource == "customresources"
}

func (h *fakeHost) ReadBody(w http.ResponseWriter, r *http.Request) ([]byte, func(), bool) {
	body, err := response.ReadObject(http.MaxBytesReader(w, r.Body, h.maxBody), h.maxBody)
	if err != nil {
		response.WriteStatus(w, http.StatusRequestEntityTooLarge, metav1.StatusReasonRequestEntityTooLarge, err.Error(), 0)
		return nil, nil, false
	}
	return body, func() {}, true
}

func (h *fakeHost) CRD(_ context.Context, name string) (*apiextensionsv1.CustomResourceDefinition, error) {
	h.crdReads.Add(1)
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.crdErr > 0 {
		h.crdErr--
		return nil, fmt.Errorf("etcd is slow")
	}
	return h.crds[name], nil
}

// config is one emulation test's setup; the zero value emulates v1alpha1
// with the seed rules from v1beta1.
type config struct {
	// handler answers the requests to the served version.
	handler http.HandlerFunc
	// conv converts; nil means the seed rules.
	conv *engine.Converter
	// served is the version the fake kube-apiserver serves; "" means v1beta1.
	served string
	opts   Options
	crds   map[string]*apiextensionsv1.CustomResourceDefinition
}

// env is an emulation in front of a fake kube-apiserver.
type env struct {
	url  string // the server that emulates
	host *fakeHost
	view *View
	reg  *prometheus.Registry
}

// seedGroups is the discovery of a server with the seed resource in one
// version, with a status subresource.
func seedGroups(version string) []apidiscoveryv2.APIGroupDiscovery {
	return []apidiscoveryv2.APIGroupDiscovery{{
		ObjectMeta: metav1.ObjectMeta{Name: "myapps.example.com"},
		Versions: []apidiscoveryv2.APIVersionDiscovery{{
			Version: version, Freshness: apidiscoveryv2.DiscoveryFreshnessCurrent,
			Resources: []apidiscoveryv2.APIResourceDiscovery{{
				Resource: "customresources", Scope: apidiscoveryv2.ScopeNamespace, SingularResource: "customresource",
				ResponseKind: &metav1.GroupVersionKind{Group: "myapps.example.com", Version: version, Kind: "Customresource"},
				Verbs:        []string{"create", "delete", "get", "list", "patch", "update", "watch"},
				Subresources: []apidiscoveryv2.APISubresourceDiscovery{{Subresource: "status", Verbs: []string{"get", "patch", "update"}}},
			}},
		}},
	}}
}

var infos = &request.RequestInfoFactory{APIPrefixes: sets.NewString("api", "apis"), GrouplessAPIPrefixes: sets.NewString("api")}

// startEmulation serves an emulation; a request it does not emulate is a
// 404 that says so.
func startEmulation(t *testing.T, c config) *env {
	t.Helper()
	if c.served == "" {
		c.served = "v1beta1"
	}
	if c.conv == nil {
		c.conv = proxytest.SeedConverter(t)
	}
	if c.handler == nil {
		c.handler = func(w http.ResponseWriter, r *http.Request) { http.Error(w, "unexpected", http.StatusTeapot) }
	}
	if c.opts.MaxRequestBodyBytes == 0 {
		c.opts.MaxRequestBodyBytes = 3 << 20
	}
	if c.opts.MaxObjectBytes == 0 {
		c.opts.MaxObjectBytes = 64 << 20
	}
	if c.opts.Logger == nil {
		c.opts.Logger = slog.New(slog.DiscardHandler)
	}
	backend := httptest.NewServer(c.handler)
	t.Cleanup(backend.Close)
	target, err := url.Parse(backend.URL)
	if err != nil {
		t.Fatal(err)
	}
	h := &fakeHost{
		served: schema.GroupVersion{Group: "myapps.example.com", Version: c.served}, maxBody: c.opts.MaxRequestBodyBytes, crds: c.crds,
		rp: &httputil.ReverseProxy{
			Rewrite:        func(pr *httputil.ProxyRequest) { pr.SetURL(target) },
			ModifyResponse: ConvertResponse,
			ErrorLog:       slog.NewLogLogger(slog.DiscardHandler, slog.LevelError),
		},
	}
	reg := prometheus.NewRegistry()
	c.opts.Registry = reg
	e, err := New(h, c.opts)
	if err != nil {
		t.Fatal(err)
	}
	view, _ := e.Rules(c.conv).View(seedGroups(c.served))
	front := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		info, err := infos.NewRequestInfo(r)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		if !view.Serve(w, r, info) {
			http.Error(w, "not emulated", http.StatusNotFound)
		}
	}))
	t.Cleanup(front.Close)
	return &env{url: front.URL, host: h, view: view, reg: reg}
}

// serveEmulation emulates v1alpha1 with the seed rules in front of a
// server that answers with h, and returns the emulation's URL.
func serveEmulation(t *testing.T, h http.HandlerFunc) string {
	t.Helper()
	return startEmulation(t, config{handler: h}).url
}
