package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/itchyny/gojq"

	"github.com/mvpctl/mvpctl/engine"
)

const (
	seedRules = "../../../testdata/examples/seed/mvp-rules.yaml"
	seedCR    = "../../../testdata/examples/seed/customresource-v1alpha1.yaml"
)

// run executes mvpctl in-process.
func run(t *testing.T, stdin string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errOut bytes.Buffer
	code = runWithIn(append([]string{"mvpctl"}, args...), strings.NewReader(stdin), &out, &errOut)
	if strings.Contains(errOut.String(), "goroutine ") || strings.Contains(errOut.String(), "panic:") {
		t.Errorf("stderr has a Go stack trace:\n%s", errOut.String())
	}
	return code, out.String(), errOut.String()
}

func writeFile(t *testing.T, name, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestConvert_SeedBothWays(t *testing.T) {
	code, out, errOut := run(t, "", "convert", "-f", seedCR, "--rules", seedRules, "--output-version", "myapps.example.com/v1beta1")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	if !strings.Contains(out, "requestTimeoutSeconds: 30") || !strings.Contains(out, "stateManagement: stateless") || !strings.Contains(out, "generation: 9223372036854775807") {
		t.Errorf("unexpected forward output:\n%s", out)
	}
	code, back, errOut := run(t, out, "convert", "-f", "-", "--rules", seedRules, "--output-version", "myapps.example.com/v1alpha1")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	docs := readDocuments(t, seedCR)
	got, err := engine.ReadDocuments("back", strings.NewReader(back))
	if err != nil || len(got) != 1 {
		t.Fatalf("%d documents back: %v", len(got), err)
	}
	if diff := cmp.Diff(docs[0].Object, got[0].Object); diff != "" {
		t.Errorf("round trip differs (-in +back):\n%s", diff)
	}
}

func TestConvert_BadRulesArePositioned(t *testing.T) {
	rules := writeFile(t, "rules.yaml", `apiVersion: mvp.k8s.io/v1
kind: TransformationRules
metadata: {name: bad}
spec:
  apiMigrationRules:
  - apiGroup: myapps.example.com
    resource: customresources
    fromVersion: v1alpha1
    toVersion: v1beta1
    transformations:
    - path: spec.config.legacyTimeout
      action: renmae
      targetPath: spec.config.timeout
`)
	code, out, errOut := run(t, "", "convert", "-f", seedCR, "--rules", rules, "--output-version", "myapps.example.com/v1beta1")
	if code != 2 {
		t.Errorf("exit %d, want 2", code)
	}
	if out != "" {
		t.Errorf("wrote output despite the error:\n%s", out)
	}
	want := `rules.yaml:12:15: spec.apiMigrationRules[0].transformations[0].action: Unsupported value: "renmae": supported values: "rename"`
	if !strings.Contains(errOut, want) {
		t.Errorf("stderr lacks %q:\n%s", want, errOut)
	}
	if !strings.Contains(errOut, "    12 |       action: renmae\n") {
		t.Errorf("stderr lacks the source line:\n%s", errOut)
	}
}

const failingRules = `apiVersion: mvp.k8s.io/v1
kind: TransformationRules
metadata: {name: strict}
spec:
  apiMigrationRules:
  - apiGroup: myapps.example.com
    resource: customresources
    fromVersion: v1alpha1
    toVersion: v1beta1
    transformations:
    - {path: spec.config.legacyTimeout, action: convertType, type: integer}
`

const twoObjects = `apiVersion: myapps.example.com/v1alpha1
kind: CustomResource
metadata: {name: good}
spec: {config: {legacyTimeout: "30"}}
---
apiVersion: myapps.example.com/v1alpha1
kind: CustomResource
metadata: {name: bad, namespace: shop}
spec: {config: {legacyTimeout: "thirty"}}
`

func TestConvert_NothingWrittenUnlessAllConverted(t *testing.T) {
	rules := writeFile(t, "rules.yaml", failingRules)
	code, out, errOut := run(t, twoObjects, "convert", "-f", "-", "--rules", rules, "--output-version", "myapps.example.com/v1beta1")
	if code != 1 {
		t.Errorf("exit %d, want 1", code)
	}
	if out != "" {
		t.Errorf("wrote output although a document failed:\n%s", out)
	}
	for _, want := range []string{
		"<stdin>:6: converting CustomResource shop/bad (myapps.example.com/v1alpha1) forward by rule customresources.myapps.example.com/v1alpha1->v1beta1: transformations[0] (convertType spec.config.legacyTimeout) at spec.config.legacyTimeout: cannot convert string \"thirty\" to integer",
		"1 of 2 documents failed to convert; nothing written",
	} {
		if !strings.Contains(errOut, want) {
			t.Errorf("stderr lacks %q:\n%s", want, errOut)
		}
	}
}

// TestConvert_LoopingRuleFails: a rule that never ends is a one-line error
// naming the object, the rule and the direction, once --program-timeout
// has passed, with both executors.
func TestConvert_LoopingRuleFails(t *testing.T) {
	rules := writeFile(t, "rules.yaml", `apiVersion: mvp.k8s.io/v1
kind: TransformationRules
metadata: {name: loop}
spec:
  apiMigrationRules:
  - apiGroup: myapps.example.com
    resource: customresources
    fromVersion: v1alpha1
    toVersion: v1beta1
    transformations:
    - {path: spec.a, action: jq, forward: 'def f: f; f', reverse: '.'}
`)
	in := "apiVersion: myapps.example.com/v1alpha1\nkind: CustomResource\nmetadata: {name: a}\nspec: {a: 1}\n"
	for _, ex := range []string{"native", "jq"} {
		code, out, errOut := run(t, in, "convert", "-f", "-", "--rules", rules, "--engine", ex, "--program-timeout", "50ms", "--output-version", "myapps.example.com/v1beta1")
		want := "error: <stdin>:1: converting CustomResource a (myapps.example.com/v1alpha1) forward by rule customresources.myapps.example.com/v1alpha1->v1beta1: the program did not finish within 50ms (a rule that loops?)\n"
		if code != 1 || out != "" || !strings.HasPrefix(errOut, want) {
			t.Errorf("--engine %s: exit %d, stdout %q, stderr:\n%s", ex, code, out, errOut)
		}
	}
	if code, _, errOut := run(t, in, "convert", "-f", "-", "--rules", rules, "--program-timeout", "0s", "--output-version", "v1"); code != 2 || !strings.Contains(errOut, "--program-timeout") {
		t.Errorf("--program-timeout 0s: exit %d, %s", code, errOut)
	}
}

// TestConvert_BadConversionDataIsAnError: mvpctl convert reports a
// malformed round-trip annotation (the proxy ignores it).
func TestConvert_BadConversionDataIsAnError(t *testing.T) {
	in := "apiVersion: myapps.example.com/v1beta1\nkind: CustomResource\nmetadata:\n  name: a\n  annotations: {mvp.k8s.io/conversion-data: garbage}\nspec: {}\n"
	code, out, errOut := run(t, in, "convert", "-f", "-", "--rules", seedRules, "--output-version", "myapps.example.com/v1alpha1")
	if code != 1 || out != "" || !strings.Contains(errOut, "error: <stdin>:1: converting CustomResource a (myapps.example.com/v1beta1) reverse by rule customresources.myapps.example.com/v1alpha1->v1beta1: annotation mvp.k8s.io/conversion-data: not a JSON object") {
		t.Errorf("exit %d, stdout %q, stderr:\n%s", code, out, errOut)
	}
}

func TestConvert_UsageErrors(t *testing.T) {
	for _, args := range [][]string{
		{"convert", "-f", seedCR, "--rules", seedRules},
		{"convert", "-f", seedCR, "--builtin=false", "--output-version", "v1"},
		{"convert", "--rules", seedRules, "--output-version", "v1"},
		{"convert", "-f", seedCR, "--rules", seedRules, "--output-version", "v1", "-o", "xml"},
		{"convert", "-f", "does-not-exist.yaml", "--rules", seedRules, "--output-version", "v1"},
		{"convert", "--no-such-flag"},
		{"no-such-command"},
	} {
		code, _, errOut := run(t, "", args...)
		if code != 2 || errOut == "" {
			t.Errorf("%v: exit %d, stderr %q; want exit 2 and a message", args, code, errOut)
		}
	}
}

// TestCompile_PrintedProgramIsWhatRuns replays the printed jq source with
// gojq and compares it with what mvpctl convert produces.
func TestCompile_PrintedProgramIsWhatRuns(t *testing.T) {
	code, src, errOut := run(t, "", "compile", "--rule", "customresources.myapps.example.com/v1alpha1->v1beta1", "--direction", "forward", seedRules)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	q, err := gojq.Parse(src)
	if err != nil {
		t.Fatalf("printed program does not parse: %v", err)
	}
	prog, err := gojq.Compile(q)
	if err != nil {
		t.Fatal(err)
	}
	docs := readDocuments(t, seedCR)
	v, _ := prog.RunWithContext(context.Background(), docs[0].Object).Next()
	if err, ok := v.(error); ok {
		t.Fatal(err)
	}
	_, converted, _ := run(t, "", "convert", "-f", seedCR, "--rules", seedRules, "--output-version", "myapps.example.com/v1beta1", "-o", "json")
	want, err := engine.DecodeObject([]byte(converted))
	if err != nil {
		t.Fatal(err)
	}
	a, _ := json.Marshal(v)
	b, _ := json.Marshal(want)
	if string(a) != string(b) {
		t.Errorf("replayed program gives\n%s\nmvpctl convert gives\n%s", a, b)
	}
}

func TestTest_ProjectCases(t *testing.T) {
	code, out, _ := run(t, "", "test", "../../../testdata/cases")
	if code != 0 || !strings.Contains(out, " passed, 0 failed") {
		t.Errorf("exit %d:\n%s", code, out)
	}
}

func TestTest_FailureShowsDiff(t *testing.T) {
	dir := t.TempDir()
	data := `# wrong expectation
-- rules.yaml --
` + failingRules + `-- in.yaml --
apiVersion: myapps.example.com/v1alpha1
kind: CustomResource
metadata: {name: x}
spec: {config: {legacyTimeout: "5"}}
-- out/forward.json --
{}
`
	if err := os.WriteFile(filepath.Join(dir, "case.txtar"), []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, _ := run(t, "", "test", dir)
	if code != 1 || !strings.Contains(out, "FAIL") || !strings.Contains(out, "(-want +got)") || !strings.Contains(out, "0 passed, 1 failed") {
		t.Errorf("exit %d:\n%s", code, out)
	}
	if code, out, _ = run(t, "", "test", "--update", dir); code != 0 || !strings.Contains(out, "updated") {
		t.Errorf("--update: exit %d:\n%s", code, out)
	}
	if code, out, _ = run(t, "", "test", dir); code != 0 {
		t.Errorf("after --update: exit %d:\n%s", code, out)
	}
}

func TestVersion(t *testing.T) {
	code, out, _ := run(t, "", "version")
	if code != 0 || !strings.HasPrefix(out, "mvpctl ") || !strings.Contains(out, "go1.") {
		t.Errorf("exit %d: %q", code, out)
	}
}

// readDocuments reads the objects of a YAML or JSON file.
func readDocuments(t *testing.T, path string) []engine.Document {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	docs, err := engine.ReadDocuments(path, bytes.NewReader(data))
	if err != nil || len(docs) == 0 {
		t.Fatalf("%s: %d documents: %v", path, len(docs), err)
	}
	return docs
}
