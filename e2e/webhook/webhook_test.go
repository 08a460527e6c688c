package webhook_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/yaml"

	"github.com/mvpctl/mvpctl/e2e/framework"
)

// roundTripAnnotation is where mvpctl keeps what a version cannot hold.
const roundTripAnnotation = "mvp.k8s.io/conversion-data"

// namespace holds the test's Widgets.
const namespace = "default"

func gvr(version string) schema.GroupVersionResource {
	return schema.GroupVersionResource{Group: group, Version: version, Resource: "widgets"}
}

// written is the spec of a Widget written in each version, with every
// field that version has.
var written = map[string]map[string]any{
	"v1alpha1": {"replicaCount": 3, "legacyTimeout": 30, "tier": "M", "debug": true,
		"image": "registry.example/widget:1.0", "payload": "alpha", "tags": []any{"a", "b"}},
	"v1beta1": {"replicas": 2, "config": map[string]any{"timeoutSeconds": 10}, "tier": "large",
		"image": "registry.example/widget:2.0", "payload": "beta", "tags": []any{"c"}},
	"v1": {"replicas": 5, "config": map[string]any{"timeoutSeconds": 60}, "tier": "small",
		"container": map[string]any{"image": "registry.example/widget:3.0"}, "paused": true,
		"payload": "ga", "tags": []any{"d", "e", "f"}},
}

// readAs is the spec of written[from] read in version to: what the rules
// say, written out by hand.
var readAs = map[string]map[string]map[string]any{
	"v1alpha1": {
		"v1alpha1": written["v1alpha1"],
		"v1beta1": {"replicas": 3, "config": map[string]any{"timeoutSeconds": 30}, "tier": "medium",
			"image": "registry.example/widget:1.0", "payload": "alpha", "tags": []any{"a", "b"}},
		"v1": {"replicas": 3, "config": map[string]any{"timeoutSeconds": 30}, "tier": "medium",
			"container": map[string]any{"image": "registry.example/widget:1.0"}, "payload": "alpha", "tags": []any{"a", "b"}},
	},
	"v1beta1": {
		"v1alpha1": {"replicaCount": 2, "legacyTimeout": 10, "tier": "L",
			"image": "registry.example/widget:2.0", "payload": "beta", "tags": []any{"c"}},
		"v1beta1": written["v1beta1"],
		"v1": {"replicas": 2, "config": map[string]any{"timeoutSeconds": 10}, "tier": "large",
			"container": map[string]any{"image": "registry.example/widget:2.0"}, "payload": "beta", "tags": []any{"c"}},
	},
	"v1": {
		"v1alpha1": {"replicaCount": 5, "legacyTimeout": 60, "tier": "S",
			"image": "registry.example/widget:3.0", "payload": "ga", "tags": []any{"d", "e", "f"}},
		"v1beta1": {"replicas": 5, "config": map[string]any{"timeoutSeconds": 60}, "tier": "small",
			"image": "registry.example/widget:3.0", "payload": "ga", "tags": []any{"d", "e", "f"}},
		"v1": written["v1"],
	},
}

// keepsData says which reads must carry the round-trip annotation: what
// the version read cannot hold of the version written (v1alpha1's debug,
// v1's paused).
func keepsData(from, to string) bool {
	return from == "v1alpha1" && to != "v1alpha1" || from == "v1" && to != "v1"
}

// widget is a Widget named name in version v with spec, a label and an
// annotation of its own (which every conversion must keep).
func widget(name, v string, spec map[string]any) map[string]any {
	return map[string]any{
		"apiVersion": group + "/" + v,
		"kind":       "Widget",
		"metadata": map[string]any{
			"name": name, "namespace": namespace,
			"labels":      map[string]any{"app": "e2e"},
			"annotations": map[string]any{"example.com/owner": "team-a"},
		},
		"spec": spec,
	}
}

func mustJSON(t testing.TB, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// normal is v through JSON, so that int64 and float64 numbers compare.
func normal(t testing.TB, v any) any {
	t.Helper()
	var out any
	if err := json.Unmarshal([]byte(mustJSON(t, v)), &out); err != nil {
		t.Fatal(err)
	}
	return out
}

// checkRead compares a Widget read in version to with written[from]'s
// expected form: spec, apiVersion, the label and annotation of its own,
// and the round-trip annotation exactly where data must travel.
func checkRead(t testing.TB, what string, obj *unstructured.Unstructured, from, to string, spec map[string]any) {
	t.Helper()
	if got, want := obj.GetAPIVersion(), group+"/"+to; got != want {
		t.Errorf("%s: apiVersion %s, want %s", what, got, want)
	}
	if diff := cmp.Diff(normal(t, spec), normal(t, obj.Object["spec"])); diff != "" {
		t.Errorf("%s: spec (-want +got):\n%s", what, diff)
	}
	if obj.GetLabels()["app"] != "e2e" || obj.GetAnnotations()["example.com/owner"] != "team-a" {
		t.Errorf("%s: lost its own label or annotation: %v %v", what, obj.GetLabels(), obj.GetAnnotations())
	}
	_, has := obj.GetAnnotations()[roundTripAnnotation]
	switch {
	case from == to && has:
		t.Errorf("%s: read in the version it was written in, it carries %s: %v", what, roundTripAnnotation, obj.GetAnnotations())
	case keepsData(from, to) && !has:
		t.Errorf("%s: %s cannot hold everything of %s, but there is no %s", what, to, from, roundTripAnnotation)
	}
}

// TestWebhook runs mvpctl webhook for the Widget CRD on a real
// kube-apiserver, under the RBAC of deploy/webhook, and proves it phase
// by phase; a phase that fails stops the rest.
func TestWebhook(t *testing.T) {
	top := t
	kubeCacheDir = t.TempDir()
	defer func() { kubeCacheDir = "" }()
	cp := framework.Start(t, framework.Options{Versions: []string{serverVersion}})
	kc := cp.Server(0).Kubeconfig
	dyn, err := dynamic.NewForConfig(cp.Server(0).RESTConfig())
	if err != nil {
		t.Fatal(err)
	}
	var saKubeconfig string
	var w *webhook
	phases := []struct {
		name string
		run  func(t *testing.T)
	}{
		{"DeployBase", func(t *testing.T) { saKubeconfig = testDeployBase(t, top, cp, kc) }},
		{"WiredByManageCRDs", func(t *testing.T) { w = testWiring(t, top, kc, dyn, saKubeconfig) }},
		{"EveryVerbEveryVersion", func(t *testing.T) { testVerbs(t, kc, dyn) }},
		{"CheckAgainstCluster", func(t *testing.T) { testCheck(t, kc) }},
		{"StoppedWhileClientsWork", func(t *testing.T) { testStopped(t, dyn, w) }},
		{"CertRotationDuringLIST", func(t *testing.T) { testRotation(t, kc, dyn, w) }},
	}
	for _, p := range phases {
		if !t.Run(p.name, p.run) {
			return
		}
	}
}

// testDeployBase renders deploy/webhook, checks that mvpctl accepts the
// Deployment's flags, has the server accept every manifest (dry run, then
// for real), checks what the ServiceAccount may do, and returns a
// kubeconfig with its token: the webhook runs as the pod would.
func testDeployBase(t *testing.T, top testing.TB, cp *framework.ControlPlane, kc string) string {
	rendered := mustKubectl(t, kc, "", "kustomize", "../../deploy/webhook")

	var args []string
	for _, doc := range strings.Split(rendered, "\n---\n") {
		if !strings.Contains(doc, "\nkind: Deployment\n") {
			continue
		}
		var d appsv1.Deployment
		if err := yaml.UnmarshalStrict([]byte(doc), &d); err != nil {
			t.Fatal(err)
		}
		if n := len(d.Spec.Template.Spec.Containers); n != 1 || *d.Spec.Replicas != 2 {
			t.Fatalf("want one container and two replicas, got %d containers and %d replicas", n, *d.Spec.Replicas)
		}
		args = d.Spec.Template.Spec.Containers[0].Args
	}
	if len(args) == 0 || args[0] != "webhook" {
		t.Fatalf("the Deployment does not run mvpctl webhook: %q", args)
	}
	for _, a := range args[1:] {
		if !strings.HasPrefix(a, "--") {
			t.Errorf("deploy/webhook/deployment.yaml: stray argument %q", a)
		}
	}
	// cobra parses every flag before it looks at --help: a flag mvpctl does
	// not know (renamed, removed) fails here as it would crash-loop a pod.
	if _, err := run(t, "", framework.Mvpctl(t), append(args, "--help")...); err != nil {
		t.Errorf("deploy/webhook/deployment.yaml: %v", err)
	}

	if _, err := kubectl(t, kc, "", "get", "namespace", "mvpctl-system"); err != nil {
		mustKubectl(t, kc, "", "create", "namespace", "mvpctl-system")
	}
	out, err := kubectl(t, kc, rendered, "apply", "--dry-run=server", "-f", "-")
	if err != nil {
		t.Fatalf("server-side dry run of deploy/webhook: %v", err)
	}
	if got, want := strings.Count(out, "(server dry run)"), strings.Count(rendered, "\nkind: "); got != want || want < 10 {
		t.Errorf("%d objects accepted in the dry run, want %d (at least 10):\n%s", got, want, out)
	}
	mustKubectl(t, kc, rendered, "apply", "-f", "-")

	// The TransformationRules CRD (deploy/crd), for --rules-from-cluster.
	mustKubectl(t, kc, "", "apply", "-k", "../../deploy/crd")
	// What the ServiceAccount may do, asked as kubectl auth can-i --as
	// asks (a SubjectAccessReview).
	cs, err := kubernetes.NewForConfig(cp.Server(0).RESTConfig())
	if err != nil {
		t.Fatal(err)
	}
	sa := "system:serviceaccount:mvpctl-system:mvpctl-webhook"
	const crds, ext = "customresourcedefinitions", "apiextensions.k8s.io"
	for _, c := range []struct {
		verb, group, resource, subresource, name, namespace string
		want                                                bool
	}{
		{"get", ext, crds, "", crdName, "", true},
		{"list", ext, crds, "", crdName, "", true}, // with fieldSelector metadata.name
		{"watch", ext, crds, "", crdName, "", true},
		{"update", ext, crds, "", crdName, "", true},
		{"patch", ext, crds, "", crdName, "", true},
		{"list", ext, crds, "", "", "", false},
		{"create", ext, crds, "", "", "", false},
		{"delete", ext, crds, "", crdName, "", false},
		{"update", ext, crds, "", "transformationrules.mvp.k8s.io", "", false},
		{"update", ext, crds, "status", crdName, "", false},
		{"create", "", "events", "", "", "default", true},
		{"create", "", "events", "", "", "kube-system", false},
		{"watch", "mvp.k8s.io", "transformationrules", "", "", "", true},
		{"update", "mvp.k8s.io", "transformationrules", "status", "x", "", true},
		{"update", "mvp.k8s.io", "transformationrules", "", "x", "", false},
		{"list", group, "widgets", "", "", "", false},
		{"get", "", "secrets", "", "", "mvpctl-system", false},
		{"impersonate", "", "users", "", "", "", false},
	} {
		sar := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
			User:   sa,
			Groups: []string{"system:serviceaccounts", "system:serviceaccounts:mvpctl-system", "system:authenticated"},
			ResourceAttributes: &authorizationv1.ResourceAttributes{
				Verb: c.verb, Group: c.group, Resource: c.resource, Subresource: c.subresource, Name: c.name, Namespace: c.namespace,
			},
		}}
		got, err := cs.AuthorizationV1().SubjectAccessReviews().Create(t.Context(), sar, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if got.Status.Allowed != c.want {
			t.Errorf("may %s %s %s.%s/%s %q in %q? %v, want %v", sa, c.verb, c.resource, c.group, c.subresource, c.name, c.namespace, got.Status.Allowed, c.want)
		}
	}

	token := strings.TrimSpace(mustKubectl(t, kc, "", "create", "token", "mvpctl-webhook", "-n", "mvpctl-system", "--duration", "1h"))
	path := filepath.Join(top.TempDir(), "sa.kubeconfig")
	cfg := "apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster:\n    server: " + cp.Server(0).URL +
		"\n    certificate-authority: " + cp.PKI.CAFile + "\nusers:\n- name: sa\n  user:\n    token: " + token +
		"\ncontexts:\n- name: c\n  context: {cluster: c, user: sa}\ncurrent-context: c\n"
	if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// testWiring creates the CRD without conversion, starts the webhook with
// --manage-crds as the deploy base's ServiceAccount, and waits until the
// CRD points at it and the apiserver converts through it.
func testWiring(t *testing.T, top testing.TB, kc string, dyn dynamic.Interface, saKubeconfig string) *webhook {
	mustKubectl(t, kc, "", "apply", "-f", crdFile)
	mustKubectl(t, kc, "", "wait", "--for=condition=Established", "--timeout=60s", "crd/"+crdName)
	if got := strings.TrimSpace(mustKubectl(t, kc, "", "get", "crd", crdName, "-o", "jsonpath={.spec.conversion.strategy}")); got != "None" {
		t.Fatalf("the CRD starts with conversion strategy %q, want None", got)
	}

	// A second CRD the rules cover but cannot fully convert; the user
	// lists it in the ClusterRole, as deploy/webhook/rbac.yaml says to.
	mustKubectl(t, kc, "", "apply", "-f", gadgetCRDFile)
	mustKubectl(t, kc, "", "patch", "clusterrole", "mvpctl-webhook", "--type", "json",
		"-p", `[{"op":"add","path":"/rules/0/resourceNames/-","value":"`+gadgetCRDName+`"}]`)
	gadgetConversion := mustKubectl(t, kc, "", "get", "crd", gadgetCRDName, "-o", "jsonpath={.spec.conversion}")

	w := startWebhook(t, top, saKubeconfig, "--rules", gadgetRulesFile, "--manage-crds", "--webhook-url", "$URL")

	type conversion struct {
		Strategy string `json:"strategy"`
		Webhook  struct {
			ClientConfig struct {
				URL      string `json:"url"`
				CABundle []byte `json:"caBundle"`
			} `json:"clientConfig"`
			ConversionReviewVersions []string `json:"conversionReviewVersions"`
		} `json:"webhook"`
	}
	var got conversion
	eventually(t, 60*time.Second, "--manage-crds to wire the CRD", func() (bool, error) {
		out, err := kubectl(t, kc, "", "get", "crd", crdName, "-o", "jsonpath={.spec.conversion}")
		if err != nil {
			return false, err
		}
		got = conversion{}
		if err := json.Unmarshal([]byte(out), &got); err != nil {
			return false, err
		}
		return got.Strategy == "Webhook", fmt.Errorf("spec.conversion: %s", out)
	})
	if got.Webhook.ClientConfig.URL != w.URL {
		t.Errorf("clientConfig.url %q, want %q", got.Webhook.ClientConfig.URL, w.URL)
	}
	if !bytes.Equal(got.Webhook.ClientConfig.CABundle, w.caPEM(t)) {
		t.Errorf("caBundle is not the CA of --cert-dir:\n%s", got.Webhook.ClientConfig.CABundle)
	}
	if len(got.Webhook.ConversionReviewVersions) == 0 || got.Webhook.ConversionReviewVersions[0] != "v1" {
		t.Errorf("conversionReviewVersions %q, want v1 first", got.Webhook.ConversionReviewVersions)
	}

	// The Gadget CRD is refused with a reason, as an Event, and left as
	// it was.
	var refusal string
	eventually(t, 60*time.Second, "an Event refusing "+gadgetCRDName, func() (bool, error) {
		out, err := kubectl(t, kc, "", "get", "events", "-n", "default",
			"--field-selector", "reason=ConversionRefused,involvedObject.name="+gadgetCRDName, "-o", "jsonpath={.items[*].message}")
		refusal = out
		return err == nil && out != "", err
	})
	if !strings.Contains(refusal, "v1alpha1 → v1") {
		t.Errorf("the refusal does not name the unreachable version: %q", refusal)
	}
	t.Logf("%s refused: %s", gadgetCRDName, refusal)
	if got := mustKubectl(t, kc, "", "get", "crd", gadgetCRDName, "-o", "jsonpath={.spec.conversion}"); got != gadgetConversion {
		t.Errorf("the refused CRD changed: spec.conversion %s, was %s", got, gadgetConversion)
	}

	// The apiserver's CRD handler picks the change up asynchronously: a
	// create in v1alpha1 (stored as v1) works once it converts through the
	// webhook.
	probe := &unstructured.Unstructured{Object: widget("probe", "v1alpha1", written["v1alpha1"])}
	eventually(t, 60*time.Second, "a v1alpha1 create converted by the webhook", func() (bool, error) {
		_, err := dyn.Resource(gvr("v1alpha1")).Namespace(namespace).Create(t.Context(), probe, metav1.CreateOptions{})
		return err == nil || apierrors.IsAlreadyExists(err), err
	})
	got1, err := dyn.Resource(gvr("v1")).Namespace(namespace).Get(t.Context(), "probe", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	checkRead(t, "probe read in v1", got1, "v1alpha1", "v1", readAs["v1alpha1"]["v1"])
	if err := dyn.Resource(gvr("v1")).Namespace(namespace).Delete(t.Context(), "probe", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	return w
}

// replicasField and timeoutPath name, in version v, fields that were
// renamed or moved between versions.
func replicasField(v string) string {
	if v == "v1alpha1" {
		return "replicaCount"
	}
	return "replicas"
}

func timeoutPath(v string) string {
	if v == "v1alpha1" {
		return "/spec/legacyTimeout"
	}
	return "/spec/config/timeoutSeconds"
}

// testVerbs runs every kubectl verb in every version and reads each
// object back in every version.
func testVerbs(t *testing.T, kc string, dyn dynamic.Interface) {
	get := func(name, v string) *unstructured.Unstructured {
		t.Helper()
		obj, err := dyn.Resource(gvr(v)).Namespace(namespace).Get(t.Context(), name, metav1.GetOptions{})
		if err != nil {
			t.Fatalf("get %s in %s: %v", name, v, err)
		}
		return obj
	}
	v1spec := func(name string) map[string]any {
		t.Helper()
		return get(name, "v1").Object["spec"].(map[string]any)
	}

	// Create in each version; read each back in every version.
	for _, from := range versions {
		mustKubectl(t, kc, mustJSON(t, widget("w-"+from, from, written[from])), "create", "-f", "-")
	}
	for _, from := range versions {
		for _, to := range versions {
			checkRead(t, fmt.Sprintf("w-%s read in %s", from, to), get("w-"+from, to), from, to, readAs[from][to])
		}
	}

	// List in each version.
	for _, v := range versions {
		resource := "widgets." + v + "." + group
		var list unstructured.UnstructuredList
		if err := json.Unmarshal([]byte(mustKubectl(t, kc, "", "get", resource, "-n", namespace, "-o", "json")), &list); err != nil {
			t.Fatal(err)
		}
		if len(list.Items) != len(versions) {
			t.Fatalf("kubectl get %s: %d items, want %d", resource, len(list.Items), len(versions))
		}
		for i := range list.Items {
			item := &list.Items[i]
			from := strings.TrimPrefix(item.GetName(), "w-")
			checkRead(t, "kubectl get "+resource+": "+item.GetName(), item, from, v, readAs[from][v])
		}
	}

	for _, v := range versions {
		resource := "widgets." + v + "." + group
		t.Run(v, func(t *testing.T) {
			// watch, while the object changes by a merge patch
			name := "w-" + v
			watch := startKubectlWatch(t, kc, resource, name)
			watch.next(t, "ADDED", func(obj *unstructured.Unstructured) bool {
				return obj.GetAPIVersion() == group+"/"+v
			})
			mustKubectl(t, kc, "", "patch", resource, name, "-n", namespace, "--type", "merge",
				"-p", `{"spec":{"`+replicasField(v)+`":4}}`)
			watch.next(t, "MODIFIED", func(obj *unstructured.Unstructured) bool {
				n, _, _ := unstructured.NestedInt64(obj.Object, "spec", replicasField(v))
				return obj.GetAPIVersion() == group+"/"+v && n == 4
			})
			if got := v1spec(name)["replicas"]; got != int64(4) {
				t.Errorf("after a merge patch in %s, v1 replicas = %v, want 4", v, got)
			}

			// JSON patch, of the field that moved into config in v1beta1
			mustKubectl(t, kc, "", "patch", resource, name, "-n", namespace, "--type", "json",
				"-p", `[{"op":"replace","path":"`+timeoutPath(v)+`","value":45}]`)
			watch.next(t, "MODIFIED", func(obj *unstructured.Unstructured) bool {
				n, _, _ := unstructured.NestedFieldNoCopy(obj.Object, strings.Split(strings.TrimPrefix(timeoutPath(v), "/"), "/")...)
				return n == int64(45)
			})
			if got, _, _ := unstructured.NestedInt64(get(name, "v1").Object, "spec", "config", "timeoutSeconds"); got != 45 {
				t.Errorf("after a JSON patch in %s, v1 config.timeoutSeconds = %d, want 45", v, got)
			}

			// Strategic merge patch: custom resources have no patch
			// strategies, and kube-apiserver refuses it (415) whatever the
			// conversion; nothing changes.
			before := v1spec(name)
			out, err := kubectl(t, kc, "", "patch", resource, name, "-n", namespace, "--type", "strategic",
				"-p", `{"spec":{"`+replicasField(v)+`":99}}`)
			if err == nil || !strings.Contains(err.Error(), "strategic-merge-patch+json is not supported") ||
				!strings.Contains(err.Error(), "the body of the request was in an unknown format") {
				t.Errorf("strategic merge patch of a custom resource: want kube-apiserver's 415 (unknown format), got %v %s", err, out)
			}
			if diff := cmp.Diff(before, v1spec(name)); diff != "" {
				t.Errorf("a refused strategic merge patch changed the object (-before +after):\n%s", diff)
			}

			// server-side apply, twice (create, then change), and delete
			ssa := "ssa-" + v
			obj := widget(ssa, v, written[v])
			mustKubectl(t, kc, mustJSON(t, obj), "apply", "--server-side", "--field-manager", "e2e-ssa", "-f", "-")
			checkRead(t, ssa+" read in v1", get(ssa, "v1"), v, "v1", readAs[v]["v1"])
			obj["spec"].(map[string]any)[replicasField(v)] = 7
			mustKubectl(t, kc, mustJSON(t, obj), "apply", "--server-side", "--field-manager", "e2e-ssa", "-f", "-")
			if got := v1spec(ssa)["replicas"]; got != int64(7) {
				t.Errorf("after a second server-side apply in %s, v1 replicas = %v, want 7", v, got)
			}
			mine := get(ssa, v)
			found := false
			for _, mf := range mine.GetManagedFields() {
				if mf.Manager == "e2e-ssa" && mf.Operation == metav1.ManagedFieldsOperationApply {
					found = mf.APIVersion == group+"/"+v
				}
			}
			if !found {
				t.Errorf("%s read in %s: no Apply entry of e2e-ssa for %s/%s in managedFields: %+v", ssa, v, group, v, mine.GetManagedFields())
			}
			mustKubectl(t, kc, "", "delete", resource, ssa, "-n", namespace, "--wait=true")
			for _, to := range versions {
				_, err := dyn.Resource(gvr(to)).Namespace(namespace).Get(t.Context(), ssa, metav1.GetOptions{})
				if !apierrors.IsNotFound(err) {
					t.Errorf("%s deleted in %s, read in %s: want NotFound, got %v", ssa, v, to, err)
				}
			}
		})
	}

	// An older client writes back what it read: what its version cannot
	// hold comes back from the round-trip annotation. w-v1 has paused: true,
	// which v1alpha1 lacks; w-v1alpha1 has debug: true, which v1 lacks.
	for _, c := range []struct{ name, via, check, field string }{
		{"w-v1", "v1alpha1", "v1", "paused"},
		{"w-v1alpha1", "v1", "v1alpha1", "debug"},
	} {
		resource := "widgets." + c.via + "." + group
		var obj map[string]any
		if err := json.Unmarshal([]byte(mustKubectl(t, kc, "", "get", resource, c.name, "-n", namespace, "-o", "json")), &obj); err != nil {
			t.Fatal(err)
		}
		if _, ok := obj["spec"].(map[string]any)[c.field]; ok {
			t.Fatalf("%s read in %s has %s", c.name, c.via, c.field)
		}
		obj["spec"].(map[string]any)[replicasField(c.via)] = 9
		mustKubectl(t, kc, mustJSON(t, obj), "replace", "-f", "-")
		back := get(c.name, c.check)
		if got, _, _ := unstructured.NestedBool(back.Object, "spec", c.field); !got {
			t.Errorf("%s replaced through %s: spec.%s lost in %s: %v", c.name, c.via, c.field, c.check, back.Object["spec"])
		}
		if got, _, _ := unstructured.NestedInt64(back.Object, "spec", replicasField(c.check)); got != 9 {
			t.Errorf("%s replaced through %s: the change is not in %s: %v", c.name, c.via, c.check, back.Object["spec"])
		}
		if _, has := back.GetAnnotations()[roundTripAnnotation]; has {
			t.Errorf("%s read in %s after the write-back still carries %s", c.name, c.check, roundTripAnnotation)
		}
	}
}

// testCheck runs mvpctl webhook check against the cluster: the Widgets
// stored so far convert to every version and back (exit 0); the Gadget
// CRD's versions are out of the rules' reach (exit 1, naming them).
func testCheck(t *testing.T, kc string) {
	out, err := run(t, "", framework.Mvpctl(t), "webhook", "check", "--rules", rulesFile, "--crd", crdName, "--kubeconfig", kc)
	if err != nil {
		t.Fatalf("mvpctl webhook check --crd %s: %v", crdName, err)
	}
	var objects int
	if _, err := fmt.Sscanf(out[strings.LastIndex(strings.TrimSpace(out), "\n")+1:], "1 CRDs, %d objects checked", &objects); err != nil || objects < len(versions) {
		t.Errorf("mvpctl webhook check --crd %s: want at least %d objects checked, got %q", crdName, len(versions), out)
	}
	out, err = run(t, "", framework.Mvpctl(t), "webhook", "check", "--rules", gadgetRulesFile, "--crd", gadgetCRDName, "--kubeconfig", kc)
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 1 || !strings.Contains(err.Error(), "v1alpha1 → v1") {
		t.Errorf("mvpctl webhook check --crd %s: want exit 1 naming v1alpha1 → v1, got %v\n%s", gadgetCRDName, err, out)
	}
}

// kubectlWatch is a running `kubectl get --watch -o json --output-watch-events`.
type kubectlWatch struct {
	events chan watchEvent
	cmd    *exec.Cmd
}

type watchEvent struct {
	Type   string                     `json:"type"`
	Object *unstructured.Unstructured `json:"object"`
}

func startKubectlWatch(t *testing.T, kc, resource, name string) *kubectlWatch {
	t.Helper()
	ctx, cancel := context.WithCancel(t.Context())
	cmd := exec.CommandContext(ctx, kubectlPath(t), "--kubeconfig", kc, "get", resource, name, "-n", namespace,
		"--watch", "-o", "json", "--output-watch-events")
	cmd.Env = append(os.Environ(), "KUBECACHEDIR="+kubeCache(t))
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	w := &kubectlWatch{events: make(chan watchEvent, 16), cmd: cmd}
	var wg sync.WaitGroup
	wg.Go(func() {
		defer close(w.events)
		dec := json.NewDecoder(bufio.NewReader(stdout))
		for {
			var e watchEvent
			if err := dec.Decode(&e); err != nil {
				if err != io.EOF && ctx.Err() == nil {
					t.Errorf("kubectl watch %s: %v; stderr: %s", resource, err, stderr.String())
				}
				return
			}
			select {
			case w.events <- e:
			case <-ctx.Done():
				return
			}
		}
	})
	t.Cleanup(func() {
		cancel()
		cmd.Wait()
		wg.Wait()
	})
	return w
}

// next waits for an event of type typ whose object satisfies ok; other
// events are skipped.
func (w *kubectlWatch) next(t *testing.T, typ string, ok func(*unstructured.Unstructured) bool) {
	t.Helper()
	timeout := time.After(60 * time.Second)
	for {
		select {
		case e, open := <-w.events:
			if !open {
				t.Fatalf("kubectl watch ended before a %s event", typ)
			}
			if e.Type == typ && e.Object != nil && ok(e.Object) {
				return
			}
		case <-timeout:
			t.Fatalf("no %s event within 60s", typ)
		}
	}
}

// clientOps are the outcomes of the client loop's operations.
type clientOps struct {
	mu       sync.Mutex
	ok, fail int
	created  map[string]bool // name: the create succeeded
	errs     []error
}

func (c *clientOps) record(name string, err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if name != "" {
		c.created[name] = err == nil
	}
	if err == nil {
		c.ok++
	} else {
		c.fail++
		c.errs = append(c.errs, err)
	}
}

func (c *clientOps) counts() (ok, fail int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.ok, c.fail
}

// testStopped kills the webhook while a client creates, gets and lists
// Widgets in versions that need conversion: the apiserver answers clear
// errors, reads and writes in the stored version go on, nothing is half
// written or lost, and everything works again after a restart.
func testStopped(t *testing.T, dyn dynamic.Interface, w *webhook) {
	ops := &clientOps{created: map[string]bool{}}
	ctx, cancel := context.WithCancel(t.Context())
	var wg sync.WaitGroup
	wg.Go(func() {
		for i := 0; ctx.Err() == nil; i++ {
			name := fmt.Sprintf("out-%d", i)
			obj := widget(name, "v1alpha1", map[string]any{"replicaCount": i, "tier": "S", "debug": true, "image": "x"})
			obj["metadata"].(map[string]any)["labels"].(map[string]any)["phase"] = "outage"
			_, err := dyn.Resource(gvr("v1alpha1")).Namespace(namespace).Create(ctx, &unstructured.Unstructured{Object: obj}, metav1.CreateOptions{})
			if ctx.Err() != nil {
				// The create may or may not have reached the server.
				ops.mu.Lock()
				delete(ops.created, name)
				ops.mu.Unlock()
				return
			}
			ops.record(name, err)
			_, err = dyn.Resource(gvr("v1beta1")).Namespace(namespace).Get(ctx, "w-v1", metav1.GetOptions{})
			if ctx.Err() == nil {
				ops.record("", err)
			}
			_, err = dyn.Resource(gvr("v1alpha1")).Namespace(namespace).List(ctx, metav1.ListOptions{LabelSelector: "phase=outage"})
			if ctx.Err() == nil {
				ops.record("", err)
			}
		}
	})
	defer func() {
		cancel()
		wg.Wait()
	}()
	waitOps := func(what string, okAtLeast, failAtLeast int) {
		t.Helper()
		eventually(t, 90*time.Second, what, func() (bool, error) {
			ok, fail := ops.counts()
			return ok >= okAtLeast && fail >= failAtLeast, fmt.Errorf("%d ok, %d failed", ok, fail)
		})
	}

	waitOps("the client working", 9, 0)
	w.kill()
	ok0, _ := ops.counts()
	waitOps("requests failing while the webhook is down", ok0, 6)

	// What needs no conversion works meanwhile: the stored version.
	if _, err := dyn.Resource(gvr("v1")).Namespace(namespace).Get(t.Context(), "w-v1", metav1.GetOptions{}); err != nil {
		t.Errorf("get in the stored version while the webhook is down: %v", err)
	}
	stored := &unstructured.Unstructured{Object: widget("stored-while-down", "v1", written["v1"])}
	if _, err := dyn.Resource(gvr("v1")).Namespace(namespace).Create(t.Context(), stored, metav1.CreateOptions{}); err != nil {
		t.Errorf("create in the stored version while the webhook is down: %v", err)
	}

	w.start(t)
	w.waitReady(t)
	ok1, fail1 := ops.counts()
	waitOps("the client working again after the restart", ok1+9, fail1)
	cancel()
	wg.Wait()

	ops.mu.Lock()
	defer ops.mu.Unlock()
	for _, err := range ops.errs {
		// kube-apiserver's answer when the webhook cannot be reached: a 500
		// Status naming the conversion webhook and why.
		if !apierrors.IsInternalError(err) || !strings.Contains(err.Error(), "conversion webhook for "+group) {
			t.Errorf("while the webhook was down: want an InternalError naming the conversion webhook, got %T %v", err, err)
		}
	}
	t.Logf("client: %d requests ok, %d failed (first error: %v)", ops.ok, ops.fail, ops.errs[0])

	list, err := dyn.Resource(gvr("v1")).Namespace(namespace).List(t.Context(), metav1.ListOptions{LabelSelector: "phase=outage"})
	if err != nil {
		t.Fatal(err)
	}
	stillThere := map[string]bool{}
	for i := range list.Items {
		item := &list.Items[i]
		stillThere[item.GetName()] = true
		var n int
		fmt.Sscanf(item.GetName(), "out-%d", &n)
		want := map[string]any{"replicas": n, "tier": "small", "container": map[string]any{"image": "x"}}
		checkRead(t, item.GetName()+" read in v1", item, "v1alpha1", "v1", want)
		if ok, known := ops.created[item.GetName()]; known && !ok {
			// Stored, then the response's conversion back to v1alpha1
			// failed as the webhook died: kube-apiserver's behaviour with
			// any webhook. The object is whole, as checked above.
			t.Logf("%s is stored although its create answered an error", item.GetName())
		}
	}
	for name, ok := range ops.created {
		if ok && !stillThere[name] {
			t.Errorf("%s was created (201) but is not stored", name)
		}
	}
	// And it reads back in its own version, debug restored.
	for name, ok := range ops.created {
		if !ok {
			continue
		}
		obj, err := dyn.Resource(gvr("v1alpha1")).Namespace(namespace).Get(t.Context(), name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if debug, _, _ := unstructured.NestedBool(obj.Object, "spec", "debug"); !debug {
			t.Errorf("%s read in v1alpha1 lost spec.debug: %v", name, obj.Object["spec"])
		}
		break
	}
	if err := dyn.Resource(gvr("v1")).Namespace(namespace).DeleteCollection(t.Context(), metav1.DeleteOptions{}, metav1.ListOptions{LabelSelector: "phase=outage"}); err != nil {
		t.Fatal(err)
	}
}

// testRotation restarts the webhook with the shortest serving certificate
// (one minute, renewed after 40s) and LISTs and GETs in v1alpha1 through
// the apiserver, while new TLS handshakes check what it serves, until the
// certificate has changed and requests went on after: none fails.
func testRotation(t *testing.T, kc string, dyn dynamic.Interface, w *webhook) {
	if err := w.stop(10 * time.Second); err != nil {
		t.Errorf("mvpctl webhook on SIGTERM: %v", err)
	}
	w.setArg("--cert-validity", "1m")
	w.start(t)
	w.waitReady(t)
	first, err := w.servingSerial(t)
	if err != nil {
		t.Fatal(err)
	}

	// A LIST in v1alpha1 is served from that version's watch cache, whose
	// objects were converted when they were written; a GET (no
	// resourceVersion) reads etcd and calls the webhook. So each round
	// LISTs, then GETs every item listed, in v1alpha1.
	reviewsBefore := metricValue(t, w.Metrics, "mvpctl_webhook_review_objects_count{")
	var rounds, gets, failures atomic.Int64
	var firstErr atomic.Value
	fail := func(err error) {
		failures.Add(1)
		firstErr.CompareAndSwap(nil, err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	var wg sync.WaitGroup
	wg.Go(func() {
		for ctx.Err() == nil {
			l, err := dyn.Resource(gvr("v1alpha1")).Namespace(namespace).List(ctx, metav1.ListOptions{})
			switch {
			case ctx.Err() != nil:
				return
			case err != nil:
				fail(err)
				continue
			case len(l.Items) < len(versions):
				fail(fmt.Errorf("LIST: %d items, want %d", len(l.Items), len(versions)))
				continue
			}
			for _, item := range l.Items {
				_, err := dyn.Resource(gvr("v1alpha1")).Namespace(namespace).Get(ctx, item.GetName(), metav1.GetOptions{})
				switch {
				case ctx.Err() != nil:
					return
				case err != nil:
					fail(err)
				default:
					gets.Add(1)
				}
			}
			rounds.Add(1)
		}
	})
	defer func() {
		cancel()
		wg.Wait()
	}()

	handshakes, rotatedAt := 0, int64(-1)
	eventually(t, 90*time.Second, "the serving certificate to be renewed, then 10 more rounds", func() (bool, error) {
		serial, err := w.servingSerial(t)
		if err != nil {
			t.Errorf("TLS handshake with the webhook, verified against its CA: %v", err)
			return false, err
		}
		handshakes++
		if serial != first && rotatedAt < 0 {
			rotatedAt = rounds.Load()
			t.Logf("serving certificate renewed after %d rounds of LIST and GETs", rotatedAt)
		}
		return rotatedAt >= 0 && rounds.Load() >= rotatedAt+10, fmt.Errorf("%d rounds, renewed: %v", rounds.Load(), rotatedAt >= 0)
	})
	cancel()
	wg.Wait()
	if n := failures.Load(); n > 0 {
		t.Errorf("%d requests failed during the rotation; first: %v", n, firstErr.Load())
	}
	reviews := metricValue(t, w.Metrics, "mvpctl_webhook_review_objects_count{") - reviewsBefore
	if reviews < float64(gets.Load()) {
		t.Errorf("the webhook answered %.0f reviews for %d GETs that need conversion", reviews, gets.Load())
	}
	t.Logf("%d rounds (%d GETs converted by %.0f reviews) and %d new TLS handshakes across the rotation, none failed",
		rounds.Load(), gets.Load(), reviews, handshakes)

	// The CA that signs the serving certificate is in the CRD's caBundle.
	out := mustKubectl(t, kc, "", "get", "crd", crdName, "-o", "jsonpath={.spec.conversion.webhook.clientConfig.caBundle}")
	var ca []byte
	if err := json.Unmarshal([]byte(`"`+out+`"`), &ca); err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(ca, w.caPEM(t)) {
		t.Errorf("after the rotation the CRD's caBundle does not hold the CA of --cert-dir")
	}
}
