package cli

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const ingressJSON = `{
  "apiVersion": "extensions/v1beta1",
  "kind": "Ingress",
  "metadata": {"name": "api", "namespace": "shop"},
  "spec": {"backend": {"serviceName": "api", "servicePort": 8080}}
}
`

const configMapOnly = "# left alone\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: plain}\ndata: {a: \"1\"}\n"

// inPlaceTree writes a directory of manifests: the mixed bundle (mode
// 0640), a ConfigMap that needs no change and a JSON Ingress.
func inPlaceTree(t *testing.T) (dir string, bundle []byte) {
	t.Helper()
	bundle, err := os.ReadFile(mixedBundle)
	if err != nil {
		t.Fatal(err)
	}
	dir = t.TempDir()
	for name, data := range map[string]string{"bundle.yaml": string(bundle), "plain.yaml": configMapOnly, "ingress.json": ingressJSON} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Chmod(filepath.Join(dir, "bundle.yaml"), 0o640); err != nil {
		t.Fatal(err)
	}
	return dir, bundle
}

func stat(t *testing.T, path string) os.FileInfo {
	t.Helper()
	info, err := os.Lstat(path)
	if err != nil {
		t.Fatal(err)
	}
	return info
}

func readString(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// noTempFiles fails if a temporary file of a rewrite is left in dir.
func noTempFiles(t *testing.T, dir string) {
	t.Helper()
	left, err := filepath.Glob(filepath.Join(dir, ".*.tmp-*"))
	if err != nil || len(left) > 0 {
		t.Errorf("temporary files left: %v %v", left, err)
	}
}

// --in-place replaces each file with a converted document by a new file
// (renamed over it, with its mode), keeps the file's other documents byte
// for byte and in order, writes a JSON file as JSON, and leaves files
// without a converted document alone; a second run changes nothing.
func TestConvert_InPlace(t *testing.T) {
	dir, bundle := inPlaceTree(t)
	bundlePath, plainPath, jsonPath := filepath.Join(dir, "bundle.yaml"), filepath.Join(dir, "plain.yaml"), filepath.Join(dir, "ingress.json")
	before := map[string]os.FileInfo{bundlePath: stat(t, bundlePath), plainPath: stat(t, plainPath), jsonPath: stat(t, jsonPath)}

	code, out, errOut := run(t, "", "convert", "-f", dir, "--kubernetes-version", "v1.36", "--in-place")
	if code != 0 || errOut != "" {
		t.Fatalf("exit %d, stderr:\n%s", code, errOut)
	}
	if want := bundlePath + ": 3 of 4 documents converted\n" + jsonPath + ": 1 of 1 documents converted\n"; out != want {
		t.Errorf("stdout:\n%s\nwant:\n%s", out, want)
	}
	after := stat(t, bundlePath)
	if os.SameFile(before[bundlePath], after) || after.Mode().Perm() != 0o640 {
		t.Errorf("bundle.yaml: same file %v, mode %v: want a new file renamed over it, with mode 0640", os.SameFile(before[bundlePath], after), after.Mode())
	}
	in, got := contentDocs(t, string(bundle)), contentDocs(t, readString(t, bundlePath))
	if len(got) != len(in) {
		t.Fatalf("bundle.yaml has %d documents, want %d", len(got), len(in))
	}
	for i, want := range []string{"networking.k8s.io/v1", "batch/v1", "policy/v1"} {
		if !strings.Contains(string(got[i].Text), "\napiVersion: "+want+"\n") || string(got[i].Separator) != string(in[i].Separator) {
			t.Errorf("document %d not converted to %s in place:\n%s%s", i+1, want, got[i].Separator, got[i].Text)
		}
	}
	if string(got[3].Text) != string(in[3].Text) {
		t.Errorf("the ConfigMap changed:\n%s", got[3].Text)
	}
	if head := "# A bundle as teams keep them"; !strings.HasPrefix(readString(t, bundlePath), head) {
		t.Errorf("the file's leading comment is gone")
	}
	if info := stat(t, plainPath); !os.SameFile(before[plainPath], info) || !info.ModTime().Equal(before[plainPath].ModTime()) || readString(t, plainPath) != configMapOnly {
		t.Errorf("plain.yaml, which needs no change, was rewritten")
	}
	js := readString(t, jsonPath)
	if !strings.HasPrefix(js, "{\n    \"apiVersion\": \"networking.k8s.io/v1\",") {
		t.Errorf("ingress.json is not converted JSON:\n%s", js)
	}
	noTempFiles(t, dir)

	again := stat(t, bundlePath)
	code, out, errOut = run(t, "", "convert", "-f", dir, "--kubernetes-version", "v1.36", "--in-place")
	if code != 0 || out != "" || errOut != "" || !os.SameFile(again, stat(t, bundlePath)) {
		t.Errorf("second run: exit %d, stdout %q, stderr %q, rewritten %v: want nothing to do", code, out, errOut, !os.SameFile(again, stat(t, bundlePath)))
	}
}

// When a new file cannot be written, no file is replaced: every file is
// written beside the old one before any is renamed over it.
func TestConvert_InPlaceAllOrNothing(t *testing.T) {
	dir, bundle := inPlaceTree(t)
	bundlePath, jsonPath := filepath.Join(dir, "bundle.yaml"), filepath.Join(dir, "ingress.json")
	before := stat(t, bundlePath)
	open := openTempIn
	openTempIn = func(root *os.Root, name string) (*os.File, error) {
		if strings.Contains(name, "ingress.json") {
			return nil, errors.New("no space left on device")
		}
		return open(root, name)
	}
	t.Cleanup(func() { openTempIn = open })

	code, out, errOut := run(t, "", "convert", "-f", dir, "--kubernetes-version", "v1.36", "--in-place")
	if want := jsonPath + ": no space left on device; no file rewritten"; code != exitFailure || out != "" || !strings.Contains(errOut, want) {
		t.Errorf("exit %d, stdout %q, stderr %q; want exit 1 and %q", code, out, errOut, want)
	}
	if !os.SameFile(before, stat(t, bundlePath)) || readString(t, bundlePath) != string(bundle) || readString(t, jsonPath) != ingressJSON {
		t.Errorf("a file was rewritten although another could not be")
	}
	noTempFiles(t, dir)
}

// An object that fails leaves its file as it was; --continue-on-error
// rewrites the file with what converted and the failed object unchanged.
func TestConvert_InPlaceFailure(t *testing.T) {
	const mixed = "apiVersion: batch/v1beta1\nkind: CronJob\nmetadata: {name: c}\nspec: {schedule: '@daily', jobTemplate: {spec: {}}}\n---\n" + pspV1beta1
	path := writeFile(t, "m.yaml", mixed)
	code, out, errOut := run(t, "", "convert", "-f", path, "--kubernetes-version", "v1.36", "--in-place")
	if code != exitFailure || out != "" || readString(t, path) != mixed || !strings.Contains(errOut, "1 of 3 documents failed to convert; nothing written") {
		t.Errorf("exit %d, stdout %q, stderr:\n%s", code, out, errOut)
	}
	code, _, errOut = run(t, "", "convert", "-f", path, "--kubernetes-version", "v1.36", "--in-place", "--continue-on-error")
	got := readString(t, path)
	if code != exitFailure || !strings.HasPrefix(got, "apiVersion: batch/v1\n") || !strings.HasSuffix(got, "---\n"+pspV1beta1) || !strings.Contains(errOut, "left unchanged in the files") {
		t.Errorf("--continue-on-error: exit %d, stderr:\n%s\nfile:\n%s", code, errOut, got)
	}
}

// With --follow-symlinks, a symbolic link to a file of the same tree stays
// a link to the rewritten file, and a file with CRLF line endings keeps
// them.
func TestConvert_InPlaceLinkAndLineEndings(t *testing.T) {
	dir := t.TempDir()
	real := filepath.Join(dir, "sub", "real.yaml")
	if err := os.Mkdir(filepath.Dir(real), 0o755); err != nil {
		t.Fatal(err)
	}
	crlf := strings.ReplaceAll("# comment\n"+cronJobV1beta1, "\n", "\r\n")
	if err := os.WriteFile(real, []byte(crlf), 0o644); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "link.yaml")
	if err := os.Symlink(filepath.Join("sub", "real.yaml"), link); err != nil {
		t.Fatal(err)
	}
	code, _, errOut := run(t, "", "convert", "-f", link, "--kubernetes-version", "v1.36", "--in-place", "--follow-symlinks")
	if code != 0 {
		t.Fatalf("exit %d, stderr:\n%s", code, errOut)
	}
	if stat(t, link).Mode()&os.ModeSymlink == 0 {
		t.Errorf("link.yaml is no longer a symbolic link")
	}
	got := readString(t, real)
	if !strings.HasPrefix(got, "# comment\r\napiVersion: batch/v1\r\n") || strings.Count(got, "\n") != strings.Count(got, "\r\n") {
		t.Errorf("real.yaml:\n%q", got)
	}
}

func TestConvert_InPlaceUsageErrors(t *testing.T) {
	path := writeFile(t, "c.yaml", cronJobV1beta1)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"-f", "-"}, "--in-place rewrites files: it cannot take -f - (standard input)"},
		{[]string{"-f", path, "-o", "yaml"}, "--in-place writes each file in its own syntax: leave out -o"},
	} {
		args := append([]string{"convert", "--in-place", "--kubernetes-version", "v1.36"}, tc.args...)
		code, out, errOut := run(t, cronJobV1beta1, args...)
		if code != exitUsage || out != "" || !strings.Contains(errOut, tc.want) {
			t.Errorf("%v: exit %d, stderr %q; want exit 2 and %q", tc.args, code, errOut, tc.want)
		}
	}
	if readString(t, path) != cronJobV1beta1 {
		t.Errorf("the file changed")
	}
}
