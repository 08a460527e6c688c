// The baseline tests document, against real kube-apiservers of two versions
// sharing one etcd, the problem mvpctl solves: during a rolling upgrade the
// servers behind one address answer differently.
package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/mvpctl/mvpctl/e2e/bins"
	"github.com/mvpctl/mvpctl/e2e/framework"
)

func TestMain(m *testing.M) { framework.Main(m) }

// The two sides of the upgrade the baseline is about, and what differs
// between them.
const (
	oldVersion = "v1.35.4"
	newVersion = "v1.36.3"
)

var (
	// mapGVR is served by v1.36 only: admissionregistration.k8s.io/v1
	// MutatingAdmissionPolicy went GA in v1.36.
	mapGVR = schema.GroupVersionResource{Group: "admissionregistration.k8s.io", Version: "v1", Resource: "mutatingadmissionpolicies"}
	// mapbGVR is its binding, likewise new in v1.36.
	mapbGVR = schema.GroupVersionResource{Group: "admissionregistration.k8s.io", Version: "v1", Resource: "mutatingadmissionpolicybindings"}
)

// ctxFor bounds one test's calls.
func ctxFor(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(t.Context(), d)
	t.Cleanup(cancel)
	return ctx
}

func startOldAndNew(t *testing.T) (*framework.ControlPlane, *framework.Server, *framework.Server) {
	t.Helper()
	cp := framework.Start(t, framework.Options{Versions: []string{oldVersion, newVersion}})
	return cp, cp.Server(0), cp.Server(1)
}

func TestBaseline_VersionTellsTheTruth(t *testing.T) {
	_, old, cur := startOldAndNew(t)
	ctx := ctxFor(t, time.Minute)
	for _, s := range []*framework.Server{old, cur} {
		c := kubernetes.NewForConfigOrDie(s.RESTConfig())
		v, err := c.Discovery().ServerVersion()
		if err != nil {
			t.Fatalf("server %d: /version: %v", s.Index, err)
		}
		if v.GitVersion != s.Version {
			t.Errorf("server %d: /version gitVersion = %q, want %q", s.Index, v.GitVersion, s.Version)
		}
		if want := strings.Split(s.Version, ".")[1]; v.Minor != want || v.Major != "1" {
			t.Errorf("server %d: /version major.minor = %s.%s, want 1.%s", s.Index, v.Major, v.Minor, want)
		}
		// Both authenticate the same admin certificate and token.
		tc := kubernetes.NewForConfigOrDie(s.TokenRESTConfig())
		review, err := tc.AuthenticationV1().SelfSubjectReviews().Create(ctx, &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
		if err != nil {
			t.Fatalf("server %d: SelfSubjectReview with the token: %v", s.Index, err)
		}
		if got := review.Status.UserInfo.Username; got != framework.TokenUser {
			t.Errorf("server %d: token authenticates as %q, want %q", s.Index, got, framework.TokenUser)
		}
	}
}

// A resource only the newer version serves is a 404 on the older server:
// a client sent to the wrong server of a mixed-version control plane sees
// the resource vanish.
func TestBaseline_NewResourceIs404OnOldServer(t *testing.T) {
	_, old, cur := startOldAndNew(t)
	ctx := ctxFor(t, time.Minute)
	for _, gvr := range []schema.GroupVersionResource{mapGVR, mapbGVR} {
		_, err := dynamic.NewForConfigOrDie(old.RESTConfig()).Resource(gvr).List(ctx, metav1.ListOptions{})
		if !apierrors.IsNotFound(err) {
			t.Errorf("%s: list %s: err = %v, want NotFound", old.Version, gvr, err)
		}
		if _, err := dynamic.NewForConfigOrDie(cur.RESTConfig()).Resource(gvr).List(ctx, metav1.ListOptions{}); err != nil {
			t.Errorf("%s: list %s: %v", cur.Version, gvr, err)
		}
	}

	// Created through the new server, the object is in the shared etcd
	// but the old server still answers 404 for it.
	policy := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "admissionregistration.k8s.io/v1",
		"kind":       "MutatingAdmissionPolicy",
		"metadata":   map[string]any{"name": "baseline-add-label"},
		"spec": map[string]any{
			"matchConstraints": map[string]any{"resourceRules": []any{map[string]any{
				"apiGroups": []any{""}, "apiVersions": []any{"v1"},
				"operations": []any{"CREATE"}, "resources": []any{"configmaps"},
			}}},
			"reinvocationPolicy": "Never",
			"mutations": []any{map[string]any{
				"patchType": "ApplyConfiguration",
				"applyConfiguration": map[string]any{
					"expression": `Object{metadata: Object.metadata{labels: {"mutated": "true"}}}`,
				},
			}},
		},
	}}
	if _, err := dynamic.NewForConfigOrDie(cur.RESTConfig()).Resource(mapGVR).Create(ctx, policy, metav1.CreateOptions{}); err != nil {
		t.Fatalf("%s: create MutatingAdmissionPolicy: %v", cur.Version, err)
	}
	if _, err := dynamic.NewForConfigOrDie(cur.RESTConfig()).Resource(mapGVR).Get(ctx, policy.GetName(), metav1.GetOptions{}); err != nil {
		t.Errorf("%s: get the policy: %v", cur.Version, err)
	}
	_, err := dynamic.NewForConfigOrDie(old.RESTConfig()).Resource(mapGVR).Get(ctx, policy.GetName(), metav1.GetOptions{})
	if !apierrors.IsNotFound(err) {
		t.Errorf("%s: get the policy: err = %v, want NotFound", old.Version, err)
	}
}

// gvrs returns every group/version/resource (and subresource) a server's
// discovery lists, read as client-go reads it (aggregated discovery,
// falling back to legacy) or, with legacy, from the legacy documents only.
func gvrs(t *testing.T, cfg *rest.Config, legacy bool) sets.Set[string] {
	t.Helper()
	dc := discovery.NewDiscoveryClientForConfigOrDie(cfg)
	dc.UseLegacyDiscovery = legacy
	_, lists, err := dc.ServerGroupsAndResources()
	if err != nil {
		t.Fatalf("discovery of %s: %v", cfg.Host, err)
	}
	out := sets.New[string]()
	for _, l := range lists {
		for _, r := range l.APIResources {
			out.Insert(l.GroupVersion + "/" + r.Name)
		}
	}
	return out
}

// Discovery, legacy and aggregated, differs between the versions: the new
// server lists resources the old one does not, so a discovery cache filled
// from one server is wrong for the other.
func TestBaseline_DiscoveryDiffers(t *testing.T) {
	_, old, cur := startOldAndNew(t)
	oldSet, curSet := gvrs(t, old.RESTConfig(), false), gvrs(t, cur.RESTConfig(), false)
	onlyNew := sets.List(curSet.Difference(oldSet))
	onlyOld := sets.List(oldSet.Difference(curSet))
	t.Logf("served by %s only: %v", newVersion, onlyNew)
	t.Logf("served by %s only: %v", oldVersion, onlyOld)
	for _, gvr := range []schema.GroupVersionResource{mapGVR, mapbGVR} {
		key := gvr.GroupVersion().String() + "/" + gvr.Resource
		if !slices.Contains(onlyNew, key) {
			t.Errorf("%s is not among the resources only %s serves", key, newVersion)
		}
	}
	if !oldSet.Has("v1/pods") || !curSet.Has("v1/pods") {
		t.Errorf("v1/pods missing from discovery: old %v, new %v", oldSet.Has("v1/pods"), curSet.Has("v1/pods"))
	}

	// The aggregated (v2) and legacy documents of each server agree with
	// each other, and the v2 ones differ between the servers the same way.
	for _, s := range []*framework.Server{old, cur} {
		agg := aggregatedGVRs(t, s)
		legacy := gvrs(t, s.RESTConfig(), true)
		if !agg.Equal(legacy) {
			t.Errorf("server %d (%s): aggregated and legacy discovery differ: only aggregated %v, only legacy %v",
				s.Index, s.Version, sets.List(agg.Difference(legacy)), sets.List(legacy.Difference(agg)))
		}
	}
}

// aggregatedGVRs reads /api and /apis as apidiscovery.k8s.io/v2
// APIGroupDiscoveryList documents, without client-go's discovery client.
func aggregatedGVRs(t *testing.T, s *framework.Server) sets.Set[string] {
	t.Helper()
	cfg := s.RESTConfig()
	client, err := rest.HTTPClientFor(cfg)
	if err != nil {
		t.Fatal(err)
	}
	out := sets.New[string]()
	for _, path := range []string{"/api", "/apis"} {
		req, err := http.NewRequestWithContext(ctxFor(t, 30*time.Second), http.MethodGet, s.URL+path, nil)
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Accept", "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList")
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		var doc struct {
			Kind  string
			Items []struct {
				Metadata struct{ Name string }
				Versions []struct {
					Version   string
					Resources []struct {
						Resource     string
						Subresources []struct{ Subresource string }
					}
				}
			}
		}
		err = json.NewDecoder(resp.Body).Decode(&doc)
		resp.Body.Close()
		if err != nil || resp.StatusCode != http.StatusOK || doc.Kind != "APIGroupDiscoveryList" {
			t.Fatalf("%s%s: %s, kind %q, %v", s.URL, path, resp.Status, doc.Kind, err)
		}
		if ct := resp.Header.Get("Content-Type"); !strings.Contains(ct, "apidiscovery.k8s.io") {
			t.Errorf("%s%s: Content-Type %q, want the aggregated discovery type", s.URL, path, ct)
		}
		for _, g := range doc.Items {
			for _, v := range g.Versions {
				gv := schema.GroupVersion{Group: g.Metadata.Name, Version: v.Version}.String()
				for _, r := range v.Resources {
					out.Insert(gv + "/" + r.Resource)
					for _, sub := range r.Subresources {
						out.Insert(gv + "/" + r.Resource + "/" + sub.Subresource)
					}
				}
			}
		}
	}
	return out
}

// kubectlPath returns the kubectl to run: $KUBECTL, else the one built into
// the cache for the newer version.
func kubectlPath(t *testing.T) string {
	t.Helper()
	if p := os.Getenv("KUBECTL"); p != "" {
		return p
	}
	p, err := bins.Find(bins.Kubectl, newVersion)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// kubectl runs kubectl against s and returns its stdout.
func kubectl(t *testing.T, s *framework.Server, stdin string, args ...string) (string, error) {
	t.Helper()
	ctx := ctxFor(t, time.Minute)
	cmd := exec.CommandContext(ctx, kubectlPath(t), append([]string{"--kubeconfig", s.Kubeconfig}, args...)...)
	cmd.Stdin = strings.NewReader(stdin)
	cmd.Env = append(os.Environ(), "KUBECACHEDIR="+t.TempDir())
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return stdout.String(), fmt.Errorf("kubectl %s: %w: %s", strings.Join(args, " "), err, stderr.String())
	}
	return stdout.String(), nil
}

// The real kubectl works against each server, and sees the difference.
func TestBaseline_Kubectl(t *testing.T) {
	_, old, cur := startOldAndNew(t)
	for _, s := range []*framework.Server{old, cur} {
		out, err := kubectl(t, s, "", "version", "-o", "json")
		if err != nil {
			t.Fatal(err)
		}
		var v struct {
			ServerVersion struct{ GitVersion string }
		}
		if err := json.Unmarshal([]byte(out), &v); err != nil {
			t.Fatalf("kubectl version -o json: %v\n%s", err, out)
		}
		if v.ServerVersion.GitVersion != s.Version {
			t.Errorf("kubectl version: server %q, want %q", v.ServerVersion.GitVersion, s.Version)
		}

		resources, err := kubectl(t, s, "", "api-resources", "--api-group=admissionregistration.k8s.io", "-o", "name")
		if err != nil {
			t.Fatal(err)
		}
		hasMAP := slices.Contains(strings.Fields(resources), "mutatingadmissionpolicies.admissionregistration.k8s.io")
		if want := s.Version == newVersion; hasMAP != want {
			t.Errorf("%s: kubectl api-resources lists mutatingadmissionpolicies: %v, want %v\n%s", s.Version, hasMAP, want, resources)
		}
		_, err = kubectl(t, s, "", "get", "mutatingadmissionpolicies")
		if s.Version == oldVersion {
			if err == nil || !strings.Contains(err.Error(), `the server doesn't have a resource type "mutatingadmissionpolicies"`) {
				t.Errorf("%s: kubectl get mutatingadmissionpolicies: err = %v, want an unknown resource type", s.Version, err)
			}
		} else if err != nil {
			t.Errorf("%s: %v", s.Version, err)
		}
	}

	// Written with kubectl through one server, read with kubectl through
	// the other.
	cm := `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"baseline","namespace":"default"},"data":{"written-by":"` + oldVersion + `"}}`
	if _, err := kubectl(t, old, cm, "apply", "--server-side", "-f", "-"); err != nil {
		t.Fatal(err)
	}
	out, err := kubectl(t, cur, "", "get", "configmap", "baseline", "-n", "default", "-o", "jsonpath={.data.written-by}")
	if err != nil {
		t.Fatal(err)
	}
	if out != oldVersion {
		t.Errorf("configmap read through %s: data.written-by = %q, want %q", newVersion, out, oldVersion)
	}
}

var crdGVR = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}

// A CustomResourceDefinition created through one server is served by both,
// and a custom resource written through one is read through the other.
func TestBaseline_CRDServedByBoth(t *testing.T) {
	_, old, cur := startOldAndNew(t)
	ctx := ctxFor(t, 2*time.Minute)
	crd := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apiextensions.k8s.io/v1",
		"kind":       "CustomResourceDefinition",
		"metadata":   map[string]any{"name": "customresources.myapps.example.com"},
		"spec": map[string]any{
			"group": "myapps.example.com",
			"scope": "Namespaced",
			"names": map[string]any{"plural": "customresources", "singular": "customresource", "kind": "CustomResource", "listKind": "CustomResourceList"},
			"versions": []any{map[string]any{
				"name": "v1beta1", "served": true, "storage": true,
				"schema": map[string]any{"openAPIV3Schema": map[string]any{
					"type": "object",
					"properties": map[string]any{"spec": map[string]any{
						"type": "object",
						"properties": map[string]any{
							"config": map[string]any{"type": "object", "properties": map[string]any{
								"requestTimeoutSeconds": map[string]any{"type": "integer"},
							}},
							"stateManagement": map[string]any{"type": "string"},
						},
					}},
				}},
			}},
		},
	}}
	if _, err := dynamic.NewForConfigOrDie(old.RESTConfig()).Resource(crdGVR).Create(ctx, crd, metav1.CreateOptions{}); err != nil {
		t.Fatalf("%s: create CRD: %v", old.Version, err)
	}
	gvr := schema.GroupVersionResource{Group: "myapps.example.com", Version: "v1beta1", Resource: "customresources"}
	// Each server picks the CRD up from its own watch of etcd.
	for _, s := range []*framework.Server{old, cur} {
		dc := discovery.NewDiscoveryClientForConfigOrDie(s.RESTConfig())
		err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
			l, err := dc.ServerResourcesForGroupVersion(gvr.GroupVersion().String())
			if err != nil {
				return false, nil
			}
			return slices.ContainsFunc(l.APIResources, func(r metav1.APIResource) bool { return r.Name == gvr.Resource }), nil
		})
		if err != nil {
			t.Fatalf("%s: %s never appeared in discovery: %v", s.Version, gvr, err)
		}
	}

	cr := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "myapps.example.com/v1beta1",
		"kind":       "CustomResource",
		"metadata":   map[string]any{"name": "sample", "namespace": "default"},
		"spec": map[string]any{
			"config":          map[string]any{"requestTimeoutSeconds": int64(30)},
			"stateManagement": "stateless",
			"unknownField":    "pruned",
		},
	}}
	// The CR endpoint can lag discovery for a moment on a fresh CRD.
	err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		_, err := dynamic.NewForConfigOrDie(cur.RESTConfig()).Resource(gvr).Namespace("default").Create(ctx, cr, metav1.CreateOptions{})
		if apierrors.IsNotFound(err) {
			return false, nil
		}
		return err == nil, err
	})
	if err != nil {
		t.Fatalf("%s: create custom resource: %v", cur.Version, err)
	}
	got, err := dynamic.NewForConfigOrDie(old.RESTConfig()).Resource(gvr).Namespace("default").Get(ctx, "sample", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("%s: get custom resource: %v", old.Version, err)
	}
	if v, _, _ := unstructured.NestedInt64(got.Object, "spec", "config", "requestTimeoutSeconds"); v != 30 {
		t.Errorf("spec.config.requestTimeoutSeconds = %d, want 30", v)
	}
	// Both servers run the same structural schema: the unknown field was
	// pruned on the way in.
	if _, found, _ := unstructured.NestedFieldNoCopy(got.Object, "spec", "unknownField"); found {
		t.Errorf("spec.unknownField survived pruning: %v", got.Object["spec"])
	}
}

// One step of a rolling upgrade: the old server is replaced by a new one on
// the same port; data written before is still there and the new-only
// resource is now served at that address.
func TestBaseline_RollingUpgradeStep(t *testing.T) {
	cp, old, _ := startOldAndNew(t)
	ctx := ctxFor(t, 2*time.Minute)
	c := kubernetes.NewForConfigOrDie(old.RESTConfig())
	cm := &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: "before-upgrade", Namespace: "default"},
		Data:       map[string]string{"k": "v"},
	}
	if _, err := c.CoreV1().ConfigMaps("default").Create(ctx, cm, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	upgraded, err := cp.Replace(ctx, 0, newVersion)
	if err != nil {
		t.Fatal(err)
	}
	if !old.Exited() {
		t.Errorf("the replaced %s server (pid %d) is still running", old.Version, old.PID())
	}
	if upgraded.URL != old.URL || upgraded.Kubeconfig != old.Kubeconfig || upgraded.Version != newVersion {
		t.Errorf("replacement: %s %s %s, want %s %s %s", upgraded.URL, upgraded.Kubeconfig, upgraded.Version, old.URL, old.Kubeconfig, newVersion)
	}
	if cp.Server(0) != upgraded {
		t.Errorf("Server(0) is not the replacement")
	}

	c = kubernetes.NewForConfigOrDie(upgraded.RESTConfig())
	v, err := c.Discovery().ServerVersion()
	if err != nil {
		t.Fatal(err)
	}
	if v.GitVersion != newVersion {
		t.Errorf("after Replace, server 0 is %s, want %s", v.GitVersion, newVersion)
	}
	got, err := c.CoreV1().ConfigMaps("default").Get(ctx, "before-upgrade", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got.Data["k"] != "v" {
		t.Errorf("configmap data after upgrade: %v", got.Data)
	}
	if _, err := dynamic.NewForConfigOrDie(upgraded.RESTConfig()).Resource(mapGVR).List(ctx, metav1.ListOptions{}); err != nil {
		t.Errorf("after the upgrade step, server 0 does not serve %s: %v", mapGVR, err)
	}
}

// Upstream's own answer to the 404, for comparison with mvpctl: with the
// peer proxy (UnknownVersionInteroperabilityProxy) on, the old server
// forwards a request for a resource only its newer peer serves.
func TestBaseline_PeerProxyForwardsToNewerPeer(t *testing.T) {
	if os.Geteuid() != 0 {
		// Without a UTS namespace each, both servers claim the identity
		// derived from the one hostname and the peer proxy sees no peer.
		t.Skip("the peer proxy needs a hostname per server, which needs root")
	}
	cp := framework.Start(t, framework.Options{Versions: []string{oldVersion, newVersion}, PeerProxy: true})
	old := cp.Server(0)
	ctx := ctxFor(t, 2*time.Minute)
	client := dynamic.NewForConfigOrDie(old.RESTConfig()).Resource(mapGVR)
	// The old server learns what its peer serves from the peer's identity
	// lease and discovery, which takes a moment after start.
	var last error
	err := wait.PollUntilContextTimeout(ctx, 500*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		_, last = client.List(ctx, metav1.ListOptions{})
		return last == nil, nil
	})
	if err != nil {
		t.Fatalf("%s with the peer proxy: list %s: %v (last error: %v)", old.Version, mapGVR, err, last)
	}
}

// The same kind has another schema on each side: PodSpec's workloadRef
// (v1.35) became schedulingGroup (v1.36), so a Pod written through one
// server and read through the other is not the same object.
func TestBaseline_PodSpecSchemaDiffers(t *testing.T) {
	_, old, cur := startOldAndNew(t)
	props := func(s *framework.Server) sets.Set[string] {
		raw, err := kubernetes.NewForConfigOrDie(s.RESTConfig()).Discovery().RESTClient().
			Get().AbsPath("/openapi/v3/api/v1").SetHeader("Accept", "application/json").
			Do(ctxFor(t, time.Minute)).Raw()
		if err != nil {
			t.Fatalf("%s: /openapi/v3/api/v1: %v", s.Version, err)
		}
		var doc struct {
			Components struct {
				Schemas map[string]struct {
					Properties map[string]json.RawMessage
				}
			}
		}
		if err := json.Unmarshal(raw, &doc); err != nil {
			t.Fatal(err)
		}
		spec, ok := doc.Components.Schemas["io.k8s.api.core.v1.PodSpec"]
		if !ok {
			t.Fatalf("%s: no PodSpec schema", s.Version)
		}
		out := sets.New[string]()
		for k := range spec.Properties {
			out.Insert(k)
		}
		return out
	}
	oldProps, curProps := props(old), props(cur)
	onlyOld, onlyNew := sets.List(oldProps.Difference(curProps)), sets.List(curProps.Difference(oldProps))
	t.Logf("PodSpec fields only in %s: %v; only in %s: %v", oldVersion, onlyOld, newVersion, onlyNew)
	if !slices.Contains(onlyOld, "workloadRef") || !slices.Contains(onlyNew, "schedulingGroup") {
		t.Errorf("want workloadRef only in %s and schedulingGroup only in %s", oldVersion, newVersion)
	}
}
