package rules_test

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/mvpctl/mvpctl/rules"
)

// A ConfigMap volume: the files behind symlinks into a hidden ..data
// directory, which DataFiles and DataDirs leave out.
func TestDataFilesAndDirs_SkipHiddenEntries(t *testing.T) {
	dir := t.TempDir()
	for _, d := range []string{"..2026_01_01", "sub", "empty", ".git"} {
		if err := os.Mkdir(filepath.Join(dir, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, f := range []string{"..2026_01_01/a.yaml", "sub/b.yml", "c.JSON", "notes.txt", ".hidden.yaml", ".git/d.yaml"} {
		if err := os.WriteFile(filepath.Join(dir, f), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink("..2026_01_01/a.yaml", filepath.Join(dir, "a.yaml")); err != nil {
		t.Fatal(err)
	}
	files, err := rules.DataFiles(dir)
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{filepath.Join(dir, "a.yaml"), filepath.Join(dir, "c.JSON"), filepath.Join(dir, "sub", "b.yml")}; !slices.Equal(files, want) {
		t.Errorf("DataFiles = %q, want %q", files, want)
	}
	dirs, err := rules.DataDirs(dir)
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{dir, filepath.Join(dir, "empty"), filepath.Join(dir, "sub")}; !slices.Equal(dirs, want) {
		t.Errorf("DataDirs = %q, want %q", dirs, want)
	}
}
