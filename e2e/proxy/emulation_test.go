package proxy_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/util/retry"

	"github.com/mvpctl/mvpctl/e2e/bins"
	"github.com/mvpctl/mvpctl/e2e/framework"
)

// Files of testdata/: the seed article's rules for its custom resource, and
// the custom resource's CRD serving only v1beta1, without and with
// v1alpha1's schema kept.
const (
	seedRulesFile        = "testdata/seed-rules.yaml"
	crdV1beta1OnlyFile   = "testdata/crd-v1beta1-only.yaml"
	crdKeepsV1alpha1File = "testdata/crd-keeps-v1alpha1.yaml"
)

// testdataPath is the absolute path of a file of testdata/, for processes
// the test starts.
func testdataPath(t *testing.T, name string) string {
	t.Helper()
	p, err := filepath.Abs(name)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(p); err != nil {
		t.Fatal(err)
	}
	return p
}

// readTestdata is the text of a file of testdata/.
func readTestdata(t *testing.T, name string) string {
	t.Helper()
	data, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

var (
	crV1alpha1 = schema.GroupVersionResource{Group: "myapps.example.com", Version: "v1alpha1", Resource: "customresources"}
	crV1beta1  = schema.GroupVersionResource{Group: "myapps.example.com", Version: "v1beta1", Resource: "customresources"}
)

// emulationSetup is one control plane of the newer version, the CRD that
// keeps v1alpha1's schema, and a proxy given the seed rules and the built-in
// rules of rules/builtin.
func emulationSetup(t *testing.T) (*framework.ControlPlane, *proxyProcess, string) {
	t.Helper()
	cp := framework.Start(t, framework.Options{Versions: []string{newVersion}})
	p, dir := emulationProxy(t, cp)
	return cp, p, dir
}

// emulationProxy creates the CRD that keeps v1alpha1's schema on cp and
// starts a proxy in front of cp given the seed rules, the built-in rules of
// rules/builtin and extra flags. It returns the proxy and a directory for
// the test's files.
func emulationProxy(t *testing.T, cp *framework.ControlPlane, extra ...string) (*proxyProcess, string) {
	t.Helper()
	dir := t.TempDir()
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	direct := cp.Server(0).Kubeconfig
	if out, err := kubectl(t, ctx, direct, "apply", "-f", testdataPath(t, crdKeepsV1alpha1File)); err != nil {
		t.Fatalf("creating the CRD: %v\n%s", err, out)
	}
	if out, err := kubectl(t, ctx, direct, "wait", "--for=condition=Established", "crd/customresources.myapps.example.com", "--timeout=60s"); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	builtin, err := filepath.Abs("../../rules/builtin")
	if err != nil {
		t.Fatal(err)
	}
	openAPI, err := filepath.Abs("../../testdata/emulation/openapi")
	if err != nil {
		t.Fatal(err)
	}
	args := []string{"--rules", testdataPath(t, seedRulesFile), "--rules", builtin, "--openapi-from", openAPI, "--refresh-interval", "2s"}
	return startProxy(t, cp, append(args, extra...)...), dir
}

func kubectlIn(t *testing.T, ctx context.Context, env []string, stdin string, kubeconfig string, args ...string) (string, error) {
	t.Helper()
	bin, err := bins.Find(bins.Kubectl, newVersion)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.CommandContext(ctx, bin, append([]string{"--kubeconfig", kubeconfig}, args...)...)
	cmd.Env = append(os.Environ(), env...)
	cmd.Stdin = strings.NewReader(stdin)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err = cmd.Run()
	if err != nil {
		return out.String() + errb.String(), err
	}
	return out.String(), nil
}

func getJSON(t *testing.T, ctx context.Context, kubeconfig string, args ...string) map[string]any {
	t.Helper()
	out, err := kubectlIn(t, ctx, nil, "", kubeconfig, append([]string{"get", "-o", "json"}, args...)...)
	if err != nil {
		t.Fatalf("kubectl get %v: %v\n%s", args, err, out)
	}
	var obj map[string]any
	if err := json.Unmarshal([]byte(out), &obj); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	return obj
}

func field(obj map[string]any, path ...string) any {
	var v any = obj
	for _, p := range path {
		m, ok := v.(map[string]any)
		if !ok {
			return nil
		}
		v = m[p]
	}
	return v
}

func TestProxy_EmulatesRemovedCRDVersion(t *testing.T) {
	cp, p, dir := emulationSetup(t)
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Minute)
	defer cancel()
	const res = "customresources.v1alpha1.myapps.example.com"
	manifest := `apiVersion: myapps.example.com/v1alpha1
kind: CustomResource
metadata:
  name: seed
  namespace: default
  labels: {app: seed}
spec:
  replicas: 1
  stateManagement: ephemeral
  config:
    legacyTimeout: 30
    retries: 3
`
	wantSpec := map[string]any{"replicas": float64(1), "stateManagement": "ephemeral", "config": map[string]any{"legacyTimeout": float64(30), "retries": float64(3)}}
	mpath := filepath.Join(dir, "cr.yaml")
	if err := os.WriteFile(mpath, []byte(manifest), 0o644); err != nil {
		t.Fatal(err)
	}

	t.Run("DiscoveryAndDirect404", func(t *testing.T) {
		out, err := kubectlIn(t, ctx, nil, "", p.Kubeconfig, "api-versions")
		if err != nil || !strings.Contains(out, "myapps.example.com/v1alpha1\n") || !strings.Contains(out, "policy/v1beta1\n") || !strings.Contains(out, "autoscaling/v2beta2\n") {
			t.Errorf("kubectl api-versions through the proxy: %v\n%s", err, out)
		}
		direct := dynamic.NewForConfigOrDie(cp.Server(0).RESTConfig())
		_, err = direct.Resource(crV1alpha1).Namespace("default").List(ctx, metav1.ListOptions{})
		if !apierrors.IsNotFound(err) {
			t.Errorf("v1alpha1 direct to the server: want 404, got %v", err)
		}
	})

	// A watch opened before anything happens sees ADDED and MODIFIED in v1alpha1.
	dyn := dynamic.NewForConfigOrDie(p.tokenConfig(cp))
	w, err := dyn.Resource(crV1alpha1).Namespace("default").Watch(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatalf("watch v1alpha1 through the proxy: %v", err)
	}
	defer w.Stop()

	t.Run("ApplyAndReadBackExactly", func(t *testing.T) {
		if out, err := kubectlIn(t, ctx, nil, "", p.Kubeconfig, "apply", "-f", mpath); err != nil {
			t.Fatalf("kubectl apply v1alpha1: %v\n%s", err, out)
		}
		obj := getJSON(t, ctx, p.Kubeconfig, res, "seed", "-n", "default")
		if obj["apiVersion"] != "myapps.example.com/v1alpha1" || obj["kind"] != "CustomResource" {
			t.Errorf("type: %v %v", obj["apiVersion"], obj["kind"])
		}
		if diff := cmp.Diff(wantSpec, obj["spec"]); diff != "" {
			t.Errorf("v1alpha1 spec read back (-want +got):\n%s", diff)
		}
		if ann, _ := field(obj, "metadata", "annotations").(map[string]any); ann["mvp.k8s.io/conversion-data"] != nil {
			t.Errorf("the old client sees the round-trip annotation: %v", ann)
		}
		// A v1beta1 client (direct) sees the converted fields.
		nb, err := dynamic.NewForConfigOrDie(cp.Server(0).RESTConfig()).Resource(crV1beta1).Namespace("default").Get(ctx, "seed", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		want := map[string]any{"replicas": int64(1), "stateManagement": "stateless", "config": map[string]any{"requestTimeoutSeconds": int64(30), "retries": int64(3)}}
		if diff := cmp.Diff(want, nb.Object["spec"]); diff != "" {
			t.Errorf("v1beta1 spec (-want +got):\n%s", diff)
		}
		// Table output of kubectl get, by short name and fully qualified.
		out, err := kubectlIn(t, ctx, nil, "", p.Kubeconfig, "get", res, "-n", "default")
		if err != nil || !strings.Contains(out, "seed") {
			t.Errorf("kubectl get: %v\n%s", err, out)
		}
		list := getJSON(t, ctx, p.Kubeconfig, res, "-n", "default")
		items, _ := list["items"].([]any)
		if len(items) != 1 || field(items[0].(map[string]any), "spec", "config", "legacyTimeout") != float64(30) {
			t.Errorf("list: %v", list)
		}
	})

	t.Run("OpenAPIFromTheCRDsOldVersion", func(t *testing.T) {
		// kubectl explain reads v1alpha1's /openapi/v3 document, which the
		// proxy builds from the schema the CRD keeps for v1alpha1.
		out, err := kubectlIn(t, ctx, nil, "", p.Kubeconfig, "explain", "customresources.spec.config", "--api-version=myapps.example.com/v1alpha1")
		flat := strings.Join(strings.Fields(out), " ")
		if err != nil || !strings.Contains(flat, "VERSION: v1alpha1") || !strings.Contains(flat, "legacyTimeout <integer>") ||
			!strings.Contains(flat, "Request timeout in seconds (requestTimeoutSeconds in v1beta1).") || strings.Contains(flat, "requestTimeoutSeconds <") {
			t.Errorf("kubectl explain --api-version=myapps.example.com/v1alpha1: %v\n%s", err, out)
		}
		// A misspelled field is refused, and nothing is created.
		typo := strings.NewReplacer("name: seed", "name: typo", "legacyTimeout: 30", "legacyTimout: 30").Replace(manifest)
		out, err = kubectlIn(t, ctx, nil, typo, p.Kubeconfig, "apply", "--validate=strict", "-f", "-")
		t.Logf("kubectl apply --validate=strict of a misspelled field: %v\n%s", err, out)
		if err == nil || !strings.Contains(out, `unknown field "spec.config.legacyTimout"`) {
			t.Errorf("a v1alpha1 manifest with a misspelled field was not refused: %v\n%s", err, out)
		}
		if _, err := dyn.Resource(crV1alpha1).Namespace("default").Get(ctx, "typo", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			t.Errorf("the misspelled object: %v", err)
		}
		// /openapi/v2 has the emulated versions: v1alpha1 from the CRD,
		// policy/v1beta1 from --openapi-from.
		raw, err := kubectlIn(t, ctx, nil, "", p.Kubeconfig, "get", "--raw", "/openapi/v2")
		if err != nil {
			t.Fatalf("/openapi/v2: %v", err)
		}
		var v2 struct {
			Paths       map[string]json.RawMessage
			Definitions map[string]struct {
				Properties map[string]json.RawMessage
			}
		}
		if err := json.Unmarshal([]byte(raw), &v2); err != nil {
			t.Fatal(err)
		}
		if cr := v2.Definitions["com.example.myapps.v1alpha1.CustomResource"]; !strings.Contains(string(cr.Properties["spec"]), "legacyTimeout") ||
			v2.Paths["/apis/myapps.example.com/v1alpha1/namespaces/{namespace}/customresources/{name}"] == nil {
			t.Errorf("/openapi/v2 lacks v1alpha1: %s", cr.Properties["spec"])
		}
		if v2.Definitions["io.k8s.api.policy.v1beta1.PodDisruptionBudget"].Properties["spec"] == nil || v2.Definitions["io.k8s.api.core.v1.Pod"].Properties == nil {
			t.Errorf("/openapi/v2 lacks policy/v1beta1 or the servers' own definitions")
		}
		t.Logf("/openapi/v2 through the proxy: %d bytes, %d definitions, %d paths", len(raw), len(v2.Definitions), len(v2.Paths))
	})

	t.Run("LabelSelectors", func(t *testing.T) {
		// The seed rules leave labels alone: the selector goes to the server.
		out, err := kubectlIn(t, ctx, nil, "", p.Kubeconfig, "get", res, "-n", "default", "-l", "app=seed", "-o", "name")
		if err != nil || strings.TrimSpace(out) != "customresource.myapps.example.com/seed" {
			t.Errorf("kubectl get -l app=seed: %v\n%s", err, out)
		}
		// A whole-object jq step that writes a label: 400 naming the rule
		// and the step.
		jqRules := strings.TrimSuffix(readTestdata(t, seedRulesFile), "\n") + `
    - action: jq
      description: v1alpha1 objects carry a legacy label
      forward: 'del(.metadata.labels["myapps.example.com/legacy"])'
      reverse: '.metadata.labels["myapps.example.com/legacy"] = "true"'
`
		rulesFile := filepath.Join(dir, "jq-labels.yaml")
		if err := os.WriteFile(rulesFile, []byte(jqRules), 0o644); err != nil {
			t.Fatal(err)
		}
		p2 := startProxy(t, cp, "--rules", rulesFile)
		out, err = kubectlIn(t, ctx, nil, "", p2.Kubeconfig, "get", res, "-n", "default", "-l", "app=seed")
		t.Logf("kubectl get -l through a proxy whose jq step writes labels: %v\n%s", err, out)
		if err == nil || !strings.Contains(out, "BadRequest") || !strings.Contains(out, "labelSelector cannot be used on the emulated version myapps.example.com/v1alpha1") ||
			!strings.Contains(out, "rule customresources.myapps.example.com/v1alpha1->v1beta1, transformations[2]") {
			t.Errorf("kubectl get -l: %v\n%s", err, out)
		}
		if out, err := kubectlIn(t, ctx, nil, "", p2.Kubeconfig, "get", res, "-n", "default", "-o", "name"); err != nil || !strings.Contains(out, "/seed") {
			t.Errorf("kubectl get without a selector: %v\n%s", err, out)
		}
	})

	t.Run("Patches", func(t *testing.T) {
		for _, tc := range []struct {
			args []string
			path []string
			want any
		}{
			{[]string{"--type=merge", "-p", `{"spec":{"config":{"legacyTimeout":40}}}`}, []string{"spec", "config", "legacyTimeout"}, float64(40)},
			{[]string{"--type=json", "-p", `[{"op":"replace","path":"/spec/config/legacyTimeout","value":50},{"op":"test","path":"/spec/stateManagement","value":"ephemeral"}]`}, []string{"spec", "config", "legacyTimeout"}, float64(50)},
		} {
			if out, err := kubectlIn(t, ctx, nil, "", p.Kubeconfig, append([]string{"patch", res, "seed", "-n", "default"}, tc.args...)...); err != nil {
				t.Fatalf("kubectl patch %v: %v\n%s", tc.args, err, out)
			}
			obj := getJSON(t, ctx, p.Kubeconfig, res, "seed", "-n", "default")
			if got := field(obj, tc.path...); got != tc.want {
				t.Errorf("after patch %v: %v = %v, want %v", tc.args, tc.path, got, tc.want)
			}
		}
		// Strategic merge patch: custom resources do not support it, on the
		// server nor emulated; the answer is the same 415.
		out, err := kubectlIn(t, ctx, nil, "", p.Kubeconfig, "patch", res, "seed", "-n", "default", "--type=strategic", "-p", `{"spec":{"replicas":2}}`)
		if err == nil || !strings.Contains(out, "strategic merge patch is not supported") {
			t.Errorf("strategic merge patch on a custom resource: %v\n%s", err, out)
		}
		// Server-side apply of a whole v1alpha1 object.
		ssa := strings.Replace(manifest, "legacyTimeout: 30", "legacyTimeout: 60", 1)
		if out, err := kubectlIn(t, ctx, nil, ssa, p.Kubeconfig, "apply", "--server-side", "--force-conflicts", "--field-manager=old-client", "-f", "-"); err != nil {
			t.Fatalf("kubectl apply --server-side: %v\n%s", err, out)
		}
		obj := getJSON(t, ctx, p.Kubeconfig, res, "seed", "-n", "default")
		if got := field(obj, "spec", "config", "legacyTimeout"); got != float64(60) {
			t.Errorf("after server-side apply: legacyTimeout = %v", got)
		}
		// kubectl edit: GET, then a merge patch of the edited v1alpha1 object.
		if out, err := kubectlIn(t, ctx, []string{`KUBE_EDITOR=sed -i -e s/legacyTimeout:\ 60/legacyTimeout:\ 70/`}, "", p.Kubeconfig, "edit", res, "seed", "-n", "default"); err != nil {
			t.Fatalf("kubectl edit: %v\n%s", err, out)
		}
		obj = getJSON(t, ctx, p.Kubeconfig, res, "seed", "-n", "default")
		if got := field(obj, "spec", "config", "legacyTimeout"); got != float64(70) {
			t.Errorf("after kubectl edit: legacyTimeout = %v", got)
		}
		// kubectl scale through the scale subresource.
		if out, err := kubectlIn(t, ctx, nil, "", p.Kubeconfig, "scale", res+"/seed", "-n", "default", "--replicas=3"); err != nil {
			t.Fatalf("kubectl scale: %v\n%s", err, out)
		}
		obj = getJSON(t, ctx, p.Kubeconfig, res, "seed", "-n", "default")
		if got := field(obj, "spec", "replicas"); got != float64(3) {
			t.Errorf("after kubectl scale: replicas = %v", got)
		}
		if got := field(obj, "spec", "stateManagement"); got != "ephemeral" {
			t.Errorf("stateManagement = %v", got)
		}
	})

	t.Run("PutRoundTripsExactly", func(t *testing.T) {
		cur, err := dyn.Resource(crV1alpha1).Namespace("default").Get(ctx, "seed", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		before := cur.DeepCopy()
		upd, err := dyn.Resource(crV1alpha1).Namespace("default").Update(ctx, cur, metav1.UpdateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(before.Object["spec"], upd.Object["spec"]); diff != "" {
			t.Errorf("an unchanged PUT changed the object (-before +after):\n%s", diff)
		}
		if upd.GetGeneration() != before.GetGeneration() {
			t.Errorf("an unchanged PUT bumped the generation %d → %d", before.GetGeneration(), upd.GetGeneration())
		}
	})

	t.Run("WatchSawV1alpha1Events", func(t *testing.T) {
		var types []watch.EventType
		timeout := time.After(30 * time.Second)
		for len(types) < 3 {
			select {
			case ev, ok := <-w.ResultChan():
				if !ok {
					t.Fatalf("watch ended after %v", types)
				}
				u, isObj := ev.Object.(*unstructured.Unstructured)
				if !isObj || u.GetAPIVersion() != "myapps.example.com/v1alpha1" {
					t.Fatalf("event %s: %#v", ev.Type, ev.Object)
				}
				if _, has := u.Object["spec"].(map[string]any)["config"].(map[string]any)["legacyTimeout"]; !has {
					t.Errorf("event %s without legacyTimeout: %v", ev.Type, u.Object["spec"])
				}
				types = append(types, ev.Type)
			case <-timeout:
				t.Fatalf("events so far: %v", types)
			}
		}
		if types[0] != watch.Added || types[1] != watch.Modified {
			t.Errorf("events: %v", types)
		}
	})

	t.Run("Delete", func(t *testing.T) {
		if out, err := kubectlIn(t, ctx, nil, "", p.Kubeconfig, "delete", res, "seed", "-n", "default", "--wait=false"); err != nil {
			t.Fatalf("kubectl delete: %v\n%s", err, out)
		}
		_, err := dyn.Resource(crV1beta1).Namespace("default").Get(ctx, "seed", metav1.GetOptions{})
		if !apierrors.IsNotFound(err) {
			t.Errorf("after delete: %v", err)
		}
	})

	t.Run("WatchDeliversEachEventWhileTheStreamIdles", func(t *testing.T) {
		// The proxy converts and sends each event as it comes: a client
		// never waits for the next event to see the previous one.
		list, err := dyn.Resource(crV1alpha1).Namespace("default").List(ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		w, err := dyn.Resource(crV1alpha1).Namespace("default").Watch(ctx, metav1.ListOptions{ResourceVersion: list.GetResourceVersion()})
		if err != nil {
			t.Fatal(err)
		}
		defer w.Stop()
		for _, name := range []string{"idle-1", "idle-2"} {
			obj := &unstructured.Unstructured{Object: map[string]any{
				"apiVersion": "myapps.example.com/v1alpha1", "kind": "CustomResource",
				"metadata": map[string]any{"name": name, "namespace": "default"},
				"spec":     map[string]any{"replicas": int64(1), "stateManagement": "ephemeral", "config": map[string]any{"legacyTimeout": int64(30), "retries": int64(3)}},
			}}
			if _, err := dyn.Resource(crV1alpha1).Namespace("default").Create(ctx, obj, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			select {
			case ev, ok := <-w.ResultChan():
				u, isObj := ev.Object.(*unstructured.Unstructured)
				if !ok || ev.Type != watch.Added || !isObj || u.GetName() != name || u.GetAPIVersion() != "myapps.example.com/v1alpha1" {
					t.Fatalf("after creating %s: event %s %#v (open %v)", name, ev.Type, ev.Object, ok)
				}
			case <-time.After(time.Minute):
				t.Fatalf("the ADDED event of %s did not reach the client while the stream was idle", name)
			}
		}
	})

	t.Run("MetricsNameTheBackend", func(t *testing.T) {
		// Emulated requests are counted under the server that answered.
		n := 0
		for _, line := range strings.Split(p.metricsText(t), "\n") {
			if strings.HasPrefix(line, "mvpctl_proxy_requests_total{") && strings.Contains(line, `decision="emulated"`) && strings.Contains(line, `code="200"`) {
				n++
				if strings.Contains(line, `backend=""`) {
					t.Errorf("no backend: %s", line)
				}
			}
		}
		if n == 0 {
			t.Error("no emulated request was counted")
		}
	})
}

const pdbReservedKey = "pdb.kubernetes.io/deprecated-v1beta1-empty-selector-match"

// TestProxy_EmulatesRemovedBuiltinVersions serves policy/v1beta1
// PodDisruptionBudgets (removed in v1.25) and autoscaling/v2beta2
// HorizontalPodAutoscalers (removed in v1.26) from policy/v1 and
// autoscaling/v2, converting as Kubernetes itself did.
func TestProxy_EmulatesRemovedBuiltinVersions(t *testing.T) {
	cp, p, dir := emulationSetup(t)
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Minute)
	defer cancel()
	direct := cp.Server(0).Kubeconfig

	t.Run("PDBEmptySelectorSemantics", func(t *testing.T) {
		// v1beta1's empty selector selects no pods: stored in v1 with the
		// reserved Exists marker, read back as {}.
		m := filepath.Join(dir, "pdb.yaml")
		if err := os.WriteFile(m, []byte("apiVersion: policy/v1beta1\nkind: PodDisruptionBudget\nmetadata: {name: none, namespace: default}\nspec:\n  minAvailable: 1\n  selector: {}\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		if out, err := kubectlIn(t, ctx, nil, "", p.Kubeconfig, "apply", "-f", m); err != nil {
			t.Fatalf("kubectl apply policy/v1beta1: %v\n%s", err, out)
		}
		v1 := getJSON(t, ctx, direct, "poddisruptionbudgets.v1.policy", "none", "-n", "default")
		want := map[string]any{"matchExpressions": []any{map[string]any{"key": pdbReservedKey, "operator": "Exists"}}}
		if diff := cmp.Diff(want, field(v1, "spec", "selector")); diff != "" {
			t.Errorf("stored v1 selector (-want +got):\n%s", diff)
		}
		old := getJSON(t, ctx, p.Kubeconfig, "poddisruptionbudgets.v1beta1.policy", "none", "-n", "default")
		if old["apiVersion"] != "policy/v1beta1" {
			t.Errorf("apiVersion %v", old["apiVersion"])
		}
		if diff := cmp.Diff(map[string]any{}, field(old, "spec", "selector")); diff != "" {
			t.Errorf("v1beta1 selector read back (-want +got):\n%s", diff)
		}
		// v1's empty selector selects every pod: a v1beta1 client sees the
		// DoesNotExist marker.
		m1 := filepath.Join(dir, "pdb-v1.yaml")
		if err := os.WriteFile(m1, []byte("apiVersion: policy/v1\nkind: PodDisruptionBudget\nmetadata: {name: all, namespace: default}\nspec:\n  maxUnavailable: 1\n  selector: {}\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		if out, err := kubectlIn(t, ctx, nil, "", direct, "apply", "-f", m1); err != nil {
			t.Fatalf("%v\n%s", err, out)
		}
		all := getJSON(t, ctx, p.Kubeconfig, "poddisruptionbudgets.v1beta1.policy", "all", "-n", "default")
		want = map[string]any{"matchExpressions": []any{map[string]any{"key": pdbReservedKey, "operator": "DoesNotExist"}}}
		if diff := cmp.Diff(want, field(all, "spec", "selector")); diff != "" {
			t.Errorf("v1beta1 view of a v1 empty selector (-want +got):\n%s", diff)
		}
	})

	t.Run("PDBPatchesAndApply", func(t *testing.T) {
		const res = "poddisruptionbudgets.v1beta1.policy"
		if out, err := kubectlIn(t, ctx, nil, "", p.Kubeconfig, "patch", res, "none", "-n", "default", "--type=strategic", "-p", `{"spec":{"minAvailable":2}}`); err != nil {
			t.Fatalf("kubectl patch --type=strategic: %v\n%s", err, out)
		}
		if got := field(getJSON(t, ctx, direct, "poddisruptionbudgets.v1.policy", "none", "-n", "default"), "spec", "minAvailable"); got != float64(2) {
			t.Errorf("after a strategic merge patch: minAvailable %v", got)
		}
		// A second client-side apply computes a patch from the
		// last-applied v1beta1 manifest.
		m := filepath.Join(dir, "pdb2.yaml")
		if err := os.WriteFile(m, []byte("apiVersion: policy/v1beta1\nkind: PodDisruptionBudget\nmetadata: {name: none, namespace: default}\nspec:\n  minAvailable: 3\n  selector: {matchLabels: {app: web}}\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		if out, err := kubectlIn(t, ctx, nil, "", p.Kubeconfig, "apply", "-f", m); err != nil {
			t.Fatalf("second kubectl apply: %v\n%s", err, out)
		}
		v1 := getJSON(t, ctx, direct, "poddisruptionbudgets.v1.policy", "none", "-n", "default")
		if diff := cmp.Diff(map[string]any{"minAvailable": float64(3), "selector": map[string]any{"matchLabels": map[string]any{"app": "web"}}}, v1["spec"]); diff != "" {
			t.Errorf("v1 spec after apply (-want +got):\n%s", diff)
		}
		out, err := kubectlIn(t, ctx, nil, "", p.Kubeconfig, "get", res, "-n", "default")
		if err != nil || !strings.Contains(out, "none") || !strings.Contains(out, "all") {
			t.Errorf("kubectl get %s: %v\n%s", res, err, out)
		}
		if out, err := kubectlIn(t, ctx, nil, "", p.Kubeconfig, "delete", res, "none", "all", "-n", "default"); err != nil {
			t.Errorf("kubectl delete: %v\n%s", err, out)
		}
	})

	t.Run("ExplainWithOpenAPIFrom", func(t *testing.T) {
		// policy/v1beta1's schema comes from Kubernetes v1.24's OpenAPI
		// document (--openapi-from): v1beta1's own field description.
		out, err := kubectlIn(t, ctx, nil, "", p.Kubeconfig, "explain", "poddisruptionbudgets.spec.selector", "--api-version=policy/v1beta1")
		flat := strings.Join(strings.Fields(out), " ")
		if err != nil || !strings.Contains(flat, "VERSION: v1beta1") || !strings.Contains(flat, "An empty selector ({}) also selects no pods") {
			t.Errorf("kubectl explain --api-version=policy/v1beta1: %v\n%s", err, out)
		}
	})

	t.Run("HPAv2beta2", func(t *testing.T) {
		hpa := `apiVersion: autoscaling/v2beta2
kind: HorizontalPodAutoscaler
metadata: {name: web, namespace: default}
spec:
  scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: web}
  minReplicas: 2
  maxReplicas: 10
  metrics:
  - type: Resource
    resource: {name: cpu, target: {type: Utilization, averageUtilization: 60}}
  behavior:
    scaleDown:
      stabilizationWindowSeconds: 120
      policies: [{type: Pods, value: 1, periodSeconds: 60}]
`
		if out, err := kubectlIn(t, ctx, nil, hpa, p.Kubeconfig, "apply", "-f", "-"); err != nil {
			t.Fatalf("kubectl apply autoscaling/v2beta2: %v\n%s", err, out)
		}
		old := getJSON(t, ctx, p.Kubeconfig, "horizontalpodautoscalers.v2beta2.autoscaling", "web", "-n", "default")
		if old["apiVersion"] != "autoscaling/v2beta2" {
			t.Errorf("apiVersion %v", old["apiVersion"])
		}
		wantMetrics := []any{map[string]any{"type": "Resource", "resource": map[string]any{"name": "cpu", "target": map[string]any{"type": "Utilization", "averageUtilization": float64(60)}}}}
		if diff := cmp.Diff(wantMetrics, field(old, "spec", "metrics")); diff != "" {
			t.Errorf("metrics (-want +got):\n%s", diff)
		}
		if got := field(old, "spec", "behavior", "scaleDown", "stabilizationWindowSeconds"); got != float64(120) {
			t.Errorf("behavior: %v", field(old, "spec", "behavior"))
		}
		if out, err := kubectlIn(t, ctx, nil, "", p.Kubeconfig, "patch", "horizontalpodautoscalers.v2beta2.autoscaling", "web", "-n", "default", "--type=merge", "-p", `{"spec":{"maxReplicas":12}}`); err != nil {
			t.Fatalf("kubectl patch: %v\n%s", err, out)
		}
		if got := field(getJSON(t, ctx, direct, "horizontalpodautoscalers.v2.autoscaling", "web", "-n", "default"), "spec", "maxReplicas"); got != float64(12) {
			t.Errorf("v2 maxReplicas %v", got)
		}
	})
}

// mapRules: MutatingAdmissionPolicy v1beta1 and v1 have the same fields.
const mapRules = `apiVersion: mvp.k8s.io/v1
kind: TransformationRules
metadata: {name: map-v1beta1-to-v1}
spec:
  apiMigrationRules:
  - apiGroup: admissionregistration.k8s.io
    resource: mutatingadmissionpolicies
    kind: MutatingAdmissionPolicy
    fromVersion: v1beta1
    toVersion: v1
    transformations: []
`

var mapV1beta1 = schema.GroupVersionResource{Group: "admissionregistration.k8s.io", Version: "v1beta1", Resource: "mutatingadmissionpolicies"}

// TestProxy_RollingUpgradeEmulatesVersionTheOldServersServed is the mixed
// state of a rolling upgrade: the v1.35 servers are configured to serve
// admissionregistration.k8s.io/v1beta1 MutatingAdmissionPolicies, the
// v1.36 servers replacing them only v1. An old client keeps reading,
// listing, updating and watching v1beta1 through the proxy: while an old
// server is ready it answers, once the last one is gone the proxy emulates
// v1beta1 on v1, and the client sees no error.
func TestProxy_RollingUpgradeEmulatesVersionTheOldServersServed(t *testing.T) {
	if testing.Short() {
		t.Skip("a rolling upgrade takes a minute")
	}
	cp := framework.Start(t, framework.Options{
		Versions: []string{oldVersion, oldVersion},
		VersionArgs: map[string][]string{oldVersion: {
			"--runtime-config=admissionregistration.k8s.io/v1beta1=true",
			"--feature-gates=MutatingAdmissionPolicy=true",
		}},
	})
	rulesFile := filepath.Join(t.TempDir(), "map.yaml")
	if err := os.WriteFile(rulesFile, []byte(mapRules), 0o644); err != nil {
		t.Fatal(err)
	}
	p := startProxy(t, cp, "--rules", rulesFile, "--refresh-interval", "2s")
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Minute)
	defer cancel()
	cfg := p.tokenConfig(cp)
	cfg.Timeout = 30 * time.Second
	dyn := dynamic.NewForConfigOrDie(cfg)
	policy := newPolicy("mixed")
	policy.SetAPIVersion("admissionregistration.k8s.io/v1beta1")
	if _, err := dyn.Resource(mapV1beta1).Create(ctx, policy, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating a v1beta1 policy through the proxy: %v", err)
	}

	loadCtx, stopLoad := context.WithCancel(ctx)
	var res loadResult
	var wg sync.WaitGroup
	for w := range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; loadCtx.Err() == nil; i++ {
				res.requests.Add(1)
				switch i % 3 {
				case 0:
					obj, err := dyn.Resource(mapV1beta1).Get(loadCtx, "mixed", metav1.GetOptions{})
					if err == nil && obj.GetAPIVersion() != "admissionregistration.k8s.io/v1beta1" {
						err = fmt.Errorf("get answered %s", obj.GetAPIVersion())
					}
					if err != nil && loadCtx.Err() == nil {
						res.fail(classify("get", err), err)
					}
				case 1:
					l, err := dyn.Resource(mapV1beta1).List(loadCtx, metav1.ListOptions{})
					if err == nil && (len(l.Items) != 1 || l.Items[0].GetAPIVersion() != "admissionregistration.k8s.io/v1beta1") {
						err = fmt.Errorf("list: %d items", len(l.Items))
					}
					if err != nil && loadCtx.Err() == nil {
						res.fail(classify("list", err), err)
					}
				case 2:
					err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
						obj, err := dyn.Resource(mapV1beta1).Get(loadCtx, "mixed", metav1.GetOptions{})
						if err != nil {
							return err
						}
						obj.SetLabels(map[string]string{"writer": strconv.Itoa(w), "n": strconv.Itoa(i)})
						_, err = dyn.Resource(mapV1beta1).Update(loadCtx, obj, metav1.UpdateOptions{})
						return err
					})
					if err != nil && loadCtx.Err() == nil {
						res.fail(classify("update", err), err)
					}
				}
				time.Sleep(20 * time.Millisecond)
			}
		}()
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		rv := ""
		for loadCtx.Err() == nil {
			w, err := dyn.Resource(mapV1beta1).Watch(loadCtx, metav1.ListOptions{ResourceVersion: rv})
			if err != nil {
				if loadCtx.Err() == nil {
					res.fail(classify("watch", err), err)
					time.Sleep(100 * time.Millisecond)
				}
				continue
			}
			res.watches.Add(1)
			for ev := range w.ResultChan() {
				if ev.Type == watch.Error {
					if loadCtx.Err() != nil {
						break // client-go's own "context canceled" as the load stops
					}
					if st := apierrors.FromObject(ev.Object); apierrors.IsResourceExpired(st) || apierrors.IsGone(st) {
						res.expired.Add(1)
						rv = ""
						continue
					}
					res.fail("watch error event", apierrors.FromObject(ev.Object))
					continue
				}
				u, ok := ev.Object.(*unstructured.Unstructured)
				if !ok || u.GetAPIVersion() != "admissionregistration.k8s.io/v1beta1" {
					res.fail("watch event of another version", fmt.Errorf("%s %#v", ev.Type, ev.Object))
					continue
				}
				rv = u.GetResourceVersion()
			}
		}
	}()

	time.Sleep(settle)
	for i := range cp.Servers() {
		if _, err := cp.Replace(ctx, i, newVersion); err != nil {
			t.Fatal(err)
		}
		time.Sleep(settle)
	}
	stopLoad()
	wg.Wait()
	t.Logf("%d requests, %d watch sessions, %d expired, client-visible errors %v", res.requests.Load(), res.watches.Load(), res.expired.Load(), res.kinds())
	if res.total() != 0 {
		t.Errorf("%d client-visible errors: %v\nexamples: %v", res.total(), res.kinds(), res.examples)
	}
	metrics := p.metricsText(t)
	var routed, emulated bool
	for _, line := range strings.Split(metrics, "\n") {
		if !strings.HasPrefix(line, "mvpctl_proxy_requests_total{") || !strings.Contains(line, `version="v1beta1"`) || !strings.Contains(line, `resource="mutatingadmissionpolicies"`) {
			continue
		}
		routed = routed || strings.Contains(line, `decision="local"`) || strings.Contains(line, `decision="rerouted"`)
		emulated = emulated || strings.Contains(line, `decision="emulated"`)
	}
	if !routed || !emulated {
		t.Errorf("v1beta1 requests routed to an old server: %v, emulated: %v\n%s", routed, emulated, metrics)
	}
	// Direct to a new server, v1beta1 is gone.
	_, err := dynamic.NewForConfigOrDie(cp.Server(0).RESTConfig()).Resource(mapV1beta1).Get(ctx, "mixed", metav1.GetOptions{})
	if !apierrors.IsNotFound(err) {
		t.Errorf("v1beta1 direct to a v1.36 server: want 404, got %v", err)
	}
}
