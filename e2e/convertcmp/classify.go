package convertcmp

import (
	"bytes"
	"slices"
	"strings"
)

// Class says why the two outputs differ at a path.
type Class string

// The classes of differences, in the order of the comparison's stages.
const (
	// Annotation: mvpctl keeps what the target cannot hold in its
	// round-trip annotation; kubectl-convert drops it.
	Annotation Class = "round-trip annotation"
	// Filled: only kubectl-convert writes the field, a default or a zero
	// value of the target's Go type (status: {}, creationTimestamp: null).
	Filled Class = "target default or zero value"
	// Canonical: both write the field, kubectl-convert in the canonical
	// form of its Go type (quantities).
	Canonical Class = "canonical form"
	// Omitted: only mvpctl writes the field, an empty value the target's
	// typed encoder leaves out.
	Omitted Class = "empty value omitted"
	// SourceDefault: a default of the source version, set by the decoding
	// before conversion, which mvpctl (converting the object as written)
	// does not set.
	SourceDefault Class = "source-version default"
	// Disagreement: none of the above explains it.
	Disagreement Class = "disagreement"
)

// Finding is one classified difference.
type Finding struct {
	Change
	Class Class
	// Note says more about a disagreement.
	Note string
}

// Outputs are the objects compared for one manifest.
type Outputs struct {
	// Kubectl is kubectl-convert's output; Mvpctl mvpctl's. Required.
	Kubectl, Mvpctl map[string]any
	// KubectlTyped and Typed are Kubectl and Mvpctl put through
	// kubectl-convert to their own version, as a server of the target
	// version would store them (stage 4); nil when that did not run.
	KubectlTyped, Typed map[string]any
	// SourceDefaulted is the input defaulted by kubectl-convert in its own
	// version, converted by mvpctl and put through kubectl-convert to the
	// target (stage 5); nil when that did not run.
	SourceDefaulted map[string]any
}

// Classify explains every path where o.Kubectl and o.Mvpctl differ (see the
// package comment). Findings are sorted by path, disagreements of stage 5
// that are not differences of the raw outputs last.
func Classify(o Outputs) []Finding {
	var out []Finding
	m, had := withoutAnnotation(o.Mvpctl)
	if had {
		ann := o.Mvpctl["metadata"].(map[string]any)["annotations"].(map[string]any)[AnnotationKey]
		out = append(out, Finding{Change: Change{Path: child(child("metadata", "annotations"), AnnotationKey), B: ann, InB: true}, Class: Annotation})
	}
	raw := Diff(o.Kubectl, m)
	if len(raw) == 0 {
		return out
	}
	k := o.Kubectl
	if o.KubectlTyped != nil {
		k = o.KubectlTyped
	}
	typed := raw
	if o.Typed != nil {
		t, _ := withoutAnnotation(o.Typed)
		typed = Diff(k, t)
	}
	sourced := typed
	if o.SourceDefaulted != nil {
		s, _ := withoutAnnotation(o.SourceDefaulted)
		sourced = Diff(k, s)
	}
	for _, c := range raw {
		out = append(out, classify(c, typed, sourced))
	}
	for _, c := range sourced {
		if !touches(raw, c.Path) {
			out = append(out, Finding{Change: c, Class: Disagreement,
				Note: "only once the input is defaulted: mvpctl converts the defaulted object otherwise"})
		}
	}
	return out
}

func classify(c Change, typed, sourced []Change) Finding {
	switch {
	case !touches(typed, c.Path) && c.InA && !c.InB:
		return Finding{Change: c, Class: Filled}
	case !touches(typed, c.Path) && c.InA && c.InB:
		return Finding{Change: c, Class: Canonical}
	case !touches(typed, c.Path) && isEmpty(c.B):
		return Finding{Change: c, Class: Omitted}
	case !touches(typed, c.Path):
		return Finding{Change: c, Class: Disagreement, Note: "mvpctl writes a field the target type does not have"}
	case !touches(sourced, c.Path):
		return Finding{Change: c, Class: SourceDefault}
	}
	return Finding{Change: c, Class: Disagreement}
}

// touches says whether some change is at path, inside it or holds it.
func touches(changes []Change, path string) bool {
	return slices.ContainsFunc(changes, func(c Change) bool { return related(c.Path, path) })
}

// Outcome is the verdict on one manifest.
type Outcome string

// The outcomes, best first.
const (
	Identical    Outcome = "identical"
	SameValues   Outcome = "same values"
	Explained    Outcome = "equal after normalisation"
	Disagrees    Outcome = "disagreement"
	NotConverted Outcome = "not converted by kubectl-convert"
	Failed       Outcome = "failed"
)

// NotInScheme says whether kubectl-convert's error is that its scheme has
// no such kind: it knows Kubernetes' built-in groups only, not
// apiextensions.k8s.io or apiregistration.k8s.io (apimachinery's
// notRegisteredErr).
func NotInScheme(msg string) bool {
	return strings.Contains(msg, "no kind ") && strings.Contains(msg, " is registered for version ")
}

// Verdict compares two outputs' text and findings: Identical when the bytes
// are, SameValues when there is no finding, Explained when no finding is a
// disagreement.
func Verdict(kubectlText, mvpctlText []byte, findings []Finding) Outcome {
	switch {
	case bytes.Equal(kubectlText, mvpctlText):
		return Identical
	case len(findings) == 0:
		return SameValues
	case slices.ContainsFunc(findings, func(f Finding) bool { return f.Class == Disagreement }):
		return Disagrees
	}
	return Explained
}
