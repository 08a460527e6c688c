package proxy

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	apidiscoveryv2 "k8s.io/api/apidiscovery/v2"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apiserver/pkg/endpoints/request"

	"github.com/mvpctl/mvpctl/engine/proxy/internal/apidoc"
	"github.com/mvpctl/mvpctl/engine/proxy/internal/proxytest"
)

// fakeAPIServer answers the endpoints the proxy polls (/readyz, /version,
// discovery) like a kube-apiserver and records the resource requests it gets.
// It stands for one behaviour at a time; real servers are in the e2e suite.
type fakeAPIServer struct {
	name       string
	gitVersion string
	legacyOnly bool
	openAPIV2  string            // the /openapi/v2 document; empty: the path is recorded like others
	kinds      map[string]string // resource -> kind in discovery; unset: derived from the name

	mu      sync.Mutex
	served  []string // "apps/v1/deployments", "v1/configmaps", "v1/pods/log"
	handler http.HandlerFunc

	notReady atomic.Bool
	hits     atomic.Int64
	srv      *httptest.Server
	requests chan *http.Request
}

func newFake(t *testing.T, name, gitVersion string, served ...string) *fakeAPIServer {
	t.Helper()
	f := &fakeAPIServer{name: name, gitVersion: gitVersion, served: served, requests: make(chan *http.Request, 100)}
	f.srv = httptest.NewServer(f)
	t.Cleanup(f.srv.Close)
	return f
}

func (f *fakeAPIServer) backend(t testing.TB) Backend {
	t.Helper()
	u, err := url.Parse(f.srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	return Backend{Name: f.name, URL: u}
}

func (f *fakeAPIServer) setServed(served ...string) {
	f.mu.Lock()
	f.served = served
	f.mu.Unlock()
}

func (f *fakeAPIServer) setHandler(h http.HandlerFunc) {
	f.mu.Lock()
	f.handler = h
	f.mu.Unlock()
}

var selfSubjectReviews = gvr{"authentication.k8s.io", "v1", "selfsubjectreviews"}

var infoFactory = &request.RequestInfoFactory{APIPrefixes: sets.NewString("api", "apis"), GrouplessAPIPrefixes: sets.NewString("api")}

func (f *fakeAPIServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	switch r.URL.Path {
	case "/readyz":
		if f.notReady.Load() {
			http.Error(w, "[-]shutdown failed", http.StatusInternalServerError)
			return
		}
		fmt.Fprint(w, "ok")
		return
	case "/version":
		fmt.Fprintf(w, `{"major":"1","gitVersion":%q}`, f.gitVersion)
		return
	case "/openapi/v3":
		http.NotFound(w, r)
		return
	case "/openapi/v2":
		if f.openAPIV2 != "" {
			w.Header().Set("ETag", `"`+apidoc.ETag([]byte(f.openAPIV2))+`"`)
			if r.Header.Get("If-None-Match") == w.Header().Get("ETag") {
				w.WriteHeader(http.StatusNotModified)
				return
			}
			w.Header().Set("Content-Type", "application/json")
			io.WriteString(w, f.openAPIV2)
			return
		}
	}
	groups := f.groups()
	if r.URL.Path == "/api" || r.URL.Path == "/apis" {
		if !f.legacyOnly && strings.Contains(r.Header.Get("Accept"), "as=APIGroupDiscoveryList") {
			list := apidiscoveryv2.APIGroupDiscoveryList{TypeMeta: metav1.TypeMeta{Kind: "APIGroupDiscoveryList", APIVersion: "apidiscovery.k8s.io/v2"}}
			for _, g := range groups {
				if (g.Name == "") == (r.URL.Path == "/api") {
					list.Items = append(list.Items, g)
				}
			}
			w.Header().Set("Content-Type", apidoc.AggregatedContentType)
			_ = json.NewEncoder(w).Encode(list)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		if r.URL.Path == "/api" {
			_ = json.NewEncoder(w).Encode(metav1.APIVersions{Versions: []string{"v1"}})
			return
		}
		var gl metav1.APIGroupList
		for _, g := range groups {
			if g.Name == "" {
				continue
			}
			ag := metav1.APIGroup{Name: g.Name}
			for _, v := range g.Versions {
				ag.Versions = append(ag.Versions, metav1.GroupVersionForDiscovery{GroupVersion: g.Name + "/" + v.Version, Version: v.Version})
			}
			ag.PreferredVersion = ag.Versions[0]
			gl.Groups = append(gl.Groups, ag)
		}
		_ = json.NewEncoder(w).Encode(gl)
		return
	}
	info, err := infoFactory.NewRequestInfo(r)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	if !info.IsResourceRequest {
		// Legacy discovery of one group version.
		parts := strings.Split(strings.Trim(r.URL.Path, "/"), "/")
		group, ver := "", ""
		switch {
		case len(parts) == 2 && parts[0] == "api":
			ver = parts[1]
		case len(parts) == 3 && parts[0] == "apis":
			group, ver = parts[1], parts[2]
		}
		for _, g := range groups {
			for _, v := range g.Versions {
				if g.Name == group && v.Version == ver {
					rl := metav1.APIResourceList{GroupVersion: strings.TrimPrefix(group+"/"+ver, "/")}
					for _, res := range v.Resources {
						rl.APIResources = append(rl.APIResources, metav1.APIResource{Name: res.Resource, Kind: res.ResponseKind.Kind, Namespaced: true, Verbs: res.Verbs})
						for _, s := range res.Subresources {
							rl.APIResources = append(rl.APIResources, metav1.APIResource{Name: res.Resource + "/" + s.Subresource, Verbs: s.Verbs})
						}
					}
					w.Header().Set("Content-Type", "application/json")
					_ = json.NewEncoder(w).Encode(rl)
					return
				}
			}
		}
		if info.Path == "/healthz" || strings.HasPrefix(info.Path, "/logs") || strings.HasPrefix(info.Path, "/openapi") {
			f.record(w, r)
			return
		}
		http.NotFound(w, r)
		return
	}
	key := gvr{info.APIGroup, info.APIVersion, info.Resource}
	if info.Subresource != "" {
		key.resource += "/" + info.Subresource
	}
	if !f.serves(key) && !f.serves(gvr{info.APIGroup, info.APIVersion, info.Resource}) {
		if key == selfSubjectReviews && r.Method == http.MethodPost {
			// Every kube-apiserver since 1.28 answers it, without listing
			// it here; a test that answers it itself lists it in served.
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusCreated)
			io.WriteString(w, `{"kind":"SelfSubjectReview","apiVersion":"authentication.k8s.io/v1","status":{"userInfo":{"username":"test"}}}`)
			return
		}
		http.NotFound(w, r) // what kube-apiserver answers for a resource it lacks
		return
	}
	f.record(w, r)
}

func (f *fakeAPIServer) record(w http.ResponseWriter, r *http.Request) {
	f.hits.Add(1)
	select {
	case f.requests <- r:
	default:
	}
	f.mu.Lock()
	h := f.handler
	f.mu.Unlock()
	if h != nil {
		h(w, r)
		return
	}
	body, _ := io.ReadAll(r.Body)
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]string{"backend": f.name, "method": r.Method, "path": r.URL.Path, "body": string(body)})
}

func (f *fakeAPIServer) serves(k gvr) bool {
	for _, s := range f.servedKeys() {
		if s == k {
			return true
		}
	}
	return false
}

func (f *fakeAPIServer) servedKeys() []gvr {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []gvr
	for _, s := range f.served {
		parts := strings.Split(s, "/")
		switch len(parts) {
		case 2:
			out = append(out, gvr{"", parts[0], parts[1]})
		case 3:
			if strings.Contains(parts[0], ".") || parts[0] == "apps" || parts[0] == "batch" || parts[0] == "policy" || parts[0] == "autoscaling" {
				out = append(out, gvr{parts[0], parts[1], parts[2]})
			} else {
				out = append(out, gvr{"", parts[0], parts[1] + "/" + parts[2]})
			}
		case 4:
			out = append(out, gvr{parts[0], parts[1], parts[2] + "/" + parts[3]})
		}
	}
	return out
}

// groups renders the served list as aggregated discovery.
func (f *fakeAPIServer) groups() []apidiscoveryv2.APIGroupDiscovery {
	var out []apidiscoveryv2.APIGroupDiscovery
	find := func(name string) *apidiscoveryv2.APIGroupDiscovery {
		for i := range out {
			if out[i].Name == name {
				return &out[i]
			}
		}
		out = append(out, apidiscoveryv2.APIGroupDiscovery{ObjectMeta: metav1.ObjectMeta{Name: name}})
		return &out[len(out)-1]
	}
	for _, k := range f.servedKeys() {
		g := find(k.group)
		var v *apidiscoveryv2.APIVersionDiscovery
		for i := range g.Versions {
			if g.Versions[i].Version == k.version {
				v = &g.Versions[i]
			}
		}
		if v == nil {
			g.Versions = append(g.Versions, apidiscoveryv2.APIVersionDiscovery{Version: k.version, Freshness: apidiscoveryv2.DiscoveryFreshnessCurrent})
			v = &g.Versions[len(g.Versions)-1]
		}
		res, sub, isSub := strings.Cut(k.resource, "/")
		if isSub {
			for i := range v.Resources {
				if v.Resources[i].Resource == res {
					v.Resources[i].Subresources = append(v.Resources[i].Subresources, apidiscoveryv2.APISubresourceDiscovery{Subresource: sub, Verbs: []string{"get"}})
				}
			}
			continue
		}
		kind := f.kinds[res]
		if kind == "" {
			kind = strings.ToUpper(res[:1]) + strings.TrimSuffix(res[1:], "s")
		}
		v.Resources = append(v.Resources, apidiscoveryv2.APIResourceDiscovery{
			Resource: res, Scope: apidiscoveryv2.ScopeNamespace, SingularResource: strings.TrimSuffix(res, "s"),
			ResponseKind: &metav1.GroupVersionKind{Group: k.group, Version: k.version, Kind: kind},
			Verbs:        []string{"create", "delete", "get", "list", "patch", "update", "watch"},
		})
	}
	return out
}

// startProxy runs a proxy over the fakes and waits until every fake is ready
// in its capability map.
func startProxy(t *testing.T, opts Options, fakes ...*fakeAPIServer) (*Proxy, *httptest.Server) {
	t.Helper()
	for _, f := range fakes {
		opts.Backends = append(opts.Backends, f.backend(t))
	}
	if opts.HealthInterval == 0 {
		opts.HealthInterval = 20 * time.Millisecond
	}
	p, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	p.Run(ctx)
	proxytest.Poll(t, "all backends ready", func() bool {
		for _, b := range p.Capabilities().Backends {
			if !b.Ready {
				return false
			}
		}
		return true
	})
	srv := httptest.NewServer(p)
	t.Cleanup(srv.Close)
	return p, srv
}

type echo struct {
	Backend, Method, Path, Body string
}

func answeredBy(t *testing.T, data []byte) string {
	t.Helper()
	var e echo
	if err := json.Unmarshal(data, &e); err != nil {
		t.Fatalf("not an echo: %s", data)
	}
	return e.Backend
}

// serve runs srv until the test ends and waits for it to stop, so that no
// goroutine of it outlives the test.
func serve(t testing.TB, srv *Server) *Server {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := srv.Serve(ctx); err != nil {
			t.Errorf("serving: %v", err)
		}
	}()
	t.Cleanup(func() {
		cancel()
		<-done
	})
	return srv
}

// serveProxy serves h on a loopback TLS listener of opts until the test
// ends.
func serveProxy(t testing.TB, h http.Handler, opts ServeOptions) *Server {
	t.Helper()
	opts.Listen = "127.0.0.1:0"
	srv, err := NewServer(h, opts)
	if err != nil {
		t.Fatal(err)
	}
	return serve(t, srv)
}
