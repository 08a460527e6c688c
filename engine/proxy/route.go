package proxy

import (
	"net/http"
	"slices"
	"strings"

	"k8s.io/apiserver/pkg/endpoints/request"
)

// candidates lists, best first, the ready backends that may receive a
// request for key (the zero key for non-resource requests). known reports
// whether any backend, ready or not, has listed key in its discovery; a
// request nobody knows is sent to any ready backend, because the capability
// map may simply be behind (a CRD created a moment ago).
func (p *Proxy) candidates(ar *activeRules, key gvr, info *request.RequestInfo, r *http.Request) (cands []*backend, decision string, known bool) {
	decision = decisionLocal
	if !info.IsResourceRequest {
		cands = p.readyBackends(nil)
		p.order(cands, nil)
		if doc, ok := strings.CutPrefix(info.Path, "/openapi/v3/"); ok {
			// Always in this order, even when every backend lists the
			// document: the hash in the URL is one server's, and another
			// server redirects to its own hash (clients give up after 10
			// redirects between two servers).
			if narrowed := openAPIV3Backends(cands, doc, r.URL.RequestURI()); len(narrowed) > 0 {
				if len(narrowed) < len(cands) {
					decision = decisionRerouted
				}
				cands = narrowed
			}
		}
		return cands, decision, false
	}
	// Not every subresource is listed by every server version (pods/resize);
	// when no backend lists this one at all, route by its parent resource.
	if parent, _, isSub := strings.Cut(key.resource, "/"); isSub && !p.anyKnows(key) {
		key.resource = parent
	}
	known = p.anyKnows(key)
	ready := p.readyBackends(nil)
	if !known {
		p.order(ready, nil)
		return ready, decision, false
	}
	cands = p.readyBackends(&key)
	if len(cands) < len(ready) {
		decision = decisionRerouted
	}
	rule := ar.match(info)
	if rule != nil && p.order(cands, rule) && decision == decisionLocal {
		decision = decisionRerouted
	}
	if rule == nil {
		p.order(cands, nil)
	}
	return cands, decision, true
}

func (p *Proxy) anyKnows(key gvr) bool {
	for _, b := range p.list() {
		if b.snapshot().caps.serves(key) {
			return true
		}
	}
	return false
}

// readyBackends lists the ready backends that serve key (all ready ones when
// key is nil).
func (p *Proxy) readyBackends(key *gvr) []*backend {
	out := make([]*backend, 0, len(p.list()))
	for _, b := range p.list() {
		st := b.snapshot()
		if !st.ready {
			continue
		}
		if key != nil && !st.caps.serves(*key) {
			continue
		}
		out = append(out, b)
	}
	return out
}

// order sorts candidates: backends preferred by rule first, then by fewest
// outstanding short requests, ties broken round-robin. It reports whether the
// rule preferred some but not all candidates.
func (p *Proxy) order(cands []*backend, rule *compiledRule) (narrowed bool) {
	n := len(cands)
	if n < 2 {
		return false
	}
	// Rotate first so that the stable sort breaks ties round-robin.
	off := int(p.rr.Add(1) % uint64(n))
	rotated := append(cands[off:n:n], cands[:off]...)
	tier := func(b *backend) int {
		if rule == nil || rule.pattern.Match(b.snapshot().version) {
			return 0
		}
		return 1
	}
	preferred := 0
	for _, b := range rotated {
		if tier(b) == 0 {
			preferred++
		}
	}
	slices.SortStableFunc(rotated, func(a, b *backend) int {
		if ta, tb := tier(a), tier(b); ta != tb {
			return ta - tb
		}
		oa, ob := a.outstanding.Load(), b.outstanding.Load()
		switch {
		case oa < ob:
			return -1
		case oa > ob:
			return 1
		}
		return 0
	})
	copy(cands, rotated)
	return rule != nil && preferred > 0 && preferred < n
}

// openAPIV3Backends keeps the backends whose /openapi/v3 index lists doc
// (apis/apps/v1), those whose document has the requested hash first: the
// client found the URL in the proxy's merged index and caches it as immutable.
func openAPIV3Backends(cands []*backend, doc, requestURI string) []*backend {
	var exact, other []*backend
	for _, b := range cands {
		u, ok := b.snapshot().caps.openAPIV3[doc]
		switch {
		case !ok:
		case u == requestURI:
			exact = append(exact, b)
		default:
			other = append(other, b)
		}
	}
	return append(exact, other...)
}

// match returns the first apiRoutingRule for the request's group,
// resource and version.
func (ar *activeRules) match(info *request.RequestInfo) *compiledRule {
	for i := range ar.routing {
		r := &ar.routing[i].rule
		if r.APIGroup != info.APIGroup {
			continue
		}
		if r.Resource != "*" && r.Resource != info.Resource {
			continue
		}
		if r.ClientVersion != "" && r.ClientVersion != info.APIVersion {
			continue
		}
		return &ar.routing[i]
	}
	return nil
}
