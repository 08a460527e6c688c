package proxy

import (
	"crypto/sha512"
	"encoding/json"
	"fmt"
	"mime"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"

	apidiscoveryv2 "k8s.io/api/apidiscovery/v2"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/client-go/discovery"
)

const aggregatedContentType = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"

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
	core, apis         []byte // aggregated /api and /apis
	coreETag, apisETag string
	legacyAPIGroups    []byte            // legacy /apis
	legacy             map[string][]byte // legacy /api/v1, /apis/<g>, /apis/<g>/<v>
	legacyVersions     []string          // versions of the core group
	// openAPIV3Paths is the backends' /openapi/v3 index (path → URL); nil
	// when no backend has one.
	openAPIV3Paths map[string]string
	// openAPI holds the emulated versions' documents, built on first use.
	openAPI emulatedOpenAPI
	// rules are the rules the union was built with; emulated maps each
	// group/version/resource they can emulate to its served version (nil
	// without a converter). Emulation uses both, so that what discovery
	// shows and what is converted come from the same rules.
	rules    *activeRules
	emulated map[gvr]emulatedTarget
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
		if u := p.discoveryUnion(); u == nil || !u.listsEmulated(doc) {
			return false
		}
		if !p.mayReadUnion(w, r, "/openapi/v3") {
			return true
		}
		return p.serveEmulatedOpenAPIV3(w, r, doc)
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
		if wantsAggregated(r.Header.Get("Accept")) {
			body, etag := u.apis, u.apisETag
			if path == "/api" {
				body, etag = u.core, u.coreETag
			}
			serveWithETag(w, r, aggregatedContentType, body, etag)
			return true
		}
		if path == "/api" {
			serveJSON(w, r, p.legacyAPIVersions(r, u))
		} else {
			serveJSON(w, r, u.legacyAPIGroups)
		}
		return true
	case "/openapi/v3":
		index := p.emulatedDocs(r.Context(), u).index
		if index == nil {
			return false
		}
		serveWithETag(w, r, "application/json", index, etagOf(index))
		return true
	}
	body, ok := u.legacy[path]
	if !ok {
		writeStatus(w, http.StatusNotFound, metav1.StatusReasonNotFound, fmt.Sprintf("the server could not find the requested resource (get %s)", path), 0)
		return true
	}
	serveJSON(w, r, body)
	return true
}

func (p *Proxy) legacyAPIVersions(r *http.Request, u *discoveryUnion) []byte {
	vs := metav1.APIVersions{
		TypeMeta: metav1.TypeMeta{Kind: "APIVersions"},
		Versions: u.legacyVersions,
		ServerAddressByClientCIDRs: []metav1.ServerAddressByClientCIDR{
			{ClientCIDR: "0.0.0.0/0", ServerAddress: r.Host},
		},
	}
	b, _ := json.Marshal(vs)
	return b
}

// wantsAggregated picks aggregated discovery when the client lists its JSON
// form before plain JSON (the order client-go and kubectl send).
func wantsAggregated(accept string) bool {
	for _, part := range strings.Split(accept, ",") {
		mt, params, err := mime.ParseMediaType(strings.TrimSpace(part))
		if err != nil {
			continue
		}
		if mt != "application/json" && mt != "*/*" && mt != "application/*" {
			continue
		}
		return params["g"] == "apidiscovery.k8s.io" && params["v"] == "v2" && params["as"] == "APIGroupDiscoveryList"
	}
	return false
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

func etagOf(b []byte) string { return fmt.Sprintf("%X", sha512.Sum512(b)) }

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
	merged := mergeGroups(lists)
	ar := p.rules.Load()
	var emulated map[gvr]emulatedTarget
	if ar.emu != nil {
		emulated = ar.emu.emulatedTargets(merged)
		merged = addEmulated(merged, emulated)
	}
	var core, apis apidiscoveryv2.APIGroupDiscoveryList
	core.TypeMeta = metav1.TypeMeta{APIVersion: "apidiscovery.k8s.io/v2", Kind: "APIGroupDiscoveryList"}
	apis.TypeMeta = core.TypeMeta
	for _, g := range merged {
		if g.Name == "" {
			core.Items = append(core.Items, g)
		} else {
			apis.Items = append(apis.Items, g)
		}
	}
	u := &discoveryUnion{legacy: map[string][]byte{}, rules: ar, emulated: emulated}
	u.core, _ = json.Marshal(core)
	u.apis, _ = json.Marshal(apis)
	u.coreETag, u.apisETag = etagOf(u.core), etagOf(u.apis)

	groupList, resources, _ := discovery.SplitGroupsAndResources(apis)
	groupList.TypeMeta = metav1.TypeMeta{Kind: "APIGroupList", APIVersion: "v1"}
	u.legacyAPIGroups, _ = json.Marshal(groupList)
	for _, g := range groupList.Groups {
		g.TypeMeta = metav1.TypeMeta{Kind: "APIGroup", APIVersion: "v1"}
		u.legacy["/apis/"+g.Name], _ = json.Marshal(g)
	}
	coreGroups, coreResources, _ := discovery.SplitGroupsAndResources(core)
	for _, g := range coreGroups.Groups {
		for _, v := range g.Versions {
			u.legacyVersions = append(u.legacyVersions, v.Version)
		}
	}
	add := func(prefix string, m map[schema.GroupVersion]*metav1.APIResourceList) {
		for gv, rl := range m {
			rl.TypeMeta = metav1.TypeMeta{Kind: "APIResourceList", APIVersion: "v1"}
			path := prefix + gv.Group + "/" + gv.Version
			if gv.Group == "" {
				path = prefix + gv.Version
			}
			u.legacy[path], _ = json.Marshal(rl)
		}
	}
	add("/api/", coreResources)
	add("/apis/", resources)
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

// mergeGroups is the union of several aggregated discovery documents, the
// first one's order and definitions winning.
func mergeGroups(lists [][]apidiscoveryv2.APIGroupDiscovery) []apidiscoveryv2.APIGroupDiscovery {
	var out []apidiscoveryv2.APIGroupDiscovery
	groupIdx := map[string]int{}
	for _, list := range lists {
		for _, g := range list {
			gi, ok := groupIdx[g.Name]
			if !ok {
				groupIdx[g.Name] = len(out)
				out = append(out, *g.DeepCopy())
				continue
			}
			mg := &out[gi]
			for _, v := range g.Versions {
				vi := slices.IndexFunc(mg.Versions, func(x apidiscoveryv2.APIVersionDiscovery) bool { return x.Version == v.Version })
				if vi < 0 {
					mg.Versions = append(mg.Versions, *v.DeepCopy())
					continue
				}
				mv := &mg.Versions[vi]
				if v.Freshness == apidiscoveryv2.DiscoveryFreshnessCurrent {
					mv.Freshness = apidiscoveryv2.DiscoveryFreshnessCurrent
				}
				for _, r := range v.Resources {
					if !slices.ContainsFunc(mv.Resources, func(x apidiscoveryv2.APIResourceDiscovery) bool { return x.Resource == r.Resource }) {
						mv.Resources = append(mv.Resources, *r.DeepCopy())
					}
				}
			}
		}
	}
	return out
}

// mergeOpenAPIV3Index is the /openapi/v3 index of the backends' union (a
// path served by several backends points to the newest one's document) and
// of the emulated versions' documents, named by their hash.
func mergeOpenAPIV3Index(backends map[string]string, emulated map[string][]byte) []byte {
	paths := map[string]map[string]string{}
	for p, doc := range emulated {
		paths[p] = map[string]string{"serverRelativeURL": "/openapi/v3/" + p + "?hash=" + etagOf(doc)}
	}
	for p, u := range backends {
		if _, ok := paths[p]; !ok {
			paths[p] = map[string]string{"serverRelativeURL": u}
		}
	}
	if len(paths) == 0 {
		return nil
	}
	b, _ := json.Marshal(map[string]any{"paths": paths})
	return b
}
