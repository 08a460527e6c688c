package rules

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestParsePath(t *testing.T) {
	tests := []struct {
		in   string
		want Path
		str  string // canonical rendering; empty means in
	}{
		{in: "spec.config.legacyTimeout", want: Path{{Key: "spec"}, {Key: "config"}, {Key: "legacyTimeout"}}},
		{in: "spec.rules[*].http.paths[*].backend.serviceName", want: Path{{Key: "spec"}, {Key: "rules"}, {Kind: StepWildcard}, {Key: "http"}, {Key: "paths"}, {Kind: StepWildcard}, {Key: "backend"}, {Key: "serviceName"}}},
		{in: "spec.containers[0].image", want: Path{{Key: "spec"}, {Key: "containers"}, {Kind: StepIndex, Index: 0}, {Key: "image"}}},
		{in: `metadata.annotations["kubernetes.io/ingress.class"]`, want: Path{{Key: "metadata"}, {Key: "annotations"}, {Key: "kubernetes.io/ingress.class"}}},
		{in: `metadata.annotations['a.b']`, want: Path{{Key: "metadata"}, {Key: "annotations"}, {Key: "a.b"}}, str: `metadata.annotations["a.b"]`},
		{in: `metadata.labels["x"]`, want: Path{{Key: "metadata"}, {Key: "labels"}, {Key: "x"}}, str: "metadata.labels.x"},
		{in: `a["q\"uote"]`, want: Path{{Key: "a"}, {Key: `q"uote`}}},
		{in: `["top.level"].x`, want: Path{{Key: "top.level"}, {Key: "x"}}},
		{in: "items[12][*]", want: Path{{Key: "items"}, {Kind: StepIndex, Index: 12}, {Kind: StepWildcard}}},
		{in: "x-kubernetes-int-or-string", want: Path{{Key: "x-kubernetes-int-or-string"}}},
	}
	for _, tt := range tests {
		got, err := ParsePath(tt.in)
		if err != nil {
			t.Errorf("ParsePath(%q): %v", tt.in, err)
			continue
		}
		if diff := cmp.Diff(tt.want, got); diff != "" {
			t.Errorf("ParsePath(%q) (-want +got):\n%s", tt.in, diff)
		}
		want := tt.str
		if want == "" {
			want = tt.in
		}
		if s := got.String(); s != want {
			t.Errorf("ParsePath(%q).String() = %q, want %q", tt.in, s, want)
		}
		again, err := ParsePath(got.String())
		if err != nil || !cmp.Equal(again, got) {
			t.Errorf("ParsePath(%q).String() does not parse back: %v", tt.in, err)
		}
	}
}

func TestParsePath_Errors(t *testing.T) {
	tests := []struct {
		in     string
		offset int
		msg    string
	}{
		{"", 0, "empty path"},
		{"spec..x", 5, "expected a key, found '.'"},
		{"spec.", 5, "expected a key after '.'"},
		{".spec", 0, "expected a key, found '.'"},
		{"spec.rules[*.x", 12, "expected ']'"},
		{"spec.rules[", 10, "unclosed '['"},
		{"spec.rules[-1]", 11, "negative indexes are not supported"},
		{"spec.rules[x]", 11, "expected an index, '*' or a quoted key after '['"},
		{`a["unterminated]`, 2, "unterminated quoted key"},
		{`a[""]`, 2, "empty quoted key"},
		{"a[0]b", 4, "expected '.' or '[', found 'b'"},
		{"spec.a b", 6, "expected '.' or '[', found ' '"},
		{"spec. a", 5, "unexpected ' '"},
	}
	for _, tt := range tests {
		_, err := ParsePath(tt.in)
		pe, ok := err.(*PathError)
		if !ok {
			t.Errorf("ParsePath(%q) = %v, want a *PathError", tt.in, err)
			continue
		}
		if pe.Offset != tt.offset || pe.Msg != tt.msg {
			t.Errorf("ParsePath(%q) = offset %d %q, want offset %d %q", tt.in, pe.Offset, pe.Msg, tt.offset, tt.msg)
		}
	}
}

func TestConcretePathString(t *testing.T) {
	got := ConcretePathString([]any{"metadata", "annotations", "kubernetes.io/ingress.class", "x", 3, `q"\`})
	want := `metadata.annotations["kubernetes.io/ingress.class"].x[3]["q\"\\"]`
	if got != want {
		t.Errorf("got %s, want %s", got, want)
	}
}

func TestLoad_SeedExampleVerbatim(t *testing.T) {
	rs, err := Load("../testdata/examples/seed/mvp-rules.yaml")
	if err != nil {
		t.Fatal(err)
	}
	refs := rs.MigrationRules()
	if len(refs) != 2 || len(rs.RoutingRules()) != 2 {
		t.Fatalf("got %d migration and %d routing rules, want 2 and 2", len(refs), len(rs.RoutingRules()))
	}
	if got := refs[0].Rule.ID(); got != "customresources.myapps.example.com/v1alpha1->v1beta1" {
		t.Errorf("ID = %q", got)
	}
	if _, err := Compile(rs, CompileOptions{}); err != nil {
		t.Fatal(err)
	}
}

func TestParse_AliasesAreBounded(t *testing.T) {
	recursive := "apiVersion: mvp.k8s.io/v1\nkind: TransformationRules\nmetadata: {name: x}\nspec:\n  apiMigrationRules:\n  - &r {apiGroup: a, resource: b, fromVersion: v1, toVersion: v2, transformations: [{path: a, action: set, value: *r}]}\n"
	bomb := "a: &a [x,x,x,x,x,x,x,x,x]\nb: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a]\nc: &c [*b,*b,*b,*b,*b,*b,*b,*b,*b]\nd: &d [*c,*c,*c,*c,*c,*c,*c,*c,*c]\ne: &e [*d,*d,*d,*d,*d,*d,*d,*d,*d]\nspec: {apiMigrationRules: [{transformations: [{value: *e}]}]}\n"
	for name, in := range map[string]string{"recursive YAML alias": recursive, "document too large": bomb} {
		_, err := ParseAll(Source{Name: "r.yaml", Data: []byte(in)})
		if err == nil || !strings.Contains(err.Error(), name) {
			t.Errorf("%s: got %v", name, err)
		}
	}
}

// TestLoad_ConfigMapVolume: a ConfigMap mounted as a volume holds its files
// in a ..<timestamp> directory, with ..data and the file names as symlinks;
// each rules file must load once.
func TestLoad_ConfigMapVolume(t *testing.T) {
	dir := t.TempDir()
	data, err := os.ReadFile("../testdata/examples/seed/mvp-rules.yaml")
	if err != nil {
		t.Fatal(err)
	}
	ts := filepath.Join(dir, "..2026_11_29_10_00_00.123")
	if err := os.Mkdir(ts, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(ts, "rules.yaml"), data, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Base(ts), filepath.Join(dir, "..data")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join("..data", "rules.yaml"), filepath.Join(dir, "rules.yaml")); err != nil {
		t.Fatal(err)
	}
	rs, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(rs.Documents) != 1 {
		t.Errorf("loaded %d documents, want 1", len(rs.Documents))
	}
}
