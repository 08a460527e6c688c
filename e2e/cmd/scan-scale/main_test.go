package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/mvpctl/mvpctl/e2e/corpus"
)

// The tree has n files in charts of 100, every fifth an old version's
// manifest in turn, and the walker reads them all.
func TestWriteTreeAndWalk(t *testing.T) {
	ing := schema.GroupVersionKind{Group: "extensions", Version: "v1beta1", Kind: "Ingress"}
	pdb := schema.GroupVersionKind{Group: "policy", Version: "v1beta1", Kind: "PodDisruptionBudget"}
	c := &corpus.Corpus{Versions: []*corpus.OldVersion{
		{GroupVersionKind: ing, Manifests: []corpus.Manifest{{JSON: []byte(`{"apiVersion": "extensions/v1beta1", "kind": "Ingress"}`)}}},
		{GroupVersionKind: pdb, Manifests: []corpus.Manifest{{JSON: []byte(`{"apiVersion": "policy/v1beta1", "kind": "PodDisruptionBudget"}`)}}},
	}}
	root := t.TempDir()
	tr, err := writeTree(root, 250, c)
	if err != nil {
		t.Fatal(err)
	}
	if tr.files != 250 || tr.old[ing] != 25 || tr.old[pdb] != 25 {
		t.Errorf("tree = %+v, want 250 files, 25 of each old version", tr)
	}
	charts, err := os.ReadDir(root)
	if err != nil || len(charts) != 3 {
		t.Errorf("%d charts (%v), want 3", len(charts), err)
	}
	body, err := os.ReadFile(filepath.Join(root, "chart000", "templates", "part0", "m000004.yaml"))
	if err != nil || !strings.Contains(string(body), "kind: Ingress") {
		t.Errorf("m000004.yaml = %q, %v; want the first old manifest", body, err)
	}
	n, err := walk(root)
	if err != nil || n != 250 {
		t.Errorf("walk read %d files (%v), want 250", n, err)
	}
}

func TestStatus(t *testing.T) {
	v := &corpus.OldVersion{DeprecatedIn: "v1.35", RemovedIn: "v1.38"}
	for release, want := range map[string]string{"v1.34": "", "v1.35": "deprecated", "v1.37": "deprecated", "v1.38": "removed", "v1.40": "removed"} {
		if got := status(v, release); got != want {
			t.Errorf("status in %s = %q, want %q", release, got, want)
		}
	}
	if got := status(&corpus.OldVersion{}, "v1.37"); got != "" {
		t.Errorf("status of a version never deprecated = %q", got)
	}
}
