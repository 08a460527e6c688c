package proxy

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"slices"
	"strconv"
	"strings"

	apidiscoveryv2 "k8s.io/api/apidiscovery/v2"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/endpoints/request"
	"sigs.k8s.io/yaml"

	"github.com/mvpctl/mvpctl/engine"
)

// emulatedTarget is how one group/version/resource that the rules connect
// to a served version is emulated.
type emulatedTarget struct {
	requested schema.GroupVersion
	served    schema.GroupVersion
	resource  string
	// kind is the resource's kind, the same in both versions (the served
	// version's discovery names it).
	kind string
	// listed says that no backend lists the requested version, so discovery
	// shows it as emulated.
	listed bool
}

// emulator is built from a [Rules.Converter]: it serves a
// version no ready backend serves by rewriting the request to the nearest
// served version the rules lead to and converting the bodies both ways.
type emulator struct {
	p    *Proxy
	conv *engine.Converter
}

// emulation is one emulated request.
type emulation struct {
	e    *emulator
	t    emulatedTarget
	info *request.RequestInfo
	// outer is the client's request's route (nil in tests that build an
	// emulation by hand).
	outer *route
}

// emulationKey is the context key of a request's *emulation: the inner
// request to the served version carries it so that modifyResponse converts
// the answer.
type emulationKey struct{}

// innerKey marks the requests an emulation sends through the proxy: the
// client's request is counted once, as emulated, not again for each of them.
// Its value is the client's *route, which takes the backend that answered.
type innerKey struct{}

func emulationFrom(ctx context.Context) *emulation {
	em, _ := ctx.Value(emulationKey{}).(*emulation)
	return em
}

// emulatedTargets finds, for every group/version/resource the rules mention,
// the version it is emulated from: among the versions listed in merged that
// a chain of rules reaches, the one with the fewest hops (the server's
// preferred version among equals). Versions that merged lists are included
// too (listed false): they are emulated while no ready backend serves them,
// e.g. during a rolling upgrade once the last old server is gone.
func (e *emulator) emulatedTargets(merged []apidiscoveryv2.APIGroupDiscovery) map[gvr]emulatedTarget {
	out := map[gvr]emulatedTarget{}
	type listedAt struct {
		gv  schema.GroupVersion
		res *apidiscoveryv2.APIResourceDiscovery
	}
	for resource, gvs := range e.conv.Versions() {
		// The served versions of the resource, in the servers' order.
		var served []listedAt
		for gi := range merged {
			g := &merged[gi]
			for vi := range g.Versions {
				v := &g.Versions[vi]
				for ri := range v.Resources {
					r := &v.Resources[ri]
					if r.Resource == resource && slices.Contains(gvs, schema.GroupVersion{Group: g.Name, Version: v.Version}) {
						served = append(served, listedAt{schema.GroupVersion{Group: g.Name, Version: v.Version}, r})
					}
				}
			}
		}
		for _, from := range gvs {
			best, bestHops := -1, 0
			for i, s := range served {
				if s.gv == from || s.res.ResponseKind == nil {
					continue
				}
				progs, _, ok, err := e.conv.Path(from.WithKind(s.res.ResponseKind.Kind), s.gv)
				if !ok || err != nil || len(progs) == 0 {
					continue
				}
				if best < 0 || len(progs) < bestHops {
					best, bestHops = i, len(progs)
				}
			}
			if best < 0 {
				continue
			}
			listed := slices.ContainsFunc(served, func(s listedAt) bool { return s.gv == from })
			out[gvr{from.Group, from.Version, resource}] = emulatedTarget{
				requested: from, served: served[best].gv, resource: resource,
				kind: served[best].res.ResponseKind.Kind, listed: !listed,
			}
		}
	}
	return out
}

// addEmulated adds the emulated versions to merged discovery: each as the
// last (least preferred) version of its group, its resource a copy of the
// served version's (verbs, scope, short names, categories, subresources).
func addEmulated(merged []apidiscoveryv2.APIGroupDiscovery, targets map[gvr]emulatedTarget) []apidiscoveryv2.APIGroupDiscovery {
	keys := make([]gvr, 0, len(targets))
	for k, t := range targets {
		if t.listed {
			keys = append(keys, k)
		}
	}
	slices.SortFunc(keys, func(a, b gvr) int { return strings.Compare(a.String(), b.String()) })
	for _, k := range keys {
		t := targets[k]
		src := findResource(merged, t.served, t.resource)
		if src == nil {
			continue
		}
		res := *src.DeepCopy()
		res.ResponseKind = &metav1.GroupVersionKind{Group: k.group, Version: k.version, Kind: t.kind}
		for i := range res.Subresources {
			if rk := res.Subresources[i].ResponseKind; rk != nil && rk.Group == t.served.Group && rk.Version == t.served.Version {
				res.Subresources[i].ResponseKind = &metav1.GroupVersionKind{Group: k.group, Version: k.version, Kind: rk.Kind}
			}
		}
		gi := slices.IndexFunc(merged, func(g apidiscoveryv2.APIGroupDiscovery) bool { return g.Name == k.group })
		if gi < 0 {
			g := apidiscoveryv2.APIGroupDiscovery{}
			g.Name = k.group
			merged = append(merged, g)
			gi = len(merged) - 1
		}
		g := &merged[gi]
		vi := slices.IndexFunc(g.Versions, func(v apidiscoveryv2.APIVersionDiscovery) bool { return v.Version == k.version })
		if vi < 0 {
			g.Versions = append(g.Versions, apidiscoveryv2.APIVersionDiscovery{Version: k.version, Freshness: apidiscoveryv2.DiscoveryFreshnessCurrent})
			vi = len(g.Versions) - 1
		}
		g.Versions[vi].Resources = append(g.Versions[vi].Resources, res)
	}
	return merged
}

func findResource(groups []apidiscoveryv2.APIGroupDiscovery, gv schema.GroupVersion, resource string) *apidiscoveryv2.APIResourceDiscovery {
	for gi := range groups {
		if groups[gi].Name != gv.Group {
			continue
		}
		for vi := range groups[gi].Versions {
			v := &groups[gi].Versions[vi]
			if v.Version != gv.Version {
				continue
			}
			for ri := range v.Resources {
				if v.Resources[ri].Resource == resource {
					return &v.Resources[ri]
				}
			}
		}
	}
	return nil
}

// emulate serves a request for a version no ready backend serves when the
// rules lead from it to one that a ready backend serves. It reports false,
// having written nothing, when they do not.
func (p *Proxy) emulate(w http.ResponseWriter, r *http.Request, info *request.RequestInfo, outer *route) bool {
	u := p.discoveryUnion()
	if u == nil || u.rules.emu == nil {
		return false
	}
	t, ok := u.emulated[gvr{info.APIGroup, info.APIVersion, info.Resource}]
	if !ok || !p.Serves(t.served.Group, t.served.Version, t.resource) {
		return false
	}
	em := &emulation{e: u.rules.emu, t: t, info: info, outer: outer}
	em.serve(w, r)
	return true
}

// convertsBodies tells the subresources whose bodies are the resource's own
// object (status) from those with their own kinds (scale: autoscaling/v1
// Scale), which pass through.
func (em *emulation) convertsBodies() bool {
	return em.info.Subresource == "" || em.info.Subresource == "status"
}

func (em *emulation) serve(w http.ResponseWriter, r *http.Request) {
	accept, ok := jsonAccept(r.Header.Get("Accept"))
	if !ok {
		writeStatus(w, http.StatusNotAcceptable, metav1.StatusReasonNotAcceptable,
			fmt.Sprintf("%s %s is emulated by converting JSON from %s: only application/json responses can be served, not %q",
				em.t.requested, em.t.resource, em.t.served, r.Header.Get("Accept")), 0)
		return
	}
	path, ok := em.servedPath(r.URL.Path)
	if !ok {
		writeStatus(w, http.StatusNotFound, metav1.StatusReasonNotFound, fmt.Sprintf("the server could not find the requested resource (%s)", r.URL.Path), 0)
		return
	}
	query := r.URL.Query()
	if err := em.rewriteSelectors(query); err != nil {
		writeStatus(w, http.StatusBadRequest, metav1.StatusReasonBadRequest, err.Error(), 0)
		return
	}
	var body []byte
	// HTTP/2 requests always have a Body; a length of 0 means none was sent.
	if r.Body != nil && r.Body != http.NoBody && r.ContentLength != 0 {
		if !em.e.p.establish(w, r) {
			return
		}
		b, release, err := em.e.p.readBody(w, r, em.e.p.opts.MaxRequestBodyBytes)
		if err != nil {
			em.e.p.writeBodyError(w, err)
			return
		}
		defer release()
		body = b
	}
	ctx := r.Context()
	contentType := r.Header.Get("Content-Type")
	if em.convertsBodies() {
		switch em.info.Verb {
		case "create", "update":
			conv, st := em.requestObject(ctx, body, contentType)
			if st != nil {
				writeStatusError(w, st)
				return
			}
			body, contentType = conv, "application/json"
		case "patch":
			em.patch(w, r, path, query, body, contentType, accept)
			return
		}
	}
	in := em.innerRequest(context.WithValue(ctx, emulationKey{}, em), r, r.Method, path, query, body, contentType, accept)
	em.e.p.ServeHTTP(w, in)
}

// innerRequest is the request to the served version, routed like any other.
func (em *emulation) innerRequest(ctx context.Context, r *http.Request, method, path string, query map[string][]string, body []byte, contentType, accept string) *http.Request {
	in := r.Clone(context.WithValue(ctx, innerKey{}, em.outer))
	in.Method = method
	in.URL.Path, in.URL.RawPath = path, ""
	in.URL.RawQuery = encodeQuery(query)
	in.RequestURI = in.URL.RequestURI()
	in.Header.Set("Accept", accept)
	in.Header.Del("Content-Length")
	if body == nil {
		in.Body, in.ContentLength, in.GetBody = http.NoBody, 0, nil
		in.Header.Del("Content-Type")
	} else {
		in.Body, in.ContentLength = io.NopCloser(bytes.NewReader(body)), int64(len(body))
		in.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(body)), nil }
		if contentType != "" {
			in.Header.Set("Content-Type", contentType)
		}
	}
	return in
}

// servedPath rewrites /apis/<group>/<version>/... to the served group/version.
func (em *emulation) servedPath(p string) (string, bool) {
	prefix := func(gv schema.GroupVersion) string {
		if gv.Group == "" {
			return "/api/" + gv.Version
		}
		return "/apis/" + gv.Group + "/" + gv.Version
	}
	rest, ok := strings.CutPrefix(p, prefix(em.t.requested))
	if !ok || rest != "" && rest[0] != '/' {
		return "", false
	}
	return prefix(em.t.served) + rest, true
}

// jsonAccept keeps the JSON media types of an Accept header (Table requests
// included): conversion needs JSON. It reports false when nothing is left.
func jsonAccept(accept string) (string, bool) {
	if strings.TrimSpace(accept) == "" {
		return "application/json", true
	}
	var keep []string
	for _, part := range strings.Split(accept, ",") {
		mt, _, err := mime.ParseMediaType(strings.TrimSpace(part))
		if err != nil {
			continue
		}
		switch mt {
		case "application/json":
			keep = append(keep, strings.TrimSpace(part))
		case "*/*", "application/*":
			keep = append(keep, "application/json")
		}
	}
	return strings.Join(keep, ","), len(keep) > 0
}

// statusError is an answer the emulation gives itself.
type statusError struct {
	code    int
	reason  metav1.StatusReason
	message string
}

func (s *statusError) Error() string { return s.message }

func writeStatusError(w http.ResponseWriter, st *statusError) {
	writeStatus(w, st.code, st.reason, st.message, 0)
}

// conversionFailed is the 500 of a failed conversion; the message names the
// rule, the direction and the field path (engine.ConversionError).
func conversionFailed(err error) *statusError {
	return &statusError{http.StatusInternalServerError, metav1.StatusReasonInternalError, "version emulation: " + err.Error()}
}

// badRequestObject is the 400 of a client's object the rules cannot convert
// forward (a value of the wrong type for a converting rename, say): the
// client's input is at fault, and kube-apiserver gives this answer when its
// decoder, a CRD's conversion webhook included, fails on a request body.
func (em *emulation) badRequestObject(err error) *statusError {
	if errors.As(err, new(*engine.ProgramTimeoutError)) {
		return conversionFailed(err) // the rule's fault, not the object's
	}
	return &statusError{http.StatusBadRequest, metav1.StatusReasonBadRequest,
		fmt.Sprintf("%s in version %q cannot be handled as a %s: version emulation: %v", em.t.kind, em.t.requested.Version, em.t.kind, err)}
}

// decodeBody reads a JSON or YAML request body.
func decodeBody(body []byte, contentType string) (map[string]any, *statusError) {
	mt, _, _ := mime.ParseMediaType(contentType)
	switch mt {
	case "", "application/json", "application/merge-patch+json", "application/strategic-merge-patch+json", "application/apply-patch+yaml", "application/yaml":
	default:
		return nil, &statusError{http.StatusUnsupportedMediaType, metav1.StatusReasonUnsupportedMediaType,
			fmt.Sprintf("the body of a request to an emulated version must be JSON or YAML, not %q", contentType)}
	}
	js := bytes.TrimSpace(body)
	if len(js) > 0 && js[0] != '{' {
		var err error
		if js, err = yaml.YAMLToJSON(body); err != nil {
			return nil, &statusError{http.StatusBadRequest, metav1.StatusReasonBadRequest, "the request body is not valid YAML: " + err.Error()}
		}
	}
	obj, err := engine.DecodeObject(js)
	if err != nil {
		return nil, &statusError{http.StatusBadRequest, metav1.StatusReasonBadRequest, "the request body is not a JSON object: " + err.Error()}
	}
	return obj, nil
}

// requestObject converts an old-version object from a request body to the
// served version.
func (em *emulation) requestObject(ctx context.Context, body []byte, contentType string) ([]byte, *statusError) {
	obj, st := decodeBody(body, contentType)
	if st != nil {
		return nil, st
	}
	if st := em.checkTypeMeta(obj); st != nil {
		return nil, st
	}
	out, err := em.e.conv.Convert(ctx, obj, em.t.served)
	if err != nil {
		return nil, em.badRequestObject(err)
	}
	b, err := engine.EncodeObject(out)
	if err != nil {
		return nil, conversionFailed(err)
	}
	return b, nil
}

// checkTypeMeta rejects a body of another version or kind, as the
// apiserver does; a body without them takes the URL's, as in the apiserver.
func (em *emulation) checkTypeMeta(obj map[string]any) *statusError {
	av, _ := obj["apiVersion"].(string)
	kind, _ := obj["kind"].(string)
	if av == "" && kind == "" {
		av, kind = em.t.requested.String(), em.t.kind
		obj["apiVersion"], obj["kind"] = av, kind
	}
	if av != em.t.requested.String() || kind != em.t.kind {
		return &statusError{http.StatusBadRequest, metav1.StatusReasonBadRequest,
			fmt.Sprintf("the body is %s %s; this URL takes %s %s", av, kind, em.t.requested, em.t.kind)}
	}
	return nil
}

// toClient converts one response object back to the requested version: the
// resource's objects and lists, and the objects inside a Table's rows.
// Status, Scale and PartialObjectMetadata pass through. The object is
// modified in place.
func (em *emulation) toClient(ctx context.Context, obj map[string]any) (map[string]any, error) {
	av, _ := obj["apiVersion"].(string)
	kind, _ := obj["kind"].(string)
	switch {
	case kind == "Table" && strings.HasPrefix(av, "meta.k8s.io/"):
		rows, _ := obj["rows"].([]any)
		for i, row := range rows {
			m, _ := row.(map[string]any)
			if err := em.convertRow(ctx, m); err != nil {
				return nil, fmt.Errorf("rows[%d]: %w", i, err)
			}
		}
		return obj, nil
	case av != em.t.served.String():
		return obj, nil
	}
	return em.e.conv.Convert(ctx, obj, em.t.requested)
}

// convertRow converts a Table row's object (includeObject=Object).
func (em *emulation) convertRow(ctx context.Context, row map[string]any) error {
	o, ok := row["object"].(map[string]any)
	if !ok {
		return nil
	}
	out, err := em.toClient(ctx, o)
	if err != nil {
		return err
	}
	row["object"] = out
	return nil
}

// convertResponse converts a served version's answer for the client: one
// object read whole, a list item by item, a watch event by event. Errors
// (Status) pass through.
func (em *emulation) convertResponse(resp *http.Response) error {
	// The answer to a HEAD has no body to convert.
	if resp.StatusCode < 200 || resp.StatusCode > 299 || !em.convertsBodies() || resp.Request.Method == http.MethodHead {
		return nil
	}
	mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	if mt != "application/json" {
		return nil
	}
	ctx := resp.Request.Context()
	switch em.info.Verb {
	case "watch":
		resp.Body = newPipeBody(resp.Body, func(src io.Reader, dst io.Writer) error { return em.streamWatch(ctx, src, dst) })
	case "list":
		resp.Body = newPipeBody(resp.Body, func(src io.Reader, dst io.Writer) error { return em.streamList(ctx, src, dst) })
	default:
		data, err := readObject(resp.Body, em.e.p.opts.MaxObjectBytes)
		resp.Body.Close()
		if err != nil {
			return err
		}
		out, st := em.convertObjectBytes(ctx, data)
		if st != nil {
			out = statusBody(st.code, st.reason, st.message, 0)
			resp.StatusCode, resp.Status = st.code, strconv.Itoa(st.code)+" "+http.StatusText(st.code)
		}
		resp.Body = io.NopCloser(bytes.NewReader(out))
		resp.ContentLength = int64(len(out))
		resp.Header.Set("Content-Length", strconv.Itoa(len(out)))
		return nil
	}
	resp.ContentLength = -1
	resp.Header.Del("Content-Length")
	return nil
}

func (em *emulation) convertObjectBytes(ctx context.Context, data []byte) ([]byte, *statusError) {
	obj, err := engine.DecodeObject(data)
	if err != nil {
		return nil, &statusError{http.StatusBadGateway, metav1.StatusReasonInternalError, "version emulation: the kube-apiserver's answer is not a JSON object: " + err.Error()}
	}
	out, err := em.toClient(ctx, obj)
	if err != nil {
		return nil, conversionFailed(err)
	}
	b, err := engine.EncodeObject(out)
	if err != nil {
		return nil, conversionFailed(err)
	}
	return b, nil
}

// ResourceFor maps a kind to its resource from the backends' discovery, for
// [engine.Options.Resolver]: rules may leave out kind.
func (p *Proxy) ResourceFor(gvk schema.GroupVersionKind) (string, bool) {
	var states []*backendState
	for _, b := range p.list() {
		if st := b.snapshot(); st.caps != nil {
			states = append(states, st)
		}
	}
	for _, st := range states {
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
	if u == nil {
		return false
	}
	_, ok := u.emulated[key]
	return ok
}
