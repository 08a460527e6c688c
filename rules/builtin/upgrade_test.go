package builtin_test

import (
	"testing"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/mvpctl/mvpctl/rules/builtin"
)

func TestLifecycle_UpgradeAt(t *testing.T) {
	gvk := func(g, v, k string) schema.GroupVersionKind {
		return schema.GroupVersionKind{Group: g, Version: v, Kind: k}
	}
	for _, c := range []struct {
		from       schema.GroupVersionKind
		at         builtin.Release
		deprecated bool
		to         schema.GroupVersionKind
		needed     bool
	}{
		{gvk("extensions", "v1beta1", "Ingress"), release(1, 36), false, gvk("networking.k8s.io", "v1", "Ingress"), true},
		{gvk("extensions", "v1beta1", "Ingress"), release(1, 21), false, schema.GroupVersionKind{}, false},
		{gvk("extensions", "v1beta1", "Ingress"), release(1, 21), true, gvk("networking.k8s.io", "v1", "Ingress"), true},
		{gvk("batch", "v1beta1", "CronJob"), release(1, 25), false, gvk("batch", "v1", "CronJob"), true},
		{gvk("flowcontrol.apiserver.k8s.io", "v1beta1", "FlowSchema"), release(1, 36), false, gvk("flowcontrol.apiserver.k8s.io", "v1", "FlowSchema"), true},
		// Removed, and Kubernetes names no replacement that v1.36 serves.
		{gvk("policy", "v1beta1", "PodSecurityPolicy"), release(1, 36), false, schema.GroupVersionKind{}, true},
		{gvk("extensions", "v1beta1", "PodSecurityPolicy"), release(1, 36), false, schema.GroupVersionKind{}, true},
		// Deprecated only: nothing to do unless deprecated ones are asked for.
		{gvk("", "v1", "Endpoints"), release(1, 36), false, schema.GroupVersionKind{}, false},
		{gvk("", "v1", "Endpoints"), release(1, 36), true, gvk("discovery.k8s.io", "v1", "EndpointSlice"), true},
		{gvk("apps", "v1", "Deployment"), release(1, 36), true, schema.GroupVersionKind{}, false},
	} {
		l, ok := builtin.LifecycleOf(c.from)
		if !ok {
			t.Fatalf("%v is not in the table", c.from)
		}
		to, needed := l.UpgradeAt(c.at, c.deprecated)
		if to != c.to || needed != c.needed {
			t.Errorf("%v at %s (deprecated %v) = %v, %v; want %v, %v", c.from, c.at, c.deprecated, to, needed, c.to, c.needed)
		}
	}
}
