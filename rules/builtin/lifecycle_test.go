package builtin_test

import (
	"strings"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsv1beta1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1beta1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/scheme"

	"github.com/mvpctl/mvpctl/rules/builtin"
)

type lifecycleMethods interface {
	APILifecycleIntroduced() (major, minor int)
}

// The table read from source agrees with the methods compiled into go.mod's
// k8s.io/api and k8s.io/apiextensions-apiserver, for every kind a typed
// client scheme registers.
func TestLifecycles_MatchCompiledMethods(t *testing.T) {
	s := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{scheme.AddToScheme, apiextensionsv1.AddToScheme, apiextensionsv1beta1.AddToScheme} {
		if err := add(s); err != nil {
			t.Fatal(err)
		}
	}
	checked := 0
	for gvk := range s.AllKnownTypes() {
		obj, err := s.New(gvk)
		if err != nil {
			t.Fatal(err)
		}
		m, ok := obj.(lifecycleMethods)
		if !ok || strings.HasSuffix(gvk.Kind, "List") {
			continue
		}
		l, found := builtin.LifecycleOf(gvk)
		if !found {
			t.Errorf("%v: not in the table", gvk)
			continue
		}
		if got := release(m.APILifecycleIntroduced()); got != l.Introduced {
			t.Errorf("%v: introduced %v, table %v", gvk, got, l.Introduced)
		}
		if d, ok := obj.(interface{ APILifecycleDeprecated() (int, int) }); ok && release(d.APILifecycleDeprecated()) != l.Deprecated {
			t.Errorf("%v: deprecated %v, table %v", gvk, release(d.APILifecycleDeprecated()), l.Deprecated)
		}
		if r, ok := obj.(interface{ APILifecycleRemoved() (int, int) }); ok && release(r.APILifecycleRemoved()) != l.Removed {
			t.Errorf("%v: removed %v, table %v", gvk, release(r.APILifecycleRemoved()), l.Removed)
		}
		if r, ok := obj.(interface {
			APILifecycleReplacement() schema.GroupVersionKind
		}); ok && r.APILifecycleReplacement() != l.Replacement && r.APILifecycleReplacement().Kind != l.Replacement.Kind+"List" {
			t.Errorf("%v: replacement %v, table %v", gvk, r.APILifecycleReplacement(), l.Replacement)
		}
		checked++
	}
	if checked < 100 {
		t.Errorf("only %d kinds checked", checked)
	}
}

func release(major, minor int) builtin.Release { return builtin.Release{Major: major, Minor: minor} }

// Kinds that go.mod's k8s.io/api no longer has come from older releases.
func TestLifecycleOf_RemovedKinds(t *testing.T) {
	for _, c := range []struct {
		gvk              schema.GroupVersionKind
		removed          builtin.Release
		replacement      string
		resource         string
		namespaced       bool
		deprecatedBefore builtin.Release
	}{
		{gvk: schema.GroupVersionKind{Group: "autoscaling", Version: "v2beta1", Kind: "HorizontalPodAutoscaler"}, removed: release(1, 25), replacement: "autoscaling/v2, Kind=HorizontalPodAutoscaler", resource: "horizontalpodautoscalers", namespaced: true},
		{gvk: schema.GroupVersionKind{Group: "policy", Version: "v1beta1", Kind: "PodSecurityPolicy"}, removed: release(1, 25), resource: "podsecuritypolicies"},
		{gvk: schema.GroupVersionKind{Group: "extensions", Version: "v1beta1", Kind: "Deployment"}, removed: release(1, 16), replacement: "apps/v1, Kind=Deployment", resource: "deployments", namespaced: true},
		{gvk: schema.GroupVersionKind{Group: "apiregistration.k8s.io", Version: "v1beta1", Kind: "APIService"}, removed: release(1, 22), replacement: "apiregistration.k8s.io/v1, Kind=APIService", resource: "apiservices"},
		{gvk: schema.GroupVersionKind{Group: "apiextensions.k8s.io", Version: "v1beta1", Kind: "CustomResourceDefinition"}, removed: release(1, 22), replacement: "apiextensions.k8s.io/v1, Kind=CustomResourceDefinition", resource: "customresourcedefinitions"},
		{gvk: schema.GroupVersionKind{Group: "flowcontrol.apiserver.k8s.io", Version: "v1beta3", Kind: "FlowSchema"}, removed: release(1, 32), replacement: "flowcontrol.apiserver.k8s.io/v1, Kind=FlowSchema", resource: "flowschemas"},
		{gvk: schema.GroupVersionKind{Group: "networking.k8s.io", Version: "v1beta1", Kind: "IngressClass"}, removed: release(1, 22), replacement: "networking.k8s.io/v1, Kind=IngressClass", resource: "ingressclasses"},
	} {
		l, ok := builtin.LifecycleOf(c.gvk)
		if !ok {
			t.Errorf("%v: not in the table", c.gvk)
			continue
		}
		rep := ""
		if !l.Replacement.Empty() {
			rep = l.Replacement.String()
		}
		if l.Removed != c.removed || rep != c.replacement || l.Resource != c.resource || l.Namespaced != c.namespaced {
			t.Errorf("%v = %+v", c.gvk, l)
		}
	}
}

func TestLifecycle_ReplacementAt(t *testing.T) {
	l, _ := builtin.LifecycleOf(schema.GroupVersionKind{Group: "flowcontrol.apiserver.k8s.io", Version: "v1beta1", Kind: "FlowSchema"})
	if got := l.ReplacementAt(release(1, 26)); got.Version != "v1beta3" {
		t.Errorf("at v1.26: %v", got)
	}
	if got := l.ReplacementAt(release(1, 36)); got.Version != "v1" {
		t.Errorf("at v1.36: %v", got)
	}
	psp, _ := builtin.LifecycleOf(schema.GroupVersionKind{Group: "extensions", Version: "v1beta1", Kind: "PodSecurityPolicy"})
	if got := psp.ReplacementAt(release(1, 36)); got != (schema.GroupVersionKind{Group: "policy", Version: "v1beta1", Kind: "PodSecurityPolicy"}) {
		t.Errorf("PodSecurityPolicy at v1.36: %v (the last one known, itself removed)", got)
	}
}

func TestParseRelease(t *testing.T) {
	for in, want := range map[string]builtin.Release{"v1.22": release(1, 22), "1.36": release(1, 36), "v1.30.4": release(1, 30)} {
		got, err := builtin.ParseRelease(in)
		if err != nil || got != want {
			t.Errorf("ParseRelease(%q) = %v, %v", in, got, err)
		}
	}
	for _, in := range []string{"", "v1", "1.x", "v1.2.3.4", "v0.22", "vv1.2", "1.99999", "1.-1"} {
		if _, err := builtin.ParseRelease(in); err == nil {
			t.Errorf("ParseRelease(%q): no error", in)
		}
	}
	if !release(1, 22).AtOrAfter(release(1, 22)) || release(1, 22).AtOrAfter(release(1, 21)) || (builtin.Release{}).AtOrAfter(release(1, 30)) {
		t.Error("AtOrAfter")
	}
}
