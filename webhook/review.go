package webhook

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/mvpctl/mvpctl/engine"
)

// The ConversionReview versions kube-apiserver sends.
const (
	reviewV1      = "apiextensions.k8s.io/v1"
	reviewV1beta1 = "apiextensions.k8s.io/v1beta1"
	reviewKind    = "ConversionReview"
)

// Review is a decoded ConversionReview request.
type Review struct {
	// APIVersion is the review's own version, which the response repeats.
	APIVersion string
	// UID identifies the request; the response carries it back.
	UID string
	// Desired is the version every object is converted to.
	Desired schema.GroupVersion
	// Objects are the objects to convert, decoded with exact numbers.
	Objects []any
}

// RequestError is a request that cannot be answered with a review result
// (no uid to answer to): it is answered with Code and a metav1.Status.
type RequestError struct {
	Code   int
	Reason Reason
	Err    error
}

func (e *RequestError) Error() string { return e.Err.Error() }
func (e *RequestError) Unwrap() error { return e.Err }

func malformed(format string, args ...any) *RequestError {
	return &RequestError{Code: http.StatusBadRequest, Reason: ReasonMalformed, Err: fmt.Errorf(format, args...)}
}

// DecodeReview decodes a ConversionReview request body of either version.
func DecodeReview(body []byte) (*Review, error) {
	doc, err := engine.DecodeObject(body)
	if err != nil {
		return nil, malformed("decoding the ConversionReview: %v", err)
	}
	rev := &Review{}
	rev.APIVersion, _ = doc["apiVersion"].(string)
	if rev.APIVersion != reviewV1 && rev.APIVersion != reviewV1beta1 {
		return nil, malformed("apiVersion %q: want %s or %s", rev.APIVersion, reviewV1, reviewV1beta1)
	}
	if kind, _ := doc["kind"].(string); kind != reviewKind {
		return nil, malformed("kind %q: want %s", kind, reviewKind)
	}
	req, ok := doc["request"].(map[string]any)
	if !ok {
		return nil, malformed("the ConversionReview has no request")
	}
	if rev.UID, _ = req["uid"].(string); rev.UID == "" {
		return nil, malformed("request.uid is missing")
	}
	desired, _ := req["desiredAPIVersion"].(string)
	if rev.Desired, err = schema.ParseGroupVersion(desired); err != nil || desired == "" || rev.Desired.Version == "" {
		return nil, malformed("request.desiredAPIVersion %q: want GROUP/VERSION", desired)
	}
	switch objs := req["objects"].(type) {
	case []any:
		rev.Objects = objs
	case nil:
	default:
		return nil, malformed("request.objects is %T, want a list", objs)
	}
	return rev, nil
}

// FailureError fails a whole review: its message is the result's.
type FailureError struct {
	Reason Reason
	// Index is the object's index in the request, -1 for the review as a whole.
	Index     int
	Namespace string
	Name      string
	Err       error
}

func (e *FailureError) Error() string {
	if e.Index < 0 {
		return e.Err.Error()
	}
	return fmt.Sprintf("objects[%d] %s: %v", e.Index, objectRef(e.Namespace, e.Name), e.Err)
}

func (e *FailureError) Unwrap() error { return e.Err }

// ConvertOptions bound a review's conversion.
type ConvertOptions struct {
	// MaxObjects is the most objects one review may hold; zero means
	// [DefaultMaxObjectsPerReview].
	MaxObjects int
}

// Convert converts every object of a review to its desired version,
// checking the contract on each, and returns them in order. Objects are
// converted in place: the review must own them. The first object that
// fails fails the review with a *FailureError.
func Convert(ctx context.Context, conv *engine.Converter, rev *Review, opts ConvertOptions) ([]any, error) {
	maxObjects := opts.MaxObjects
	if maxObjects <= 0 {
		maxObjects = DefaultMaxObjectsPerReview
	}
	if len(rev.Objects) > maxObjects {
		return nil, &FailureError{Reason: ReasonTooManyObjects, Index: -1,
			Err: fmt.Errorf("%d objects in one review, more than the %d allowed (--max-objects-per-review)", len(rev.Objects), maxObjects)}
	}
	out := make([]any, len(rev.Objects))
	var kind schema.GroupKind
	for i, o := range rev.Objects {
		obj, ok := o.(map[string]any)
		if !ok {
			return nil, &FailureError{Reason: ReasonMalformed, Index: i, Err: errors.New("not a JSON object")}
		}
		if err := ctx.Err(); err != nil {
			return nil, &FailureError{Reason: ReasonTimeout, Index: i, Err: fmt.Errorf("review not finished in time: %w", err)}
		}
		ns, name := namespaceName(obj) // before the conversion, which may change them
		converted, err := convertOne(ctx, conv, obj, rev.Desired, &kind)
		if err != nil {
			err.Index, err.Namespace, err.Name = i, ns, name
			return nil, err
		}
		out[i] = converted
	}
	return out, nil
}

// convertOne converts one object and checks the contract on it; kind is the
// review's kind, set by its first object.
func convertOne(ctx context.Context, conv *engine.Converter, obj map[string]any, desired schema.GroupVersion, kind *schema.GroupKind) (map[string]any, *FailureError) {
	gvk, err := objectGVK(obj)
	if err != nil {
		return nil, &FailureError{Reason: ReasonMalformed, Err: err}
	}
	if kind.Kind == "" {
		*kind = gvk.GroupKind()
	}
	switch {
	case gvk.GroupKind() != *kind:
		return nil, &FailureError{Reason: ReasonOtherKind, Err: fmt.Errorf("kind %s is not the review's %s", gvk.GroupKind(), *kind)}
	case gvk.Group != desired.Group:
		return nil, &FailureError{Reason: ReasonOtherKind, Err: fmt.Errorf("group %q is not the desired %q: CRD conversion keeps the group", gvk.Group, desired.Group)}
	}
	before, err := snapshotMetadata(conv, obj, gvk, desired)
	if err != nil {
		return nil, &FailureError{Reason: ReasonMalformed, Err: err}
	}
	converted, err := conv.Convert(ctx, obj, desired)
	if err != nil {
		return nil, &FailureError{Reason: conversionReason(err), Err: err}
	}
	if err := checkContract(converted, gvk, desired, before); err != nil {
		return nil, &FailureError{Reason: ReasonContract, Err: err}
	}
	return converted, nil
}

// conversionReason classifies a converter's error.
func conversionReason(err error) Reason {
	var timeout *engine.ProgramTimeoutError
	var noPath *engine.NoPathError
	var unconverted *engine.UnconvertedError
	switch {
	case errors.As(err, &timeout), errors.Is(err, context.DeadlineExceeded), errors.Is(err, context.Canceled):
		return ReasonTimeout
	case errors.As(err, &noPath), errors.As(err, &unconverted):
		return ReasonNoPath
	}
	return ReasonConversion
}

func objectGVK(obj map[string]any) (schema.GroupVersionKind, error) {
	av, _ := obj["apiVersion"].(string)
	kind, _ := obj["kind"].(string)
	if av == "" || kind == "" {
		return schema.GroupVersionKind{}, errors.New("the object has no apiVersion or kind")
	}
	gv, err := schema.ParseGroupVersion(av)
	if err != nil {
		return schema.GroupVersionKind{}, err
	}
	return gv.WithKind(kind), nil
}

func namespaceName(obj map[string]any) (string, string) {
	m, _ := obj["metadata"].(map[string]any)
	ns, _ := m["namespace"].(string)
	name, _ := m["name"].(string)
	return ns, name
}

// objectRef names an object in a message: namespace/name, or <unnamed>.
func objectRef(namespace, name string) string {
	switch {
	case name == "":
		return "<unnamed>"
	case namespace != "":
		return namespace + "/" + name
	}
	return name
}
