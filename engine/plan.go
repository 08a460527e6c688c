package engine

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/mvpctl/mvpctl/rules/builtin"
)

// Plan says what each object converts to: one group/version (To, as
// mvpctl convert --output-version), or for a Kubernetes release (Release,
// as --kubernetes-version) the replacement of every version that release
// removes. mvpctl convert and the Helm release repair share it, so a
// release's manifest is upgraded exactly as its files would be.
type Plan struct {
	// To is the group/version to convert to; zero with Release.
	To schema.GroupVersion
	// Release is the Kubernetes release to upgrade for; zero with To.
	Release builtin.Release
	// Deprecated converts the versions Release deprecates too.
	Deprecated bool
}

// Convert converts one object (or List) as planned. As the converter does
// with Options.KeepGoing, what fails is left as it was. An object on a
// version the release removes that has no replacement of its kind is a
// *NoReplacementError; one that no rule converts, an *UnconvertedError
// (wrapped with what the release does with its version).
func (p Plan) Convert(ctx context.Context, conv *Converter, obj map[string]any) (map[string]any, error) {
	if p.Release.IsZero() {
		return conv.Convert(ctx, obj, p.To)
	}
	if isCoreList(obj) {
		return p.convertItems(ctx, conv, obj)
	}
	gvk, l, to, needed, err := p.Target(obj)
	if err != nil || !needed {
		return obj, err
	}
	out, err := conv.Convert(ctx, obj, to.GroupVersion())
	if s, _ := out["apiVersion"].(string); err == nil && s != to.GroupVersion().String() {
		// No rule mentions the resource in the replacement's group.
		ns, name := namespaceName(obj)
		err = &UnconvertedError{GVK: gvk, Namespace: ns, Name: name, Resource: l.Resource, To: to.GroupVersion()}
	}
	if errors.As(err, new(*UnconvertedError)) {
		return nil, &LifecycleError{Err: err, Note: p.status(l)}
	}
	return out, err
}

// convertItems converts the items of a v1 List one by one: each has a
// version of its own. Failed items stay as they were.
func (p Plan) convertItems(ctx context.Context, conv *Converter, list map[string]any) (map[string]any, error) {
	items, _ := list["items"].([]any)
	var failed []ItemError
	for i, it := range items {
		obj, ok := it.(map[string]any)
		if !ok {
			continue // not an object: nothing to convert
		}
		out, err := p.Convert(ctx, conv, obj)
		if err != nil {
			failed = append(failed, ItemError{Index: i, Err: err})
			continue
		}
		items[i] = out
	}
	if failed != nil {
		return list, &ItemsError{Items: failed}
	}
	return list, nil
}

// Target finds what an object (or a typed list's items) must become for
// the release: needed is false when the release serves its version or it
// is no built-in API. A removed version without a replacement of the same
// kind is a *NoReplacementError.
func (p Plan) Target(obj map[string]any) (gvk schema.GroupVersionKind, l builtin.Lifecycle, to schema.GroupVersionKind, needed bool, err error) {
	apiVersion, _ := obj["apiVersion"].(string)
	kind, _ := obj["kind"].(string)
	if _, isList := obj["items"].([]any); isList {
		kind = strings.TrimSuffix(kind, "List")
	}
	gv, perr := schema.ParseGroupVersion(apiVersion)
	if perr != nil || kind == "" {
		return gvk, l, to, false, nil
	}
	gvk = gv.WithKind(kind)
	l, ok := builtin.LifecycleOf(gvk)
	if !ok {
		return gvk, l, to, false, nil
	}
	to, needed = l.UpgradeAt(p.Release, p.Deprecated)
	if needed && (to.Empty() || to.Kind != gvk.Kind) {
		ns, name := namespaceName(obj)
		return gvk, l, to, true, &NoReplacementError{GVK: gvk, Namespace: ns, Name: name, Status: p.status(l), Replacement: to}
	}
	return gvk, l, to, needed, nil
}

// status says what the release does with a version: removed in v1.22, or
// deprecated in v1.19 (with Deprecated).
func (p Plan) status(l builtin.Lifecycle) string {
	if l.Removed.AtOrAfter(p.Release) {
		return "removed in " + l.Removed.String()
	}
	return "deprecated in " + l.Deprecated.String()
}

// isCoreList says whether an object is a List of the core group, whose
// items may be of any kind and version.
func isCoreList(obj map[string]any) bool {
	_, hasItems := obj["items"].([]any)
	kind, _ := obj["kind"].(string)
	return hasItems && obj["apiVersion"] == "v1" && strings.HasSuffix(kind, "List")
}

func namespaceName(obj map[string]any) (string, string) {
	m, _ := obj["metadata"].(map[string]any)
	ns, _ := m["namespace"].(string)
	name, _ := m["name"].(string)
	return ns, name
}

// NoReplacementError is an object on a version the release removes (or
// deprecates) that has no replacement mvpctl can convert it to: Kubernetes
// names none (PodSecurityPolicy), or one of another kind (Endpoints and
// EndpointSlice).
type NoReplacementError struct {
	GVK             schema.GroupVersionKind
	Namespace, Name string
	// Status is what the release does with the version: "removed in v1.25".
	Status string
	// Replacement is what Kubernetes names instead, of another kind; zero
	// when it names none.
	Replacement schema.GroupVersionKind
}

func (e *NoReplacementError) Error() string {
	ref := e.Name
	if e.Namespace != "" {
		ref = e.Namespace + "/" + e.Name
	}
	if e.Name == "" {
		ref = "<unnamed>"
	}
	msg := fmt.Sprintf("%s %s (%s): %s", e.GVK.Kind, ref, e.GVK.GroupVersion(), e.Status)
	if e.Replacement.Empty() {
		return msg + ", and Kubernetes names no replacement that this release serves: migrate it by hand"
	}
	return fmt.Sprintf("%s; its replacement is another kind (%s %s), which no rule converts to", msg, e.Replacement.GroupVersion(), e.Replacement.Kind)
}

// LifecycleError adds what the release does with the object's version to
// an error.
type LifecycleError struct {
	Err  error
	Note string
}

func (e *LifecycleError) Error() string { return fmt.Sprintf("%v (%s)", e.Err, e.Note) }
func (e *LifecycleError) Unwrap() error { return e.Err }
