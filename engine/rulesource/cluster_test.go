package rulesource

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	kubefake "k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"sigs.k8s.io/yaml"

	"github.com/mvpctl/mvpctl/rules"
	"github.com/mvpctl/mvpctl/rules/crd"
)

// object turns rules YAML into a TransformationRules object as the server
// stores it: metadata it adds, and a status left by a previous writer.
func object(t *testing.T, doc string, gen int64) *unstructured.Unstructured {
	t.Helper()
	u := &unstructured.Unstructured{}
	if err := yaml.Unmarshal([]byte(doc), &u.Object); err != nil {
		t.Fatal(err)
	}
	u.SetGeneration(gen)
	u.SetUID(types.UID("uid-" + u.GetName()))
	u.SetResourceVersion("1")
	u.SetCreationTimestamp(metav1.Now())
	u.SetManagedFields([]metav1.ManagedFieldsEntry{{Manager: "kubectl", Operation: metav1.ManagedFieldsOperationApply}})
	u.SetAnnotations(map[string]string{"kubectl.kubernetes.io/last-applied-configuration": "{}"})
	return u
}

type fakeCluster struct {
	dyn    *dynamicfake.FakeDynamicClient
	events *kubefake.Clientset
}

// newFakeCluster creates objs through the client (the fake's constructor
// would guess their resource from the kind, wrongly).
func newFakeCluster(t *testing.T, objs ...*unstructured.Unstructured) *fakeCluster {
	t.Helper()
	gvr := crd.GroupVersionResource
	f := &fakeCluster{
		dyn:    dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), map[schema.GroupVersionResource]string{gvr: "TransformationRulesList"}),
		events: kubefake.NewClientset(),
	}
	for _, o := range objs {
		if _, err := f.dyn.Resource(gvr).Create(context.Background(), o, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	return f
}

func (f *fakeCluster) get(t *testing.T, name string) *unstructured.Unstructured {
	t.Helper()
	u, err := f.dyn.Resource(crd.GroupVersionResource).Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return u
}

func (f *fakeCluster) update(t *testing.T, u *unstructured.Unstructured) {
	t.Helper()
	if _, err := f.dyn.Resource(crd.GroupVersionResource).Update(context.Background(), u, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
}

func status(t *testing.T, u *unstructured.Unstructured) (rules.TransformationRulesStatus, *metav1.Condition) {
	t.Helper()
	var st rules.TransformationRulesStatus
	if raw, ok := u.Object["status"].(map[string]any); ok {
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(raw, &st); err != nil {
			t.Fatal(err)
		}
	}
	return st, meta.FindStatusCondition(st.Conditions, rules.ConditionReady)
}

// readyAt waits until the object's status says ready (or not) for gen.
func (f *fakeCluster) readyAt(t *testing.T, name string, gen int64, ready bool) *metav1.Condition {
	t.Helper()
	var c *metav1.Condition
	waitFor(t, name+" status", 30*time.Second, func() bool {
		st, cond := status(t, f.get(t, name))
		c = cond
		want := metav1.ConditionFalse
		if ready {
			want = metav1.ConditionTrue
		}
		return st.ObservedGeneration == gen && cond != nil && cond.Status == want && cond.ObservedGeneration == gen
	})
	return c
}

func (f *fakeCluster) eventReasons(t *testing.T) []string {
	t.Helper()
	list, err := f.events.CoreV1().Events("").List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range list.Items {
		out = append(out, e.InvolvedObject.Name+"/"+e.Reason+"/"+e.Type)
	}
	return out
}

func TestSource_Cluster(t *testing.T) {
	f := newFakeCluster(t, object(t, rulesYAML("seed", "first"), 1))
	s, err := Start(t.Context(), Options{Cluster: f.dyn, Events: f.events.CoreV1(), Host: "pod-a"})
	if err != nil {
		t.Fatal(err)
	}
	if got := convertedField(t, s.Current()); got != "first" {
		t.Fatalf("converted to %q", got)
	}
	f.readyAt(t, "seed", 1, true)
	st, _ := status(t, f.get(t, "seed"))
	if st.MigrationRules != 1 || st.RoutingRules != 1 {
		t.Errorf("status counts %+v", st)
	}

	// An edit takes effect.
	u := f.get(t, "seed")
	edited := object(t, rulesYAML("seed", "second"), 2)
	edited.SetResourceVersion(u.GetResourceVersion())
	edited.Object["status"] = u.Object["status"]
	f.update(t, edited)
	waitFor(t, "the edit", 30*time.Second, func() bool { return convertedField(t, s.Current()) == "second" })
	f.readyAt(t, "seed", 2, true)

	// A broken generation is rejected with the field path; the previous one
	// keeps serving.
	broken := object(t, strings.Replace(brokenYAML, "name: broken", "name: seed", 1), 3)
	broken.Object["status"] = f.get(t, "seed").Object["status"]
	f.update(t, broken)
	c := f.readyAt(t, "seed", 3, false)
	if c.Reason != ReasonInvalid || !strings.Contains(c.Message, "spec.apiMigrationRules[0].transformations[0].forward") ||
		!strings.Contains(c.Message, "generation 3 rejected, generation 2 stays in use") {
		t.Errorf("condition %+v", c)
	}
	if got := convertedField(t, s.Current()); got != "second" {
		t.Fatalf("after a broken edit, converted to %q", got)
	}

	// A second object with a rule for the same resource and versions
	// conflicts and is rejected alone.
	dup, err := f.dyn.Resource(crd.GroupVersionResource).Create(context.Background(), object(t, rulesYAML("dup", "dup"), 1), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	c = f.readyAt(t, dup.GetName(), 1, false)
	if c.Reason != ReasonConflict || !strings.Contains(c.Message, "Duplicate value") {
		t.Errorf("conflict condition %+v", c)
	}
	// Routing-only objects add their routes.
	routes := `apiVersion: mvp.k8s.io/v1
kind: TransformationRules
metadata: {name: routes}
spec:
  apiRoutingRules:
  - {resource: "*", preferApiServerVersion: ">=1.36"}
`
	if _, err := f.dyn.Resource(crd.GroupVersionResource).Create(context.Background(), object(t, routes, 1), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	f.readyAt(t, "routes", 1, true)
	if n := len(s.Current().RoutingRules); n != 2 {
		t.Errorf("%d routing rules, want 2", n)
	}

	// Deleting the object whose rules serve removes them.
	if err := f.dyn.Resource(crd.GroupVersionResource).Delete(context.Background(), "seed", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	// ... which lets the conflicting object in, unchanged.
	waitFor(t, "the deletion", 30*time.Second, func() bool {
		set := s.Current()
		for _, d := range set.Rules.Documents {
			if d.File == SourceName("seed") {
				return false
			}
		}
		return len(set.Converter.Rules()) == 1 && convertedField(t, set) == "dup"
	})
	f.readyAt(t, "dup", 1, true)

	waitFor(t, "events", 30*time.Second, func() bool {
		all := strings.Join(f.eventReasons(t), " ")
		return strings.Contains(all, "seed/Loaded/"+corev1.EventTypeNormal) &&
			strings.Contains(all, "seed/Rejected/"+corev1.EventTypeWarning) &&
			strings.Contains(all, "dup/Rejected/"+corev1.EventTypeWarning)
	})
}

// A second replica judging the same objects writes nothing: the status
// already says what it would.
func TestSource_ClusterReplicasAgree(t *testing.T) {
	f := newFakeCluster(t, object(t, rulesYAML("seed", "first"), 1), object(t, strings.Replace(brokenYAML, "name: broken", "name: bad", 1), 1))
	if _, err := Start(t.Context(), Options{Cluster: f.dyn}); err != nil {
		t.Fatal(err)
	}
	f.readyAt(t, "seed", 1, true)
	f.readyAt(t, "bad", 1, false)
	before := len(f.dyn.Actions())
	s2, err := Start(t.Context(), Options{Cluster: f.dyn})
	if err != nil {
		t.Fatal(err)
	}
	if convertedField(t, s2.Current()) != "first" {
		t.Fatal("second replica serves other rules")
	}
	// A reconcile goes through the objects by name: once the second replica
	// has taken zz-probe, it has been through seed and bad after its start.
	probe := `apiVersion: mvp.k8s.io/v1
kind: TransformationRules
metadata: {name: zz-probe}
spec:
  apiRoutingRules:
  - {apiGroup: batch, resource: jobs, preferApiServerVersion: v1.36.y}
`
	if _, err := f.dyn.Resource(crd.GroupVersionResource).Create(t.Context(), object(t, probe, 1), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the second replica to take zz-probe", 30*time.Second, func() bool {
		return slices.ContainsFunc(s2.Current().RoutingRules, func(r rules.RoutingRule) bool { return r.APIGroup == "batch" })
	})
	for _, a := range f.dyn.Actions()[before:] {
		u, ok := a.(k8stesting.UpdateAction)
		if !ok {
			continue
		}
		if name := u.GetObject().(*unstructured.Unstructured).GetName(); name != "zz-probe" {
			t.Errorf("second replica wrote %s %s of %s", a.GetVerb(), a.GetSubresource(), name)
		}
	}
}

func TestStart_ClusterWithoutCRD(t *testing.T) {
	dyn := newFakeCluster(t).dyn
	dyn.PrependReactor("list", "*", func(a k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewNotFound(schema.GroupResource{Group: "mvp.k8s.io", Resource: "transformationrules"}, "")
	})
	_, err := Start(t.Context(), Options{Cluster: dyn})
	if err == nil || !strings.Contains(err.Error(), "apply the CustomResourceDefinition transformationrules.mvp.k8s.io") {
		t.Fatalf("Start = %v", err)
	}
}

// Files and objects together: an object duplicating a file's rule is
// rejected naming the file, and accepted once the file no longer has it.
func TestSource_FilesAndCluster(t *testing.T) {
	dir := t.TempDir()
	path := dir + "/rules.yaml"
	writeAtomic(t, path, rulesYAML("from-file", "file"))
	f := newFakeCluster(t, object(t, rulesYAML("from-cluster", "cluster"), 1))
	s, err := Start(t.Context(), Options{Files: []string{path}, Cluster: f.dyn, PollInterval: -1})
	if err != nil {
		t.Fatal(err)
	}
	c := f.readyAt(t, "from-cluster", 1, false)
	if c.Reason != ReasonConflict || !strings.Contains(c.Message, path+":") {
		t.Errorf("condition %+v", c)
	}
	if got := convertedField(t, s.Current()); got != "file" {
		t.Errorf("converted to %q", got)
	}
	writeAtomic(t, path, `apiVersion: mvp.k8s.io/v1
kind: TransformationRules
metadata: {name: from-file}
spec:
  apiRoutingRules:
  - {resource: "*", preferApiServerVersion: ">=1.36"}
`)
	f.readyAt(t, "from-cluster", 1, true)
	if got := convertedField(t, s.Current()); got != "cluster" {
		t.Errorf("converted to %q", got)
	}
	if n := len(s.Current().Rules.Documents); n != 2 {
		t.Errorf("%d documents, want 2", n)
	}
}
