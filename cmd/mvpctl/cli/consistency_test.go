package cli

import (
	"encoding/json"
	"strings"
	"testing"
)

const seedPDB = "../../../testdata/examples/seed/pdb-v1beta1.yaml"

// -o of convert takes kubectl's formats: name and templates besides yaml
// and json, with exact numbers.
func TestConvert_OutputFormats(t *testing.T) {
	args := []string{"convert", "-f", seedCR, "--rules", seedRules, "--output-version", "myapps.example.com/v1beta1"}
	for _, tc := range []struct {
		extra []string
		want  string
	}{
		{[]string{"-o", "name"}, "customresource.myapps.example.com/checkout\n"},
		{[]string{"-o", "jsonpath={.metadata.generation}"}, "9223372036854775807"},
		{[]string{"-o", "go-template={{.apiVersion}}"}, "myapps.example.com/v1beta1"},
		// Several objects are one v1 List, as kubectl convert prints them.
		{[]string{"-f", seedPDB, "-o", "jsonpath={.items[*].metadata.name}"}, "checkout web"},
	} {
		code, out, errOut := run(t, "", append(append([]string{}, args...), tc.extra...)...)
		if code != 0 || out != tc.want {
			t.Errorf("%v: exit %d, stdout %q, stderr %q; want %q", tc.extra, code, out, errOut, tc.want)
		}
	}
	for _, bad := range []string{"xml", "jsonpath={.metadata"} {
		code, out, errOut := run(t, "", append(args, "-o", bad)...)
		if code != exitUsage || out != "" {
			t.Errorf("-o %s: exit %d, stdout %q", bad, code, out)
		}
		oneLine(t, "-o "+bad, errOut)
	}
}

// Rules files are --rules in every command that reads them, and the
// arguments where rules are the command's subject.
func TestRulesFlag_EveryCommand(t *testing.T) {
	_, byArg, _ := run(t, "", "compile", seedRules)
	code, byFlag, errOut := run(t, "", "compile", "--rules", seedRules)
	if code != 0 || byFlag == "" || byFlag != byArg {
		t.Errorf("compile --rules: exit %d, stderr %q; output differs from compile RULES", code, errOut)
	}
	if code, out, _ := run(t, "", "lint", "--rules", seedRules); code != 0 || !strings.Contains(out, "0 errors") {
		t.Errorf("lint --rules: exit %d:\n%s", code, out)
	}
	if code, out, _ := run(t, "", "rules", "apply", "--kubeconfig", deadKubeconfig(t), "--rules", seedRules, "--dry-run=client"); code != 0 || !strings.Contains(out, "(dry run)") {
		t.Errorf("rules apply --rules: exit %d:\n%s", code, out)
	}
	for _, cmd := range []string{"lint", "compile"} {
		code, _, errOut := run(t, "", cmd)
		if code != exitUsage || !strings.Contains(errOut, "give TransformationRules files or directories") || !strings.Contains(errOut, "--rules") {
			t.Errorf("%s without rules: exit %d, stderr %q; want it to say what it needs", cmd, code, errOut)
		}
	}
}

func TestCompile_UnknownRuleListsIDs(t *testing.T) {
	code, _, errOut := run(t, "", "compile", "--rule", "nope", seedRules)
	want := `--rule "nope": no rule has this ID; the rules are: customresources.myapps.example.com/v1alpha1->v1beta1, poddisruptionbudgets.policy/v1beta1->v1`
	if code != exitUsage || !strings.Contains(errOut, want) {
		t.Errorf("exit %d, stderr %q", code, errOut)
	}
}

// The printed programs replay exactly only with jq 1.7+ or gojq: jq 1.6
// rounds integers beyond 2^53.
func TestCompile_HelpNamesTheJQThatReplays(t *testing.T) {
	_, out, _ := run(t, "", "compile", "--help")
	if !strings.Contains(out, "jq 1.7 or later, or gojq") || !strings.Contains(out, "jq 1.6") {
		t.Errorf("compile --help:\n%s", out)
	}
}

func TestVersion_FlagAndFormats(t *testing.T) {
	_, line, _ := run(t, "", "version")
	if code, out, _ := run(t, "", "--version"); code != 0 || out != line {
		t.Errorf("--version: exit %d, %q; want %q as mvpctl version prints", code, out, line)
	}
	code, out, _ := run(t, "", "version", "-o", "json")
	var v versionInfo
	if err := json.Unmarshal([]byte(out), &v); code != 0 || err != nil || v.Version == "" || !strings.HasPrefix(v.GoVersion, "go1.") || v.Platform == "" {
		t.Errorf("version -o json: exit %d, %v:\n%s", code, err, out)
	}
	if code, out, _ := run(t, "", "version", "-o", "yaml"); code != 0 || !strings.Contains(out, "goVersion: go1.") {
		t.Errorf("version -o yaml: exit %d:\n%s", code, out)
	}
	if code, _, _ := run(t, "", "version", "-o", "xml"); code != exitUsage {
		t.Errorf("version -o xml: exit %d", code)
	}
}

// Flag values complete: formats, the versions the given rules lead to,
// rule IDs, dry-run modes.
func TestCompletion_FlagValues(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want []string
	}{
		{[]string{"convert", "-o", ""}, []string{"yaml", "json", "name", "jsonpath="}},
		{[]string{"convert", "--rules", seedRules, "--output-version", ""}, []string{"myapps.example.com/v1alpha1", "myapps.example.com/v1beta1", "policy/v1beta1", "policy/v1"}},
		{[]string{"compile", seedRules, "--rule", ""}, []string{"customresources.myapps.example.com/v1alpha1->v1beta1", "poddisruptionbudgets.policy/v1beta1->v1"}},
		{[]string{"compile", "--rules", seedRules, "--rule", ""}, []string{"poddisruptionbudgets.policy/v1beta1->v1"}},
		{[]string{"rules", "apply", "--dry-run", ""}, []string{"none", "client", "server"}},
		{[]string{"lint", "-o", ""}, []string{"text", "json", "github", "sarif"}},
		{[]string{"diff", "--fail-on", ""}, []string{"removed", "changed"}},
		{[]string{"version", "-o", ""}, []string{"json", "yaml"}},
	} {
		code, out, errOut := run(t, "", append([]string{"__complete"}, tc.args...)...)
		lines := strings.Split(out, "\n")
		for _, w := range tc.want {
			found := false
			for _, l := range lines {
				found = found || strings.SplitN(l, "\t", 2)[0] == w
			}
			if code != 0 || !found {
				t.Errorf("__complete %v: exit %d, stderr %q, %q not offered:\n%s", tc.args, code, errOut, w, out)
			}
		}
	}
}

// diff --fail-on exits 1 when the dumps differ as asked, like oasdiff
// breaking --fail-on, and still prints the report.
func TestDiff_FailOn(t *testing.T) {
	const (
		v121 = "../../../testdata/schemadiff/k8s/v1.21.0-swagger.json.gz"
		v122 = "../../../testdata/schemadiff/k8s/v1.22.0-swagger.json.gz"
	)
	code, out, errOut := run(t, "", "diff", v121, v122, "--group", "networking.k8s.io", "--fail-on", "removed")
	if code != exitFailure || !strings.Contains(out, "networking.k8s.io/v1beta1") || !strings.Contains(errOut, "--fail-on removed:") {
		t.Errorf("v1.21 -> v1.22 --fail-on removed: exit %d, stderr %q, stdout:\n%s", code, errOut, out)
	}
	for _, failOn := range []string{"removed", "changed"} {
		if code, _, errOut := run(t, "", "diff", v122, v122, "--fail-on", failOn); code != 0 {
			t.Errorf("same dump --fail-on %s: exit %d, %q", failOn, code, errOut)
		}
	}
	if code, _, _ := run(t, "", "diff", v121, v122, "--group", "networking.k8s.io", "--fail-on", "changed"); code != exitFailure {
		t.Errorf("v1.21 -> v1.22 --fail-on changed: exit %d", code)
	}
	if code, _, _ := run(t, "", "diff", v121, v122); code != 0 {
		t.Errorf("without --fail-on: exit %d", code)
	}
	if code, _, _ := run(t, "", "diff", v121, v122, "--fail-on", "everything"); code != exitUsage {
		t.Errorf("--fail-on everything: exit %d", code)
	}
}
