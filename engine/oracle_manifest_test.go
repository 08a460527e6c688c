package engine_test

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// oracleRoot is the directory of the conversion oracle's pairs.
var oracleRoot = filepath.Join("..", "testdata", "oracle")

// oracleHandWritten are the files of a pair directory that `make oracle`
// neither reads nor writes.
var oracleHandWritten = map[string]bool{"README.md": true, "MANIFEST": true}

var manifestLine = regexp.MustCompile(`^([0-9a-f]{64})  (\S+)$`)

// oracleManifest is a parsed testdata/oracle/<pair>/MANIFEST.
type oracleManifest struct {
	release string            // Kubernetes minor release of the outputs
	sums    map[string]string // slash path in the pair directory → sha256 hex
}

// TestOracleManifest checks the oracle fixtures without building any
// Kubernetes release: every pair directory has the MANIFEST that `make
// oracle` writes, and every input and generated file is there with the
// sha256 the manifest lists. An input edited, added or removed without
// regenerating, or a hand-edited output, fails here.
func TestOracleManifest(t *testing.T) {
	entries, err := os.ReadDir(oracleRoot)
	if err != nil {
		t.Fatal(err)
	}
	pairs := 0
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		pairs++
		t.Run(e.Name(), func(t *testing.T) {
			dir := filepath.Join(oracleRoot, e.Name())
			m := readOracleManifest(t, dir)
			checkOracleManifest(t, dir, m)
		})
	}
	if pairs == 0 {
		t.Fatalf("no pair directories in %s", oracleRoot)
	}
}

func readOracleManifest(t *testing.T, dir string) oracleManifest {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(dir, "MANIFEST"))
	if err != nil {
		t.Fatalf("%v: every pair needs the MANIFEST that `make oracle` writes", err)
	}
	m := oracleManifest{sums: map[string]string{}}
	sc := bufio.NewScanner(bytes.NewReader(data))
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		if rel, ok := strings.CutPrefix(line, "# release: "); ok {
			m.release = rel
		}
		if strings.HasPrefix(line, "#") {
			continue
		}
		f := manifestLine.FindStringSubmatch(line)
		if f == nil || !filepath.IsLocal(f[2]) {
			t.Fatalf("MANIFEST:%d: want `<sha256>  <path in the pair>`, got %q", n, line)
		}
		m.sums[f[2]] = f[1]
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if !regexp.MustCompile(`^v1\.[0-9]+$`).MatchString(m.release) {
		t.Fatalf("MANIFEST: no `# release: v1.<minor>` line (got %q)", m.release)
	}
	return m
}

// checkOracleManifest compares the files of a pair directory with its
// manifest, both ways.
func checkOracleManifest(t *testing.T, dir string, m oracleManifest) {
	t.Helper()
	inputs := 0
	for rel, want := range m.sums {
		data, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(rel)))
		if err != nil {
			t.Errorf("%s: %v (listed in MANIFEST; run `make oracle`)", rel, err)
			continue
		}
		input := strings.HasPrefix(rel, "in/")
		if input {
			inputs++
		}
		if got := sha256.Sum256(data); hex.EncodeToString(got[:]) != want {
			if input {
				t.Errorf("%s changed since `make oracle` (%s) wrote MANIFEST: regenerate with `make oracle` and commit the outputs", rel, m.release)
			} else {
				t.Errorf("%s is not what `make oracle` (%s) generated: regenerate it, never edit outputs by hand", rel, m.release)
			}
		}
	}
	if inputs == 0 {
		t.Errorf("MANIFEST lists no input")
	}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil {
			return err
		}
		rel = filepath.ToSlash(rel)
		if _, ok := m.sums[rel]; !ok && !oracleHandWritten[rel] {
			t.Errorf("%s is not in MANIFEST: run `make oracle` (an input) or remove it", rel)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
