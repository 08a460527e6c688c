package engine

import (
	"testing"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/mvpctl/mvpctl/rules"
)

func TestOverlaps(t *testing.T) {
	mf := []string{"metadata", "managedFields"}
	for _, tc := range []struct {
		elems []any
		want  bool
	}{
		{nil, true}, // the whole object
		{[]any{"metadata"}, true},
		{[]any{"metadata", "managedFields"}, true},
		{[]any{"metadata", "managedFields", nil, "manager"}, true},
		{[]any{"metadata", nil}, true},
		{[]any{nil}, true},
		{[]any{"metadata", "annotations", "x"}, false},
		{[]any{"spec", "template", "metadata", "managedFields"}, false},
		{[]any{"metadata", 0}, false},
		{[]any{"spec"}, false},
	} {
		if got := overlaps(tc.elems, mf); got != tc.want {
			t.Errorf("overlaps(%v, %v) = %v, want %v", tc.elems, mf, got, tc.want)
		}
	}
}

// TestUntouched_Rules asks the question of real rules: the seed rules
// leave managedFields alone; a step on metadata, on the whole object or
// with a condition does not.
func TestUntouched_Rules(t *testing.T) {
	compile := func(t *testing.T, src string) *Converter {
		t.Helper()
		rs, err := rules.Parse("r.yaml", []byte(src))
		if err != nil {
			t.Fatal(err)
		}
		compiled, err := rules.Compile(rs, rules.CompileOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return NewConverter(compiled, Options{})
	}
	const head = `apiVersion: mvp.k8s.io/v1
kind: TransformationRules
metadata: {name: r}
spec:
  apiMigrationRules:
  - apiGroup: example.com
    resource: widgets
    kind: Widget
    fromVersion: v1
    toVersion: v2
    transformations:
`
	gvk := schema.GroupVersionKind{Group: "example.com", Version: "v2", Kind: "Widget"}
	v1 := schema.GroupVersion{Group: "example.com", Version: "v1"}
	for _, tc := range []struct {
		name, steps string
		want        bool
	}{
		{"rename in spec", `    - {path: spec.a, action: rename, targetPath: spec.b}`, true},
		{"label", `    - {path: metadata.labels.x, action: rename, targetPath: spec.x}`, true},
		{"into managedFields", `    - {path: spec.x, action: rename, targetPath: metadata.managedFields}`, false},
		{"whole object", `    - {action: jq, forward: '.', reverse: '.'}`, false},
		{"metadata", `    - {path: metadata, action: jq, forward: '.', reverse: '.'}`, false},
		{"condition", `    - {path: spec.a, action: rename, targetPath: spec.b, when: '.spec.a != null'}`, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := compile(t, head+tc.steps+"\n")
			if got := c.Untouched(gvk, v1, "metadata", "managedFields"); got != tc.want {
				t.Errorf("Untouched = %v, want %v", got, tc.want)
			}
		})
	}
}
