package engine_test

import (
	"context"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/mvpctl/mvpctl/engine"
	"github.com/mvpctl/mvpctl/rules"
)

// Where Kubernetes' conversion fails on an object, the built-in rules fail
// too, in both executors, naming what is wrong: a conversion annotation
// that strconv.ParseInt(s, 10, 64) refuses (the oracle cannot hold these
// cases, as Kubernetes gives no output for them).
func TestBuiltin_ConversionFailsLikeKubernetes(t *testing.T) {
	native, viaJQ := loadBuiltin(t)
	for _, tc := range []struct {
		name, kind, apiVersion, key, value string
		to                                 schema.GroupVersion
	}{
		{"rollback not a number", "Deployment", "apps/v1", "deprecated.deployment.rollback.to", "three", schema.GroupVersion{Group: "apps", Version: "v1beta1"}},
		{"rollback beyond int64", "Deployment", "apps/v1", "deprecated.deployment.rollback.to", "9223372036854775808", schema.GroupVersion{Group: "extensions", Version: "v1beta1"}},
		{"rollback with a space", "Deployment", "apps/v1beta2", "deprecated.deployment.rollback.to", " 7", schema.GroupVersion{Group: "apps", Version: "v1"}},
		{"generation empty", "DaemonSet", "apps/v1", "deprecated.daemonset.template.generation", "", schema.GroupVersion{Group: "apps", Version: "v1beta2"}},
		{"generation a fraction", "DaemonSet", "apps/v1", "deprecated.daemonset.template.generation", "1.5", schema.GroupVersion{Group: "extensions", Version: "v1beta1"}},
		{"generation below int64", "DaemonSet", "apps/v1beta2", "deprecated.daemonset.template.generation", "-9223372036854775809", schema.GroupVersion{Group: "apps", Version: "v1"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			obj := map[string]any{
				"apiVersion": tc.apiVersion, "kind": tc.kind,
				"metadata": map[string]any{"name": "x", "annotations": map[string]any{tc.key: tc.value}},
				"spec":     map[string]any{},
			}
			for name, c := range map[string]*engine.Converter{"native": native, "jq": viaJQ} {
				_, err := c.Convert(context.Background(), rules.DeepCopyJSON(obj).(map[string]any), tc.to)
				if err == nil || !strings.Contains(err.Error(), tc.key) {
					t.Errorf("%s: converting to %s: error %v, want one naming %s", name, tc.to, err, tc.key)
				}
			}
		})
	}
}

// The same annotations in canonical form, at the ends of int64, convert.
func TestBuiltin_ConversionAnnotationsAtInt64Range(t *testing.T) {
	native, viaJQ := loadBuiltin(t)
	for _, v := range []string{"9223372036854775807", "-9223372036854775808", "+0", "-0"} {
		obj := map[string]any{
			"apiVersion": "apps/v1", "kind": "Deployment",
			"metadata": map[string]any{"name": "x", "annotations": map[string]any{"deprecated.deployment.rollback.to": v}},
			"spec":     map[string]any{},
		}
		got, err := convertAgree(native, viaJQ, obj, schema.GroupVersion{Group: "apps", Version: "v1beta2"})
		if err != nil {
			t.Fatal(err)
		}
		want := strings.TrimPrefix(v, "+")
		if want == "-0" {
			want = "0"
		}
		ann := got["metadata"].(map[string]any)["annotations"].(map[string]any)
		if ann["deprecated.deployment.rollback.to"] != want {
			t.Errorf("%q became %v, want %q", v, ann["deprecated.deployment.rollback.to"], want)
		}
	}
}
