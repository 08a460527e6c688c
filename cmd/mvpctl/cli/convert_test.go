package cli

import (
	"encoding/json"
	"os"
	"strings"
	"testing"

	"github.com/mvpctl/mvpctl/engine"
)

// readObjects decodes mvpctl's output (YAML documents or JSON).
func readObjects(t *testing.T, out string) []map[string]any {
	t.Helper()
	docs, err := engine.ReadDocuments("output", strings.NewReader(out))
	if err != nil {
		t.Fatalf("output does not decode: %v\n%s", err, out)
	}
	objs := make([]map[string]any, len(docs))
	for i, d := range docs {
		objs[i] = d.Object
	}
	return objs
}

func jsonOf(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

const endpointSliceV1beta1 = `apiVersion: discovery.k8s.io/v1beta1
kind: EndpointSlice
metadata: {name: web-abc, namespace: shop}
addressType: IPv4
endpoints: [{addresses: [10.0.0.1], topology: {kubernetes.io/hostname: node-1}}]
`

// An object of the --output-version's group that no rule converts is a
// failure, not a warning and an unchanged object with exit 0: a pipeline
// would ship the old version.
func TestConvert_UnconvertedObjectOfTargetGroupFails(t *testing.T) {
	es := writeFile(t, "es.yaml", endpointSliceV1beta1)
	args := []string{"convert", "-f", es, "--builtin=false", "--rules", seedRules, "--output-version", "discovery.k8s.io/v1"}
	code, out, errOut := run(t, "", args...)
	want := "es.yaml:1: EndpointSlice shop/web-abc (discovery.k8s.io/v1beta1): no rule converts endpointslices.discovery.k8s.io from discovery.k8s.io/v1beta1 to discovery.k8s.io/v1"
	if code != exitFailure || out != "" || !strings.Contains(errOut, "error: "+es+":1:") || !strings.Contains(errOut, want) {
		t.Errorf("exit %d, stdout %q, stderr:\n%s\nwant exit 1, nothing written and an error naming the object", code, out, errOut)
	}

	code, out, errOut = run(t, "", append(args, "--allow-unconverted")...)
	if code != 0 || !strings.Contains(errOut, "warning: ") || !strings.Contains(errOut, want+"; left unchanged") {
		t.Errorf("--allow-unconverted: exit %d, stderr:\n%s\nwant exit 0 and a warning naming file and line", code, errOut)
	}
	orig := readObjects(t, endpointSliceV1beta1)
	if got := readObjects(t, out); len(got) != 1 || jsonOf(t, got[0]) != jsonOf(t, orig[0]) {
		t.Errorf("--allow-unconverted: want the object unchanged, got:\n%s", out)
	}

	code, _, errOut = run(t, "", append(args, "--allow-unconverted", "--quiet")...)
	if code != 0 || errOut != "" {
		t.Errorf("--allow-unconverted --quiet: exit %d, stderr %q, want exit 0 and no warning", code, errOut)
	}
}

// A bundle that mixes groups converts the objects of the --output-version's
// group and writes the others untouched, without a warning, even when rules
// exist for them toward other versions (the seed's PodDisruptionBudget).
func TestConvert_MixedBundleConvertsOnlyTheTargetGroup(t *testing.T) {
	cr, err := os.ReadFile(seedCR)
	if err != nil {
		t.Fatal(err)
	}
	pdb, err := os.ReadFile("../../../testdata/examples/seed/pdb-v1beta1.yaml")
	if err != nil {
		t.Fatal(err)
	}
	const configMap = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: settings, namespace: shop}\ndata: {a: b}\n"
	bundle := string(pdb) + "---\n" + string(cr) + "---\n" + configMap
	code, out, errOut := run(t, bundle, "convert", "-f", "-", "--rules", seedRules, "--output-version", "myapps.example.com/v1beta1")
	if code != 0 || errOut != "" {
		t.Fatalf("exit %d, stderr:\n%s\nwant exit 0 and no warning", code, errOut)
	}
	in, got := readObjects(t, bundle), readObjects(t, out)
	if len(got) != 3 {
		t.Fatalf("want 3 objects, got:\n%s", out)
	}
	for _, i := range []int{0, 2} {
		if jsonOf(t, got[i]) != jsonOf(t, in[i]) {
			t.Errorf("object %d of another group changed:\n%s", i+1, jsonOf(t, got[i]))
		}
	}
	if got[1]["apiVersion"] != "myapps.example.com/v1beta1" {
		t.Errorf("the custom resource was not converted:\n%s", jsonOf(t, got[1]))
	}
}

// --continue-on-error writes every object: converted, or unchanged with its
// error on stderr, and exits 1; a failed item of a List stays in the List.
func TestConvert_ContinueOnErrorWritesEveryObject(t *testing.T) {
	rules := writeFile(t, "rules.yaml", failingRules)
	args := []string{"convert", "-f", "-", "--rules", rules, "--output-version", "myapps.example.com/v1beta1", "--continue-on-error"}

	code, out, errOut := run(t, twoObjects, args...)
	got := readObjects(t, out)
	if code != exitFailure || len(got) != 2 {
		t.Fatalf("exit %d, %d objects written, want exit 1 and both objects:\n%s\nstderr:\n%s", code, len(got), out, errOut)
	}
	if got[0]["apiVersion"] != "myapps.example.com/v1beta1" || !strings.Contains(jsonOf(t, got[0]), `"legacyTimeout":30`) {
		t.Errorf("the good object was not converted: %s", jsonOf(t, got[0]))
	}
	if want := readObjects(t, twoObjects)[1]; jsonOf(t, got[1]) != jsonOf(t, want) {
		t.Errorf("the failed object is not written unchanged: %s", jsonOf(t, got[1]))
	}
	if !strings.Contains(errOut, "error: <stdin>:6: converting CustomResource shop/bad") || !strings.Contains(errOut, "1 of 2 documents failed to convert") {
		t.Errorf("stderr:\n%s", errOut)
	}

	list := `{"apiVersion": "v1", "kind": "List", "items": [
  {"apiVersion": "myapps.example.com/v1alpha1", "kind": "CustomResource", "metadata": {"name": "good"}, "spec": {"config": {"legacyTimeout": "30"}}},
  {"apiVersion": "myapps.example.com/v1alpha1", "kind": "CustomResource", "metadata": {"name": "bad"}, "spec": {"config": {"legacyTimeout": "thirty"}}}]}`
	code, out, errOut = run(t, list, append(args, "-o", "json")...)
	got = readObjects(t, out)
	if code != exitFailure || len(got) != 1 {
		t.Fatalf("List: exit %d, output:\n%s\nstderr:\n%s", code, out, errOut)
	}
	items, _ := got[0]["items"].([]any)
	if len(items) != 2 {
		t.Fatalf("List: want both items, got:\n%s", out)
	}
	if s := jsonOf(t, items[0]); !strings.Contains(s, `"apiVersion":"myapps.example.com/v1beta1"`) || !strings.Contains(s, `"legacyTimeout":30`) {
		t.Errorf("List: item 0 not converted: %s", s)
	}
	if s := jsonOf(t, items[1]); !strings.Contains(s, `"apiVersion":"myapps.example.com/v1alpha1"`) || !strings.Contains(s, `"legacyTimeout":"thirty"`) {
		t.Errorf("List: item 1 not unchanged: %s", s)
	}
	if !strings.Contains(errOut, "error: <stdin>:1: items[1]: converting CustomResource bad") {
		t.Errorf("List: stderr does not name the item:\n%s", errOut)
	}

	// Without --continue-on-error, nothing is written.
	code, out, _ = run(t, list, args[:len(args)-1]...)
	if code != exitFailure || out != "" {
		t.Errorf("List without --continue-on-error: exit %d, output:\n%s", code, out)
	}
}

const setParentsRules = `apiVersion: mvp.k8s.io/v1
kind: TransformationRules
metadata: {name: t}
spec:
  apiMigrationRules:
  - apiGroup: example.com
    resource: widgets
    kind: Widget
    fromVersion: v1
    toVersion: v2
    transformations:
    - {path: metadata.labels.team, action: set, value: x}
    - {path: spec.a.b, action: set, value: 1}
`

// set creates the missing parents of its path (metadata.labels, spec.a);
// the way back removes them and gives the input back, keeping the empty
// spec the input had.
func TestConvert_SetCreatesMissingParents(t *testing.T) {
	rules := writeFile(t, "r.yaml", setParentsRules)
	in := "apiVersion: example.com/v1\nkind: Widget\nmetadata: {name: w}\nspec: {}\n"
	want := `apiVersion: example.com/v2
kind: Widget
metadata:
  annotations:
    mvp.k8s.io/conversion-data: '{"$created":["annotations"],"widgets.example.com/v1->v2":{"1":{"spec":[{}]}}}'
  labels:
    team: x
  name: w
spec:
  a:
    b: 1
`
	for _, ex := range []string{"native", "jq"} {
		code, out, errOut := run(t, in, "convert", "-f", "-", "--rules", rules, "--engine", ex, "--output-version", "example.com/v2")
		if code != 0 || out != want {
			t.Fatalf("--engine %s: exit %d, stderr %s, output:\n%s\nwant:\n%s", ex, code, errOut, out, want)
		}
		code, back, errOut := run(t, out, "convert", "-f", "-", "--rules", rules, "--engine", ex, "--output-version", "example.com/v1")
		if code != 0 || jsonOf(t, readObjects(t, back)) != jsonOf(t, readObjects(t, in)) {
			t.Errorf("--engine %s: back: exit %d, stderr %s, output:\n%s", ex, code, errOut, back)
		}
	}
	_, src, _ := run(t, "", "compile", "--direction", "forward", rules)
	if !strings.Contains(src, "\n| mvp_set(\"1\"; [\"spec\",\"a\",\"b\"]; [1]; [])\n") {
		t.Errorf("compiled program lacks the set step as one readable line:\n%s", src)
	}

	blocked := "apiVersion: example.com/v1\nkind: Widget\nmetadata: {name: w}\nspec: {a: 5}\n"
	code, out, errOut := run(t, blocked, "convert", "-f", "-", "--rules", rules, "--output-version", "example.com/v2")
	wantErr := "error: <stdin>:1: converting Widget w (example.com/v1) forward by rule widgets.example.com/v1->v2: transformations[1] (set spec.a.b) at spec.a.b: spec.a is a number, not an object\n"
	if code != exitFailure || out != "" || !strings.HasPrefix(errOut, wantErr) {
		t.Errorf("parent not an object: exit %d, stdout %q, stderr:\n%s\nwant it to start with:\n%s", code, out, errOut, wantErr)
	}
}
