package emulation

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/endpoints/request"
	"sigs.k8s.io/yaml"

	"github.com/mvpctl/mvpctl/engine"
	"github.com/mvpctl/mvpctl/engine/proxy/internal/response"
)

// emulation is one emulated request.
type emulation struct {
	rules *Rules
	t     target
	info  *request.RequestInfo
}

// emulationKey is the context key of a request's *emulation: the inner
// request to the served version carries it so that [ConvertResponse]
// converts the answer.
type emulationKey struct{}

// convertsBodies tells the subresources whose bodies are the resource's own
// object (status) from those with their own kinds (scale: autoscaling/v1
// Scale), which pass through.
func (em *emulation) convertsBodies() bool {
	return em.info.Subresource == "" || em.info.Subresource == "status"
}

func (em *emulation) host() Host { return em.rules.e.host }

func (em *emulation) serve(w http.ResponseWriter, r *http.Request) {
	accept, ok := jsonAccept(r.Header.Get("Accept"))
	if !ok {
		response.WriteStatus(w, http.StatusNotAcceptable, metav1.StatusReasonNotAcceptable,
			fmt.Sprintf("%s %s is emulated by converting JSON from %s: only application/json responses can be served, not %q",
				em.t.requested, em.t.resource, em.t.served, r.Header.Get("Accept")), 0)
		return
	}
	path, ok := em.servedPath(r.URL.Path)
	if !ok {
		response.WriteStatus(w, http.StatusNotFound, metav1.StatusReasonNotFound, fmt.Sprintf("the server could not find the requested resource (%s)", r.URL.Path), 0)
		return
	}
	query := r.URL.Query()
	if err := em.rewriteSelectors(query); err != nil {
		response.WriteStatus(w, http.StatusBadRequest, metav1.StatusReasonBadRequest, err.Error(), 0)
		return
	}
	var body []byte
	// HTTP/2 requests always have a Body; a length of 0 means none was sent.
	if r.Body != nil && r.Body != http.NoBody && r.ContentLength != 0 {
		b, release, ok := em.host().ReadBody(w, r)
		if !ok {
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
				st.write(w)
				return
			}
			body, contentType = conv, "application/json"
		case "patch":
			em.patch(w, r, path, query, body, contentType, accept)
			return
		}
	}
	em.host().ServeInner(w, em.innerRequest(context.WithValue(ctx, emulationKey{}, em), r, r.Method, path, query, body, contentType, accept))
}

// innerRequest is the request to the served version, routed like any other.
func (em *emulation) innerRequest(ctx context.Context, r *http.Request, method, path string, query url.Values, body []byte, contentType, accept string) *http.Request {
	in := r.Clone(ctx)
	in.Method = method
	in.URL.Path, in.URL.RawPath = path, ""
	// Sorted by key; the apiserver does not depend on the order.
	in.URL.RawQuery = query.Encode()
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

func (s *statusError) write(w http.ResponseWriter) {
	response.WriteStatus(w, s.code, s.reason, s.message, 0)
}

// conversionFailed is the 500 of a failed conversion; the message names the
// rule, the direction and the field path (engine.ConversionError).
func conversionFailed(err error) *statusError {
	return &statusError{http.StatusInternalServerError, metav1.StatusReasonInternalError, "version emulation: " + boundMessage(err.Error())}
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
	out, err := em.rules.conv.Convert(ctx, obj, em.t.served)
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
	out, err := em.rules.conv.Convert(ctx, obj, em.t.requested)
	if err != nil {
		return nil, em.failed(obj, err)
	}
	return out, nil
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

// ConvertResponse converts the answer to a request an emulation sent
// through [Host.ServeInner] for the client: one object read whole, a list
// item by item, a watch event by event. Errors (Status) pass through, and
// so does the answer to any other request.
func ConvertResponse(resp *http.Response) error {
	em, _ := resp.Request.Context().Value(emulationKey{}).(*emulation)
	if em == nil {
		return nil
	}
	return em.convertResponse(resp)
}

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
		resp.Body = em.newWatchBody(ctx, resp.Body)
	case "list":
		return em.startList(resp)
	default:
		data, err := response.ReadObject(resp.Body, em.rules.e.opts.MaxObjectBytes)
		resp.Body.Close()
		if err != nil {
			return err
		}
		out, st := em.convertObjectBytes(ctx, data)
		if st != nil {
			out = response.StatusBody(st.code, st.reason, st.message, 0)
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
