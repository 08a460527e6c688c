package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// renderedChart writes what `helm template --output-dir out ./shop` writes:
// every manifest in a nested templates/ directory.
func renderedChart(t *testing.T) string {
	t.Helper()
	out := t.TempDir()
	for name, data := range map[string]string{
		"shop/templates/cronjob.yaml":           cronJobV1beta1,
		"shop/templates/web/pdb.yaml":           pdbEmptySelector,
		"shop/charts/db/templates/ingress.json": ingressJSON,
		"shop/templates/_helpers.tpl":           "{{/* not a manifest */}}\n",
	} {
		p := filepath.Join(out, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return out
}

// -R reads a rendered chart's nested templates; without it the directory
// is read one level deep, as kubectl does, and a directory that gives no
// manifest is an error that names -R instead of an empty success.
func TestConvert_Recursive(t *testing.T) {
	out := renderedChart(t)
	code, stdout, errOut := run(t, "", "convert", "-R", "-f", out, "--kubernetes-version", "v1.36", "-o", "name")
	want := "ingress.networking.k8s.io/api\ncronjob.batch/nightly\npoddisruptionbudget.policy/web\n"
	if code != 0 || stdout != want {
		t.Errorf("-R: exit %d, stdout:\n%s\nstderr:\n%s\nwant:\n%s", code, stdout, errOut, want)
	}
	code, stdout, errOut = run(t, "", "convert", "-f", out, "--kubernetes-version", "v1.36")
	if want := "mvpctl: " + out + ": no *.yaml, *.yml or *.json files (1 subdirectory not read: use -R)\n"; code != exitUsage || stdout != "" || errOut != want {
		t.Errorf("without -R: exit %d, stdout %q, stderr %q; want exit 2 and %q", code, stdout, errOut, want)
	}
	code, stdout, _ = run(t, "", "convert", "-f", filepath.Join(out, "shop", "templates"), "--kubernetes-version", "v1.36", "-o", "name")
	if code != 0 || stdout != "cronjob.batch/nightly\n" {
		t.Errorf("one level: exit %d, stdout %q", code, stdout)
	}
}

// Input without objects (an empty pipe: the command before it failed; a
// file of comments) is an error, as kubectl's "no objects passed".
func TestConvert_NoObjects(t *testing.T) {
	comments := writeFile(t, "c.yaml", "# nothing yet\n---\n")
	for _, tc := range []struct {
		stdin string
		file  string
	}{{"", "-"}, {"", comments}} {
		code, out, errOut := run(t, tc.stdin, "convert", "-f", tc.file, "--kubernetes-version", "v1.36")
		if code != exitUsage || out != "" || !strings.Contains(errOut, "no objects passed to convert") {
			t.Errorf("%s: exit %d, stdout %q, stderr %q", tc.file, code, out, errOut)
		}
	}
}

// The README's first command: the example tree, written for v1.21, comes
// out with nothing v1.36 does not serve (e2e/convert applies it to a real
// v1.36 kube-apiserver).
func TestConvert_UpgradeExample(t *testing.T) {
	const tree = "../../../testdata/examples/upgrade"
	if code, _, _ := run(t, "", "scan", "-R", "-f", tree, "--kubernetes-version", "v1.36"); code != exitFailure {
		t.Errorf("scan of the example: exit %d, want 1 (it uses removed APIs)", code)
	}
	code, out, errOut := run(t, "", "convert", "-R", "-f", tree, "--kubernetes-version", "v1.36")
	if code != 0 || errOut != "" || len(contentDocs(t, out)) != 8 {
		t.Fatalf("convert: exit %d, stderr:\n%s\noutput:\n%s", code, errOut, out)
	}
	code, scan, errOut := run(t, out, "scan", "-f", "-", "--kubernetes-version", "v1.36")
	if code != 0 || !strings.Contains(scan, "0 removed and 0 deprecated in Kubernetes v1.36, in 8 documents") {
		t.Errorf("scan of the output: exit %d\n%s%s", code, scan, errOut)
	}
}
