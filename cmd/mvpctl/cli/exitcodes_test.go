package cli

import (
	"path/filepath"
	"strings"
	"testing"
)

// garbage is binary data, such as a file given by mistake.
var garbage = string([]byte{0x7f, 'E', 'L', 'F', 2, 1, 1, 0, 0, 0, 0xff, 0xfe, 0x80, '\n', 0x81, 0x00, 0xc3})

// oneLine requires stderr to be one line: a reason, not a dump.
func oneLine(t *testing.T, what, stderr string) {
	t.Helper()
	if strings.Count(stderr, "\n") != 1 || !strings.HasSuffix(stderr, "\n") {
		t.Errorf("%s: stderr is not one line:\n%s", what, stderr)
	}
}

// Without any kubeconfig, the commands that read the cluster say so in one
// line and exit 2 (bad usage), not 1 (which rules status uses for "not
// Ready") with client-go's dial error to localhost:8080.
func TestExitCodes_NoKubeconfig(t *testing.T) {
	t.Setenv("KUBECONFIG", filepath.Join(t.TempDir(), "none"))
	t.Setenv("HOME", t.TempDir())
	t.Setenv("KUBERNETES_SERVICE_HOST", "")
	for _, args := range [][]string{
		{"rules", "get"},
		{"rules", "status"},
		{"rules", "apply", "-f", seedRules},
		{"rules", "watch", "--rules-from-cluster"},
	} {
		code, out, errOut := run(t, "", args...)
		if code != exitUsage || out != "" || !strings.Contains(errOut, "the server could not be found; is the kubeconfig set?") {
			t.Errorf("%v: exit %d, stdout %q, stderr %q", args, code, out, errOut)
		}
		oneLine(t, strings.Join(args, " "), errOut)
	}
}

// A cluster that cannot be reached is bad input too (exit 2), in one line.
func TestExitCodes_UnreachableCluster(t *testing.T) {
	kc := deadKubeconfig(t)
	for _, args := range [][]string{
		{"rules", "get", "--kubeconfig", kc},
		{"rules", "status", "--kubeconfig", kc},
	} {
		code, _, errOut := run(t, "", args...)
		if code != exitUsage || !strings.Contains(errOut, "the connection to the server 127.0.0.1:1 was refused") {
			t.Errorf("%v: exit %d, stderr %q", args, code, errOut)
		}
		oneLine(t, strings.Join(args, " "), errOut)
	}
}

// Bad or unreadable input exits 2 with a one-line reason in every command:
// a binary file is the wrong file, not a file with findings or a failed
// case.
func TestExitCodes_BadInput(t *testing.T) {
	bin := writeFile(t, "garbage.bin", garbage)
	empty := writeFile(t, "empty.yaml", "")
	notACase := writeFile(t, "notes.txtar", "just some notes\n")
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"lint", bin}, "garbage.bin: binary data, not a YAML or JSON rules file"},
		{[]string{"lint", empty}, "empty.yaml: no TransformationRules documents"},
		{[]string{"test", bin}, "garbage.bin: not a conversion case: binary data"},
		{[]string{"test", notACase}, "notes.txtar: not a conversion case: no -- rules.yaml -- section"},
		{[]string{"convert", "-f", bin, "--rules", seedRules, "--output-version", "v1"}, "garbage.bin:1: yaml: control characters are not allowed"},
		{[]string{"diff", bin, bin}, "garbage.bin"},
	} {
		code, out, errOut := run(t, "", tc.args...)
		if code != exitUsage || !strings.Contains(errOut, tc.want) || strings.Contains(out, "(-want +got)") {
			t.Errorf("%v: exit %d, stdout %q, stderr %q; want exit 2 and %q", tc.args, code, out, errOut, tc.want)
		}
		oneLine(t, strings.Join(tc.args, " "), errOut)
	}
	// update must never rewrite what is not a case.
	if code, _, _ := run(t, "", "test", "--update", bin); code != exitUsage {
		t.Errorf("test --update garbage.bin: exit %d", code)
	}
}
