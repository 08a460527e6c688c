package builtin

import (
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/mvpctl/mvpctl/rules"
)

// With returns the built-in rules together with a user's rule set (nil for
// none), the user's winning as [InForce] says, so users can change what
// mvpctl ships without a duplicate-rule error; the other built-in rules
// stay, and chains may mix both.
func With(user *rules.RuleSet) (*rules.RuleSet, error) {
	base, err := Load()
	if err != nil {
		return nil, err
	}
	if user == nil {
		return base, nil
	}
	out := &rules.RuleSet{Documents: InForce(base.Documents, user.Documents)}
	out.Documents = append(out.Documents, user.Documents...)
	return out, nil
}

// InForce returns the documents of base that none of over replaces: a
// migration rule of over replaces a base rule for the same resource that
// converts from the same group/version, or between the same two
// group/versions in either direction (a base rule and its replacement would
// otherwise be two ways between the same versions, or a duplicate). A base
// document goes as a whole; the built-in ones hold one rule each
// (TestSources_Layout checks it).
func InForce(base, over []*rules.Document) []*rules.Document {
	if len(base) == 0 {
		return nil
	}
	taken := map[string]bool{}
	for _, ref := range (&rules.RuleSet{Documents: over}).MigrationRules() {
		for _, k := range ruleKeys(ref.Rule) {
			taken[k] = true
		}
	}
	var out []*rules.Document
	for _, d := range base {
		if !replaced(d, taken) {
			out = append(out, d)
		}
	}
	return out
}

func replaced(d *rules.Document, taken map[string]bool) bool {
	for i := range d.Rules.Spec.APIMigrationRules {
		for _, k := range ruleKeys(&d.Rules.Spec.APIMigrationRules[i]) {
			if taken[k] {
				return true
			}
		}
	}
	return false
}

// ruleKeys names what a rule converts: its resource from its fromVersion,
// and its resource between its two versions (in a fixed order, so that a
// rule and its reverse have the same key).
func ruleKeys(m *rules.MigrationRule) []string {
	from := schema.GroupVersion{Group: m.APIGroup, Version: m.FromVersion}.String()
	to := schema.GroupVersion{Group: m.TargetGroup(), Version: m.ToVersion}.String()
	a, b := from, to
	if b < a {
		a, b = b, a
	}
	return []string{"from " + m.Resource + " " + from, "between " + m.Resource + " " + a + " " + b}
}
