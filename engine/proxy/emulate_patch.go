package proxy

import (
	"bytes"
	"context"
	"fmt"
	"mime"
	"net/http"
	"net/url"
	"strconv"

	jsonpatch "gopkg.in/evanphx/json-patch.v4"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/strategicpatch"
	"k8s.io/client-go/kubernetes/scheme"

	"github.com/mvpctl/mvpctl/engine"
)

// patchRetries bounds the read-convert-patch-convert-update attempts of one
// patch that keep meeting a concurrent writer.
const patchRetries = 5

// patch applies a patch written against the requested version.
//
// A server-side apply body is a whole old-version object: it is converted
// and applied to the served version, so field ownership is tracked by the
// apiserver as usual. JSON merge, strategic merge and JSON (RFC 6902)
// patches name old-version fields and cannot be translated faithfully in
// general (a rename's value may come from a field the patch does not
// mention): the proxy reads the object, converts it to the old version,
// applies the patch with apimachinery's implementations, converts the result
// forward and updates with the read resourceVersion as a precondition,
// retrying on a conflict unless the patch set the resourceVersion itself.
func (em *emulation) patch(w http.ResponseWriter, r *http.Request, path string, query url.Values, body []byte, contentType, accept string) {
	ctx := r.Context()
	mt, _, _ := mime.ParseMediaType(contentType)
	if mt == "application/apply-patch+yaml" {
		conv, st := em.requestObject(ctx, body, contentType)
		if st != nil {
			writeStatusError(w, st)
			return
		}
		in := em.innerRequest(context.WithValue(ctx, emulationKey{}, em), r, http.MethodPatch, path, query, conv, "application/apply-patch+yaml", accept)
		em.e.p.ServeHTTP(w, in)
		return
	}
	apply, st := em.patcher(mt, body)
	if st != nil {
		writeStatusError(w, st)
		return
	}
	// The read takes no write parameters; the update takes the patch's.
	readQuery := url.Values{}
	if rv := query.Get("resourceVersion"); rv != "" {
		readQuery.Set("resourceVersion", rv)
	}
	writeQuery := url.Values{}
	for _, k := range []string{"dryRun", "fieldManager", "fieldValidation", "pretty"} {
		if v, ok := query[k]; ok {
			writeQuery[k] = v
		}
	}
	for attempt := 1; ; attempt++ {
		cur := em.do(em.innerRequest(ctx, r, http.MethodGet, path, readQuery, nil, "", "application/json"))
		if cur.code != http.StatusOK {
			cur.writeTo(w)
			return
		}
		served, err := engine.DecodeObject(cur.body.Bytes())
		if err != nil {
			writeStatus(w, http.StatusBadGateway, metav1.StatusReasonInternalError, "version emulation: the kube-apiserver's object is not JSON: "+err.Error(), 0)
			return
		}
		readRV := resourceVersionOf(served)
		old, err := em.e.conv.Convert(ctx, served, em.t.requested)
		if err != nil {
			writeStatusError(w, conversionFailed(err))
			return
		}
		oldJSON, err := engine.EncodeObject(old)
		if err != nil {
			writeStatusError(w, conversionFailed(err))
			return
		}
		patched, st := apply(oldJSON)
		if st != nil {
			writeStatusError(w, st)
			return
		}
		obj, err := engine.DecodeObject(patched)
		if err != nil {
			writeStatus(w, http.StatusUnprocessableEntity, metav1.StatusReasonInvalid, "the patched object is not a JSON object: "+err.Error(), 0)
			return
		}
		if st := em.checkTypeMeta(obj); st != nil {
			st.message = "the patch changes apiVersion or kind: " + st.message
			writeStatusError(w, st)
			return
		}
		// A patch that names a resourceVersion is the client's own
		// precondition: its conflict is the client's to see.
		clientRV := resourceVersionOf(obj) != readRV
		if !clientRV {
			setResourceVersion(obj, readRV)
		}
		fwd, err := em.e.conv.Convert(ctx, obj, em.t.served)
		if err != nil {
			// The patch made an object the rules cannot convert: the
			// apiserver's 422 for a patch whose result does not decode.
			writeStatus(w, http.StatusUnprocessableEntity, metav1.StatusReasonInvalid,
				fmt.Sprintf("the patched object cannot be converted to %s: version emulation: %v", em.t.served, err), 0)
			return
		}
		fwdJSON, err := engine.EncodeObject(fwd)
		if err != nil {
			writeStatusError(w, conversionFailed(err))
			return
		}
		res := em.do(em.innerRequest(ctx, r, http.MethodPut, path, writeQuery, fwdJSON, "application/json", "application/json"))
		if res.code == http.StatusConflict && !clientRV && attempt < patchRetries {
			continue
		}
		if res.code >= 200 && res.code < 300 {
			out, st := em.convertObjectBytes(ctx, res.body.Bytes())
			if st != nil {
				writeStatusError(w, st)
				return
			}
			res.body.Reset()
			res.body.Write(out)
		}
		res.writeTo(w)
		return
	}
}

// patcher returns the function that applies a patch body to an
// old-version object's JSON.
func (em *emulation) patcher(mediaType string, body []byte) (func([]byte) ([]byte, *statusError), *statusError) {
	invalid := func(err error) *statusError {
		return &statusError{http.StatusUnprocessableEntity, metav1.StatusReasonInvalid, "applying the patch: " + err.Error()}
	}
	switch mediaType {
	case "application/merge-patch+json":
		return func(doc []byte) ([]byte, *statusError) {
			out, err := jsonpatch.MergePatch(doc, body)
			if err != nil {
				return nil, invalid(err)
			}
			return out, nil
		}, nil
	case "application/json-patch+json":
		p, err := jsonpatch.DecodePatch(body)
		if err != nil {
			return nil, &statusError{http.StatusBadRequest, metav1.StatusReasonBadRequest, "invalid JSON patch: " + err.Error()}
		}
		return func(doc []byte) ([]byte, *statusError) {
			out, err := p.Apply(doc)
			if err != nil {
				return nil, invalid(err)
			}
			return out, nil
		}, nil
	case "application/strategic-merge-patch+json":
		typed, err := scheme.Scheme.New(em.t.requested.WithKind(em.t.kind))
		if err != nil {
			// As the apiserver answers for custom resources.
			return nil, &statusError{http.StatusUnsupportedMediaType, metav1.StatusReasonUnsupportedMediaType,
				fmt.Sprintf("strategic merge patch is not supported for %s %s (no schema for its patch strategies); use a merge patch", em.t.requested, em.t.kind)}
		}
		return func(doc []byte) ([]byte, *statusError) {
			out, err := strategicpatch.StrategicMergePatch(doc, body, typed)
			if err != nil {
				return nil, invalid(err)
			}
			return out, nil
		}, nil
	}
	return nil, &statusError{http.StatusUnsupportedMediaType, metav1.StatusReasonUnsupportedMediaType,
		fmt.Sprintf("unsupported patch type %q", mediaType)}
}

func resourceVersionOf(obj map[string]any) string {
	m, _ := obj["metadata"].(map[string]any)
	rv, _ := m["resourceVersion"].(string)
	return rv
}

func setResourceVersion(obj map[string]any, rv string) {
	m, ok := obj["metadata"].(map[string]any)
	if !ok {
		m = map[string]any{}
		obj["metadata"] = m
	}
	m["resourceVersion"] = rv
}

// bufferedResponse is an inner request's answer held in memory.
type bufferedResponse struct {
	header http.Header
	code   int
	body   bytes.Buffer
}

func (b *bufferedResponse) Header() http.Header { return b.header }
func (b *bufferedResponse) WriteHeader(code int) {
	if b.code == 0 {
		b.code = code
	}
}
func (b *bufferedResponse) Write(p []byte) (int, error) {
	if b.code == 0 {
		b.code = http.StatusOK
	}
	return b.body.Write(p)
}
func (b *bufferedResponse) Flush() {}

func (b *bufferedResponse) writeTo(w http.ResponseWriter) {
	for _, k := range []string{"Content-Type", "Audit-Id", "Warning", "Retry-After", "Cache-Control"} {
		if v, ok := b.header[k]; ok {
			w.Header()[k] = v
		}
	}
	w.Header().Set("Content-Length", strconv.Itoa(b.body.Len()))
	w.WriteHeader(b.code)
	_, _ = w.Write(b.body.Bytes())
}

// do runs an inner request through the proxy and keeps its answer.
func (em *emulation) do(r *http.Request) *bufferedResponse {
	b := &bufferedResponse{header: http.Header{}}
	em.e.p.ServeHTTP(b, r)
	if b.code == 0 {
		b.code = http.StatusOK
	}
	return b
}
