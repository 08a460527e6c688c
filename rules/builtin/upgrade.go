package builtin

import "k8s.io/apimachinery/pkg/runtime/schema"

// UpgradeAt says what an object of l's version must become for release r:
// needed is false when r serves the version (and, with deprecated, does not
// deprecate it). to is the replacement Kubernetes names, followed to one
// that r serves; zero when Kubernetes names none (PodSecurityPolicy) or r
// serves none of the replacements.
func (l Lifecycle) UpgradeAt(r Release, deprecated bool) (to schema.GroupVersionKind, needed bool) {
	if !l.Removed.AtOrAfter(r) && !(deprecated && l.Deprecated.AtOrAfter(r)) {
		return schema.GroupVersionKind{}, false
	}
	to = l.ReplacementAt(r)
	if next, ok := LifecycleOf(to); to.Empty() || ok && next.Removed.AtOrAfter(r) {
		return schema.GroupVersionKind{}, true
	}
	return to, true
}
