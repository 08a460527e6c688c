package webhook

import (
	"context"
	"strings"
	"testing"

	"github.com/mvpctl/mvpctl/engine"
)

func checkFiles(t *testing.T, rulesPath string, files ...string) CheckResult {
	t.Helper()
	in, err := ReadCheckFiles(files)
	if err != nil {
		t.Fatal(err)
	}
	return Check(context.Background(), loadConverter(t, rulesPath, engine.Options{}), in)
}

func TestCheck_LosslessRules(t *testing.T) {
	res := checkFiles(t, widgetRules, "testdata/widgets-crd.yaml", "testdata/widgets-objects.yaml")
	if len(res.Findings) > 0 || res.CRDs != 1 || res.Objects != 2 {
		t.Errorf("%d CRDs, %d objects, findings %v; want 1, 2, none", res.CRDs, res.Objects, res.Findings)
	}
}

// twoVersionCRD is widgets with v1alpha1 and v1beta1 only.
const twoVersionCRD = `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: widgets.example.com}
spec:
  group: example.com
  scope: Namespaced
  names: {plural: widgets, singular: widget, kind: Widget, listKind: WidgetList}
  versions:
  - {name: v1alpha1, served: true, storage: false}
  - {name: v1beta1, served: true, storage: true}
`

func TestCheck_Findings(t *testing.T) {
	crd := rulesFile(t, twoVersionCRD)
	for name, tc := range map[string]struct {
		rules string
		says  []string
	}{
		// The engine keeps round trips exact (the round-trip annotation);
		// what a rule can break is the contract, and objects of versions
		// the CRD does not have fail (document 2 is a v1 Widget).
		"contract": {`{path: metadata.namespace, action: set, value: elsewhere}`,
			[]string{"document 1: Widget shop/small: v1alpha1 → v1beta1 → v1alpha1", "metadata.namespace changed",
				"document 2: Widget shop/big: v1 → v1alpha1 → v1", "no rule converts"}},
		"sample": {`{path: metadata.labels, action: set, value: {a: 1}}`,
			[]string{"sample object at v1alpha1", "metadata.labels", "want a string"}},
	} {
		t.Run(name, func(t *testing.T) {
			rules := rulesFile(t, `apiVersion: mvp.k8s.io/v1
kind: TransformationRules
metadata: {name: bad}
spec:
  apiMigrationRules:
  - apiGroup: example.com
    resource: widgets
    kind: Widget
    fromVersion: v1alpha1
    toVersion: v1beta1
    transformations:
    - `+tc.rules+"\n")
			res := checkFiles(t, rules, crd, "testdata/widgets-objects.yaml")
			var all []string
			for _, f := range res.Findings {
				all = append(all, f.String())
			}
			msg := strings.Join(all, "\n")
			if len(res.Findings) == 0 {
				t.Fatal("no findings")
			}
			wantContains(t, msg, tc.says...)
		})
	}
}

func TestReadCheckFiles_BadCRD(t *testing.T) {
	bad := rulesFile(t, "apiVersion: apiextensions.k8s.io/v1beta1\nkind: CustomResourceDefinition\nmetadata: {name: x}\n")
	if _, err := ReadCheckFiles([]string{bad}); err == nil || !strings.Contains(err.Error(), "want apiextensions.k8s.io/v1") {
		t.Errorf("err %v", err)
	}
}

// A directory is read as kubectl's -f reads it; rules files in it are
// left to --rules.
func TestReadCheckFiles_Directory(t *testing.T) {
	res := checkFiles(t, widgetRules, "testdata")
	if len(res.Findings) > 0 || res.CRDs != 1 || res.Objects != 2 {
		t.Errorf("%d CRDs, %d objects, findings %v; want 1, 2, none", res.CRDs, res.Objects, res.Findings)
	}
}
