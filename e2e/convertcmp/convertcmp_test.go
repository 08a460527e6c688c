package convertcmp

import (
	"encoding/json"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func mustDecode(t *testing.T, s string) map[string]any {
	t.Helper()
	obj, err := Decode([]byte(s))
	if err != nil {
		t.Fatal(err)
	}
	return obj
}

func TestDiff(t *testing.T) {
	a := mustDecode(t, `{"metadata": {"name": "x", "annotations": {"a.b/c": "1"}}, "spec": {"list": [1, 2], "other": [1], "n": 1}}`)
	b := mustDecode(t, `{"metadata": {"name": "x"}, "spec": {"list": [1, 3], "other": [1, 2], "n": 1, "extra": null}}`)
	var got []string
	for _, c := range Diff(a, b) {
		got = append(got, c.Path)
	}
	want := []string{`metadata.annotations`, `spec.extra`, `spec.list[1]`, `spec.other`}
	if !slices.Equal(got, want) {
		t.Errorf("Diff paths = %q, want %q", got, want)
	}
	if d := Diff(a, a); len(d) != 0 {
		t.Errorf("Diff(a, a) = %v", d)
	}
}

func TestDiff_QuotedKeysAndNumbers(t *testing.T) {
	a := mustDecode(t, `{"metadata": {"annotations": {"kubernetes.io/ingress.class": "nginx"}}, "spec": {"big": 9223372036854775807}}`)
	b := mustDecode(t, `{"metadata": {"annotations": {"kubernetes.io/ingress.class": "traefik"}}, "spec": {"big": 9223372036854775806}}`)
	var got []string
	for _, c := range Diff(a, b) {
		got = append(got, c.Path)
	}
	want := []string{`metadata.annotations["kubernetes.io/ingress.class"]`, `spec.big`}
	if !slices.Equal(got, want) {
		t.Errorf("Diff paths = %q, want %q", got, want)
	}
}

func TestGeneralise(t *testing.T) {
	if got := Generalise(`spec.rules[12].http.paths[0]["a[1]"]`); got != `spec.rules[*].http.paths[*]["a[1]"]` {
		t.Errorf("Generalise = %q", got)
	}
}

// Each stage of the comparison explains its own kind of difference, and
// what none explains is a disagreement.
func TestClassify(t *testing.T) {
	// kubectl-convert: defaults of the target (replicas), of the source
	// (revisionHistoryLimit, as extensions/v1beta1 defaults it), zero
	// values (status), a canonical quantity, no round-trip annotation, and
	// a real difference (image).
	kubectl := mustDecode(t, `
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, creationTimestamp: null}
spec:
  replicas: 1
  revisionHistoryLimit: 2147483647
  template:
    spec:
      containers:
      - name: app
        image: nginx:1
        resources: {limits: {cpu: 500m}}
status: {}
`)
	// mvpctl: the object as converted, with an annotation, an empty map
	// the typed encoder omits and a field the target type lacks.
	mvpctl := mustDecode(t, `
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  annotations: {mvp.k8s.io/conversion-data: '{"x":1}'}
  labels: {}
spec:
  rollbackTo: {revision: 1}
  template:
    spec:
      containers:
      - name: app
        image: nginx:2
        resources: {limits: {cpu: "0.5"}}
`)
	// mvpctl's output through kubectl-convert: target defaults and zero
	// values filled, the quantity canonical, the unknown field and the
	// empty map gone.
	typed := mustDecode(t, `
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, creationTimestamp: null, annotations: {mvp.k8s.io/conversion-data: '{"x":1}'}}
spec:
  replicas: 1
  revisionHistoryLimit: 10
  template:
    spec:
      containers:
      - {name: app, image: nginx:2, resources: {limits: {cpu: 500m}}}
status: {}
`)
	// The same from the source-defaulted input: the source's default too.
	sourced := mustDecode(t, `
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, creationTimestamp: null}
spec:
  replicas: 1
  revisionHistoryLimit: 2147483647
  template:
    spec:
      containers:
      - {name: app, image: nginx:2, resources: {limits: {cpu: 500m}}}
status: {}
`)
	got := map[string]Class{}
	for _, f := range Classify(Outputs{Kubectl: kubectl, Mvpctl: mvpctl, KubectlTyped: kubectl, Typed: typed, SourceDefaulted: sourced}) {
		got[f.Path] = f.Class
	}
	want := map[string]Class{
		`metadata.annotations["mvp.k8s.io/conversion-data"]`:    Annotation,
		`metadata.creationTimestamp`:                            Filled,
		`metadata.labels`:                                       Omitted,
		`spec.replicas`:                                         Filled,
		`spec.revisionHistoryLimit`:                             SourceDefault,
		`spec.rollbackTo`:                                       Disagreement,
		`spec.template.spec.containers[0].image`:                Disagreement,
		`spec.template.spec.containers[0].resources.limits.cpu`: Canonical,
		`status`: Filled,
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("Classify (-want +got):\n%s", d)
	}
}

// Stage 4 puts both outputs through the target's decoding: a field
// kubectl-convert writes as null (no omitempty) and the target version
// defaults is filled on both sides, and defaults that the target version
// applies to what conversion created (an HPA's behavior from v2beta2's
// tolerance annotations) are on both sides in stage 5 too.
func TestClassify_BothSidesTyped(t *testing.T) {
	kubectl := mustDecode(t, `{"spec": {"parameters": {"name": "alb", "scope": null}, "behavior": {"scaleUp": {"tolerance": "10m"}}}}`)
	mvpctl := mustDecode(t, `{"spec": {"parameters": {"name": "alb"}, "behavior": {"scaleUp": {"tolerance": "10m"}}}}`)
	typed := mustDecode(t, `{"spec": {"parameters": {"name": "alb", "scope": "Cluster"}, "behavior": {"scaleUp": {"tolerance": "10m", "selectPolicy": "Max"}}}}`)
	fs := Classify(Outputs{Kubectl: kubectl, Mvpctl: mvpctl, KubectlTyped: typed, Typed: typed, SourceDefaulted: typed})
	if len(fs) != 1 || fs[0].Path != "spec.parameters.scope" || fs[0].Class != Filled {
		t.Errorf("Classify = %+v, want spec.parameters.scope %s only", fs, Filled)
	}
	// Comparing mvpctl's typed output with kubectl-convert's raw one
	// instead takes the target's defaults for disagreements.
	fs = Classify(Outputs{Kubectl: kubectl, Mvpctl: mvpctl, Typed: typed, SourceDefaulted: typed})
	if !slices.ContainsFunc(fs, func(f Finding) bool { return f.Class == Disagreement }) {
		t.Errorf("Classify without KubectlTyped = %+v, want disagreements", fs)
	}
}

// Without the later stages, every difference the raw outputs have but the
// annotation is a disagreement; a disagreement that appears only in stage
// 5 is reported too.
func TestClassify_Stages(t *testing.T) {
	k := mustDecode(t, `{"spec": {"a": 1, "b": 2}}`)
	m := mustDecode(t, `{"spec": {"b": 2}}`)
	fs := Classify(Outputs{Kubectl: k, Mvpctl: m})
	if len(fs) != 1 || fs[0].Path != "spec.a" || fs[0].Class != Disagreement {
		t.Errorf("Classify without stages = %+v, want spec.a disagreement", fs)
	}
	fs = Classify(Outputs{Kubectl: k, Mvpctl: m, Typed: k, SourceDefaulted: mustDecode(t, `{"spec": {"a": 1, "b": 3}}`)})
	var classes []string
	for _, f := range fs {
		classes = append(classes, f.Path+" "+string(f.Class))
	}
	want := []string{"spec.a " + string(Filled), "spec.b " + string(Disagreement)}
	if !slices.Equal(classes, want) {
		t.Errorf("Classify = %q, want %q", classes, want)
	}
	if fs := Classify(Outputs{Kubectl: k, Mvpctl: k}); len(fs) != 0 {
		t.Errorf("Classify of equal outputs = %+v", fs)
	}
}

func TestVerdict(t *testing.T) {
	filled := []Finding{{Class: Filled}}
	both := []Finding{{Class: Filled}, {Class: Disagreement}}
	for _, tc := range []struct {
		k, m     string
		findings []Finding
		want     Outcome
	}{
		{"a: 1\n", "a: 1\n", nil, Identical},
		{"a: 1\nb: 2\n", "b: 2\na: 1\n", nil, SameValues},
		{"a: 1\n", "b: 1\n", filled, Explained},
		{"a: 1\n", "b: 1\n", both, Disagrees},
	} {
		if got := Verdict([]byte(tc.k), []byte(tc.m), tc.findings); got != tc.want {
			t.Errorf("Verdict(%q, %q) = %s, want %s", tc.k, tc.m, got, tc.want)
		}
	}
}

func TestKeyOrder(t *testing.T) {
	a, err := KeyOrder([]byte("kind: A\napiVersion: v1\nspec:\n  items:\n  - {x: 1, y: 2}\n"))
	if err != nil {
		t.Fatal(err)
	}
	b, err := KeyOrder([]byte("apiVersion: v1\nkind: A\nspec:\n  items:\n  - {y: 2, x: 1, z: 3}\n  extra: 1\n"))
	if err != nil {
		t.Fatal(err)
	}
	if got, want := OrderDiffers(a, b), []string{"", "spec.items[0]"}; !slices.Equal(got, want) {
		t.Errorf("OrderDiffers = %q, want %q", got, want)
	}
	if got := OrderDiffers(a, a); len(got) != 0 {
		t.Errorf("OrderDiffers(a, a) = %q", got)
	}
}

// Decode keeps integers exact and refuses what is not an object.
func TestDecode(t *testing.T) {
	obj, err := Decode([]byte("generation: 9223372036854775807\n"))
	if err != nil {
		t.Fatal(err)
	}
	if n, ok := obj["generation"].(json.Number); !ok || n.String() != "9223372036854775807" {
		t.Errorf("generation = %#v", obj["generation"])
	}
	for _, bad := range []string{"- 1\n", "null\n", "a: [\n"} {
		if _, err := Decode([]byte(bad)); err == nil {
			t.Errorf("Decode(%q) succeeded", bad)
		}
	}
}

func TestNotInScheme(t *testing.T) {
	msg := `kubectl-convert exit 1: error: unable to decode "crd.yaml": no kind "CustomResourceDefinition" is registered for version "apiextensions.k8s.io/v1beta1" in scheme "pkg/api/legacyscheme/scheme.go:30"`
	if !NotInScheme(msg) {
		t.Errorf("NotInScheme(%q) = false", msg)
	}
	other := `kubectl-convert exit 1: error: unable to decode "x.yaml": json: cannot unmarshal bool into Go struct field ObjectMeta.metadata.labels of type string`
	if NotInScheme(other) {
		t.Errorf("NotInScheme(%q) = true", other)
	}
}
