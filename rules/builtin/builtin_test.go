package builtin_test

import (
	"path"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/mvpctl/mvpctl/rules"
	"github.com/mvpctl/mvpctl/rules/builtin"
)

// Load leaves the jq expressions to compile on first use, so this test is
// what compiles every one of them: the full validation, the jq programs,
// and each expression on its own as the native executor runs it.
func TestLoad_Compiles(t *testing.T) {
	if _, err := rules.ParseAll(builtin.Sources()...); err != nil {
		t.Fatal(err)
	}
	rs, err := builtin.Load()
	if err != nil {
		t.Fatal(err)
	}
	compiled, err := rules.Compile(rs, rules.CompileOptions{})
	if err != nil {
		t.Fatal(err)
	}
	snippets := 0
	for _, c := range compiled {
		for _, p := range []*rules.Program{c.Forward, c.Reverse} {
			for _, op := range p.Ops {
				for _, s := range []*rules.Snippet{op.F.JQ, op.R.JQ, op.WhenJQ} {
					if s == nil {
						continue
					}
					snippets++
					if _, err := s.Code(); err != nil {
						t.Errorf("%s: %s: %q: %v", c.Ref.Rule.ID(), op.Describe, s.Src, err)
					}
				}
			}
		}
	}
	if snippets == 0 {
		t.Error("no jq expressions compiled; the library has some")
	}
	if len(builtin.Sources()) == 0 || len(rs.MigrationRules()) < 6 {
		t.Fatalf("%d files, %d rules", len(builtin.Sources()), len(rs.MigrationRules()))
	}
}

// Each document holds one rule, so that its annotations are the rule's, and
// each file is named after the group of its rules' toVersion.
func TestSources_Layout(t *testing.T) {
	rs, err := builtin.Load()
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range rs.Documents {
		if n := len(d.Rules.Spec.APIMigrationRules); n != 1 || len(d.Rules.Spec.APIRoutingRules) != 0 {
			t.Errorf("%s: %s: %d migration rules and %d routing rules, want one migration rule", d.File, d.Rules.Metadata.Name, n, len(d.Rules.Spec.APIRoutingRules))
			continue
		}
		r := d.Rules.Spec.APIMigrationRules[0]
		group := strings.TrimSuffix(path.Base(d.File), ".yaml")
		if group == "core" {
			group = ""
		}
		if r.TargetGroup() != group {
			t.Errorf("%s: rule %s belongs in %s.yaml", d.File, r.ID(), r.TargetGroup())
		}
		if r.Kind == "" {
			t.Errorf("%s: rule %s has no kind", d.File, r.ID())
		}
	}
}

// The deprecated-in and removed-in annotations are what the lifecycle table
// says about the rule's old version, the rule's resource is the table's, and
// its toVersion is the replacement Kubernetes names (where it names one), or
// a version on the way there: one that Kubernetes replaces by the same
// replacement, because the release the oracle checks against predates it.
// An alpha version the table does not know has neither annotation.
func TestRules_MatchLifecycle(t *testing.T) {
	rs, err := builtin.Rules()
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rs {
		l, ok := builtin.LifecycleOf(r.From)
		if !ok {
			// k8s.io/api publishes no lifecycle for some alpha versions
			// Kubernetes still converts (rbac.authorization.k8s.io/v1alpha1):
			// their rules can say nothing about it.
			if !strings.Contains(r.From.Version, "alpha") || !r.Deprecated.IsZero() || !r.Removed.IsZero() {
				t.Errorf("%s: %v is not in the lifecycle table", r.File, r.From)
			}
			continue
		}
		if r.Deprecated != l.Deprecated || r.Removed != l.Removed {
			t.Errorf("%s: %s: annotations say deprecated %q removed %q; Kubernetes says %q and %q",
				r.File, r.Name, r.Deprecated, r.Removed, l.Deprecated, l.Removed)
		}
		if r.Resource != l.Resource {
			t.Errorf("%s: %s: resource %q, Kubernetes' is %q", r.File, r.Name, r.Resource, l.Resource)
		}
		if !l.Replacement.Empty() && l.Replacement != r.To && !replacedBy(r.To, l.Replacement) {
			t.Errorf("%s: %s: converts to %v, Kubernetes' replacement is %v", r.File, r.Name, r.To, l.Replacement)
		}
	}
}

// replacedBy says whether Kubernetes replaces gvk by replacement.
func replacedBy(gvk, replacement schema.GroupVersionKind) bool {
	l, ok := builtin.LifecycleOf(gvk)
	return ok && l.Replacement == replacement
}

func TestConverts(t *testing.T) {
	for gvk, want := range map[schema.GroupVersionKind]bool{
		{Group: "policy", Version: "v1beta1", Kind: "PodDisruptionBudget"}:     true,
		{Group: "extensions", Version: "v1beta1", Kind: "Ingress"}:             true,
		{Group: "autoscaling", Version: "v1", Kind: "HorizontalPodAutoscaler"}: true,
		{Group: "policy", Version: "v1beta1", Kind: "PodSecurityPolicy"}:       true,
		{Group: "extensions", Version: "v1beta1", Kind: "Deployment"}:          true,
		{Group: "apps", Version: "v1beta1", Kind: "DeploymentRollback"}:        false,
	} {
		if got := builtin.Converts(gvk); got != want {
			t.Errorf("Converts(%v) = %v", gvk, got)
		}
	}
}

// No built-in rule may change an object's labels, name or namespace: the
// proxy passes label and field selectors on them to the server of the
// converted version, and refuses them (400) for an emulated version whose
// rule may change the field, which is any field for a whole-object jq step
// it cannot analyse.
func TestRules_LeaveSelectableMetadata(t *testing.T) {
	rs, err := builtin.Load()
	if err != nil {
		t.Fatal(err)
	}
	var fields []rules.Path
	for _, s := range []string{`metadata.labels["app"]`, "metadata.name", "metadata.namespace"} {
		p, err := rules.ParsePath(s)
		if err != nil {
			t.Fatal(err)
		}
		fields = append(fields, p)
	}
	// PriorityLevelConfiguration's flowcontrol v1beta3 annotation and the
	// concurrency shares depend on each other, so one step reads and writes
	// both: the proxy answers 400 to a label or field selector on an
	// emulated PriorityLevelConfiguration version.
	wholeObject := map[string]bool{
		"prioritylevelconfigurations.flowcontrol.apiserver.k8s.io/v1beta1->v1beta3": true,
		"prioritylevelconfigurations.flowcontrol.apiserver.k8s.io/v1beta2->v1beta3": true,
		"prioritylevelconfigurations.flowcontrol.apiserver.k8s.io/v1beta3->v1":      true,
	}
	for _, ref := range rs.MigrationRules() {
		if wholeObject[ref.Rule.ID()] {
			continue
		}
		for i, tr := range ref.Rule.Transformations {
			for _, f := range fields {
				if why, may := tr.MayChange(f); may {
					t.Errorf("%s: %s: transformations[%d] may change %s: %s", ref.Doc.File, ref.Rule.ID(), i, f, why)
				}
			}
		}
	}
}

// ConvertsAt follows the rules to a version the release serves:
// PodSecurityPolicy converts between its groups only while one of them is
// served besides the object's own.
func TestConvertsAt(t *testing.T) {
	psp := func(group string) schema.GroupVersionKind {
		return schema.GroupVersionKind{Group: group, Version: "v1beta1", Kind: "PodSecurityPolicy"}
	}
	pdb := schema.GroupVersionKind{Group: "policy", Version: "v1beta1", Kind: "PodDisruptionBudget"}
	for _, c := range []struct {
		gvk     schema.GroupVersionKind
		release builtin.Release
		want    bool
	}{
		{psp("extensions"), builtin.Release{Major: 1, Minor: 15}, true},
		{psp("extensions"), builtin.Release{Major: 1, Minor: 24}, true},
		{psp("extensions"), builtin.Release{Major: 1, Minor: 25}, false},
		{psp("policy"), builtin.Release{Major: 1, Minor: 15}, true},
		{psp("policy"), builtin.Release{Major: 1, Minor: 16}, false},
		{psp("policy"), builtin.Release{Major: 1, Minor: 25}, false},
		{pdb, builtin.Release{Major: 1, Minor: 25}, true},
		{pdb, builtin.Release{Major: 1, Minor: 20}, false}, // policy/v1 arrived in v1.21
		{schema.GroupVersionKind{Group: "extensions", Version: "v1beta1", Kind: "Ingress"}, builtin.Release{Major: 1, Minor: 36}, true},
	} {
		if got := builtin.ConvertsAt(c.gvk, c.release); got != c.want {
			t.Errorf("ConvertsAt(%v, %v) = %v, want %v", c.gvk, c.release, got, c.want)
		}
	}
}
