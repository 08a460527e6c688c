// Package scan_test runs `mvpctl scan -f cluster:CONTEXT` against a real
// kube-apiserver: objects applied with kubectl (their last-applied
// annotation) and Helm 3 release Secrets as Helm writes them.
package scan_test

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/mvpctl/mvpctl/e2e/bins"
	"github.com/mvpctl/mvpctl/e2e/framework"
)

func TestMain(m *testing.M) { framework.Main(m) }

const serverVersion = "v1.35.4"

// run runs a command with a time bound; it returns stdout, stderr and the
// exit code (-1 when it did not exit).
func run(t *testing.T, env []string, stdin, bin string, args ...string) (string, string, int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Env = append(append(os.Environ(), "KUBECACHEDIR="+t.TempDir()), env...)
	cmd.Stdin = strings.NewReader(stdin)
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

// helmRelease is the "release" value of a Helm 3 release Secret: base64 of
// gzipped JSON (Helm's pkg/storage/driver/util.go encodeRelease).
func helmRelease(t *testing.T, name, namespace string, version int, manifest string) []byte {
	t.Helper()
	js, err := json.Marshal(map[string]any{"name": name, "namespace": namespace, "version": version, "manifest": manifest,
		"info": map[string]any{"status": "deployed"}})
	if err != nil {
		t.Fatal(err)
	}
	var z bytes.Buffer
	zw := gzip.NewWriter(&z)
	if _, err := zw.Write(js); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return []byte(base64.StdEncoding.EncodeToString(z.Bytes()))
}

func helmSecret(t *testing.T, revision int, status string, manifest string) string {
	t.Helper()
	js, err := json.Marshal(map[string]any{
		"apiVersion": "v1", "kind": "Secret", "type": "helm.sh/release.v1",
		"metadata": map[string]any{"name": "sh.helm.release.v1.shop.v" + strconv.Itoa(revision), "namespace": "default",
			"labels": map[string]string{"owner": "helm", "name": "shop", "status": status, "version": strconv.Itoa(revision)}},
		"data": map[string][]byte{"release": helmRelease(t, "shop", "default", revision, manifest)},
	})
	if err != nil {
		t.Fatal(err)
	}
	return string(js)
}

type finding struct {
	File, Cluster, HelmRelease, APIVersion, Kind, Namespace, Name, Status string
	HelmRevision                                                          int
}

func TestScan_Cluster(t *testing.T) {
	cp := framework.Start(t, framework.Options{Versions: []string{serverVersion}})
	kubeconfig := cp.Server(0).Kubeconfig
	kubectl, err := bins.Find(bins.Kubectl, serverVersion)
	if err != nil {
		t.Fatal(err)
	}
	apply := func(manifest string) {
		t.Helper()
		if out, errOut, code := run(t, nil, manifest, kubectl, "--kubeconfig", kubeconfig, "apply", "-f", "-"); code != 0 {
			t.Fatalf("kubectl apply: %s%s", out, errOut)
		}
	}
	// Client-side apply records the manifest in the last-applied annotation;
	// core/v1 Endpoints is deprecated since v1.33, policy/v1 is current.
	apply("apiVersion: v1\nkind: Endpoints\nmetadata: {name: legacy, namespace: default}\nsubsets: [{addresses: [{ip: 10.0.0.1}], ports: [{port: 80}]}]\n")
	apply("apiVersion: policy/v1\nkind: PodDisruptionBudget\nmetadata: {name: current, namespace: default}\nspec: {minAvailable: 1, selector: {matchLabels: {app: web}}}\n")
	// The deployed revision of a Helm release still renders policy/v1beta1,
	// which v1.35 does not serve: the next helm upgrade fails on it. The
	// superseded revision's Ingress is history, not what is applied.
	pdb := "---\n# Source: shop/templates/pdb.yaml\napiVersion: policy/v1beta1\nkind: PodDisruptionBudget\nmetadata: {name: shop}\nspec: {minAvailable: 1}\n"
	apply(helmSecret(t, 1, "superseded", "apiVersion: extensions/v1beta1\nkind: Ingress\nmetadata: {name: shop}\n"))
	apply(helmSecret(t, 2, "deployed", pdb))

	env := []string{"KUBECONFIG=" + kubeconfig}
	out, errOut, code := run(t, env, "", framework.Mvpctl(t), "scan", "-f", "cluster:admin", "-o", "json")
	if code != 1 {
		t.Fatalf("exit %d, want 1 (a removed version in use)\n%s\n%s", code, out, errOut)
	}
	var rep struct{ Findings []finding }
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	want := []finding{
		{Cluster: "admin", APIVersion: "v1", Kind: "Endpoints", Namespace: "default", Name: "legacy", Status: "deprecated"},
		{Cluster: "admin", HelmRelease: "default/shop", HelmRevision: 2, File: "shop/templates/pdb.yaml", APIVersion: "policy/v1beta1", Kind: "PodDisruptionBudget", Name: "shop", Status: "removed"},
	}
	if len(rep.Findings) != len(want) {
		t.Fatalf("findings %+v, want %+v\nstderr: %s", rep.Findings, want, errOut)
	}
	for i := range want {
		if rep.Findings[i] != want[i] {
			t.Errorf("finding %d = %+v, want %+v", i, rep.Findings[i], want[i])
		}
	}

	// Checked against v1.32, Endpoints was not deprecated yet.
	out, errOut, code = run(t, env, "", framework.Mvpctl(t), "scan", "-f", "cluster:", "--kubernetes-version", "v1.32")
	if code != 1 || strings.Contains(out, "Endpoints") || !strings.Contains(out, "1 removed and 0 deprecated in Kubernetes v1.32") {
		t.Errorf("v1.32: exit %d\n%s\n%s", code, out, errOut)
	}
}
