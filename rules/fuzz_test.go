package rules

import (
	"os"
	"path/filepath"
	"testing"
)

// FuzzParsePath: any text parses to a path that renders back to an
// equivalent path, or gives a positioned error; never a panic.
func FuzzParsePath(f *testing.F) {
	for _, s := range []string{"spec.config.legacyTimeout", "spec.rules[*].http.paths[*].backend", `metadata.annotations["kubernetes.io/ingress.class"]`, "a[0][*]", `a['b\'c']`, "", ".", "[", `a["`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		p, err := ParsePath(s)
		if err != nil {
			pe, ok := err.(*PathError)
			if !ok || pe.Offset < 0 || pe.Offset > len(s) {
				t.Fatalf("ParsePath(%q): bad error %#v", s, err)
			}
			return
		}
		again, err := ParsePath(p.String())
		if err != nil {
			t.Fatalf("ParsePath(%q).String() = %q does not parse: %v", s, p.String(), err)
		}
		if again.String() != p.String() {
			t.Fatalf("rendering is not stable: %q -> %q", p.String(), again.String())
		}
	})
}

// FuzzParseAndCompile: any bytes decode, validate and compile to programs,
// or give positioned errors; never a panic.
func FuzzParseAndCompile(f *testing.F) {
	seeds, _ := filepath.Glob("builtin/*.yaml")
	seeds = append(seeds, "../testdata/examples/seed/mvp-rules.yaml", "../testdata/bench/deployment-rules.yaml")
	for _, s := range seeds {
		if data, err := os.ReadFile(s); err == nil {
			f.Add(data)
		}
	}
	f.Add([]byte("apiVersion: mvp.k8s.io/v1\nkind: TransformationRules\nmetadata: {name: x}\nspec: {apiMigrationRules: [{apiGroup: g, resource: rs, fromVersion: v1, toVersion: v2, transformations: [{path: a.b, action: rename, targetPath: a.c}]}]}\n"))
	f.Add([]byte("- [\n"))
	f.Add([]byte("a: &x [*x]\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		rs, err := ParseAll(Source{Name: "fuzz.yaml", Data: data})
		if err != nil {
			if el, ok := err.(ErrorList); ok {
				for _, e := range el {
					if e.Pos.File != "fuzz.yaml" || e.Field == nil {
						t.Fatalf("error without position or field: %#v", e)
					}
					_ = e.Caret()
				}
			}
			return
		}
		if _, err := Compile(rs, CompileOptions{}); err != nil {
			t.Fatalf("a rule set that validates must compile: %v", err)
		}
	})
}
