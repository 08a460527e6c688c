package oracle

import (
	"os"
	"path/filepath"
	"regexp"
	"testing"
)

// TestPairs checks the pair list: unique directory names, two distinct
// sides with distinct labels, fuzzed fixtures only for those labels, and a
// release module for every Release, built from that Kubernetes release.
func TestPairs(t *testing.T) {
	names := map[string]bool{}
	for _, p := range Pairs {
		if names[p.Name] {
			t.Errorf("%s: listed twice", p.Name)
		}
		names[p.Name] = true
		if p.Sides[0].Label == p.Sides[1].Label || p.Sides[0].GVK == p.Sides[1].GVK {
			t.Errorf("%s: sides %v and %v are not two versions", p.Name, p.Sides[0], p.Sides[1])
		}
		for label := range p.Fuzzed {
			if label != p.Sides[0].Label && label != p.Sides[1].Label {
				t.Errorf("%s: fuzzed fixture for %q, which is no side's label", p.Name, label)
			}
		}
		checkReleaseModule(t, p)
	}
}

func checkReleaseModule(t *testing.T, p Pair) {
	t.Helper()
	gomod, err := os.ReadFile(filepath.Join("releases", p.Release, "go.mod"))
	if err != nil {
		t.Errorf("%s: release %q has no module: %v", p.Name, p.Release, err)
		return
	}
	require := regexp.MustCompile(`(?m)^\s*k8s\.io/kubernetes (v1\.[0-9]+)\.[0-9]+$`).FindSubmatch(gomod)
	if require == nil || string(require[1]) != p.Release {
		t.Errorf("%s: releases/%s/go.mod does not require k8s.io/kubernetes %s.<patch>", p.Name, p.Release, p.Release)
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
