package lint_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/mvpctl/mvpctl/lint"
	"github.com/mvpctl/mvpctl/rules"
)

// bigRules writes n migration rules of ten transformations each, every
// action in turn. Rules of one resource differ in their versions, so the
// version graph is a chain; the shapes repeat every len(actions) rules.
func bigRules(n int, distinctJQ bool) []byte {
	var b strings.Builder
	b.WriteString("apiVersion: mvp.k8s.io/v1\nkind: TransformationRules\nmetadata: {name: big}\nspec:\n  apiMigrationRules:\n")
	for i := range n {
		fmt.Fprintf(&b, "  - apiGroup: g%d.example.com\n    resource: widgets\n    fromVersion: v1alpha1\n    toVersion: v1\n    transformations:\n", i)
		for j := range 10 {
			switch (i + j) % 7 {
			case 0:
				fmt.Fprintf(&b, "    - {path: spec.a%d, action: rename, targetPath: spec.b%d, type: integer}\n", j, j)
			case 1:
				fmt.Fprintf(&b, "    - {path: spec.m%d, action: modify, matchValue: x%d, replaceValue: y%d}\n", j, i, i)
			case 2:
				fmt.Fprintf(&b, "    - {path: 'spec.items[*].c%d', action: ensureFieldExistence, defaultValue: %d}\n", j, i)
			case 3:
				fmt.Fprintf(&b, "    - {path: spec.r%d, action: remove}\n", j)
			case 4:
				fmt.Fprintf(&b, "    - {path: spec.n%d, action: newField}\n", j)
			case 5:
				fmt.Fprintf(&b, "    - {path: 'metadata.annotations[\"example.com/k%d\"]', action: set, value: v}\n", j)
			case 6:
				expr := ". * 2"
				if distinctJQ {
					expr = fmt.Sprintf(". * %d", i+2)
				}
				fmt.Fprintf(&b, "    - {path: spec.j%d, action: jq, forward: '%s', reverse: '. / 2'}\n", j, expr)
			}
		}
	}
	return []byte(b.String())
}

// BenchmarkLint_1000x10 lints 1,000 migration rules of ten transformations
// each, without samples (BENCHMARKS.md).
func BenchmarkLint_1000x10(b *testing.B) {
	for _, distinct := range []bool{false, true} {
		name := "shared-shapes"
		if distinct {
			name = "distinct-jq"
		}
		data := bigRules(1000, distinct)
		b.Run(name, func(b *testing.B) {
			for b.Loop() {
				res, err := lint.Run(context.Background(), []rules.Source{{Name: "big.yaml", Data: data}}, lint.Options{})
				if err != nil {
					b.Fatal(err)
				}
				if res.MigrationRules != 1000 || res.Count(lint.Warning) != 0 {
					b.Fatalf("%d rules, %d warnings or errors", res.MigrationRules, res.Count(lint.Warning))
				}
			}
		})
	}
}

// TestLint_1000x10 lints the benchmark file and expects no findings; its
// time is measured by BenchmarkLint_1000x10, not asserted here.
func TestLint_1000x10(t *testing.T) {
	if testing.Short() {
		t.Skip("slow")
	}
	data := bigRules(1000, false)
	res, err := lint.Run(context.Background(), []rules.Source{{Name: "big.yaml", Data: data}}, lint.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if res.Count(lint.Warning) != 0 {
		t.Fatalf("%d warnings or errors; first: %+v", res.Count(lint.Warning), res.Findings[0])
	}
}
