package engine_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/mvpctl/mvpctl/engine"
	"github.com/mvpctl/mvpctl/rules"
)

var (
	setOld = schema.GroupVersion{Group: "example.com", Version: "v1alpha1"}
	setNew = schema.GroupVersion{Group: "example.com", Version: "v1beta1"}
)

const setRuleID = "widgets.example.com/v1alpha1->v1beta1"

// setRules is a rule with one set step.
func setRules(path, value string) string {
	return fmt.Sprintf(`apiVersion: mvp.k8s.io/v1
kind: TransformationRules
metadata: {name: set}
spec:
  apiMigrationRules:
  - apiGroup: example.com
    resource: widgets
    kind: Widget
    fromVersion: v1alpha1
    toVersion: v1beta1
    transformations:
    - {path: %q, action: set, value: %s}
`, path, value)
}

// setCase converts in (a Widget's members besides apiVersion and kind)
// with one set step.
type setCase struct {
	name, path, value string
	// reverse converts in from v1beta1 to v1alpha1.
	reverse bool
	in      string
	// want is the result without its annotation, data the rule's
	// round-trip data in it ("" for none), err the error instead.
	want, data, err string
}

var setCases = []setCase{
	{name: "parent present", path: "spec.a", value: "1",
		in:   `{"metadata":{"name":"w"},"spec":{"size":1}}`,
		want: `{"metadata":{"name":"w"},"spec":{"a":1,"size":1}}`},
	{name: "parent missing", path: "metadata.labels.team", value: "x",
		in:   `{"metadata":{"name":"w"}}`,
		want: `{"metadata":{"labels":{"team":"x"},"name":"w"}}`},
	{name: "nested parents missing", path: "spec.a.b.c", value: "1",
		in:   `{"metadata":{"name":"w"},"spec":{"size":1}}`,
		want: `{"metadata":{"name":"w"},"spec":{"a":{"b":{"c":1}},"size":1}}`},
	{name: "top-level parent missing", path: "spec.a.b", value: `{x: [1]}`,
		in:   `{"metadata":{"name":"w"}}`,
		want: `{"metadata":{"name":"w"},"spec":{"a":{"b":{"x":[1]}}}}`},
	{name: "empty parent kept for the way back", path: "spec.a.b", value: "1",
		in:   `{"metadata":{"name":"w"},"spec":{}}`,
		want: `{"metadata":{"name":"w"},"spec":{"a":{"b":1}}}`, data: `{"0":{"spec":[{}]}}`},
	{name: "null parent kept for the way back", path: "metadata.labels.team", value: "x",
		in:   `{"metadata":{"name":"w","labels":null}}`,
		want: `{"metadata":{"labels":{"team":"x"},"name":"w"}}`, data: `{"0":{"metadata.labels":[null]}}`},
	{name: "old value kept", path: "spec.a.b", value: "1",
		in:   `{"metadata":{"name":"w"},"spec":{"a":{"b":2}}}`,
		want: `{"metadata":{"name":"w"},"spec":{"a":{"b":1}}}`, data: `{"0":{"spec.a.b":[2]}}`},
	{name: "parent not an object", path: "spec.a.b", value: "1",
		in:  `{"metadata":{"name":"w"},"spec":{"a":"text"}}`,
		err: "transformations[0] (set spec.a.b) at spec.a.b: spec.a is a string, not an object"},
	{name: "grandparent not an object", path: "spec.a.b", value: "1",
		in:  `{"metadata":{"name":"w"},"spec":[1]}`,
		err: "transformations[0] (set spec.a.b) at spec.a.b: spec is an array, not an object"},
	{name: "wildcard: parents created under each item, null items skipped", path: "spec.items[*].meta.tag", value: `"t"`,
		in:   `{"metadata":{"name":"w"},"spec":{"items":[{"name":"a"},{"meta":{"x":1}},null,{"meta":null}]}}`,
		want: `{"metadata":{"name":"w"},"spec":{"items":[{"meta":{"tag":"t"},"name":"a"},{"meta":{"tag":"t","x":1}},null,{"meta":{"tag":"t"}}]}}`,
		data: `{"0":{"spec.items[3].meta":[null]}}`},
	{name: "wildcard over a missing list: nothing to create", path: "spec.items[*].tag", value: `"t"`,
		in:   `{"metadata":{"name":"w"},"spec":{}}`,
		want: `{"metadata":{"name":"w"},"spec":{}}`},
	{name: "index past the end: nothing to create", path: "spec.items[1].meta.tag", value: `"t"`,
		in:   `{"metadata":{"name":"w"},"spec":{"items":[{}]}}`,
		want: `{"metadata":{"name":"w"},"spec":{"items":[{}]}}`},
	{name: "wildcard item not an object", path: "spec.items[*].tag", value: `"t"`,
		in:  `{"metadata":{"name":"w"},"spec":{"items":[{},3]}}`,
		err: "transformations[0] (set spec.items[*].tag) at spec.items[1].tag: spec.items[1] is a number, not an object"},

	{name: "reverse removes the parents it leaves empty", reverse: true, path: "spec.a.b", value: "1",
		in:   `{"metadata":{"name":"w"},"spec":{"a":{"b":1}}}`,
		want: `{"metadata":{"name":"w"}}`},
	{name: "reverse stops at a parent with other fields", reverse: true, path: "metadata.labels.team", value: "x",
		in:   `{"metadata":{"name":"w","labels":{"team":"x"}}}`,
		want: `{"metadata":{"name":"w"}}`},
	{name: "reverse keeps another value", reverse: true, path: "spec.a.b", value: "1",
		in:   `{"metadata":{"name":"w"},"spec":{"a":{"b":2,"c":3}}}`,
		want: `{"metadata":{"name":"w"},"spec":{"a":{"c":3}}}`, data: `{"0":{"spec.a.b":[2]}}`},
	{name: "reverse keeps the absence under a missing parent", reverse: true, path: "spec.a.b", value: "1",
		in:   `{"metadata":{"name":"w"},"spec":{}}`,
		want: `{"metadata":{"name":"w"},"spec":{}}`, data: `{"0":{"spec.a.b":[]}}`},
	{name: "reverse keeps the absence under a parent not an object", reverse: true, path: "spec.a.b", value: "1",
		in:   `{"metadata":{"name":"w"},"spec":{"a":5}}`,
		want: `{"metadata":{"name":"w"},"spec":{"a":5}}`, data: `{"0":{"spec.a.b":[]}}`},
}

// TestSet_MissingParents runs each case with the native executor and the jq
// programs, then converts the result back: it must give the input again.
func TestSet_MissingParents(t *testing.T) {
	for _, tc := range setCases {
		t.Run(tc.name, func(t *testing.T) {
			src := setRules(tc.path, tc.value)
			for _, ex := range []engine.Executor{engine.Native, engine.JQ} {
				c := loadRules(t, src, engine.Options{Executor: ex})
				from, to := setOld, setNew
				if tc.reverse {
					from, to = to, from
				}
				in := widget(t, tc.in, from)
				out, err := c.Convert(context.Background(), rules.DeepCopyJSON(in).(map[string]any), to)
				if tc.err != "" {
					if err == nil || !strings.HasSuffix(err.Error(), tc.err) {
						t.Fatalf("executor %d: got error %v, want one ending in %q", ex, err, tc.err)
					}
					continue
				}
				if err != nil {
					t.Fatalf("executor %d: %v", ex, err)
				}
				body, data := splitData(t, out)
				if want := encode(t, widget(t, tc.want, to)); body != want {
					t.Errorf("executor %d:\n got %s\nwant %s", ex, body, want)
				}
				if data != tc.data {
					t.Errorf("executor %d: round-trip data %s, want %s", ex, data, tc.data)
				}
				back, err := c.Convert(context.Background(), out, from)
				if err != nil {
					t.Fatalf("executor %d: back: %v", ex, err)
				}
				if got, want := encode(t, back), encode(t, in); got != want {
					t.Errorf("executor %d: round trip\n got %s\nwant %s", ex, got, want)
				}
			}
		})
	}
}

func widget(t *testing.T, members string, gv schema.GroupVersion) map[string]any {
	t.Helper()
	obj, err := engine.DecodeObject([]byte(members))
	if err != nil {
		t.Fatal(err)
	}
	obj["apiVersion"], obj["kind"] = gv.String(), "Widget"
	return obj
}

func encode(t *testing.T, obj map[string]any) string {
	t.Helper()
	b, err := engine.EncodeObject(obj)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// splitData returns obj without its round-trip annotation, and the set
// rule's data in that annotation.
func splitData(t *testing.T, obj map[string]any) (body, data string) {
	t.Helper()
	obj = rules.DeepCopyJSON(obj).(map[string]any)
	meta, _ := obj["metadata"].(map[string]any)
	ann, _ := meta["annotations"].(map[string]any)
	raw, ok := ann[rules.ConversionDataAnnotation].(string)
	if !ok {
		return encode(t, obj), ""
	}
	delete(ann, rules.ConversionDataAnnotation)
	if len(ann) == 0 {
		delete(meta, "annotations")
	}
	var all map[string]json.RawMessage
	if err := json.Unmarshal([]byte(raw), &all); err != nil {
		t.Fatal(err)
	}
	return encode(t, obj), string(all[setRuleID])
}

// TestSet_ParentDataOnlyEmpty: round-trip data can put back only an empty
// object or null for a parent that removing the field removed; an
// annotation naming anything else for it changes nothing.
func TestSet_ParentDataOnlyEmpty(t *testing.T) {
	src := setRules("spec.a.b", "1")
	for _, ex := range []engine.Executor{engine.Native, engine.JQ} {
		c := loadRules(t, src, engine.Options{Executor: ex})
		for data, want := range map[string]string{
			`{"0":{"spec":[{"evil":1}]}}`:         `{"metadata":{"name":"w"}}`,
			`{"0":{"spec":[null]}}`:               `{"metadata":{"name":"w"},"spec":null}`,
			`{"0":{"spec":[{}],"spec.a":[null]}}`: `{"metadata":{"name":"w"},"spec":{"a":null}}`,
		} {
			in := widget(t, `{"metadata":{"name":"w"},"spec":{"a":{"b":1}}}`, setNew)
			in["metadata"].(map[string]any)["annotations"] = map[string]any{rules.ConversionDataAnnotation: `{"$created":["annotations"],"` + setRuleID + `":` + data + `}`}
			out, err := c.Convert(context.Background(), in, setOld)
			if err != nil {
				t.Fatalf("executor %d, data %s: %v", ex, data, err)
			}
			if got, want := encode(t, out), encode(t, widget(t, want, setOld)); got != want {
				t.Errorf("executor %d, data %s:\n got %s\nwant %s", ex, data, got, want)
			}
		}
	}
}

// renameRules is a rule with one rename.
func renameRules(path, target string) string {
	return fmt.Sprintf(`apiVersion: mvp.k8s.io/v1
kind: TransformationRules
metadata: {name: set}
spec:
  apiMigrationRules:
  - apiGroup: example.com
    resource: widgets
    kind: Widget
    fromVersion: v1alpha1
    toVersion: v1beta1
    transformations:
    - {path: %q, action: rename, targetPath: %q}
`, path, target)
}

// TestRename_TargetParents: a move creates the missing parents of its
// target and removes them on the way back; a parent that holds something
// else fails with the same error naming it in both executors.
func TestRename_TargetParents(t *testing.T) {
	for _, tc := range []setCase{
		{name: "parents missing", path: "spec.t", value: "spec.config.timeouts.request",
			in:   `{"metadata":{"name":"w"},"spec":{"t":3}}`,
			want: `{"metadata":{"name":"w"},"spec":{"config":{"timeouts":{"request":3}}}}`},
		{name: "null parent kept for the way back", path: "spec.t", value: "spec.config.timeouts.request",
			in:   `{"metadata":{"name":"w"},"spec":{"t":3,"config":null}}`,
			want: `{"metadata":{"name":"w"},"spec":{"config":{"timeouts":{"request":3}}}}`, data: `{"0":{"spec.config":[null]}}`},
		{name: "parent not an object", path: "spec.t", value: "spec.config.timeouts.request",
			in:  `{"metadata":{"name":"w"},"spec":{"t":3,"config":{"timeouts":true}}}`,
			err: "transformations[0] (rename spec.t -> spec.config.timeouts.request) at spec.config.timeouts.request: spec.config.timeouts is a boolean, not an object"},
		{name: "parent not an array", path: "spec.t", value: "spec.list[0].t",
			in:  `{"metadata":{"name":"w"},"spec":{"t":3,"list":{}}}`,
			err: "transformations[0] (rename spec.t -> spec.list[0].t) at spec.list[0].t: spec.list is an object, not an array"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			src := renameRules(tc.path, tc.value)
			for _, ex := range []engine.Executor{engine.Native, engine.JQ} {
				c := loadRules(t, src, engine.Options{Executor: ex})
				in := widget(t, tc.in, setOld)
				out, err := c.Convert(context.Background(), rules.DeepCopyJSON(in).(map[string]any), setNew)
				if tc.err != "" {
					if err == nil || !strings.HasSuffix(err.Error(), tc.err) {
						t.Fatalf("executor %d: got error %v, want one ending in %q", ex, err, tc.err)
					}
					continue
				}
				if err != nil {
					t.Fatalf("executor %d: %v", ex, err)
				}
				body, data := splitData(t, out)
				if want := encode(t, widget(t, tc.want, setNew)); body != want || data != tc.data {
					t.Errorf("executor %d:\n got %s, data %s\nwant %s, data %s", ex, body, data, want, tc.data)
				}
				back, err := c.Convert(context.Background(), out, setOld)
				if err != nil {
					t.Fatalf("executor %d: back: %v", ex, err)
				}
				if got, want := encode(t, back), encode(t, in); got != want {
					t.Errorf("executor %d: round trip\n got %s\nwant %s", ex, got, want)
				}
			}
		})
	}
}

// TestNewField_RestoresOnlyUnderItsParent: newField writes only under
// parents that exist, unlike set. A field the way back dropped comes back
// on the way forward where its parent is still there; where an old client
// removed the parent since, it stays removed rather than bringing the
// parent back.
func TestNewField_RestoresOnlyUnderItsParent(t *testing.T) {
	src := `apiVersion: mvp.k8s.io/v1
kind: TransformationRules
metadata: {name: newfield}
spec:
  apiMigrationRules:
  - apiGroup: example.com
    resource: widgets
    kind: Widget
    fromVersion: v1alpha1
    toVersion: v1beta1
    transformations:
    - {path: spec.tls.minVersion, action: newField}
`
	for _, ex := range []engine.Executor{engine.Native, engine.JQ} {
		c := loadRules(t, src, engine.Options{Executor: ex})
		newer := widget(t, `{"metadata":{"name":"w"},"spec":{"tls":{"cert":"c","minVersion":"1.3"}}}`, setNew)
		old, err := c.Convert(context.Background(), rules.DeepCopyJSON(newer).(map[string]any), setOld)
		if err != nil {
			t.Fatal(err)
		}
		kept, err := c.Convert(context.Background(), rules.DeepCopyJSON(old).(map[string]any), setNew)
		if err != nil {
			t.Fatal(err)
		}
		if got, want := encode(t, kept), encode(t, newer); got != want {
			t.Errorf("executor %d: parent kept:\n got %s\nwant %s", ex, got, want)
		}
		delete(old["spec"].(map[string]any), "tls")
		dropped, err := c.Convert(context.Background(), old, setNew)
		if err != nil {
			t.Fatal(err)
		}
		if got, want := encode(t, dropped), encode(t, widget(t, `{"metadata":{"name":"w"},"spec":{}}`, setNew)); got != want {
			t.Errorf("executor %d: parent removed:\n got %s\nwant %s", ex, got, want)
		}
	}
}
