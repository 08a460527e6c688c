package cli

import (
	"os"
	"strings"
	"testing"
)

// --kubernetes-version v1.36 converts every object on a version v1.36 no
// longer serves to its replacement (Ingress, CronJob, PodDisruptionBudget)
// and writes the ConfigMap byte for byte.
func TestConvert_KubernetesVersionConvertsRemovedVersions(t *testing.T) {
	data, err := os.ReadFile(mixedBundle)
	if err != nil {
		t.Fatal(err)
	}
	code, out, errOut := run(t, "", "convert", "-f", mixedBundle, "--kubernetes-version", "v1.36")
	if code != 0 || errOut != "" {
		t.Fatalf("exit %d, stderr:\n%s", code, errOut)
	}
	in, got := contentDocs(t, string(data)), contentDocs(t, out)
	if len(got) != 4 {
		t.Fatalf("want 4 documents:\n%s", out)
	}
	for i, want := range []string{"networking.k8s.io/v1", "batch/v1", "policy/v1"} {
		if !strings.Contains(string(got[i].Text), "\napiVersion: "+want+"\n") {
			t.Errorf("document %d is not converted to %s:\n%s", i+1, want, got[i].Text)
		}
	}
	if string(got[3].Text) != string(in[3].Text) {
		t.Errorf("the ConfigMap changed:\n%s", got[3].Text)
	}
}

// Before the release that removes a version nothing changes, byte for
// byte; --include-deprecated converts what that release deprecates.
func TestConvert_KubernetesVersionDeprecated(t *testing.T) {
	data, err := os.ReadFile(mixedBundle)
	if err != nil {
		t.Fatal(err)
	}
	in := contentDocs(t, string(data))
	code, out, errOut := run(t, "", "convert", "-f", mixedBundle, "--kubernetes-version", "v1.21")
	got := contentDocs(t, out)
	if code != 0 || errOut != "" || len(got) != len(in) {
		t.Fatalf("exit %d, stderr:\n%s\noutput:\n%s", code, errOut, out)
	}
	for i := range in {
		if string(got[i].Text) != string(in[i].Text) {
			t.Errorf("v1.21 serves every version of the bundle, yet document %d changed:\n%s", i+1, got[i].Text)
		}
	}
	// v1.21 deprecates extensions/v1beta1 Ingress (v1.14), batch/v1beta1
	// CronJob and policy/v1beta1 PDB (v1.21).
	code, out, errOut = run(t, "", "convert", "-f", mixedBundle, "--kubernetes-version", "v1.21", "--include-deprecated")
	got = contentDocs(t, out)
	if code != 0 || errOut != "" || len(got) != len(in) {
		t.Fatalf("--include-deprecated: exit %d, stderr:\n%s", code, errOut)
	}
	for i, want := range []string{"networking.k8s.io/v1", "batch/v1", "policy/v1"} {
		if !strings.Contains(string(got[i].Text), "\napiVersion: "+want+"\n") {
			t.Errorf("--include-deprecated: document %d is not converted to %s:\n%s", i+1, want, got[i].Text)
		}
	}
}

const chainRules = `apiVersion: mvp.k8s.io/v1
kind: TransformationRules
metadata: {name: chain}
spec:
  apiMigrationRules:
  - apiGroup: batch
    resource: cronjobs
    fromVersion: v1beta1
    toVersion: v2alpha1
    transformations:
    - {path: spec.startingDeadlineSeconds, action: set, value: 100}
  - apiGroup: batch
    resource: cronjobs
    fromVersion: v2alpha1
    toVersion: v1
    transformations:
    - {path: spec.successfulJobsHistoryLimit, action: set, value: 2}
`

// The replacement is reached along the rules' shortest path, through
// another version where no rule leads there directly.
func TestConvert_KubernetesVersionChainsRules(t *testing.T) {
	rules := writeFile(t, "chain.yaml", chainRules)
	code, out, errOut := run(t, cronJobV1beta1, "convert", "-f", "-", "--builtin=false", "--rules", rules, "--kubernetes-version", "v1.36")
	if code != 0 {
		t.Fatalf("exit %d, stderr:\n%s", code, errOut)
	}
	obj := readObjects(t, out)[0]
	if s := jsonOf(t, obj); obj["apiVersion"] != "batch/v1" || !strings.Contains(s, `"startingDeadlineSeconds":100`) || !strings.Contains(s, `"successfulJobsHistoryLimit":2`) {
		t.Errorf("not converted through batch/v2alpha1:\n%s", out)
	}
}

const pspV1beta1 = `apiVersion: v1
kind: ConfigMap
metadata: {name: settings}
---
# the cluster's old policy
apiVersion: policy/v1beta1
kind: PodSecurityPolicy
metadata: {name: restricted}
spec: {privileged: false}
`

// A removed version without a replacement fails naming file:line, kind and
// name; --allow-unconverted writes it unchanged with a warning.
func TestConvert_KubernetesVersionNoReplacement(t *testing.T) {
	psp := writeFile(t, "psp.yaml", pspV1beta1)
	code, out, errOut := run(t, "", "convert", "-f", psp, "--kubernetes-version", "v1.36")
	want := psp + ":6: PodSecurityPolicy restricted (policy/v1beta1): removed in v1.25, and Kubernetes names no replacement"
	if code != exitFailure || out != "" || !strings.Contains(errOut, "error: "+want) {
		t.Errorf("exit %d, stdout %q, stderr:\n%s\nwant exit 1, nothing written, and %q", code, out, errOut, want)
	}
	code, out, errOut = run(t, "", "convert", "-f", psp, "--kubernetes-version", "v1.36", "--allow-unconverted")
	if code != 0 || out != pspV1beta1 || !strings.Contains(errOut, "warning: "+want) {
		t.Errorf("--allow-unconverted: exit %d, stderr:\n%s\noutput:\n%s\nwant exit 0, a warning and the input as it was", code, errOut, out)
	}
}

// A removed version that no rule converts fails, and so does a deprecated
// one whose replacement is another kind (--include-deprecated).
func TestConvert_KubernetesVersionNoRule(t *testing.T) {
	code, out, errOut := run(t, cronJobV1beta1, "convert", "-f", "-", "--builtin=false", "--rules", seedRules, "--kubernetes-version", "v1.36")
	want := "error: <stdin>:1: CronJob shop/nightly (batch/v1beta1): no rule converts cronjobs.batch from batch/v1beta1 to batch/v1 (removed in v1.25)"
	if code != exitFailure || out != "" || !strings.Contains(errOut, want) {
		t.Errorf("exit %d, stdout %q, stderr:\n%s\nwant %q", code, out, errOut, want)
	}
	const endpoints = "apiVersion: v1\nkind: Endpoints\nmetadata: {name: web, namespace: shop}\nsubsets: []\n"
	code, out, errOut = run(t, endpoints, "convert", "-f", "-", "--kubernetes-version", "v1.36")
	if code != 0 || out != endpoints {
		t.Errorf("Endpoints is only deprecated: exit %d, stderr %q", code, errOut)
	}
	code, _, errOut = run(t, endpoints, "convert", "-f", "-", "--kubernetes-version", "v1.36", "--include-deprecated")
	want = "error: <stdin>:1: Endpoints shop/web (v1): deprecated in v1.33; its replacement is another kind (discovery.k8s.io/v1 EndpointSlice)"
	if code != exitFailure || !strings.Contains(errOut, want) {
		t.Errorf("--include-deprecated: exit %d, stderr:\n%s\nwant %q", code, errOut, want)
	}
}

// The items of a v1 List are converted one by one, each to its own
// replacement; a typed list moves with its items.
func TestConvert_KubernetesVersionLists(t *testing.T) {
	const list = `{"apiVersion": "v1", "kind": "List", "items": [
  {"apiVersion": "extensions/v1beta1", "kind": "Ingress", "metadata": {"name": "a"}, "spec": {"backend": {"serviceName": "web", "servicePort": 80}}},
  {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "b"}},
  {"apiVersion": "batch/v1beta1", "kind": "CronJob", "metadata": {"name": "c"}, "spec": {"schedule": "@daily", "jobTemplate": {"spec": {}}}}]}`
	code, out, errOut := run(t, list, "convert", "-f", "-", "--kubernetes-version", "v1.36", "-o", "json")
	if code != 0 {
		t.Fatalf("exit %d, stderr:\n%s", code, errOut)
	}
	items, _ := readObjects(t, out)[0]["items"].([]any)
	if len(items) != 3 {
		t.Fatalf("output:\n%s", out)
	}
	for i, want := range []string{"networking.k8s.io/v1", "v1", "batch/v1"} {
		if got := items[i].(map[string]any)["apiVersion"]; got != want {
			t.Errorf("items[%d]: apiVersion %v, want %s", i, got, want)
		}
	}
	const typed = `{"apiVersion": "batch/v1beta1", "kind": "CronJobList", "items": [{"apiVersion": "batch/v1beta1", "kind": "CronJob", "metadata": {"name": "c"}, "spec": {"schedule": "@daily", "jobTemplate": {"spec": {}}}}]}`
	code, out, errOut = run(t, typed, "convert", "-f", "-", "--kubernetes-version", "v1.36", "-o", "json")
	if obj := readObjects(t, out); code != 0 || obj[0]["apiVersion"] != "batch/v1" {
		t.Errorf("typed list: exit %d, stderr %q, output:\n%s", code, errOut, out)
	}
}

func TestConvert_KubernetesVersionUsageErrors(t *testing.T) {
	for args, want := range map[string]string{
		"--kubernetes-version v1.36 --output-version batch/v1": "--output-version and --kubernetes-version: give one of them",
		"--include-deprecated --output-version batch/v1":       "--include-deprecated needs --kubernetes-version",
		"--kubernetes-version 1.x":                             `--kubernetes-version: Kubernetes version "1.x": want vMAJOR.MINOR`,
		"":                                                     "give --output-version GROUP/VERSION (e.g. networking.k8s.io/v1) or --kubernetes-version vX.Y",
	} {
		code, out, errOut := run(t, cronJobV1beta1, append([]string{"convert", "-f", "-"}, strings.Fields(args)...)...)
		if code != exitUsage || out != "" || !strings.Contains(errOut, want) || strings.Count(errOut, "\n") != 1 {
			t.Errorf("%s: exit %d, stderr %q; want exit 2 and %q", args, code, errOut, want)
		}
	}
}

// A typed list as kubectl get -o yaml writes it: items without apiVersion
// and kind, which they take from the list. Both modes convert it, the list
// moving with its items, which stay without apiVersion and kind; an item
// that fails is named by the list's file:line and its index.
const typedDeploymentList = `apiVersion: v1
kind: ConfigMap
metadata: {name: first}
---
apiVersion: extensions/v1beta1
kind: DeploymentList
metadata: {resourceVersion: ""}
items:
- metadata: {name: web}
  spec:
    template:
      metadata: {labels: {app: web}}
      spec: {containers: [{name: web, image: nginx}]}
- metadata: {name: api}
  spec:
    template:
      metadata: {labels: {app: api}}
      spec: {containers: [{name: api, image: nginx}]}
`

func TestConvert_TypedListItemsWithoutType(t *testing.T) {
	for _, mode := range [][]string{{"--kubernetes-version", "v1.36"}, {"--output-version", "apps/v1"}} {
		code, out, errOut := run(t, typedDeploymentList, append([]string{"convert", "-f", "-"}, mode...)...)
		if code != 0 || errOut != "" {
			t.Fatalf("%v: exit %d, stderr:\n%s", mode, code, errOut)
		}
		objs := readObjects(t, out)
		if len(objs) != 2 || objs[1]["apiVersion"] != "apps/v1" || objs[1]["kind"] != "DeploymentList" {
			t.Fatalf("%v: want the ConfigMap and an apps/v1 DeploymentList:\n%s", mode, out)
		}
		items, _ := objs[1]["items"].([]any)
		for i, it := range items {
			item := it.(map[string]any)
			_, hasAPIVersion := item["apiVersion"]
			_, hasKind := item["kind"]
			spec, _ := item["spec"].(map[string]any)
			if hasAPIVersion || hasKind || spec["selector"] == nil {
				t.Errorf("%v: items[%d] = %v, want it without apiVersion and kind, with a selector", mode, i, item)
			}
		}
	}
	bad := strings.Replace(typedDeploymentList, "- metadata: {name: api}\n", "- metadata: {name: api, annotations: {deprecated.deployment.rollback.to: x}}\n", 1)
	bad = strings.Replace(bad, "extensions/v1beta1", "apps/v1", 1)
	code, out, errOut := run(t, bad, "convert", "-f", "-", "--output-version", "extensions/v1beta1")
	want := "error: <stdin>:5: items[1]: "
	if code != exitFailure || out != "" || !strings.HasPrefix(errOut, want) || !strings.Contains(errOut, "Deployment api") {
		t.Errorf("a failing item: exit %d, stderr:\n%s\nwant it to start with %q", code, errOut, want)
	}
}
