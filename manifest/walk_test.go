package manifest

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// tree writes files (slash paths relative to a new directory) and returns
// the directory.
func tree(t *testing.T, files ...string) string {
	t.Helper()
	root := t.TempDir()
	for _, f := range files {
		p := filepath.Join(root, filepath.FromSlash(f))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte("a: 1\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

func walkAll(t *testing.T, root string, opts WalkOptions) ([]string, int, error) {
	t.Helper()
	var got []string
	skipped, err := Walk(root, opts, func(p string, err error) error {
		if err != nil {
			t.Errorf("%s: %v", p, err)
		}
		rel, _ := filepath.Rel(root, p)
		got = append(got, filepath.ToSlash(rel))
		return nil
	})
	return got, skipped, err
}

// A Helm chart: without Recursive only its top level is read (as kubectl
// -f does) and the subdirectories are counted; with it, the nested
// templates are found, in lexical order, hidden entries left out.
func TestWalk_Chart(t *testing.T) {
	root := tree(t, "Chart.yaml", "values.yaml", "README.md", "templates/deploy.yaml", "templates/_helpers.tpl",
		"templates/web/ingress.yml", "charts/db/templates/cron.JSON", ".git/config.yaml", "templates/..data/deploy.yaml", ".hidden.yaml")
	got, skipped, err := walkAll(t, root, WalkOptions{})
	if err != nil || skipped != 2 || !cmp.Equal(got, []string{"Chart.yaml", "values.yaml"}) {
		t.Errorf("one level: %v, skipped %d, %v", got, skipped, err)
	}
	got, skipped, err = walkAll(t, root, WalkOptions{Recursive: true})
	want := []string{"Chart.yaml", "charts/db/templates/cron.JSON", "templates/deploy.yaml", "templates/web/ingress.yml", "values.yaml"}
	if err != nil || skipped != 0 || !cmp.Equal(got, want) {
		t.Errorf("recursive: %v, skipped %d, %v; want %v", got, skipped, err, want)
	}
	got, _, err = walkAll(t, filepath.Join(root, "README.md"), WalkOptions{})
	if err != nil || !cmp.Equal(got, []string{"."}) {
		t.Errorf("a file as root: %v, %v", got, err)
	}
}

// A directory that gives no file is an error that says why, naming the
// subdirectories -R would read.
func TestWalk_NoFiles(t *testing.T) {
	root := tree(t, "templates/deploy.yaml", "templates/more/x.yaml", "notes.txt")
	_, err := Walk(root, WalkOptions{}, func(string, error) error { return nil })
	var nf *NoFilesError
	if !errors.As(err, &nf) || err.Error() != "no *.yaml, *.yml or *.json files (1 subdirectory not read: use -R)" {
		t.Errorf("err = %v", err)
	}
	_, err = Walk(root, WalkOptions{Recursive: true, Match: func(n string) bool { return strings.HasSuffix(n, ".txtar") }, What: "*.txtar files"}, func(string, error) error { return nil })
	if err == nil || err.Error() != "no *.txtar files" {
		t.Errorf("err = %v", err)
	}
	if _, err := Walk(filepath.Join(root, "missing"), WalkOptions{}, nil); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("missing root: %v", err)
	}
}

// visit's error stops the walk.
func TestWalk_StopsOnVisitError(t *testing.T) {
	root := tree(t, "a.yaml", "b.yaml", "c.yaml")
	stop := errors.New("stop")
	n := 0
	_, err := Walk(root, WalkOptions{}, func(string, error) error { n++; return stop })
	if err != stop || n != 1 {
		t.Errorf("err %v after %d files", err, n)
	}
}
