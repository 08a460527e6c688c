package builtin_test

import (
	"testing"

	"github.com/mvpctl/mvpctl/rules"
	"github.com/mvpctl/mvpctl/rules/builtin"
)

// A user rule for a built-in pair, written in the other direction, replaces
// the built-in rule; the other built-in rules stay and the set validates.
func TestWith_UserRuleReplacesThePair(t *testing.T) {
	user, err := rules.Parse("user.yaml", []byte(`apiVersion: mvp.k8s.io/v1
kind: TransformationRules
metadata: {name: mine}
spec:
  apiMigrationRules:
  - apiGroup: policy
    resource: poddisruptionbudgets
    fromVersion: v1
    toVersion: v1beta1
    transformations:
    - {path: metadata.labels.converted, action: set, value: "yes"}
  - apiGroup: example.com
    resource: widgets
    fromVersion: v1alpha1
    toVersion: v1
    transformations:
    - {path: spec.size, action: remove}
`))
	if err != nil {
		t.Fatal(err)
	}
	base, err := builtin.Load()
	if err != nil {
		t.Fatal(err)
	}
	got, err := builtin.With(user)
	if err != nil {
		t.Fatal(err)
	}
	if errs := got.Validate(); len(errs) > 0 {
		t.Fatalf("merged set does not validate: %v", errs)
	}
	ids := map[string]string{}
	for _, ref := range got.MigrationRules() {
		ids[ref.Rule.ID()] = ref.Doc.File
	}
	if f, ok := ids["poddisruptionbudgets.policy/v1beta1->v1"]; ok {
		t.Errorf("the built-in PDB rule (%s) is still there beside the user's", f)
	}
	if ids["poddisruptionbudgets.policy/v1->v1beta1"] != "user.yaml" || ids["widgets.example.com/v1alpha1->v1"] != "user.yaml" {
		t.Errorf("the user's rules are missing: %v", ids)
	}
	if want := len(base.MigrationRules()) - 1 + 2; len(ids) != want {
		t.Errorf("%d rules, want the %d built-in ones but one, plus the user's two", len(ids), len(base.MigrationRules()))
	}
	if _, ok := ids["ingresses.extensions/v1beta1->networking.k8s.io/v1"]; !ok {
		t.Errorf("the built-in Ingress rule is gone: %v", ids)
	}
}

func TestWith_NilIsTheBuiltinRules(t *testing.T) {
	got, err := builtin.With(nil)
	if err != nil {
		t.Fatal(err)
	}
	base, _ := builtin.Load()
	if len(got.MigrationRules()) != len(base.MigrationRules()) {
		t.Errorf("%d rules, want %d", len(got.MigrationRules()), len(base.MigrationRules()))
	}
}
