package rulesource

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/mvpctl/mvpctl/rules"
	"github.com/mvpctl/mvpctl/rules/builtin"
)

// pdbRule is a policy poddisruptionbudgets rule from one version to
// another that also sets spec.convertedBy, so that its conversions can be told from
// the built-in rule's.
func pdbRule(name, from, to string) string {
	return fmt.Sprintf(`apiVersion: mvp.k8s.io/v1
kind: TransformationRules
metadata: {name: %s}
spec:
  apiMigrationRules:
  - apiGroup: policy
    resource: poddisruptionbudgets
    kind: PodDisruptionBudget
    fromVersion: %s
    toVersion: %s
    transformations:
    - {path: spec.convertedBy, action: set, value: %s}
`, name, from, to, name)
}

// convertPDB converts a policy/v1beta1 PodDisruptionBudget with an empty
// selector to policy/v1 and returns the result.
func convertPDB(t *testing.T, set *Set) map[string]any {
	t.Helper()
	obj := map[string]any{
		"apiVersion": "policy/v1beta1", "kind": "PodDisruptionBudget",
		"metadata": map[string]any{"name": "x", "namespace": "default"},
		"spec":     map[string]any{"minAvailable": 1, "selector": map[string]any{}},
	}
	out, err := set.Converter.Convert(context.Background(), obj, schema.GroupVersion{Group: "policy", Version: "v1"})
	if err != nil {
		t.Fatalf("convert: %v", err)
	}
	return out
}

func labelOf(obj map[string]any) any {
	return obj["spec"].(map[string]any)["convertedBy"]
}

// The built-in rules alone make a source; they convert as Kubernetes did
// (v1beta1's empty selector selects no pods: v1's reserved marker).
func TestStart_BuiltinOnly(t *testing.T) {
	s, err := Start(t.Context(), Options{Builtin: true})
	if err != nil {
		t.Fatal(err)
	}
	want, err := builtin.Load()
	if err != nil {
		t.Fatal(err)
	}
	if got := len(s.Current().Rules.Documents); got != len(want.Documents) {
		t.Errorf("%d documents, want the %d built-in ones", got, len(want.Documents))
	}
	out := convertPDB(t, s.Current())
	sel := fmt.Sprint(out["spec"].(map[string]any)["selector"])
	if out["apiVersion"] != "policy/v1" || sel != "map[matchExpressions:[map[key:pdb.kubernetes.io/deprecated-v1beta1-empty-selector-match operator:Exists]]]" {
		t.Errorf("converted: %v", out)
	}
}

// A file's rule for the same resource and version replaces the built-in
// one, without a duplicate-rule error; other built-in rules stay; and when
// the file's rule goes, the built-in one is back.
func TestSource_FileRulesReplaceBuiltin(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "rules.yaml")
	writeAtomic(t, path, pdbRule("mine", "v1beta1", "v1"))
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	s, err := Start(ctx, Options{Files: []string{dir}, Builtin: true, PollInterval: -1})
	if err != nil {
		t.Fatal(err)
	}
	if got := labelOf(convertPDB(t, s.Current())); got != "mine" {
		t.Errorf("converted by %v, want the file's rule", got)
	}
	ids := ruleIDs(s.Current())
	if !slices.Contains(ids, "horizontalpodautoscalers.autoscaling/v2beta2->v2") {
		t.Errorf("the other built-in rules are gone: %v", ids)
	}
	writeAtomic(t, path, rulesYAML("r", "first"))
	waitFor(t, "the file's PDB rule to go", 30*time.Second, func() bool { return labelOf(convertPDB(t, s.Current())) == nil })
	if got := convertedField(t, s.Current()); got != "first" {
		t.Errorf("the file's other rule: %q", got)
	}
}

func ruleIDs(set *Set) []string {
	var out []string
	for _, ref := range set.Rules.MigrationRules() {
		out = append(out, ref.Rule.ID())
	}
	return out
}

func TestInForce(t *testing.T) {
	base := parseDocs(t, pdbRule("b-beta", "v1beta1", "v1"), pdbRule("b-alpha", "v1alpha1", "v1beta1"))
	for _, tc := range []struct {
		name string
		over []*rules.Document
		want []string
	}{
		{"nothing over", nil, []string{"b-beta", "b-alpha"}},
		{"same from version", parseDocs(t, pdbRule("o", "v1beta1", "v2")), []string{"b-alpha"}},
		{"same versions, other direction", parseDocs(t, pdbRule("o", "v1", "v1beta1")), []string{"b-alpha"}},
		{"chained after", parseDocs(t, pdbRule("o", "v1", "v2")), []string{"b-beta", "b-alpha"}},
		{"other resource", parseDocs(t, rulesYAML("o", "x")), []string{"b-beta", "b-alpha"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got []string
			for _, d := range builtin.InForce(base, tc.over) {
				got = append(got, d.Rules.Metadata.Name)
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("in force: %v, want %v", got, tc.want)
			}
		})
	}
}

func parseDocs(t *testing.T, docs ...string) []*rules.Document {
	t.Helper()
	var out []*rules.Document
	for i, d := range docs {
		rs, err := rules.Parse(fmt.Sprintf("doc%d.yaml", i), []byte(d))
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, rs.Documents...)
	}
	return out
}
