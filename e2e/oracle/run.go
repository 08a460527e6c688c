package oracle

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"regexp"
	"runtime/debug"
	"sort"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
)

// Main is the program of a release module (releases/v1.<minor>): it
// regenerates, or with -check compares, the pairs whose Release is the
// Kubernetes release the module was built with. newScheme returns a fresh
// scheme with that release's install packages of the pairs' groups.
//
//	go run .                  rewrite out/, served/, ROUNDTRIP.md, MANIFEST
//	go run . -check           exit 1 if anything committed differs
//	go run . -import-fuzzed   (re)copy in/fuzzed.* from the release's testdata/HEAD first
//
// -check also verifies that in/fuzzed.*.json still equal the round-trip
// fixtures of the release's k8s.io/api (or apiextensions-apiserver).
func Main(newScheme func() *runtime.Scheme) {
	dir := flag.String("dir", "../../../../testdata/oracle", "the testdata/oracle directory")
	check := flag.Bool("check", false, "do not write; exit 1 if a committed file differs from what would be generated")
	importFuzzed := flag.Bool("import-fuzzed", false, "copy in/fuzzed.<version>.json from the release's testdata/HEAD before generating")
	flag.Parse()
	if err := run(newScheme, *dir, *check, *importFuzzed); err != nil {
		fmt.Fprintln(os.Stderr, "oracle:", err)
		os.Exit(1)
	}
}

func run(newScheme func() *runtime.Scheme, dir string, check, importFuzzed bool) error {
	start := time.Now()
	b, err := ReadBuild()
	if err != nil {
		return err
	}
	pairs := PairsOf(b.Release)
	problems, err := syncFuzzed(dir, pairs, importFuzzed && !check)
	if err != nil {
		return err
	}
	unknown, err := UnknownDirs(dir)
	if err != nil {
		return err
	}
	for _, u := range unknown {
		problems = append(problems, "pair directory not in oracle.Pairs: "+u)
	}
	files, err := Generate(dir, b, NewConverter(newScheme()), pairs)
	if err != nil {
		return err
	}
	what := fmt.Sprintf("oracle %s (k8s.io/kubernetes %s): %d pairs", b.Release, b.Kubernetes, len(pairs))
	if check {
		return reportCheck(dir, pairs, files, problems, what, start)
	}
	for _, p := range problems {
		fmt.Fprintln(os.Stderr, "warning:", p)
	}
	changed, err := Write(dir, pairs, files)
	if err != nil {
		return err
	}
	for _, c := range changed {
		fmt.Println(c)
	}
	fmt.Printf("%s, %d files, %d changed (%s)\n", what, len(files), len(changed), time.Since(start).Round(time.Millisecond))
	return nil
}

func reportCheck(dir string, pairs []Pair, files map[string][]byte, problems []string, what string, start time.Time) error {
	p, err := Diff(dir, pairs, files)
	if err != nil {
		return err
	}
	problems = append(problems, p...)
	for _, p := range problems {
		fmt.Fprintln(os.Stderr, p)
	}
	if len(problems) > 0 {
		return fmt.Errorf("%s: %d problem(s); regenerate with `make oracle` and commit", what, len(problems))
	}
	fmt.Printf("%s, %d files up to date (%s)\n", what, len(files), time.Since(start).Round(time.Millisecond))
	return nil
}

// Build is the Kubernetes release a release module was built with, as its
// go.mod pinned it.
type Build struct {
	Release    string // minor release, "v1.21"
	Kubernetes string // k8s.io/kubernetes, "v1.21.14"
	API        string // k8s.io/api after its replace, "v0.21.14"
}

var kubeVersion = regexp.MustCompile(`^v1\.([0-9]+)\.[0-9]+$`)

// ReadBuild reads the Kubernetes release from the binary's module
// information, and checks that k8s.io/api is the same release (a missing
// replace of a staging module would mix releases).
func ReadBuild() (Build, error) {
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return Build{}, errors.New("no module information in the binary (build it with go build or go run)")
	}
	versions := map[string]string{}
	for _, d := range info.Deps {
		if d.Replace != nil {
			versions[d.Path] = d.Replace.Version
		} else {
			versions[d.Path] = d.Version
		}
	}
	b := Build{Kubernetes: versions["k8s.io/kubernetes"], API: versions["k8s.io/api"]}
	m := kubeVersion.FindStringSubmatch(b.Kubernetes)
	if m == nil {
		return Build{}, fmt.Errorf("k8s.io/kubernetes %q is not a release v1.<minor>.<patch>", b.Kubernetes)
	}
	b.Release = "v1." + m[1]
	if !strings.HasPrefix(b.API, "v0."+m[1]+".") {
		return Build{}, fmt.Errorf("k8s.io/api %s is not the release of k8s.io/kubernetes %s (replace it in go.mod)", b.API, b.Kubernetes)
	}
	return b, nil
}

// fixtureSource returns the module and directory that hold a round-trip
// fixture: k8s.io/api's testdata/HEAD, or apiextensions-apiserver's for CRDs.
func fixtureSource(file string) (module, dir string) {
	if strings.HasPrefix(file, "apiextensions.k8s.io.") {
		return "k8s.io/apiextensions-apiserver", "pkg/apis/testdata/HEAD"
	}
	return "k8s.io/api", "testdata/HEAD"
}

// syncFuzzed compares every in/fuzzed.<label>.json of pairs with the
// release's fixture, re-indented with 2 spaces (json.Indent keeps every key,
// value and key order as they are). With write it copies what differs and
// reports nothing; otherwise it returns one problem per file that differs.
func syncFuzzed(oracleDir string, pairs []Pair, write bool) ([]string, error) {
	var problems []string
	for _, p := range pairs {
		for _, label := range sortedLabels(p.Fuzzed) {
			want, err := fixture(p.Fuzzed[label])
			if err != nil {
				return nil, fmt.Errorf("%s: %w", p.Name, err)
			}
			rel := path.Join(p.Name, "in", "fuzzed."+label+".json")
			file := filepath.Join(oracleDir, rel)
			if have, err := os.ReadFile(file); err == nil && bytes.Equal(have, want) {
				continue
			}
			if !write {
				problems = append(problems, "fuzzed input differs from the release's testdata/HEAD (run with -import-fuzzed): "+rel)
				continue
			}
			if err := os.MkdirAll(filepath.Dir(file), 0o755); err != nil {
				return nil, err
			}
			if err := os.WriteFile(file, want, 0o644); err != nil {
				return nil, err
			}
			fmt.Println("imported", rel)
		}
	}
	return problems, nil
}

func fixture(file string) ([]byte, error) {
	module, sub := fixtureSource(file)
	modDir, err := cachedModuleDir(module)
	if err != nil {
		return nil, err
	}
	raw, err := os.ReadFile(filepath.Join(modDir, sub, file))
	if err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	if err := json.Indent(&buf, bytes.TrimSpace(raw), "", "  "); err != nil {
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	buf.WriteByte('\n')
	return buf.Bytes(), nil
}

func sortedLabels(m map[string]string) []string {
	labels := make([]string, 0, len(m))
	for l := range m {
		labels = append(labels, l)
	}
	sort.Strings(labels)
	return labels
}

// moduleDirs memoizes moduleDir: each `go list -m` costs a fraction of a
// second, and every fuzzed input of every pair asks.
var moduleDirs = map[string]string{}

func cachedModuleDir(module string) (string, error) {
	if d, ok := moduleDirs[module]; ok {
		return d, nil
	}
	d, err := moduleDir(module)
	if err != nil {
		return "", err
	}
	moduleDirs[module] = d
	return d, nil
}

// moduleDir returns the module cache directory of a module in the build of
// the current directory's module (the release module).
func moduleDir(module string) (string, error) {
	cmd := exec.Command("go", "list", "-m", "-f", "{{if .Replace}}{{.Replace.Dir}}{{else}}{{.Dir}}{{end}}", module)
	cmd.Stderr = os.Stderr
	b, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("go list -m %s: %w", module, err)
	}
	d := strings.TrimSpace(string(b))
	if d == "" {
		return "", fmt.Errorf("go list -m %s: module not downloaded (run go mod download %s)", module, module)
	}
	return d, nil
}
