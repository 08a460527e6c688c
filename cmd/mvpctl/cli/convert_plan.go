package cli

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/mvpctl/mvpctl/engine"
	"github.com/mvpctl/mvpctl/rules/builtin"
)

// convertPlan says what mvpctl convert converts each object to: one
// group/version (--output-version), or for a Kubernetes release
// (--kubernetes-version) the replacement of every version that release
// removes.
type convertPlan struct {
	// to is --output-version; zero with a release.
	to schema.GroupVersion
	// release is --kubernetes-version; zero with --output-version.
	release builtin.Release
	// deprecated converts the versions release deprecates too.
	deprecated bool
}

func newConvertPlan(opts convertOptions) (convertPlan, error) {
	switch {
	case opts.OutputVersion != "" && opts.KubernetesVersion != "":
		return convertPlan{}, usageErrorf("--output-version and --kubernetes-version: give one of them")
	case opts.IncludeDeprecated && opts.KubernetesVersion == "":
		return convertPlan{}, usageErrorf("--include-deprecated needs --kubernetes-version")
	case opts.KubernetesVersion != "":
		rel, err := builtin.ParseRelease(opts.KubernetesVersion)
		if err != nil {
			return convertPlan{}, usageErrorf("--kubernetes-version: %v", err)
		}
		return convertPlan{release: rel, deprecated: opts.IncludeDeprecated}, nil
	case opts.OutputVersion == "":
		return convertPlan{}, usageErrorf("give --output-version GROUP/VERSION (e.g. networking.k8s.io/v1) or --kubernetes-version vX.Y (e.g. %s)", builtin.Newest)
	}
	to, err := schema.ParseGroupVersion(opts.OutputVersion)
	if err != nil || to.Version == "" {
		return convertPlan{}, usageErrorf("--output-version %q: want GROUP/VERSION or VERSION for the core group", opts.OutputVersion)
	}
	return convertPlan{to: to}, nil
}

// convert converts one object (or List) as planned. As the converter does
// with Options.KeepGoing, what fails is left as it was.
func (p convertPlan) convert(ctx context.Context, conv *engine.Converter, obj map[string]any) (map[string]any, error) {
	if p.release.IsZero() {
		return conv.Convert(ctx, obj, p.to)
	}
	if isCoreList(obj) {
		return p.convertItems(ctx, conv, obj)
	}
	gvk, l, to, needed, err := p.target(obj)
	if err != nil || !needed {
		return obj, err
	}
	out, err := conv.Convert(ctx, obj, to.GroupVersion())
	if s, _ := out["apiVersion"].(string); err == nil && s != to.GroupVersion().String() {
		// No rule mentions the resource in the replacement's group.
		ns, name := namespaceName(obj)
		err = &engine.UnconvertedError{GVK: gvk, Namespace: ns, Name: name, Resource: l.Resource, To: to.GroupVersion()}
	}
	if errors.As(err, new(*engine.UnconvertedError)) {
		return nil, &lifecycleError{err: err, note: p.status(l)}
	}
	return out, err
}

// convertItems converts the items of a v1 List one by one: each has a
// version of its own. Failed items stay as they were.
func (p convertPlan) convertItems(ctx context.Context, conv *engine.Converter, list map[string]any) (map[string]any, error) {
	items, _ := list["items"].([]any)
	var failed []engine.ItemError
	for i, it := range items {
		obj, ok := it.(map[string]any)
		if !ok {
			continue // not an object: nothing to convert
		}
		out, err := p.convert(ctx, conv, obj)
		if err != nil {
			failed = append(failed, engine.ItemError{Index: i, Err: err})
			continue
		}
		items[i] = out
	}
	if failed != nil {
		return list, &engine.ItemsError{Items: failed}
	}
	return list, nil
}

// target finds what an object (or a typed list's items) must become for
// the release: needed is false when the release serves its version or it
// is no built-in API. A removed version without a replacement of the same
// kind is a *noReplacementError.
func (p convertPlan) target(obj map[string]any) (gvk schema.GroupVersionKind, l builtin.Lifecycle, to schema.GroupVersionKind, needed bool, err error) {
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
	to, needed = l.UpgradeAt(p.release, p.deprecated)
	if needed && (to.Empty() || to.Kind != gvk.Kind) {
		ns, name := namespaceName(obj)
		return gvk, l, to, true, &noReplacementError{gvk: gvk, namespace: ns, name: name, status: p.status(l), replacement: to, note: l.Note}
	}
	return gvk, l, to, needed, nil
}

// status says what the release does with a version: removed in v1.22, or
// deprecated in v1.19 (with --include-deprecated).
func (p convertPlan) status(l builtin.Lifecycle) string {
	if l.Removed.AtOrAfter(p.release) {
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

// noReplacementError is an object on a version the release removes (or
// deprecates) that has no replacement mvpctl can convert it to: Kubernetes
// names none, or one of another kind (Endpoints and EndpointSlice).
type noReplacementError struct {
	gvk             schema.GroupVersionKind
	namespace, name string
	status          string
	replacement     schema.GroupVersionKind
	note            string // what to use instead, when no kind replaces it (builtin.Lifecycle.Note)
}

func (e *noReplacementError) Error() string {
	ref := e.name
	if e.namespace != "" {
		ref = e.namespace + "/" + e.name
	}
	if e.name == "" {
		ref = "<unnamed>"
	}
	msg := fmt.Sprintf("%s %s (%s): %s", e.gvk.Kind, ref, e.gvk.GroupVersion(), e.status)
	if e.replacement.Empty() && e.note != "" {
		return msg + ", and Kubernetes names no replacement that this release serves (replacement: " + e.note + "): migrate it by hand"
	}
	if e.replacement.Empty() {
		return msg + ", and Kubernetes names no replacement that this release serves: migrate it by hand"
	}
	return fmt.Sprintf("%s; its replacement is another kind (%s %s), which no rule converts to", msg, e.replacement.GroupVersion(), e.replacement.Kind)
}

// lifecycleError adds what the release does with the object's version to
// an error.
type lifecycleError struct {
	err  error
	note string
}

func (e *lifecycleError) Error() string { return fmt.Sprintf("%v (%s)", e.err, e.note) }
func (e *lifecycleError) Unwrap() error { return e.err }
