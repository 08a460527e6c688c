// Package convert_test upgrades a tree of manifests for a Kubernetes release
// with nothing but the mvpctl binary, and applies the result to a real
// kube-apiserver of that release.
package convert_test

import (
	"bytes"
	"context"
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mvpctl/mvpctl/e2e/bins"
	"github.com/mvpctl/mvpctl/e2e/framework"
)

func TestMain(m *testing.M) { framework.Main(m) }

const serverVersion = "v1.36.3"

// example is the tree of manifests written for v1.21 (its README says what
// is in it).
const example = "../../testdata/examples/upgrade"

// run runs a command in dir with a time bound and an environment that
// points at no kubeconfig; it returns stdout, stderr and the exit code.
func run(t *testing.T, dir string, env []string, bin string, args ...string) (string, string, int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Dir = dir
	cmd.Env = append([]string{"PATH=" + os.Getenv("PATH"), "HOME=" + dir, "KUBECONFIG=" + filepath.Join(dir, "no-kubeconfig"), "KUBECACHEDIR=" + t.TempDir()}, env...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	code := 0
	var exit *exec.ExitError
	switch {
	case errors.As(err, &exit):
		code = exit.ExitCode()
	case err != nil:
		t.Fatalf("%s: %v", bin, err)
	}
	return stdout.String(), stderr.String(), code
}

// copyTree copies the example into a new directory, as a user's checkout,
// and returns that directory and the files' contents by relative path.
func copyTree(t *testing.T) (string, map[string]string) {
	t.Helper()
	work := t.TempDir()
	files := map[string]string{}
	err := filepath.WalkDir(example, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, err := filepath.Rel(example, p)
		if err != nil {
			return err
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		files[filepath.ToSlash(rel)] = string(data)
		dst := filepath.Join(work, "upgrade", rel)
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			return err
		}
		return os.WriteFile(dst, data, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
	return work, files
}

// A user with only the binary upgrades a nested tree of manifests that
// mixes removed APIs (extensions/v1beta1 Ingress, batch/v1beta1 CronJob,
// policy/v1beta1 PDB, autoscaling/v2beta2 HPA) with current ones, for
// v1.36, in one command: the output is what a v1.36 kube-apiserver accepts
// (strict field validation) where the tree as it was is refused, and the
// objects that needed no change are written as they were. --in-place then
// rewrites only the files with removed APIs.
func TestConvert_UpgradeTreeForV136(t *testing.T) {
	mvpctl := framework.Mvpctl(t)
	work, files := copyTree(t)

	out, errOut, code := run(t, work, nil, mvpctl, "scan", "-R", "-f", "upgrade", "--kubernetes-version", "v1.36")
	if code != 1 || !strings.Contains(out, "4 removed and 0 deprecated in Kubernetes v1.36") {
		t.Fatalf("scan before: exit %d, want 1 and 4 removed\n%s%s", code, out, errOut)
	}
	converted, errOut, code := run(t, work, nil, mvpctl, "convert", "-R", "-f", "upgrade", "--kubernetes-version", "v1.36")
	if code != 0 || errOut != "" {
		t.Fatalf("convert: exit %d\n%s", code, errOut)
	}
	for _, want := range []string{"apiVersion: networking.k8s.io/v1\nkind: Ingress\n", "apiVersion: batch/v1\nkind: CronJob\n",
		"apiVersion: policy/v1\nkind: PodDisruptionBudget\n", "apiVersion: autoscaling/v2\nkind: HorizontalPodAutoscaler\n",
		files["namespace.yaml"], files["shop/web/service.yaml"], files["shop/web/deployment.yaml"]} {
		if !strings.Contains(converted, want) {
			t.Errorf("the output lacks:\n%s\noutput:\n%s", want, converted)
		}
	}
	if err := os.WriteFile(filepath.Join(work, "converted.yaml"), []byte(converted), 0o644); err != nil {
		t.Fatal(err)
	}
	out, errOut, code = run(t, work, nil, mvpctl, "scan", "-f", "converted.yaml", "--kubernetes-version", "v1.36")
	if code != 0 || !strings.Contains(out, "0 removed and 0 deprecated") {
		t.Errorf("scan of the output: exit %d\n%s%s", code, out, errOut)
	}

	applyToV136(t, work)

	out, errOut, code = run(t, work, nil, mvpctl, "convert", "-R", "-f", "upgrade", "--kubernetes-version", "v1.36", "--in-place")
	if code != 0 || errOut != "" || strings.Count(out, "\n") != 3 {
		t.Fatalf("--in-place: exit %d, want 3 files rewritten\n%s%s", code, out, errOut)
	}
	for _, rel := range []string{"namespace.yaml", "shop/web/service.yaml", "shop/web/deployment.yaml", "README.md"} {
		if data, err := os.ReadFile(filepath.Join(work, "upgrade", rel)); err != nil || string(data) != files[rel] {
			t.Errorf("%s changed (%v)", rel, err)
		}
	}
	out, errOut, code = run(t, work, nil, mvpctl, "scan", "-R", "-f", "upgrade", "--kubernetes-version", "v1.36")
	if code != 0 {
		t.Errorf("scan after --in-place: exit %d\n%s%s", code, out, errOut)
	}
}

// applyToV136 applies the example as it was to a v1.36 kube-apiserver, which
// refuses its removed versions, then the converted output, which it takes
// whole.
func applyToV136(t *testing.T, work string) {
	t.Helper()
	kubectl, err := bins.Find(bins.Kubectl, serverVersion)
	if err != nil {
		t.Fatal(err)
	}
	cp := framework.Start(t, framework.Options{Versions: []string{serverVersion}})
	env := []string{"KUBECONFIG=" + cp.Server(0).Kubeconfig}
	out, errOut, code := run(t, work, env, kubectl, "apply", "-R", "-f", "upgrade")
	if code == 0 || !strings.Contains(errOut, `no matches for kind "Ingress" in version "extensions/v1beta1"`) {
		t.Errorf("kubectl apply of the tree as it was: exit %d, want a refusal of extensions/v1beta1\n%s%s", code, out, errOut)
	}
	out, errOut, code = run(t, work, env, kubectl, "apply", "-f", "converted.yaml")
	if code != 0 || !onlyWarnings(errOut) {
		t.Fatalf("kubectl apply of the converted tree: exit %d\n%s%s", code, out, errOut)
	}
	for _, want := range []string{"ingress.networking.k8s.io/web created", "cronjob.batch/nightly-report created",
		"poddisruptionbudget.policy/web created", "horizontalpodautoscaler.autoscaling/web created"} {
		if !strings.Contains(out, want) {
			t.Errorf("kubectl apply: no %q in\n%s", want, out)
		}
	}
}

// onlyWarnings says whether kubectl's stderr holds nothing but the
// server's warnings (v1.36 warns of the kubernetes.io/ingress.class
// annotation, which Kubernetes' own conversion keeps as it is).
func onlyWarnings(stderr string) bool {
	for _, l := range strings.Split(strings.TrimSpace(stderr), "\n") {
		if l != "" && !strings.HasPrefix(l, "Warning: ") {
			return false
		}
	}
	return true
}
