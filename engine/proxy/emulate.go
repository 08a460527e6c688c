package proxy

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/endpoints/request"

	"github.com/mvpctl/mvpctl/engine/proxy/internal/apidoc"
	"github.com/mvpctl/mvpctl/engine/proxy/internal/emulation"
	"github.com/mvpctl/mvpctl/engine/proxy/internal/response"
)

// emulate serves a request for a version no ready backend serves when the
// rules of the discovery union lead from it to one that a ready backend
// serves. It reports false, having written nothing, when they do not.
func (p *Proxy) emulate(w http.ResponseWriter, r *http.Request, info *request.RequestInfo, rt *route) bool {
	u := p.discoveryUnion()
	if u == nil {
		return false
	}
	return u.emu.Serve(w, r.WithContext(context.WithValue(r.Context(), clientRouteKey{}, rt)), info)
}

// innerKey marks the requests the proxy sends through itself on a client's
// behalf (an emulation's, and the probes of access and identity checks):
// the client's request is counted once, not again for each of them. Its
// value is the client's *route when it takes the backend that answered.
type innerKey struct{}

// clientRouteKey is the context key of the client's *route on a request an
// emulation serves; the requests the emulation sends through the proxy
// carry it to innerKey.
type clientRouteKey struct{}

// emulationHost is the proxy as its emulation sees it.
type emulationHost struct{ p *Proxy }

var _ emulation.Host = emulationHost{}

// ServeInner marks r as an inner request of its client's (innerKey): it
// carries the client's identity, and the client's request is the one
// counted, under the backend that answered the last inner request.
func (h emulationHost) ServeInner(w http.ResponseWriter, r *http.Request) {
	outer, _ := r.Context().Value(clientRouteKey{}).(*route)
	h.p.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), innerKey{}, outer)))
}

func (h emulationHost) Serves(gv schema.GroupVersion, resource string) bool {
	return h.p.serves(gvr{gv.Group, gv.Version, resource})
}

// ReadBody establishes the client's identity with a backend before the
// body is buffered and converted: the conversion is the expensive part of
// emulation.
func (h emulationHost) ReadBody(w http.ResponseWriter, r *http.Request) ([]byte, func(), bool) {
	if !h.p.establish(w, r) {
		return nil, nil, false
	}
	body, release, err := h.p.readBody(w, r)
	if err != nil {
		h.p.writeBodyError(w, err)
		return nil, nil, false
	}
	return body, release, true
}

// CRD reads a CustomResourceDefinition with the proxy's own identity from a
// ready backend, the newest first. It returns nil, nil when there is none,
// and when the proxy may not read it (logged).
func (h emulationHost) CRD(ctx context.Context, name string) (*apiextensionsv1.CustomResourceDefinition, error) {
	p := h.p
	ready := p.readyBackends(nil)
	slices.SortStableFunc(ready, func(a, b *backend) int { return compareVersions(b.snapshot(), a.snapshot()) })
	err := errors.New("no kube-apiserver is ready")
	path := "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/" + url.PathEscape(name)
	for _, b := range ready {
		release, rerr := b.onBehalf(ctx)
		if rerr != nil {
			return nil, rerr
		}
		resp, rerr := b.get(ctx, path, "application/json", nil)
		if rerr != nil {
			release()
			err = rerr
			continue
		}
		body, rerr := response.ReadObject(resp.Body, p.opts.MaxObjectBytes)
		resp.Body.Close()
		release()
		switch {
		case rerr != nil:
			err = rerr
			continue
		case resp.StatusCode == http.StatusNotFound:
			return nil, nil
		case resp.StatusCode == http.StatusUnauthorized || resp.StatusCode == http.StatusForbidden:
			p.log.Warn("the proxy's identity may not read a CRD: the emulated version has no OpenAPI from it", "crd", name, "backend", b.name, "code", resp.StatusCode)
			return nil, nil
		case resp.StatusCode != http.StatusOK:
			err = &httpStatusError{path: path, code: resp.StatusCode, body: string(truncate(body, 200))}
			continue
		}
		var crd apiextensionsv1.CustomResourceDefinition
		if err := json.Unmarshal(body, &crd); err != nil {
			return nil, fmt.Errorf("GET %s: %w", path, err)
		}
		return &crd, nil
	}
	return nil, err
}

// serves reports whether a ready backend serves the group/version/resource
// (resource may be "pods/log").
func (p *Proxy) serves(k gvr) bool {
	for _, b := range p.list() {
		if st := b.snapshot(); st.ready && st.caps.serves(k) {
			return true
		}
	}
	return false
}

// ResourceFor maps a kind to its resource from the backends' discovery, for
// [engine.Options.Resolver]: rules may leave out kind.
func (p *Proxy) ResourceFor(gvk schema.GroupVersionKind) (string, bool) {
	for _, b := range p.list() {
		st := b.snapshot()
		if st.caps == nil {
			continue
		}
		for _, g := range st.caps.groups {
			if g.Name != gvk.Group {
				continue
			}
			for _, v := range g.Versions {
				for _, r := range v.Resources {
					if r.ResponseKind != nil && r.ResponseKind.Kind == gvk.Kind {
						return r.Resource, true
					}
				}
			}
		}
	}
	return "", false
}

// emulates reports whether the rules can emulate key.
func (p *Proxy) emulates(key gvr) bool {
	u := p.discoveryUnion()
	return u != nil && u.emu.Emulates(schema.GroupVersion{Group: key.group, Version: key.version}, key.resource)
}

// OpenAPIV3Path finds the /openapi/v3 path (apis/policy/v1beta1, api/v1) of
// a group/version's OpenAPI v3 document from the API paths it describes:
// the key of the document in [Options.OpenAPIV3].
func OpenAPIV3Path(doc []byte) (string, error) { return apidoc.OpenAPIV3Path(doc) }
