package scan

import (
	"bytes"
	"fmt"
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/mvpctl/mvpctl/rules/builtin"
)

// Status says what the target release does with an object's API version.
type Status string

// The statuses of a finding.
const (
	// Removed: the target release no longer serves the version.
	Removed Status = "removed"
	// Deprecated: the target release serves it, deprecated.
	Deprecated Status = "deprecated"
)

// Location says where an object was found: a file and line, or a cluster
// (with the Helm release it belongs to, if it came from one).
type Location struct {
	// File is the file the object is in ("<stdin>" for standard input); for
	// an object of a Helm release, the chart template it was rendered from.
	File string `json:"file,omitempty"`
	// Line is the line the object starts on in File; zero when not known.
	Line int `json:"line,omitempty"`
	// Cluster is the kubeconfig context the object was read from.
	Cluster string `json:"cluster,omitempty"`
	// HelmRelease is namespace/name of the Helm release whose manifest holds
	// the object, and HelmRevision the release's revision.
	HelmRelease  string `json:"helmRelease,omitempty"`
	HelmRevision int    `json:"helmRevision,omitempty"`
}

// String is file:line, or the cluster and Helm release.
func (l Location) String() string {
	var parts []string
	if l.Cluster != "" {
		parts = append(parts, "cluster:"+l.Cluster)
	}
	if l.HelmRelease != "" {
		parts = append(parts, fmt.Sprintf("helm release %s revision %d", l.HelmRelease, l.HelmRevision))
	}
	if l.File != "" {
		f := l.File
		if l.Line > 0 {
			f = fmt.Sprintf("%s:%d", f, l.Line)
		}
		parts = append(parts, f)
	}
	return strings.Join(parts, " ")
}

// Finding is one object on an API version that the target release removed
// or deprecated.
type Finding struct {
	Location
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Namespace  string `json:"namespace,omitempty"`
	Name       string `json:"name,omitempty"`
	// Status is removed or deprecated, in the target release.
	Status Status `json:"status"`
	// DeprecatedIn and RemovedIn are the releases that deprecated and remove
	// the version (v1.22); empty when Kubernetes names none.
	DeprecatedIn string `json:"deprecatedIn,omitempty"`
	RemovedIn    string `json:"removedIn,omitempty"`
	// ReplacementAPIVersion and ReplacementKind are what to use instead, as
	// served by the target release; empty when Kubernetes names nothing the
	// target serves (PodSecurityPolicy).
	ReplacementAPIVersion string `json:"replacementApiVersion,omitempty"`
	ReplacementKind       string `json:"replacementKind,omitempty"`
	// Note says what to use instead when no kind replaces this one
	// (ThirdPartyResource: a CustomResourceDefinition).
	Note string `json:"note,omitempty"`
	// NeedsDecision are the fields whose value the replacement refuses and
	// only the user can choose (a webhook's sideEffects), with the choices.
	NeedsDecision []Undecided `json:"needsDecision,omitempty"`
	// Convertible says whether the built-in rules of mvpctl convert the
	// object to a version the target release serves (mvpctl convert, mvpctl
	// proxy).
	Convertible bool `json:"convertible"`
}

// Object is namespace/name, or name for cluster-scoped objects.
func (f Finding) Object() string {
	if f.Namespace != "" {
		return f.Namespace + "/" + f.Name
	}
	return f.Name
}

// Replacement is apiVersion and kind of the replacement, "" if none.
func (f Finding) Replacement() string {
	if f.ReplacementAPIVersion == "" {
		return ""
	}
	if f.ReplacementKind == f.Kind {
		return f.ReplacementAPIVersion
	}
	return f.ReplacementAPIVersion + " " + f.ReplacementKind
}

// Message says what the finding means and what to do, in one line.
func (f Finding) Message(target builtin.Release) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s %s uses %s", f.Kind, f.Object(), f.APIVersion)
	switch f.Status {
	case Removed:
		fmt.Fprintf(&b, ", removed in %s", f.RemovedIn)
		if f.DeprecatedIn != "" {
			fmt.Fprintf(&b, " (deprecated in %s)", f.DeprecatedIn)
		}
	case Deprecated:
		fmt.Fprintf(&b, ", deprecated in %s", f.DeprecatedIn)
		if f.RemovedIn != "" {
			fmt.Fprintf(&b, " and removed in %s", f.RemovedIn)
		}
	}
	if r := f.Replacement(); r != "" {
		fmt.Fprintf(&b, "; use %s", r)
	} else if f.Note != "" {
		fmt.Fprintf(&b, "; replacement: %s", f.Note)
	} else {
		fmt.Fprintf(&b, "; Kubernetes %s names no replacement", target)
	}
	if f.Convertible {
		b.WriteString(" (mvpctl convert converts it)")
	}
	for _, u := range f.NeedsDecision {
		fmt.Fprintf(&b, "; %s", u)
	}
	return b.String()
}

// checker decides what a target release says about an apiVersion and kind.
type checker struct {
	target builtin.Release
	// groupVersions are the group/version strings of the flagged versions
	// outside the core group, and coreKinds the flagged kinds of the core
	// group (whose apiVersion, v1, is in every document): mayFlag looks for
	// them before a document is decoded.
	groupVersions map[string]bool
	coreKinds     [][]byte
}

func newChecker(target builtin.Release) checker {
	c := checker{target: target, groupVersions: map[string]bool{}}
	for _, l := range builtin.Lifecycles() {
		if !l.Deprecated.AtOrAfter(target) && !l.Removed.AtOrAfter(target) {
			continue
		}
		if l.Group == "" {
			c.coreKinds = append(c.coreKinds, []byte(l.Kind))
		} else {
			c.groupVersions[l.GroupVersion().String()] = true
		}
	}
	return c
}

// mayFlag says whether a document can hold an object on a flagged version,
// from its text: whatever the YAML or JSON syntax, such an object spells out
// a flagged group/version (or a flagged core kind), unless an escape sequence
// hides it, so a document with a backslash is always decoded. Most
// documents of a tree fail this test and are never decoded.
func (c checker) mayFlag(doc []byte) bool {
	if bytes.IndexByte(doc, '\\') >= 0 {
		return true
	}
	for _, k := range c.coreKinds {
		if bytes.Contains(doc, k) {
			return true
		}
	}
	for i := 0; ; {
		j := bytes.Index(doc[i:], []byte("/v"))
		if j < 0 {
			return false
		}
		j += i
		start, end := j, j+2
		for start > 0 && isVersionByte(doc[start-1]) {
			start--
		}
		for end < len(doc) && isVersionByte(doc[end]) {
			end++
		}
		if c.groupVersions[string(doc[start:end])] {
			return true
		}
		i = j + 2
	}
}

// isVersionByte matches the bytes of a group/version: DNS names and versions.
func isVersionByte(b byte) bool {
	return 'a' <= b && b <= 'z' || '0' <= b && b <= '9' || b == '.' || b == '-' || b == '/' || 'A' <= b && b <= 'Z'
}

// check returns the finding for an object, and false when its version is
// neither deprecated nor removed in the target release (or not a built-in
// API at all).
func (c checker) check(apiVersion, kind string) (Finding, bool) {
	gv, err := schema.ParseGroupVersion(apiVersion)
	if err != nil || kind == "" {
		return Finding{}, false
	}
	l, ok := builtin.LifecycleOf(gv.WithKind(kind))
	if !ok {
		return Finding{}, false
	}
	f := Finding{APIVersion: apiVersion, Kind: kind, DeprecatedIn: l.Deprecated.String(), RemovedIn: l.Removed.String(), Note: l.Note}
	switch {
	case l.Removed.AtOrAfter(c.target):
		f.Status = Removed
	case l.Deprecated.AtOrAfter(c.target):
		f.Status = Deprecated
	default:
		return Finding{}, false
	}
	if r, _ := l.UpgradeAt(c.target, true); !r.Empty() {
		f.ReplacementAPIVersion, f.ReplacementKind = r.GroupVersion().String(), r.Kind
	}
	f.Convertible = builtin.ConvertsAt(l.GroupVersionKind, c.target)
	return f, true
}

// sortFindings orders findings by where they are.
func sortFindings(fs []Finding) {
	sort.SliceStable(fs, func(i, j int) bool {
		a, b := fs[i], fs[j]
		if a.Cluster != b.Cluster {
			return a.Cluster < b.Cluster
		}
		if a.HelmRelease != b.HelmRelease {
			return a.HelmRelease < b.HelmRelease
		}
		if a.File != b.File {
			return a.File < b.File
		}
		if a.Line != b.Line {
			return a.Line < b.Line
		}
		if a.Namespace != b.Namespace {
			return a.Namespace < b.Namespace
		}
		if a.Name != b.Name {
			return a.Name < b.Name
		}
		return a.Kind < b.Kind
	})
}
