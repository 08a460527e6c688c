package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const lintBadJQ = `apiVersion: mvp.k8s.io/v1
kind: TransformationRules
metadata: {name: bad}
spec:
  apiMigrationRules:
  - apiGroup: example.com
    resource: widgets
    fromVersion: v1alpha1
    toVersion: v1
    transformations:
    - {path: spec.size, action: jq, forward: '. * 2 +', reverse: '. / 2'}
`

const lintTODO = `apiVersion: mvp.k8s.io/v1
kind: TransformationRules
metadata: {name: todo}
spec:
  apiMigrationRules:
  - apiGroup: example.com
    resource: widgets
    fromVersion: v1alpha1
    toVersion: v1
    transformations:
    # TODO: decide the new field's default
    - {path: spec.a, action: rename, targetPath: spec.b}
`

func TestLint_ExitCodes(t *testing.T) {
	bad := writeFile(t, "bad.yaml", lintBadJQ)
	todo := writeFile(t, "todo.yaml", lintTODO)
	for _, tc := range []struct {
		name string
		args []string
		code int
		out  string
	}{
		{"clean seed rules", []string{"lint", seedRules}, 0, "0 errors, 0 warnings, 3 infos"},
		{"error finding", []string{"lint", bad}, 1, "error jq-syntax"},
		{"warning below the threshold", []string{"lint", todo}, 0, "warning todo"},
		{"warning at the threshold", []string{"lint", "--fail-on", "warning", todo}, 1, "warning todo"},
		{"disabled", []string{"lint", "--fail-on", "warning", "--disable", "todo", todo}, 0, ""},
		{"missing file", []string{"lint", "no-such-file.yaml"}, 2, ""},
		{"bad format", []string{"lint", "-o", "xml", seedRules}, 2, ""},
		{"bad threshold", []string{"lint", "--fail-on", "info", seedRules}, 2, ""},
		{"unknown check", []string{"lint", "--disable", "nope", seedRules}, 2, ""},
		{"missing schema", []string{"lint", "--from-schema", "no-such-dump.json", seedRules}, 2, ""},
		{"no arguments", []string{"lint"}, 2, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, out, errOut := run(t, "", tc.args...)
			if code != tc.code {
				t.Fatalf("exit %d, want %d\nstdout:\n%s\nstderr:\n%s", code, tc.code, out, errOut)
			}
			if !strings.Contains(out, tc.out) {
				t.Errorf("stdout lacks %q:\n%s", tc.out, out)
			}
		})
	}
}

func TestLint_Stdin(t *testing.T) {
	code, out, _ := run(t, lintBadJQ, "lint", "-")
	if code != 1 || !strings.HasPrefix(out, "<stdin>:11:") {
		t.Errorf("exit %d, output:\n%s", code, out)
	}
}

func TestLint_JSON(t *testing.T) {
	bad := writeFile(t, "bad.yaml", lintBadJQ)
	code, out, _ := run(t, "", "lint", "-o", "json", bad)
	if code != 1 {
		t.Fatalf("exit %d", code)
	}
	var res struct {
		Findings []struct {
			ID, Severity, Category, File, Field, Rule, Message string
			Line, Column                                       int
		}
		Summary map[string]int
	}
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if len(res.Findings) != 1 || res.Summary["error"] != 1 {
		t.Fatalf("findings: %+v", res)
	}
	f := res.Findings[0]
	if f.ID != "jq-syntax" || f.Severity != "error" || f.Category != "compile" || f.Line != 11 || f.Column != 54 || f.Field != "spec.apiMigrationRules[0].transformations[0].forward" {
		t.Errorf("finding: %+v", f)
	}
}

func TestLint_GitHub(t *testing.T) {
	bad := writeFile(t, "bad, 1.yaml", lintBadJQ)
	_, out, _ := run(t, "", "lint", "-o", "github", bad)
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 1 {
		t.Fatalf("want one annotation:\n%s", out)
	}
	l := lines[0]
	if !strings.HasPrefix(l, "::error file=") || !strings.Contains(l, "bad%2C 1.yaml,line=11,col=54,title=jq-syntax::") || !strings.Contains(l, "unexpected EOF") {
		t.Errorf("annotation: %s", l)
	}
}

// TestLint_SARIF checks the output against the properties SARIF 2.1.0
// requires (the OASIS schema, sarif-schema-2.1.0.json, is not available
// offline here, so the required fields are checked one by one): a log has
// version "2.1.0" and runs; a run has tool.driver with a name; a result has
// a message with text; rule IDs and indexes point into driver.rules;
// regions have 1-based lines and columns; levels are the enum's values.
func TestLint_SARIF(t *testing.T) {
	bad := writeFile(t, "bad.yaml", lintBadJQ)
	todo := writeFile(t, "todo.yaml", lintTODO)
	_, out, _ := run(t, "", "lint", "-o", "sarif", bad, todo)
	var log map[string]any
	if err := json.Unmarshal([]byte(out), &log); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if log["version"] != "2.1.0" || !strings.Contains(log["$schema"].(string), "sarif") {
		t.Fatalf("version/$schema: %v %v", log["version"], log["$schema"])
	}
	runs, _ := log["runs"].([]any)
	if len(runs) != 1 {
		t.Fatalf("runs: %v", log["runs"])
	}
	runObj := runs[0].(map[string]any)
	driver := runObj["tool"].(map[string]any)["driver"].(map[string]any)
	if name, _ := driver["name"].(string); name == "" {
		t.Error("tool.driver.name is required")
	}
	rules, _ := driver["rules"].([]any)
	ids := map[string]int{}
	for i, r := range rules {
		rm := r.(map[string]any)
		id, _ := rm["id"].(string)
		if id == "" {
			t.Errorf("rules[%d] has no id", i)
		}
		ids[id] = i
		if sd, _ := rm["shortDescription"].(map[string]any); sd == nil || sd["text"] == "" {
			t.Errorf("rule %s: shortDescription.text", id)
		}
		lvl := rm["defaultConfiguration"].(map[string]any)["level"]
		if lvl != "error" && lvl != "warning" && lvl != "note" {
			t.Errorf("rule %s: level %v", id, lvl)
		}
	}
	results, _ := runObj["results"].([]any)
	if len(results) != 3 { // jq-syntax, duplicate-rule (both files convert widgets), todo
		t.Fatalf("want 3 results, got %d:\n%s", len(results), out)
	}
	for i, r := range results {
		rm := r.(map[string]any)
		id, _ := rm["ruleId"].(string)
		idx, ok := rm["ruleIndex"].(float64)
		if want, known := ids[id]; !known || !ok || int(idx) != want {
			t.Errorf("results[%d]: ruleId %q ruleIndex %v", i, id, rm["ruleIndex"])
		}
		if msg, _ := rm["message"].(map[string]any); msg == nil || msg["text"] == "" {
			t.Errorf("results[%d]: message.text is required", i)
		}
		if lvl := rm["level"]; lvl != "error" && lvl != "warning" && lvl != "note" && lvl != "none" {
			t.Errorf("results[%d]: level %v", i, lvl)
		}
		locs, _ := rm["locations"].([]any)
		if len(locs) != 1 {
			t.Fatalf("results[%d]: locations %v", i, rm["locations"])
		}
		pl := locs[0].(map[string]any)["physicalLocation"].(map[string]any)
		if uri, _ := pl["artifactLocation"].(map[string]any)["uri"].(string); uri == "" || strings.Contains(uri, `\`) {
			t.Errorf("results[%d]: uri %q", i, uri)
		}
		region := pl["region"].(map[string]any)
		if l, _ := region["startLine"].(float64); l < 1 {
			t.Errorf("results[%d]: startLine %v", i, region["startLine"])
		}
		if c, _ := region["startColumn"].(float64); c < 1 {
			t.Errorf("results[%d]: startColumn %v", i, region["startColumn"])
		}
	}
}

// TestLint_SchemasAndSamples lints real rules against real Kubernetes dumps
// with samples: the flags reach the library and the round trips run. The
// rules are the built-in Ingress rules, whose kinds both dumps have (the
// file's other kinds, such as ServiceCIDR, came after v1.22).
func TestLint_SchemasAndSamples(t *testing.T) {
	k := "../../../testdata/schemadiff/k8s/"
	code, out, errOut := run(t, "", "lint", "-o", "json", "--samples", "5", "--seed", "7",
		"--from-schema", k+"v1.21.0-swagger.json.gz", "--to-schema", k+"v1.22.0-swagger.json.gz",
		builtinDocuments(t, "../../../rules/builtin/networking.k8s.io.yaml", "resource: ingresses\n"))
	if code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, out, errOut)
	}
	var res struct {
		Samples  int
		Findings []struct{ ID, Severity string }
	}
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatal(err)
	}
	if res.Samples != 20 {
		t.Errorf("%d objects round-tripped, want 5 per rule and direction", res.Samples)
	}
	for _, f := range res.Findings {
		if f.Severity != "info" {
			t.Errorf("unexpected finding %+v", f)
		}
	}
}

// builtinDocuments writes the documents of a built-in rules file that contain
// marker to a file of their own and returns its path.
func builtinDocuments(t *testing.T, file, marker string) string {
	t.Helper()
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var docs []string
	for _, d := range strings.Split(string(data), "\n---\n") {
		if strings.Contains(d, marker) {
			docs = append(docs, d)
		}
	}
	if len(docs) == 0 {
		t.Fatalf("%s: no document contains %q", file, marker)
	}
	out := filepath.Join(t.TempDir(), filepath.Base(file))
	if err := os.WriteFile(out, []byte(strings.Join(docs, "\n---\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return out
}

// --examples reads the YAML and JSON files of a whole tree (hidden entries
// left out), as it read them before manifest.Walk; a tree without example
// objects is bad input.
func TestLint_ExamplesTree(t *testing.T) {
	dir := t.TempDir()
	cr, err := os.ReadFile(seedCR)
	if err != nil {
		t.Fatal(err)
	}
	for name, data := range map[string]string{"nested/cr.yaml": string(cr), ".hidden/broken.yaml": "{"} {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	code, out, errOut := run(t, "", "lint", "--examples", dir, seedRules)
	if code != 0 {
		t.Errorf("exit %d\n%s%s", code, out, errOut)
	}
	empty := t.TempDir()
	code, _, errOut = run(t, "", "lint", "--examples", empty, seedRules)
	if code != exitUsage || !strings.Contains(errOut, empty+": no example objects") {
		t.Errorf("empty tree: exit %d, stderr %q", code, errOut)
	}
}
