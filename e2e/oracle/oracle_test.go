package oracle

import (
	"testing"
)

// TestFixturesUpToDate fails when testdata/oracle is not what the generator
// produces from the committed inputs (the same check as gen-oracle -check,
// without the comparison of in/fuzzed.* with k8s.io/api).
func TestFixturesUpToDate(t *testing.T) {
	files, err := Generate("../../testdata/oracle")
	if err != nil {
		t.Fatal(err)
	}
	problems, err := Diff("../../testdata/oracle", files)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		t.Error(p)
	}
}

func TestJSONDiff(t *testing.T) {
	a := map[string]any{"a": 1, "b": map[string]any{"c": "x", "d": []any{}, "g": map[string]any{}}, "e": []any{1, 2}}
	b := map[string]any{"a": 1, "b": map[string]any{"c": "y"}, "e": []any{1, 3}, "f": true}
	got, err := jsonDiff(a, b)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"~b.c", "-b.g", "~e[1]", "+f"}
	if len(got) != len(want) {
		t.Fatalf("got %v", got)
	}
	for i, c := range got {
		if string(c.Op)+c.Path != want[i] {
			t.Errorf("change %d = %c%s, want %s", i, c.Op, c.Path, want[i])
		}
	}
}
