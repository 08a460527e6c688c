package convert_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mvpctl/mvpctl/e2e/bins"
	"github.com/mvpctl/mvpctl/e2e/framework"
)

// target is the testdata of what a target release requires beyond
// conversion (docs/convert.md).
const target = "../../testdata/target"

// v1beta1 CRDs that Kubernetes' own conversion leaves invalid for v1 (no
// schema, preserveUnknownFields, schema nodes without a type) are refused
// by a v1.36 kube-apiserver as converted exactly (--output-version); as
// converted for v1.36 (--kubernetes-version) they are accepted with strict
// field validation, and a custom resource with fields their schemas do
// not name keeps every one of them, as under the v1beta1 CRDs.
func TestConvert_CRDsMeetV136(t *testing.T) {
	mvpctl := framework.Mvpctl(t)
	kubectl, err := bins.Find(bins.Kubectl, serverVersion)
	if err != nil {
		t.Fatal(err)
	}
	work := t.TempDir()
	crds, err := filepath.Abs(filepath.Join(target, "crds.v1beta1.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	exact, errOut, code := run(t, work, nil, mvpctl, "convert", "-f", crds, "--output-version", "apiextensions.k8s.io/v1", "--round-trip-data=false")
	if code != 0 {
		t.Fatalf("convert --output-version: exit %d\n%s", code, errOut)
	}
	fixed, errOut, code := run(t, work, nil, mvpctl, "convert", "-f", crds, "--kubernetes-version", "v1.36")
	if code != 0 {
		t.Fatalf("convert --kubernetes-version: exit %d\n%s", code, errOut)
	}
	warnings := strings.Count(errOut, "warning: ")
	if warnings != 5 {
		t.Errorf("want 5 warnings (one per object and fix), got %d:\n%s", warnings, errOut)
	}
	for name, data := range map[string]string{"exact.yaml": exact, "fixed.yaml": fixed} {
		if err := os.WriteFile(filepath.Join(work, name), []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}

	cp := framework.Start(t, framework.Options{Versions: []string{serverVersion}})
	env := []string{"KUBECONFIG=" + cp.Server(0).Kubeconfig}
	apply := func(args ...string) (string, string, int) {
		return run(t, work, env, kubectl, append([]string{"apply", "--server-side", "--validate=strict"}, args...)...)
	}
	out, errOut, code := apply("--dry-run=server", "-f", "exact.yaml")
	if code == 0 || strings.Count(errOut, "spec.preserveUnknownFields: Invalid value: true") != 2 {
		t.Errorf("the exact conversion: exit %d, want both CRDs refused for preserveUnknownFields\n%s%s", code, out, errOut)
	}
	out, errOut, code = apply("-f", "fixed.yaml")
	if code != 0 || strings.Count(out, "serverside-applied") != 2 {
		t.Fatalf("the conversion for v1.36: exit %d\n%s%s", code, out, errOut)
	}
	out, errOut, code = run(t, work, env, kubectl, "wait", "--for=condition=Established", "--timeout=60s",
		"crd/anythings.target.example.com", "crd/backups.target.example.com")
	if code != 0 {
		t.Fatalf("kubectl wait: exit %d\n%s%s", code, out, errOut)
	}
	backup, err := filepath.Abs(filepath.Join(target, "backup.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if out, errOut, code = apply("-f", backup); code != 0 {
		t.Fatalf("the Backup: exit %d\n%s%s", code, out, errOut)
	}
	out, errOut, code = run(t, work, env, kubectl, "get", "backups.target.example.com", "nightly", "-n", "default", "-o", "json")
	if code != 0 {
		t.Fatalf("kubectl get: exit %d\n%s", code, errOut)
	}
	var got struct {
		Spec struct {
			Targets []map[string]any
			Options map[string]any
			Extra   string
		}
		UnknownTopLevel string
	}
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatal(err)
	}
	if len(got.Spec.Targets) != 1 || got.Spec.Targets[0]["compress"] != true || got.Spec.Options["level"] != float64(9) ||
		got.Spec.Extra != "kept" || got.UnknownTopLevel != "kept" {
		t.Errorf("fields the schema does not name were pruned:\n%s", out)
	}
}
