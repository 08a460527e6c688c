package helm_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/yaml"

	"helm.sh/helm/v3/pkg/action"
	"helm.sh/helm/v3/pkg/release"

	"github.com/mvpctl/mvpctl/e2e/bins"
	"github.com/mvpctl/mvpctl/e2e/framework"
)

const serverVersion = "v1.36.3"

// run runs mvpctl with a time bound and returns stdout, stderr and the
// exit code.
func run(t *testing.T, kubeconfig string, args ...string) (string, string, int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, framework.Mvpctl(t), args...)
	cmd.Env = append(os.Environ(), "KUBECONFIG="+kubeconfig, "KUBECACHEDIR="+t.TempDir())
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	var exit *exec.ExitError
	switch {
	case errors.As(err, &exit):
		return stdout.String(), stderr.String(), exit.ExitCode()
	case err != nil:
		t.Fatalf("mvpctl: %v", err)
	}
	return stdout.String(), stderr.String(), 0
}

// helmConfig is the Helm SDK's configuration for a namespace and storage
// driver (secret or configmap), as the helm CLI builds it.
func helmConfig(t *testing.T, kubeconfig, namespace, driver string) *action.Configuration {
	t.Helper()
	flags := genericclioptions.NewConfigFlags(false)
	flags.KubeConfig, flags.Namespace = &kubeconfig, &namespace
	cfg := &action.Configuration{}
	if err := cfg.Init(flags, namespace, driver, t.Logf); err != nil {
		t.Fatal(err)
	}
	return cfg
}

// installOld stores a release as helm install wrote it on a v1.21
// cluster, through the SDK's storage driver, and creates its objects as
// that cluster's upgrade to v1.36 left them: on their current versions
// (the apiserver converts stored objects; the release record keeps the
// old manifest).
func installOld(t *testing.T, cfg *action.Configuration, kubeconfig, name string) {
	t.Helper()
	rel := renderInstalled(t, name, "default", time.Now().Add(-48*time.Hour))
	if err := cfg.Releases.Create(rel); err != nil {
		t.Fatal(err)
	}
	live := newRelease(t, name)
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	kubectl, err := bins.Find(bins.Kubectl, serverVersion)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.CommandContext(ctx, kubectl, "--kubeconfig", kubeconfig, "create", "-n", "default", "-f", "-")
	cmd.Stdin = strings.NewReader(live)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("kubectl create: %v\n%s", err, out)
	}
}

// newRelease renders the current chart's objects, labelled as Helm labels
// what it manages.
func newRelease(t *testing.T, name string) string {
	t.Helper()
	cfg := &action.Configuration{Log: t.Logf}
	inst := action.NewInstall(cfg)
	inst.ClientOnly, inst.DryRun = true, true
	inst.ReleaseName, inst.Namespace = name, "default"
	rel, err := inst.Run(newChart("0.1.0", newTemplates), nil)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, doc := range strings.Split(rel.Manifest, "\n---\n") {
		var obj map[string]any
		if err := yaml.Unmarshal([]byte(doc), &obj); err != nil || obj == nil {
			continue
		}
		meta := obj["metadata"].(map[string]any)
		meta["labels"] = map[string]any{"app.kubernetes.io/managed-by": "Helm", "app": name}
		meta["annotations"] = map[string]any{"meta.helm.sh/release-name": name, "meta.helm.sh/release-namespace": "default"}
		y, err := yaml.Marshal(obj)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, string(y))
	}
	return strings.Join(out, "---\n")
}

func history(t *testing.T, cfg *action.Configuration, name string) string {
	t.Helper()
	h, err := action.NewHistory(cfg).Run(name)
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	for _, r := range h {
		b.WriteString(itoa(r.Version) + " " + r.Info.Status.String() + " " + r.Info.Description + "\n")
	}
	return b.String()
}

func TestHelmRepair_UpgradeAndRollback(t *testing.T) {
	start := time.Now()
	cp := framework.Start(t, framework.Options{Versions: []string{serverVersion}})
	kubeconfig := cp.Server(0).Kubeconfig
	cs := kubernetes.NewForConfigOrDie(cp.Server(0).RESTConfig())
	ctx := t.Context()

	secrets := helmConfig(t, kubeconfig, "default", "secret")
	installOld(t, secrets, kubeconfig, "shop")
	configMaps := helmConfig(t, kubeconfig, "default", "configmap")
	installOld(t, configMaps, kubeconfig, "blog")

	// What users meet after the cluster upgrade.
	for _, c := range []struct {
		cfg  *action.Configuration
		name string
	}{{secrets, "shop"}, {configMaps, "blog"}} {
		_, err := action.NewUpgrade(c.cfg).RunWithContext(ctx, c.name, newChart("0.2.0", newTemplates), nil)
		if err == nil || !strings.Contains(err.Error(), "unable to build kubernetes objects from current release manifest") {
			t.Fatalf("%s: upgrade before the repair: %v, want a failure to build the current manifest", c.name, err)
		}
	}

	// The dry run shows the change and writes nothing.
	before, err := cs.CoreV1().Secrets("default").Get(ctx, "sh.helm.release.v1.shop.v1", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	out, errOut, code := run(t, kubeconfig, "helm", "repair", "shop", "-n", "default", "--kubernetes-version", "v1.36")
	if code != 0 || !strings.Contains(out, "Ingress shop: extensions/v1beta1 -> networking.k8s.io/v1") ||
		!strings.Contains(out, "+apiVersion: batch/v1\n") || !strings.Contains(out, "nothing written") {
		t.Fatalf("dry run: exit %d\n%s\n%s", code, out, errOut)
	}
	t.Logf("mvpctl helm repair shop (dry run):\n%s", out)
	after, err := cs.CoreV1().Secrets("default").Get(ctx, "sh.helm.release.v1.shop.v1", metav1.GetOptions{})
	if err != nil || after.ResourceVersion != before.ResourceVersion {
		t.Fatalf("the dry run wrote: %v", err)
	}

	// The repair, with a backup; then every release of the cluster (blog,
	// in ConfigMaps).
	backup := t.TempDir()
	out, errOut, code = run(t, kubeconfig, "helm", "repair", "shop", "-n", "default", "--kubernetes-version", "v1.36", "--apply", "--backup-dir", backup)
	if code != 0 || !strings.Contains(out, "revision 2 deployed") {
		t.Fatalf("repair: exit %d\n%s\n%s", code, out, errOut)
	}
	t.Logf("mvpctl helm repair shop --apply:\n%s", out)
	saved, err := os.ReadFile(filepath.Join(backup, "default", "sh.helm.release.v1.shop.v1.json"))
	if err != nil || !bytes.Contains(saved, []byte(base64.StdEncoding.EncodeToString(before.Data["release"]))) || !bytes.Contains(saved, []byte(`"status": "deployed"`)) {
		t.Errorf("backup: %v\n%s", err, saved)
	}
	// A release with a PodSecurityPolicy, which has no replacement: nothing
	// is written, until --remove-unconvertible drops it from the release.
	legacy := renderInstalled(t, "legacy", "default", time.Now().Add(-time.Hour))
	legacy.Manifest = "---\n# Source: legacy/templates/psp.yaml\napiVersion: policy/v1beta1\nkind: PodSecurityPolicy\nmetadata: {name: legacy}\n" +
		"spec: {seLinux: {rule: RunAsAny}, runAsUser: {rule: RunAsAny}, supplementalGroups: {rule: RunAsAny}, fsGroup: {rule: RunAsAny}}\n" + legacy.Manifest
	if err := secrets.Releases.Create(legacy); err != nil {
		t.Fatal(err)
	}
	out, errOut, code = run(t, kubeconfig, "helm", "repair", "--all-namespaces", "--apply")
	if code != 1 || !strings.Contains(errOut, "legacy/templates/psp.yaml: PodSecurityPolicy legacy") || !strings.Contains(errOut, "nothing written") {
		t.Fatalf("repair -A with a PodSecurityPolicy: exit %d, want 1\n%s\n%s", code, out, errOut)
	}
	if h := history(t, configMaps, "blog"); h != "1 deployed Install complete\n" {
		t.Fatalf("a failed repair wrote blog:\n%s", h)
	}
	out, errOut, code = run(t, kubeconfig, "helm", "repair", "--all-namespaces", "--apply", "--remove-unconvertible")
	if code != 0 || !strings.Contains(out, "default/blog: revision 1 superseded; revision 2 deployed") || strings.Contains(out, "default/shop") ||
		!strings.Contains(out, "PodSecurityPolicy legacy (policy/v1beta1): removed from the release") || !strings.Contains(out, "default/legacy: revision 1 superseded; revision 2 deployed") {
		t.Fatalf("repair -A: exit %d\n%s\n%s", code, out, errOut)
	}

	if got, err := action.NewGet(secrets).Run("legacy"); err != nil || strings.Contains(got.Manifest, "PodSecurityPolicy") || !strings.Contains(got.Manifest, "apiVersion: batch/v1\n") {
		t.Errorf("legacy after --remove-unconvertible: %v", err)
	}

	// Helm reads the repaired revision: its manifest converted field by
	// field, recorded as helm-mapkubeapis records it.
	got, err := action.NewGet(secrets).Run("shop")
	if err != nil {
		t.Fatal(err)
	}
	if got.Version != 2 || got.Info.Status != release.StatusDeployed || !strings.Contains(got.Manifest, "apiVersion: networking.k8s.io/v1\n") ||
		!strings.Contains(got.Manifest, "number: 80") || strings.Contains(got.Manifest, "v1beta1") || got.Chart.Metadata.Version != "0.1.0" || got.Config["replicas"] != float64(2) {
		t.Errorf("repaired release: v%d %s\n%s", got.Version, got.Info.Status, got.Manifest)
	}
	repaired := "1 superseded Install complete\n2 deployed Kubernetes deprecated API upgrade - DO NOT rollback from this version\n"
	if h := history(t, secrets, "shop"); h != repaired {
		t.Errorf("history after the repair:\n%s", h)
	}
	// Helm 4 reads the same records, in both drivers.
	for _, c := range []struct{ driver, name string }{{"secret", "shop"}, {"configmap", "blog"}} {
		h, manifest := helm4History(t, cs, c.driver, c.name)
		if h != repaired || !strings.Contains(manifest, "apiVersion: networking.k8s.io/v1\n") || strings.Contains(manifest, "v1beta1") {
			t.Errorf("Helm 4, %s: history\n%s\nmanifest\n%s", c.name, h, manifest)
		}
	}

	// The upgrade that failed now works, in both drivers; and rolling back
	// to the repaired revision works too.
	for _, c := range []struct {
		cfg  *action.Configuration
		name string
	}{{secrets, "shop"}, {configMaps, "blog"}} {
		up, err := action.NewUpgrade(c.cfg).RunWithContext(ctx, c.name, newChart("0.2.0", newTemplates), nil)
		if err != nil {
			t.Fatalf("%s: upgrade after the repair: %v", c.name, err)
		}
		if up.Version != 3 || up.Info.Status != release.StatusDeployed {
			t.Errorf("%s: upgrade: revision %d %s", c.name, up.Version, up.Info.Status)
		}
		rb := action.NewRollback(c.cfg)
		rb.Version = 2
		if err := rb.Run(c.name); err != nil {
			t.Fatalf("%s: rollback to the repaired revision: %v", c.name, err)
		}
	}
	cj, err := cs.BatchV1().CronJobs("default").Get(ctx, "shop-report", metav1.GetOptions{})
	if err != nil || cj.Spec.Schedule != "0 3 * * *" {
		t.Errorf("after the rollback the CronJob is %v, %v (want the repaired revision's schedule)", cj.Spec.Schedule, err)
	}
	want := "1 superseded Install complete\n2 superseded Kubernetes deprecated API upgrade - DO NOT rollback from this version\n3 superseded Upgrade complete\n4 deployed Rollback to 2\n"
	if h := history(t, secrets, "shop"); h != want {
		t.Errorf("history:\n%s\nwant\n%s", h, want)
	}
	t.Logf("TestHelmRepair_UpgradeAndRollback took %s", time.Since(start).Round(time.Second))
}
