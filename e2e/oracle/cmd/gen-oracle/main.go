// Command gen-oracle regenerates testdata/oracle from the committed inputs
// with Kubernetes' own conversion code.
//
//	go run ./cmd/gen-oracle            # from e2e/oracle: rewrite out/, served/, ROUNDTRIP.md
//	go run ./cmd/gen-oracle -check     # exit 1 if anything committed differs
//	go run ./cmd/gen-oracle -import-fuzzed   # (re)copy in/fuzzed.* from k8s.io/api testdata/HEAD
//
// -check also verifies that in/fuzzed.*.json still equal the round-trip
// fixtures (k8s.io/api, k8s.io/apiextensions-apiserver) of the version in go.mod.
package main

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/mvpctl/mvpctl/e2e/oracle"
)

func main() {
	dir := flag.String("dir", "../../testdata/oracle", "the testdata/oracle directory")
	check := flag.Bool("check", false, "do not write; exit 1 if a committed file differs from what would be generated")
	importFuzzed := flag.Bool("import-fuzzed", false, "copy in/fuzzed.<version>.json from the round-trip fixtures (testdata/HEAD) of k8s.io/api or the pair's module before generating")
	flag.Parse()
	if err := run(*dir, *check, *importFuzzed); err != nil {
		fmt.Fprintln(os.Stderr, "gen-oracle:", err)
		os.Exit(1)
	}
}

func run(dir string, check, importFuzzed bool) error {
	start := time.Now()
	fuzzed, err := fuzzedInputs(dir)
	if err != nil {
		return err
	}
	var problems []string
	for rel, want := range fuzzed {
		have, err := os.ReadFile(filepath.Join(dir, rel))
		if err == nil && bytes.Equal(have, want) {
			continue
		}
		if importFuzzed && !check {
			if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, rel)), 0o755); err != nil {
				return err
			}
			if err := os.WriteFile(filepath.Join(dir, rel), want, 0o644); err != nil {
				return err
			}
			fmt.Println("imported", rel)
			continue
		}
		problems = append(problems, "fuzzed input differs from its module's testdata/HEAD (run with -import-fuzzed): "+rel)
	}

	files, err := oracle.Generate(dir)
	if err != nil {
		return err
	}
	if check {
		p, err := oracle.Diff(dir, files)
		if err != nil {
			return err
		}
		problems = append(problems, p...)
		for _, p := range problems {
			fmt.Fprintln(os.Stderr, p)
		}
		if len(problems) > 0 {
			return fmt.Errorf("%d problem(s); regenerate with `make oracle` and commit", len(problems))
		}
		fmt.Printf("gen-oracle: %d files up to date (%s)\n", len(files), time.Since(start).Round(time.Millisecond))
		return nil
	}
	for _, p := range problems {
		fmt.Fprintln(os.Stderr, "warning:", p)
	}
	changed, err := oracle.Write(dir, files)
	if err != nil {
		return err
	}
	for _, c := range changed {
		fmt.Println(c)
	}
	fmt.Printf("gen-oracle: %d files, %d changed (%s)\n", len(files), len(changed), time.Since(start).Round(time.Millisecond))
	return nil
}

// fuzzedInputs returns the expected content of every in/fuzzed.<label>.json:
// the testdata/HEAD fixture of the pair's module (k8s.io/api unless the pair
// says otherwise), re-indented with 2 spaces (json.Indent keeps every key,
// value and key order as they are).
func fuzzedInputs(dir string) (map[string][]byte, error) {
	moduleDirs := map[string]string{}
	out := map[string][]byte{}
	for _, p := range oracle.Pairs {
		mod := p.FixtureModule()
		if _, ok := moduleDirs[mod]; !ok && len(p.Fuzzed) > 0 {
			d, err := moduleDir(mod)
			if err != nil {
				return nil, err
			}
			moduleDirs[mod] = d
		}
		for label, fixture := range p.Fuzzed {
			raw, err := os.ReadFile(filepath.Join(moduleDirs[mod], oracle.FixtureDirs[mod], fixture))
			if err != nil {
				return nil, err
			}
			var buf bytes.Buffer
			if err := json.Indent(&buf, bytes.TrimSpace(raw), "", "  "); err != nil {
				return nil, fmt.Errorf("%s: %w", fixture, err)
			}
			buf.WriteByte('\n')
			out[filepath.Join(p.Name, "in", "fuzzed."+label+".json")] = buf.Bytes()
		}
	}
	return out, nil
}

// moduleDir returns the module cache directory of a module in this build.
func moduleDir(path string) (string, error) {
	cmd := exec.Command("go", "list", "-m", "-f", "{{if .Replace}}{{.Replace.Dir}}{{else}}{{.Dir}}{{end}}", path)
	cmd.Stderr = os.Stderr
	b, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("go list -m %s: %w", path, err)
	}
	d := strings.TrimSpace(string(b))
	if d == "" {
		return "", fmt.Errorf("go list -m %s: module not downloaded (run go mod download %s)", path, path)
	}
	return d, nil
}
