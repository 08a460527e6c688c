package schemadiff_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mvpctl/mvpctl/schemadiff"
)

// fullSwagger finds the complete swagger.json of a Kubernetes release in the
// Go module cache (go mod download -json k8s.io/kubernetes@VERSION puts it
// there); the tests commit only extracts.
func fullSwagger(tb testing.TB, version string) string {
	tb.Helper()
	cache := os.Getenv("GOMODCACHE")
	if cache == "" {
		out, err := exec.Command("go", "env", "GOMODCACHE").Output()
		if err != nil {
			tb.Skipf("go env GOMODCACHE: %v", err)
		}
		cache = strings.TrimSpace(string(out))
	}
	p := filepath.Join(cache, "k8s.io", "kubernetes@"+version, "api", "openapi-spec", "swagger.json")
	if _, err := os.Stat(p); err != nil {
		tb.Skipf("%s is not in the module cache; run: go mod download -json k8s.io/kubernetes@%s", p, version)
	}
	return p
}

// generateRules is what mvpctl generate-rules does after flag parsing.
func generateRules(tb testing.TB, from, to string) *schemadiff.Draft {
	ctx := context.Background()
	old, err := schemadiff.Load(ctx, from)
	if err != nil {
		tb.Fatal(err)
	}
	nw, err := schemadiff.Load(ctx, to)
	if err != nil {
		tb.Fatal(err)
	}
	d := schemadiff.DraftRules(schemadiff.Diff(old, nw, schemadiff.Options{}), schemadiff.DraftOptions{})
	_ = d.YAML()
	return d
}

// BenchmarkGenerateRules drafts rules from two complete Kubernetes
// swagger.json files (v1.21.0 → v1.22.0, ~3.5 MB and ~560 definitions each).
func BenchmarkGenerateRules(b *testing.B) {
	from, to := fullSwagger(b, "v1.21.0"), fullSwagger(b, "v1.22.0")
	b.ReportAllocs()
	for b.Loop() {
		generateRules(b, from, to)
	}
}

// TestGenerateRules_FullSwagger checks the complete documents give what the
// extracts give for the kinds the extracts keep.
func TestGenerateRules_FullSwagger(t *testing.T) {
	if testing.Short() {
		t.Skip("reads two 3.5 MB documents")
	}
	from, to := fullSwagger(t, "v1.21.0"), fullSwagger(t, "v1.22.0")
	full := generateRules(t, from, to)
	ext := generateRules(t, filepath.Join("..", "testdata", "schemadiff", "k8s", "v1.21.0-swagger.json.gz"), filepath.Join("..", "testdata", "schemadiff", "k8s", "v1.22.0-swagger.json.gz"))
	byID := map[string]string{}
	for _, mr := range full.Rules.Spec.APIMigrationRules {
		byID[mr.ID()] = string((&schemadiff.Draft{Rules: rulesOf(mr)}).YAML())
	}
	if len(full.Rules.Spec.APIMigrationRules) < 20 {
		t.Errorf("full v1.21 → v1.22 drafted %d migration rules, want at least 20 (24 version removals)", len(full.Rules.Spec.APIMigrationRules))
	}
	for _, mr := range ext.Rules.Spec.APIMigrationRules {
		got, ok := byID[mr.ID()]
		if !ok {
			t.Errorf("%s: drafted from the extract, not from the full document", mr.ID())
			continue
		}
		if want := string((&schemadiff.Draft{Rules: rulesOf(mr)}).YAML()); got != want {
			t.Errorf("%s: the full document drafts other transformations than the extract:\n%s\nvs\n%s", mr.ID(), got, want)
		}
	}
}
