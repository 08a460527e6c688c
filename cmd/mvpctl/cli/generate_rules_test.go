package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const (
	dumpV122 = "../../../testdata/schemadiff/k8s/v1.22.0-swagger.json.gz"
	dumpV125 = "../../../testdata/schemadiff/k8s/v1.25.0-swagger.json.gz"
)

// -o is a format, as everywhere: `-o yaml` prints the rules and writes no
// file named yaml; --output-file writes one.
func TestGenerateRules_OutputIsAFormat(t *testing.T) {
	old, err := filepath.Abs(dumpV122)
	if err != nil {
		t.Fatal(err)
	}
	t.Chdir(t.TempDir())
	code, out, errOut := run(t, "", "generate-rules", old, old, "-o", "yaml")
	if code != 0 || !strings.HasPrefix(out, "# Drafted by mvpctl generate-rules") {
		t.Errorf("-o yaml: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	if _, err := os.Stat("yaml"); err == nil {
		t.Errorf("-o yaml wrote a file named yaml")
	}
	code, out, _ = run(t, "", "generate-rules", "--from", old, "--to", old, "--output-file", "rules.yaml")
	data, err := os.ReadFile("rules.yaml")
	if code != 0 || out != "" || err != nil || !strings.HasPrefix(string(data), "# Drafted by mvpctl generate-rules") {
		t.Errorf("--output-file: exit %d, stdout %q, file %q (%v)", code, out, data, err)
	}
	code, _, errOut = run(t, "", "generate-rules", old, old, "-o", "rules.yaml")
	if code != exitUsage || !strings.Contains(errOut, "--output-file") {
		t.Errorf("-o FILE: exit %d, stderr %q; want exit 2 pointing at --output-file", code, errOut)
	}
}

// OLD and NEW are arguments, as for diff; --from and --to remain.
func TestGenerateRules_PositionalDumps(t *testing.T) {
	code, byArgs, errOut := run(t, "", "generate-rules", "--group", "policy", dumpV122, dumpV125)
	if code != 0 || !strings.Contains(byArgs, "poddisruptionbudgets") {
		t.Fatalf("OLD NEW: exit %d, stderr %q, stdout:\n%s", code, errOut, byArgs)
	}
	_, byFlags, _ := run(t, "", "generate-rules", "--group", "policy", "--from", dumpV122, "--to", dumpV125)
	if byArgs != byFlags {
		t.Errorf("OLD NEW and --from OLD --to NEW differ:\n%s\n%s", byArgs, byFlags)
	}
	for _, args := range [][]string{
		{"generate-rules", dumpV122},
		{"generate-rules", "--from", dumpV122, dumpV122, dumpV125},
		{"generate-rules"},
	} {
		if code, _, errOut := run(t, "", args...); code != exitUsage || !strings.Contains(errOut, "OLD NEW") {
			t.Errorf("%v: exit %d, stderr %q", args, code, errOut)
		}
	}
}
