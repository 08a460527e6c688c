package builtin

import (
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/mvpctl/mvpctl/rules"
)

// With returns the built-in rules together with a user's rule set (nil for
// none). A user rule replaces every built-in rule for the same resource
// between the same two group/versions, whichever way round it is written,
// so users can change what mvpctl ships without a duplicate-rule error;
// the other built-in rules stay, and chains may mix both.
func With(user *rules.RuleSet) (*rules.RuleSet, error) {
	base, err := Load()
	if err != nil {
		return nil, err
	}
	if user == nil {
		return base, nil
	}
	replaced := map[versionPair]bool{}
	for _, ref := range user.MigrationRules() {
		replaced[pairOf(ref.Rule)] = true
	}
	out := &rules.RuleSet{}
	for _, d := range base.Documents {
		if !replacedAny(d, replaced) {
			out.Documents = append(out.Documents, d)
		}
	}
	out.Documents = append(out.Documents, user.Documents...)
	return out, nil
}

// versionPair is a resource and the two group/versions a rule connects, in
// a fixed order: a rule and its reverse have the same pair.
type versionPair struct {
	resource string
	a, b     schema.GroupVersion
}

func pairOf(r *rules.MigrationRule) versionPair {
	a := schema.GroupVersion{Group: r.APIGroup, Version: r.FromVersion}
	b := schema.GroupVersion{Group: r.TargetGroup(), Version: r.ToVersion}
	if b.String() < a.String() {
		a, b = b, a
	}
	return versionPair{resource: r.Resource, a: a, b: b}
}

// replacedAny says whether a rule of a built-in document is replaced (each
// holds one rule; TestSources_Layout checks it).
func replacedAny(d *rules.Document, replaced map[versionPair]bool) bool {
	for i := range d.Rules.Spec.APIMigrationRules {
		if replaced[pairOf(&d.Rules.Spec.APIMigrationRules[i])] {
			return true
		}
	}
	return false
}
