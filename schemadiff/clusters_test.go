package schemadiff_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/mvpctl/mvpctl/schemadiff"
)

// TestLoad_ClusterDumps reads what real kube-apiservers served about
// themselves (testdata/clusters/<version>, written by make e2e-dumps): the
// /openapi/v2 document and the /openapi/v3 tree of one server must describe
// the same kinds, and rules drafted between two versions must compile.
func TestLoad_ClusterDumps(t *testing.T) {
	dirs, _ := filepath.Glob(filepath.Join("..", "testdata", "clusters", "v*"))
	var versions []string
	for _, d := range dirs {
		if _, err := os.Stat(filepath.Join(d, "openapi", "v2.json")); err == nil {
			versions = append(versions, d)
		}
	}
	if len(versions) == 0 {
		t.Skip("no dumps in testdata/clusters (make e2e-dumps writes them)")
	}
	if testing.Short() {
		t.Skip("reads four documents of 4-8 MB")
	}
	ctx := context.Background()
	v3s := map[string]*schemadiff.Spec{}
	for _, d := range versions {
		v2, err := schemadiff.Load(ctx, filepath.Join(d, "openapi", "v2.json"))
		if err != nil {
			t.Fatal(err)
		}
		v3, err := schemadiff.Load(ctx, filepath.Join(d, "openapi", "v3"))
		if err != nil {
			t.Fatal(err)
		}
		v3s[d] = v3
		for g, k := range v2.Kinds {
			k3, ok := v3.Kinds[g]
			if !ok {
				t.Errorf("%s: %s is in /openapi/v2 but not in /openapi/v3", d, g)
				continue
			}
			if k.Resource != k3.Resource {
				t.Errorf("%s: %s: resource %q in v2, %q in v3", d, g, k.Resource, k3.Resource)
			}
		}
		for g := range v3.Kinds {
			if _, ok := v2.Kinds[g]; !ok {
				t.Errorf("%s: %s is in /openapi/v3 but not in /openapi/v2", d, g)
			}
		}
		// The same server's two documents describe the same schemas.
		if r := schemadiff.Diff(v2, v3, schemadiff.Options{}); !r.Empty() {
			t.Errorf("%s: /openapi/v2 and /openapi/v3 differ: %d kinds deleted, %d added, %d migrations", d, len(r.Kinds.Deleted), len(r.Kinds.Added), len(r.Migrations))
		}
	}
	for i := 1; i < len(versions); i++ {
		old, nw := v3s[versions[i-1]], v3s[versions[i]]
		d := schemadiff.DraftRules(schemadiff.Diff(old, nw, schemadiff.Options{}), schemadiff.DraftOptions{})
		if len(d.Rules.Spec.APIMigrationRules) > 0 {
			converterFor(t, filepath.Base(versions[i-1])+"-to-"+filepath.Base(versions[i])+".yaml", d.YAML())
			converterFor(t, "with-suggestions.yaml", yamlOf(t, d.WithSuggestions()))
		}
	}
}
