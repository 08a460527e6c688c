package proxy

import (
	"context"
	"crypto/sha256"
	"net/http"
	"sync"
	"time"

	"github.com/mvpctl/mvpctl/engine/proxy/internal/response"
)

// accessTTL is how long a backend's "yes" to a client's credentials for a
// discovery path is trusted, as kube-rbac-proxy caches its reviews: a
// revoked token can read discovery for this long at most.
const accessTTL = 10 * time.Second

// accessCache remembers which credentials a backend let read which
// discovery or OpenAPI path, so that the proxy answers those from the union
// of its backends only to clients the cluster would answer (kube-apiserver
// grants discovery to system:authenticated, not to anonymous users).
type accessCache struct {
	mu sync.Mutex
	m  map[[sha256.Size]byte]time.Time // expiry
}

// passThroughKey marks the probe a discovery request sends to a backend: it
// is not answered from the union (that would ask again).
type passThroughKey struct{}

// mayReadUnion reports whether the client may read what the proxy is about
// to answer at r from the union of its backends. It asks a backend with the
// client's own credentials (a GET of probePath, through the proxy's usual
// routing and identity handling): any answer the apiserver gives after
// authorizing (2xx, 304, 404) means yes. Otherwise it writes the backend's
// answer (401, 403, 503) to the client and reports false.
func (p *Proxy) mayReadUnion(w http.ResponseWriter, r *http.Request, probePath string) bool {
	key := credentialsKey(r, probePath)
	now := time.Now()
	p.access.mu.Lock()
	exp, ok := p.access.m[key]
	p.access.mu.Unlock()
	if ok && now.Before(exp) {
		return true
	}
	// Marked as an inner request: the client's request is the one counted.
	ctx := context.WithValue(context.WithValue(r.Context(), passThroughKey{}, true), innerKey{}, (*route)(nil))
	probe := r.Clone(ctx)
	probe.Method = http.MethodGet
	probe.URL.Path, probe.URL.RawPath, probe.URL.RawQuery = probePath, "", ""
	probe.RequestURI = probePath
	probe.Header.Set("Accept", "application/json")
	// A server that can answer 304 need not send the document:
	// kube-apiserver authorizes before its handlers run.
	probe.Header.Set("If-None-Match", "*")
	probe.Body, probe.ContentLength = http.NoBody, 0
	b := response.NewBuffered()
	p.ServeHTTP(b, probe)
	switch code := b.Code; {
	case code == 0, code < 300, code == http.StatusNotModified, code == http.StatusNotFound:
		p.access.mu.Lock()
		if p.access.m == nil || len(p.access.m) > 10000 {
			p.access.m = map[[sha256.Size]byte]time.Time{}
		}
		p.access.m[key] = now.Add(accessTTL)
		p.access.mu.Unlock()
		return true
	}
	b.CopyTo(w)
	return false
}

// credentialsKey identifies everything a backend authenticates and
// authorizes a discovery request by: the identity the request goes upstream
// with (a bearer token, the impersonation of a verified client certificate,
// the client's Impersonate-* headers), a bearer token offered as a
// WebSocket subprotocol, and the path.
func credentialsKey(r *http.Request, path string) [sha256.Size]byte {
	parts := append([]string{path}, r.Header.Values("Sec-Websocket-Protocol")...)
	return identityFrom(r.Context()).key(parts...)
}
