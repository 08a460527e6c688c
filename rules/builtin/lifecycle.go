package builtin

import (
	"fmt"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/runtime/schema"
)

//go:generate go run ./gen

// Release is a Kubernetes minor release, e.g. 1.22. The zero value means
// none: a version that is not deprecated has a zero Deprecated.
type Release struct{ Major, Minor int }

// IsZero says whether r is no release.
func (r Release) IsZero() bool { return r == Release{} }

// String is v1.22; "" for the zero release.
func (r Release) String() string {
	if r.IsZero() {
		return ""
	}
	return fmt.Sprintf("v%d.%d", r.Major, r.Minor)
}

// Before says whether r is an earlier release than o.
func (r Release) Before(o Release) bool {
	return r.Major < o.Major || r.Major == o.Major && r.Minor < o.Minor
}

// AtOrAfter says whether r is set and o is r or later: a version removed in
// r is gone in o.
func (r Release) AtOrAfter(o Release) bool { return !r.IsZero() && !o.Before(r) }

// ParseRelease reads v1.22, 1.22 or v1.22.3 (the patch is ignored).
func ParseRelease(s string) (Release, error) {
	parts := strings.Split(strings.TrimPrefix(s, "v"), ".")
	if len(parts) < 2 || len(parts) > 3 {
		return Release{}, fmt.Errorf("Kubernetes version %q: want vMAJOR.MINOR, e.g. v1.32", s)
	}
	var nums [3]int
	for i, p := range parts {
		n, err := strconv.Atoi(p)
		if err != nil || n < 0 || len(p) > 4 {
			return Release{}, fmt.Errorf("Kubernetes version %q: want vMAJOR.MINOR, e.g. v1.32", s)
		}
		nums[i] = n
	}
	if nums[0] == 0 {
		return Release{}, fmt.Errorf("Kubernetes version %q: want vMAJOR.MINOR, e.g. v1.32", s)
	}
	return Release{nums[0], nums[1]}, nil
}

// Lifecycle is what Kubernetes says about one API version of one kind, read
// from the APILifecycle* methods of its Go type (see gen/).
type Lifecycle struct {
	schema.GroupVersionKind
	// Resource is the plural REST resource; empty for kinds that are not a
	// resource of their own (subresources such as Scale and Eviction,
	// options, review payloads such as AdmissionReview).
	Resource string
	// Namespaced says whether the resource lives in namespaces.
	Namespaced bool
	// Introduced is the release that first served the version.
	Introduced Release
	// Deprecated is the release that deprecated (or will deprecate) the
	// version; zero for versions with no deprecation planned (GA versions).
	Deprecated Release
	// Removed is the release that stopped (or will stop) serving it.
	Removed Release
	// Replacement is the kind to use instead; zero when there is none.
	Replacement schema.GroupVersionKind
	// Note says what to use instead when no kind replaces this one
	// (ThirdPartyResource: "none; use a CustomResourceDefinition ...");
	// empty otherwise.
	Note string
	// Source is the module release the entry was read from.
	Source string
}

// Lifecycles returns a copy of the table, sorted by group, version and kind.
func Lifecycles() []Lifecycle { return append([]Lifecycle(nil), lifecycles...) }

var byGVK = func() map[schema.GroupVersionKind]int {
	m := make(map[schema.GroupVersionKind]int, len(lifecycles))
	for i, l := range lifecycles {
		m[l.GroupVersionKind] = i
	}
	return m
}()

// LifecycleOf returns the entry of a group, version and kind.
func LifecycleOf(gvk schema.GroupVersionKind) (Lifecycle, bool) {
	i, ok := byGVK[gvk]
	if !ok {
		return Lifecycle{}, false
	}
	return lifecycles[i], true
}

// ReplacementAt follows the replacements of a version to the first one still
// served in release r (flowcontrol v1beta1 names v1beta3, which is itself
// removed in v1.32 in favour of v1). It returns the last one known when every
// replacement is removed by r, and zero when there is no replacement.
func (l Lifecycle) ReplacementAt(r Release) schema.GroupVersionKind {
	next := l.Replacement
	for range len(lifecycles) { // bounded: the table has no cycles, but stay safe
		n, ok := LifecycleOf(next)
		if !ok || !n.Removed.AtOrAfter(r) || n.Replacement.Empty() {
			return next
		}
		next = n.Replacement
	}
	return next
}
