package proxy

import (
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"

	apidiscoveryv2 "k8s.io/api/apidiscovery/v2"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apiserver/pkg/endpoints/request"

	"github.com/mvpctl/mvpctl/engine/proxy/internal/apidoc"
	"github.com/mvpctl/mvpctl/engine/proxy/internal/emulation"
	"github.com/mvpctl/mvpctl/engine/proxy/internal/response"
)

// discoveryCache holds the union of the backends' discovery, rebuilt lazily
// after any backend's capabilities change.
type discoveryCache struct {
	mu    sync.Mutex
	union *discoveryUnion
}

func (c *discoveryCache) invalidate() {
	c.mu.Lock()
	c.union = nil
	c.mu.Unlock()
}

// discoveryUnion is every discovery document the proxy answers, serialised
// once.
type discoveryUnion struct {
	apidoc.Documents
	// openAPIV3Paths is the backends' /openapi/v3 index (path → URL); nil
	// when no backend has one.
	openAPIV3Paths map[string]string
	// emu is what the rules the union was built with emulate (nil without
	// a converter): what discovery shows and what is converted come from
	// the same rules.
	emu *emulation.View
}

// serveDiscovery answers the discovery endpoints from the union of the
// backends. It reports false for every other request.
func (p *Proxy) serveDiscovery(w http.ResponseWriter, r *http.Request, info *request.RequestInfo) bool {
	if info.IsResourceRequest || (r.Method != http.MethodGet && r.Method != http.MethodHead) {
		return false
	}
	if r.Context().Value(passThroughKey{}) != nil {
		return false
	}
	path := strings.TrimSuffix(r.URL.Path, "/")
	// Everything below is answered only to clients a backend would answer
	// (mayReadUnion); OpenAPI v3 documents are probed with the small index.
	if doc, ok := strings.CutPrefix(path, "/openapi/v3/"); ok {
		u := p.discoveryUnion()
		if u == nil || !u.emu.ListsOpenAPIV3(doc) {
			return false
		}
		if !p.mayReadUnion(w, r, "/openapi/v3") {
			return true
		}
		body, ok := u.emu.OpenAPI(r.Context()).V3[doc]
		if !ok {
			return false
		}
		serveWithETag(w, r, "application/json", body, apidoc.ETag(body))
		return true
	}
	if path == "/openapi/v2" {
		if p.mayReadUnion(w, r, "/openapi/v2") {
			p.serveOpenAPIV2(w, r)
		}
		return true
	}
	isDiscovery := path == "/api" || path == "/apis" || path == "/openapi/v3" ||
		strings.HasPrefix(path, "/api/") && strings.Count(path, "/") == 2 ||
		strings.HasPrefix(path, "/apis/") && strings.Count(path, "/") <= 3
	if !isDiscovery {
		return false
	}
	u := p.discoveryUnion()
	if u == nil {
		// No backend has been read yet: let a backend answer.
		return false
	}
	if !p.mayReadUnion(w, r, path) {
		return true
	}
	switch path {
	case "/api", "/apis":
		if apidoc.WantsAggregated(r.Header.Get("Accept")) {
			body, etag := u.APIs, u.APIsETag
			if path == "/api" {
				body, etag = u.Core, u.CoreETag
			}
			serveWithETag(w, r, apidoc.AggregatedContentType, body, etag)
			return true
		}
		if path == "/api" {
			serveJSON(w, r, p.legacyAPIVersions(r, u))
		} else {
			serveJSON(w, r, u.LegacyAPIGroups)
		}
		return true
	case "/openapi/v3":
		index := apidoc.MergeOpenAPIV3Index(u.openAPIV3Paths, u.emu.OpenAPI(r.Context()).V3)
		if index == nil {
			return false
		}
		serveWithETag(w, r, "application/json", index, apidoc.ETag(index))
		return true
	}
	body, ok := u.Legacy[path]
	if !ok {
		response.WriteStatus(w, http.StatusNotFound, metav1.StatusReasonNotFound, fmt.Sprintf("the server could not find the requested resource (get %s)", path), 0)
		return true
	}
	serveJSON(w, r, body)
	return true
}

func (p *Proxy) legacyAPIVersions(r *http.Request, u *discoveryUnion) []byte {
	vs := metav1.APIVersions{
		TypeMeta: metav1.TypeMeta{Kind: "APIVersions"},
		Versions: u.LegacyVersions,
		ServerAddressByClientCIDRs: []metav1.ServerAddressByClientCIDR{
			{ClientCIDR: "0.0.0.0/0", ServerAddress: r.Host},
		},
	}
	b, _ := json.Marshal(vs)
	return b
}

// serveWithETag follows the apiserver's aggregated discovery handler: a quoted
// ETag, Vary: Accept, Cache-Control: public, and 304 on If-None-Match.
func serveWithETag(w http.ResponseWriter, r *http.Request, contentType string, body []byte, etag string) {
	quoted := strconv.Quote(etag)
	h := w.Header()
	h.Set("ETag", quoted)
	h.Set("Vary", "Accept")
	h.Set("Cache-Control", "public")
	if r.Header.Get("If-None-Match") == quoted {
		w.WriteHeader(http.StatusNotModified)
		return
	}
	h.Set("Content-Type", contentType)
	h.Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(http.StatusOK)
	if r.Method != http.MethodHead {
		_, _ = w.Write(body)
	}
}

func serveJSON(w http.ResponseWriter, r *http.Request, body []byte) {
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Cache-Control", "no-cache, private")
	h.Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(http.StatusOK)
	if r.Method != http.MethodHead {
		_, _ = w.Write(body)
	}
}

func (p *Proxy) discoveryUnion() *discoveryUnion {
	p.disc.mu.Lock()
	defer p.disc.mu.Unlock()
	if p.disc.union != nil {
		return p.disc.union
	}
	u := p.buildUnion()
	p.disc.union = u
	return u
}

// byNewest lists the backends with capabilities, newest server version
// first: their order of versions and resources wins in the union.
func (p *Proxy) byNewest() []*backendState {
	var states []*backendState
	for _, b := range p.list() {
		if st := b.snapshot(); st.caps != nil {
			states = append(states, st)
		}
	}
	slices.SortStableFunc(states, func(a, b *backendState) int { return compareVersions(b, a) })
	return states
}

// compareVersions orders backend states by server version, unknown first.
func compareVersions(a, b *backendState) int {
	switch {
	case a.version == nil && b.version == nil:
		return 0
	case a.version == nil:
		return -1
	case b.version == nil:
		return 1
	case a.version.GreaterThan(b.version):
		return 1
	case b.version.GreaterThan(a.version):
		return -1
	}
	return 0
}

// buildUnion merges the discovery of every backend that has been read, ready
// or not: a server that restarts must not make its resources vanish from
// discovery (the garbage collector and namespace deletion would act on it).
func (p *Proxy) buildUnion() *discoveryUnion {
	states := p.byNewest()
	if len(states) == 0 {
		return nil
	}
	var lists [][]apidiscoveryv2.APIGroupDiscovery
	for _, st := range states {
		lists = append(lists, st.caps.groups)
	}
	merged := apidoc.MergeGroups(lists)
	ar := p.rules.Load()
	u := &discoveryUnion{}
	if ar.emu != nil {
		u.emu, merged = ar.emu.View(merged)
	}
	u.Documents = apidoc.Render(merged)
	for _, st := range states {
		for path, url := range st.caps.openAPIV3 {
			if u.openAPIV3Paths == nil {
				u.openAPIV3Paths = map[string]string{}
			}
			if _, ok := u.openAPIV3Paths[path]; !ok {
				u.openAPIV3Paths[path] = url
			}
		}
	}
	return u
}
