package cli

import (
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/rogpeppe/go-internal/txtar"

	"github.com/mvpctl/mvpctl/rules"
)

// checkRules requires generated rules to parse, validate and compile.
func checkRules(t *testing.T, name string, data []byte) {
	t.Helper()
	rs, err := rules.Parse(name, data)
	if err != nil {
		t.Errorf("%s: generated rules do not parse: %v", name, err)
		return
	}
	if errs := rs.Validate(); len(errs) > 0 {
		t.Errorf("%s: generated rules are invalid: %v", name, errs)
		return
	}
	if _, err := rules.Compile(rs, rules.CompileOptions{}); err != nil {
		t.Errorf("%s: generated rules do not compile: %v", name, err)
	}
}

// TestSchemadiffCLI runs the cases of testdata/schemadiff/cli/*.txtar: the
// "args" section is one command line (mvpctl omitted), with $TESTDATA for
// testdata/schemadiff and $TMP for a scratch directory; out/stdout,
// out/stderr and out/exit are what it must print and return, and any other
// out/NAME is the file $TMP/NAME it must write. -update-schemadiff rewrites
// the out/ sections.
func TestSchemadiffCLI(t *testing.T) {
	testdata, err := filepath.Abs(filepath.Join("..", "..", "..", "testdata", "schemadiff"))
	if err != nil {
		t.Fatal(err)
	}
	files, _ := filepath.Glob(filepath.Join(testdata, "cli", "*.txtar"))
	if len(files) == 0 {
		t.Fatal("no cases in testdata/schemadiff/cli")
	}
	for _, file := range files {
		t.Run(strings.TrimSuffix(filepath.Base(file), ".txtar"), func(t *testing.T) {
			ar, err := txtar.ParseFile(file)
			if err != nil {
				t.Fatal(err)
			}
			tmp := t.TempDir()
			expand := func(s string) string {
				return strings.NewReplacer("$TESTDATA", testdata, "$TMP", tmp).Replace(s)
			}
			unexpand := func(s string) string {
				return strings.NewReplacer(testdata, "$TESTDATA", tmp, "$TMP").Replace(s)
			}
			var args []string
			for _, f := range ar.Files {
				if f.Name == "args" {
					args = strings.Fields(expand(string(f.Data)))
				}
			}
			if len(args) == 0 {
				t.Fatal("no args section")
			}
			var stdout, stderr bytes.Buffer
			code := Run(append([]string{"mvpctl"}, args...), &stdout, &stderr)
			got := map[string]string{
				"out/stdout": unexpand(stdout.String()),
				"out/stderr": unexpand(stderr.String()),
				"out/exit":   strconv.Itoa(code) + "\n",
			}
			changed := false
			for i, f := range ar.Files {
				if !strings.HasPrefix(f.Name, "out/") {
					continue
				}
				g, ok := got[f.Name]
				if !ok {
					b, err := os.ReadFile(filepath.Join(tmp, strings.TrimPrefix(f.Name, "out/")))
					if err != nil {
						t.Errorf("%s: %v", f.Name, err)
						continue
					}
					g = unexpand(string(b))
				}
				if strings.HasPrefix(g, "# Drafted by mvpctl generate-rules") && strings.Contains(g, "\napiVersion: ") {
					checkRules(t, f.Name, []byte(g))
				}
				if diff := cmp.Diff(string(f.Data), g); diff != "" {
					if *updateSchemadiff {
						ar.Files[i].Data, changed = []byte(g), true
						continue
					}
					t.Errorf("%s (-want +got):\n%s", f.Name, diff)
				}
			}
			if changed {
				if err := os.WriteFile(file, txtar.Format(ar), 0o666); err != nil {
					t.Fatal(err)
				}
			}
		})
	}
}
