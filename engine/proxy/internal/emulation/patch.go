package emulation

import (
	"context"
	"errors"
	"fmt"
	"mime"
	"net/http"
	"net/url"
	"sync/atomic"

	jsonpatch "gopkg.in/evanphx/json-patch.v4"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/mergepatch"
	"k8s.io/apimachinery/pkg/util/strategicpatch"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/util/retry"

	"github.com/mvpctl/mvpctl/engine"
	"github.com/mvpctl/mvpctl/engine/proxy/internal/response"
	"github.com/mvpctl/mvpctl/rules"
)

// The bounds of kube-apiserver's patch handler (k8s.io/apiserver
// handlers/patch.go and server.Config): the operations of one JSON patch,
// and the bytes its copy operations may add (JSONPatchMaxCopyBytes, the
// default of its request body limit).
const (
	maxJSONPatchOperations = 10000
	jsonPatchMaxCopyBytes  = 3 << 20
)

// limitJSONPatchCopies bounds what json-patch's copy operations may add, as
// kube-apiserver does when it starts: the limit is a variable of the
// json-patch package, so it is lowered, never raised, for the process.
func limitJSONPatchCopies() {
	for {
		existing := atomic.LoadInt64(&jsonpatch.AccumulatedCopySizeLimit)
		if existing > 0 && existing <= jsonPatchMaxCopyBytes {
			return
		}
		if atomic.CompareAndSwapInt64(&jsonpatch.AccumulatedCopySizeLimit, existing, jsonPatchMaxCopyBytes) {
			return
		}
	}
}

// errPatchRaced says that the served object changed between the read and
// the write of a patch: it is read and patched again.
var errPatchRaced = errors.New("the object changed while it was patched")

// raced is the conflict retry.RetryOnConflict retries on.
func (em *emulation) raced() error {
	return apierrors.NewConflict(schema.GroupResource{Group: em.t.served.Group, Resource: em.t.resource}, em.info.Name, errPatchRaced)
}

// patch applies a patch written against the requested version.
//
// A server-side apply body is a whole old-version object: it is converted
// and applied to the served version, so field ownership is tracked by the
// apiserver as usual. JSON merge, strategic merge and JSON (RFC 6902)
// patches name old-version fields and cannot be translated faithfully in
// general (a rename's value may come from a field the patch does not
// mention): the proxy reads the object, converts it to the old version,
// applies the patch with the apiserver's implementations and bounds,
// converts the result forward and sends the difference to the served
// version as a JSON patch that first tests the read resourceVersion. The
// apiserver sees a PATCH (RBAC: verb patch) that fails if anyone wrote the
// object since the read; it is then read and patched again, a few times at
// most, unless the client's patch set a resourceVersion of its own: that
// conflict is the client's to see.
func (em *emulation) patch(w http.ResponseWriter, r *http.Request, path string, query url.Values, body []byte, contentType, accept string) {
	ctx := r.Context()
	mt, _, _ := mime.ParseMediaType(contentType)
	if mt == "application/apply-patch+yaml" {
		conv, st := em.requestObject(ctx, body, contentType)
		if st != nil {
			st.write(w)
			return
		}
		in := em.innerRequest(context.WithValue(ctx, emulationKey{}, em), r, http.MethodPatch, path, query, conv, "application/apply-patch+yaml", accept)
		em.host().ServeInner(w, in)
		return
	}
	apply, st := em.patcher(mt, body)
	if st != nil {
		st.write(w)
		return
	}
	run := &patchRun{em: em, r: r, path: path, apply: apply}
	run.readQuery, run.writeQuery = patchQueries(query)
	_ = retry.RetryOnConflict(retry.DefaultRetry, run.attempt)
	em.writePatchResult(ctx, w, run.res)
}

// patchRun is one client patch of an emulated object, over its attempts.
type patchRun struct {
	em                    *emulation
	r                     *http.Request
	path                  string
	readQuery, writeQuery url.Values
	apply                 func([]byte) ([]byte, *statusError)
	// res is the last answer: the read's, the proxy's own, or the write's.
	res *response.Buffered
	// raced is the resourceVersion read before a write that failed.
	raced string
}

// attempt reads the served object, patches it and writes the change. It
// returns a conflict (errPatchRaced) when the write failed the way a write
// after another writer's does and the patch has no precondition of its own.
func (run *patchRun) attempt() error {
	em, ctx := run.em, run.r.Context()
	cur := em.do(em.innerRequest(ctx, run.r, http.MethodGet, run.path, run.readQuery, nil, "", "application/json"))
	if cur.Code != http.StatusOK {
		run.res = cur
		return nil
	}
	served, readRV, st := em.readServed(cur.Body.Bytes())
	if st == nil && run.res != nil && readRV == run.raced {
		return nil // unchanged since the failed write: its answer is the client's
	}
	var ops []byte
	var clientRV bool
	if st == nil {
		ops, clientRV, st = em.patchOps(ctx, served, readRV, run.apply)
	}
	if st != nil {
		run.res = statusResponse(st)
		return nil
	}
	run.res = em.do(em.innerRequest(ctx, run.r, http.MethodPatch, run.path, run.writeQuery, ops, "application/json-patch+json", "application/json"))
	// A failed test of the resourceVersion is a 422; a write of another
	// resourceVersion, a 409.
	if !clientRV && (run.res.Code == http.StatusConflict || run.res.Code == http.StatusUnprocessableEntity) {
		run.raced = readRV
		return run.em.raced()
	}
	return nil
}

// patchQueries splits a patch's query: the read takes no write parameters;
// the write takes the patch's.
func patchQueries(query url.Values) (read, write url.Values) {
	read, write = url.Values{}, url.Values{}
	if rv := query.Get("resourceVersion"); rv != "" {
		read.Set("resourceVersion", rv)
	}
	for _, k := range []string{"dryRun", "fieldManager", "fieldValidation", "pretty"} {
		if v, ok := query[k]; ok {
			write[k] = v
		}
	}
	return read, write
}

// readServed decodes the served version's object and its resourceVersion.
func (em *emulation) readServed(data []byte) (map[string]any, string, *statusError) {
	served, err := engine.DecodeObject(data)
	if err != nil {
		return nil, "", &statusError{http.StatusBadGateway, metav1.StatusReasonInternalError, "version emulation: the kube-apiserver's object is not JSON: " + err.Error()}
	}
	return served, resourceVersionOf(served), nil
}

// patchOps applies the patch to the old-version view of served and returns
// the JSON patch that makes the same change to served: a test of readRV,
// then the difference. clientRV says that the patch set a resourceVersion
// of its own, which the JSON patch then writes (a conflict if it is not
// the current one).
func (em *emulation) patchOps(ctx context.Context, served map[string]any, readRV string, apply func([]byte) ([]byte, *statusError)) (ops []byte, clientRV bool, st *statusError) {
	obj, st := em.patchedOld(ctx, served, apply)
	if st != nil {
		return nil, false, st
	}
	clientRV = clientPrecondition(obj, readRV)
	if !clientRV {
		setResourceVersion(obj, readRV)
	}
	fwd, err := em.rules.conv.Convert(ctx, obj, em.t.served)
	if err != nil {
		if errors.As(err, new(*engine.ProgramTimeoutError)) {
			return nil, false, conversionFailed(err)
		}
		// The patch made an object the rules cannot convert: the
		// apiserver's 422 for a patch whose result does not decode.
		return nil, false, &statusError{http.StatusUnprocessableEntity, metav1.StatusReasonInvalid,
			fmt.Sprintf("the patched object cannot be converted to %s: version emulation: %v", em.t.served, err)}
	}
	list := []jsonPatchOp{}
	if readRV != "" {
		list = append(list, jsonPatchOp{"op": "test", "path": "/metadata/resourceVersion", "value": readRV})
	}
	list = append(list, diffJSONPatch(served, fwd)...)
	if ops, err = engine.EncodeObject(list); err != nil {
		return nil, false, conversionFailed(err)
	}
	return ops, clientRV, nil
}

// patchedOld is the old-version view of served with the patch applied,
// within the bounds of what may be written: its size, its version and
// kind.
func (em *emulation) patchedOld(ctx context.Context, served map[string]any, apply func([]byte) ([]byte, *statusError)) (map[string]any, *statusError) {
	old, err := em.rules.conv.Convert(ctx, rules.DeepCopyJSON(served).(map[string]any), em.t.requested)
	if err != nil {
		return nil, conversionFailed(err)
	}
	oldJSON, err := engine.EncodeObject(old)
	if err != nil {
		return nil, conversionFailed(err)
	}
	patched, st := apply(oldJSON)
	if st != nil {
		return nil, st
	}
	if limit := em.rules.e.opts.MaxRequestBodyBytes; int64(len(patched)) > limit {
		// The apiserver's answer for a body over its limit: the patched
		// object is what would be written.
		return nil, &statusError{http.StatusRequestEntityTooLarge, metav1.StatusReasonRequestEntityTooLarge,
			fmt.Sprintf("Request entity too large: limit is %d", limit)}
	}
	obj, err := engine.DecodeObject(patched)
	if err != nil {
		return nil, &statusError{http.StatusUnprocessableEntity, metav1.StatusReasonInvalid, "the patched object is not a JSON object: " + err.Error()}
	}
	if st := em.checkTypeMeta(obj); st != nil {
		st.message = "the patch changes apiVersion or kind: " + st.message
		return nil, st
	}
	return obj, nil
}

// clientPrecondition says whether a patched object names a resourceVersion
// other than the one read: the client's own precondition. A patch that
// removes it or sets it to null has none.
func clientPrecondition(obj map[string]any, readRV string) bool {
	m, _ := obj["metadata"].(map[string]any)
	v, ok := m["resourceVersion"]
	return ok && v != nil && v != any(readRV)
}

// writePatchResult answers the client: the served version's answer to the
// write (or the read), a success converted to the requested version.
func (em *emulation) writePatchResult(ctx context.Context, w http.ResponseWriter, res *response.Buffered) {
	if res.Code >= 200 && res.Code < 300 {
		out, st := em.convertObjectBytes(ctx, res.Body.Bytes())
		if st != nil {
			st.write(w)
			return
		}
		res.Body.Reset()
		res.Body.Write(out)
	}
	res.CopyTo(w)
}

// statusResponse is an emulation's own error as a buffered answer.
func statusResponse(st *statusError) *response.Buffered {
	b := response.NewBuffered()
	b.Header().Set("Content-Type", "application/json")
	b.Code = st.code
	b.Body.Write(response.StatusBody(st.code, st.reason, st.message, 0))
	return b
}

// patcher returns the function that applies a patch body to an
// old-version object's JSON, with kube-apiserver's bounds and answers.
func (em *emulation) patcher(mediaType string, body []byte) (func([]byte) ([]byte, *statusError), *statusError) {
	switch mediaType {
	case "application/merge-patch+json":
		return func(doc []byte) ([]byte, *statusError) {
			out, err := jsonpatch.MergePatch(doc, body)
			if err != nil {
				return nil, patchError(err)
			}
			return out, nil
		}, nil
	case "application/json-patch+json":
		p, err := jsonpatch.DecodePatch(body)
		if err != nil {
			return nil, &statusError{http.StatusBadRequest, metav1.StatusReasonBadRequest, err.Error()}
		}
		if len(p) > maxJSONPatchOperations {
			return nil, &statusError{http.StatusRequestEntityTooLarge, metav1.StatusReasonRequestEntityTooLarge,
				fmt.Sprintf("Request entity too large: The allowed maximum operations in a JSON patch is %d, got %d", maxJSONPatchOperations, len(p))}
		}
		return func(doc []byte) ([]byte, *statusError) {
			out, err := p.Apply(doc)
			if err != nil {
				return nil, patchInvalid()
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
				return nil, patchError(err)
			}
			return out, nil
		}, nil
	}
	return nil, &statusError{http.StatusUnsupportedMediaType, metav1.StatusReasonUnsupportedMediaType,
		fmt.Sprintf("unsupported patch type %q", mediaType)}
}

// patchInvalid is kube-apiserver's answer for a JSON patch that does not
// apply (a failed test, a missing path, too many bytes copied).
func patchInvalid() *statusError {
	return &statusError{http.StatusUnprocessableEntity, metav1.StatusReasonInvalid, "the server rejected our request due to an error in our request"}
}

// patchError maps a merge or strategic merge patch failure to the
// apiserver's answer (interpretStrategicMergePatchError): 400 for a patch
// it cannot read, 422 for one that does not fit, 500 for the rest.
func patchError(err error) *statusError {
	switch err {
	case jsonpatch.ErrBadJSONPatch, mergepatch.ErrBadJSONDoc, mergepatch.ErrBadPatchFormatForPrimitiveList, mergepatch.ErrBadPatchFormatForRetainKeys,
		mergepatch.ErrBadPatchFormatForSetElementOrderList, mergepatch.ErrUnsupportedStrategicMergePatchFormat:
		return &statusError{http.StatusBadRequest, metav1.StatusReasonBadRequest, err.Error()}
	case mergepatch.ErrNoListOfLists, mergepatch.ErrPatchContentNotMatchRetainKeys:
		return patchInvalid()
	}
	return &statusError{http.StatusInternalServerError, metav1.StatusReasonInternalError, err.Error()}
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

// do runs an inner request through the proxy and keeps its answer.
func (em *emulation) do(r *http.Request) *response.Buffered {
	b := response.NewBuffered()
	em.host().ServeInner(b, r)
	if b.Code == 0 {
		b.Code = http.StatusOK
	}
	return b
}
