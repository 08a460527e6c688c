package engine_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/mvpctl/mvpctl/engine"
	"github.com/mvpctl/mvpctl/rules"
)

// poisonRules have one step of each kind that keeps round-trip data: a
// move, value steps (modify, the rename's type conversion) and a jq step on
// the whole object.
const poisonRules = `apiVersion: mvp.k8s.io/v1
kind: TransformationRules
metadata: {name: poison}
spec:
  apiMigrationRules:
  - apiGroup: myapps.example.com
    resource: customresources
    fromVersion: v1alpha1
    toVersion: v1beta1
    transformations:
    - {path: spec.config.legacyTimeout, action: rename, targetPath: spec.config.requestTimeoutSeconds, type: integer}
    - {path: spec.stateManagement, action: modify, matchValue: ephemeral, replaceValue: stateless}
    - {action: jq, forward: '.spec.extra = "x"', reverse: 'del(.spec.extra)'}
`

var (
	poisonFrom = schema.GroupVersion{Group: "myapps.example.com", Version: "v1beta1"}
	poisonTo   = schema.GroupVersion{Group: "myapps.example.com", Version: "v1alpha1"}
)

func loadRules(t *testing.T, src string, opts engine.Options) *engine.Converter {
	t.Helper()
	path := filepath.Join(t.TempDir(), "rules.yaml")
	if err := os.WriteFile(path, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	c, err := engine.Load(opts, path)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// poisoned is a served object whose round-trip annotation is data; spec.extra
// makes the reverse conversion keep round-trip data of its own.
func poisoned(data any) map[string]any {
	ann := map[string]any{"keep": "me"}
	if data != nil {
		ann[rules.ConversionDataAnnotation] = data
	}
	return map[string]any{
		"apiVersion": "myapps.example.com/v1beta1", "kind": "Customresource",
		"metadata": map[string]any{"name": "a", "namespace": "ns", "resourceVersion": "7", "annotations": ann},
		"spec":     map[string]any{"config": map[string]any{"requestTimeoutSeconds": 30}, "stateManagement": "stateless", "extra": "y"},
	}
}

// poisonCases are annotations no program may use: malformed, oversized,
// of the wrong shape, or well formed but failing the conversion.
func poisonCases(ruleID string) []struct{ name, data string } {
	r := func(s string) string { return strings.ReplaceAll(s, "RULE", ruleID) }
	return []struct{ name, data string }{
		{"not JSON", "garbage"},
		{"an array", "[1]"},
		{"data after the object", `{"a":1}}`},
		{"oversized", `{"pad":"` + strings.Repeat("x", rules.DefaultConversionDataLimit) + `"}`},
		{"rule data is a string", r(`{"RULE":"x"}`)},
		{"step data is not an object", r(`{"RULE":{"1":[1]}}`)},
		{"value is not [] or [v]", r(`{"RULE":{"1":{"spec.stateManagement":"x"}}}`)},
		{"value has two elements", r(`{"RULE":{"1":{"spec.stateManagement":["a","b"]}}}`)},
		{"changes index an array", r(`{"RULE":{"2":{"":[[["spec",100000000],1]]}}}`)},
		{"changes are not a list", r(`{"RULE":{"2":{"":{"a":1}}}}`)},
		{"$created is a string", `{"$created":"annotations"}`},
		{"value fails the step", r(`{"RULE":{"0t":{"spec.config.requestTimeoutSeconds":["abc"]}}}`)},
		{"changes fail the step", r(`{"RULE":{"2":{"":[[["spec","config","requestTimeoutSeconds","x"],1]]}}}`)},
		{"carried data overflows the limit", `{"other":"` + strings.Repeat("x", rules.DefaultConversionDataLimit-20) + `"}`},
	}
}

// TestConverter_InvalidConversionDataIsIgnored: with InvalidConversionData
// set, a bad annotation is ignored (the object converts as if it had none,
// with both executors alike) and reported once with the object's name;
// without it, the conversion fails.
func TestConverter_InvalidConversionDataIsIgnored(t *testing.T) {
	var reported []*engine.ConversionDataError
	opts := func(ex engine.Executor, ignore bool) engine.Options {
		o := engine.Options{Executor: ex}
		if ignore {
			o.InvalidConversionData = func(e *engine.ConversionDataError) { reported = append(reported, e) }
		}
		return o
	}
	conv := map[engine.Executor]*engine.Converter{}
	strict := map[engine.Executor]*engine.Converter{}
	for _, ex := range []engine.Executor{engine.Native, engine.JQ} {
		conv[ex] = loadRules(t, poisonRules, opts(ex, true))
		strict[ex] = loadRules(t, poisonRules, opts(ex, false))
	}
	ruleID := conv[engine.Native].Rules()[0].Rule.ID()
	want, err := conv[engine.Native].Convert(context.Background(), poisoned(nil), poisonTo)
	if err != nil {
		t.Fatal(err)
	}
	wantJSON, _ := engine.EncodeObject(want)
	for _, tc := range poisonCases(ruleID) {
		t.Run(tc.name, func(t *testing.T) {
			for _, ex := range []engine.Executor{engine.Native, engine.JQ} {
				reported = nil
				out, err := conv[ex].Convert(context.Background(), poisoned(tc.data), poisonTo)
				if err != nil {
					t.Fatalf("executor %d: %v", ex, err)
				}
				got, _ := engine.EncodeObject(out)
				if string(got) != string(wantJSON) {
					t.Errorf("executor %d: converted as\n%s\nwant, as without the annotation,\n%s", ex, got, wantJSON)
				}
				if len(reported) != 1 || reported[0].Namespace != "ns" || reported[0].Name != "a" || reported[0].ResourceVersion != "7" ||
					reported[0].Resource != "customresources" || reported[0].GVK.GroupVersion() != poisonFrom {
					t.Errorf("executor %d: reported %v", ex, reported)
				} else {
					t.Logf("executor %d: %v", ex, reported[0])
				}
				if _, err := strict[ex].Convert(context.Background(), poisoned(tc.data), poisonTo); err == nil {
					t.Errorf("executor %d: without InvalidConversionData the annotation was accepted", ex)
				}
			}
		})
	}
}

// TestConverter_InvalidConversionDataAfterAChange: the step that fails on
// the annotation runs after one that changed the object in place (the
// reverse of newField removes spec.n and keeps it): the object converted
// again without the annotation must be the object as it was read.
func TestConverter_InvalidConversionDataAfterAChange(t *testing.T) {
	const src = `apiVersion: mvp.k8s.io/v1
kind: TransformationRules
metadata: {name: change}
spec:
  apiMigrationRules:
  - apiGroup: myapps.example.com
    resource: customresources
    fromVersion: v1alpha1
    toVersion: v1beta1
    transformations:
    - {path: spec.c, action: convertType, type: integer}
    - {path: spec.n, action: newField}
`
	for _, ex := range []engine.Executor{engine.Native, engine.JQ} {
		reported := 0
		c := loadRules(t, src, engine.Options{Executor: ex, InvalidConversionData: func(*engine.ConversionDataError) { reported++ }})
		obj := func(data string) map[string]any {
			o := poisoned(nil)
			o["spec"] = map[string]any{"c": 1, "n": "kept"}
			if data != "" {
				o["metadata"].(map[string]any)["annotations"].(map[string]any)[rules.ConversionDataAnnotation] = data
			}
			return o
		}
		want, err := c.Convert(context.Background(), obj(""), poisonTo)
		if err != nil {
			t.Fatal(err)
		}
		bad := strings.ReplaceAll(`{"RULE":{"0":{"spec.c":["abc"]}}}`, "RULE", c.Rules()[0].Rule.ID())
		got, err := c.Convert(context.Background(), obj(bad), poisonTo)
		if err != nil {
			t.Fatal(err)
		}
		w, _ := engine.EncodeObject(want)
		g, _ := engine.EncodeObject(got)
		if string(g) != string(w) || reported != 1 || !strings.Contains(string(w), "kept") {
			t.Errorf("executor %d: got\n%s\nwant\n%s\n(%d reported)", ex, g, w, reported)
		}
	}
}

// TestConverter_ValidConversionDataIsUsed: the annotation the forward
// conversion writes restores the object, nothing is reported.
func TestConverter_ValidConversionDataIsUsed(t *testing.T) {
	for _, ex := range []engine.Executor{engine.Native, engine.JQ} {
		reported := 0
		c := loadRules(t, poisonRules, engine.Options{Executor: ex, InvalidConversionData: func(*engine.ConversionDataError) { reported++ }})
		in := poisoned(nil)
		inJSON, _ := engine.EncodeObject(in)
		old, err := c.Convert(context.Background(), in, poisonTo)
		if err != nil {
			t.Fatal(err)
		}
		if _, ok := old["metadata"].(map[string]any)["annotations"].(map[string]any)[rules.ConversionDataAnnotation]; !ok {
			t.Fatalf("executor %d: no round-trip data kept: %v", ex, old)
		}
		back, err := c.Convert(context.Background(), old, poisonFrom)
		if err != nil {
			t.Fatal(err)
		}
		got, _ := engine.EncodeObject(back)
		if string(got) != string(inJSON) || reported != 0 {
			t.Errorf("executor %d: round trip\n%s\nwant\n%s\n(%d reported)", ex, got, inJSON, reported)
		}
	}
}

// TestConverter_StrictConversionDataError: without InvalidConversionData a
// malformed annotation is a *ConversionDataError naming the object.
func TestConverter_StrictConversionDataError(t *testing.T) {
	c := loadRules(t, poisonRules, engine.Options{})
	_, err := c.Convert(context.Background(), poisoned(`{"pad":"`+strings.Repeat("x", rules.DefaultConversionDataLimit)+`"}`), poisonTo)
	var cde *engine.ConversionDataError
	if !errors.As(err, &cde) || !strings.Contains(err.Error(), "Customresource ns/a") || !strings.Contains(err.Error(), "more than the limit of 65536") {
		t.Errorf("got %v", err)
	}
}

// loopRules has a jq step that never ends, in both directions.
const loopRules = `apiVersion: mvp.k8s.io/v1
kind: TransformationRules
metadata: {name: loop}
spec:
  apiMigrationRules:
  - apiGroup: myapps.example.com
    resource: customresources
    fromVersion: v1alpha1
    toVersion: v1beta1
    transformations:
    - {path: spec.a, action: jq, forward: 'def f: f; f', reverse: 'last(range(1e18))'}
    - {action: jq, forward: 'until(false; .)', reverse: '[repeat(1)]'}
`

// TestConverter_ProgramTimeout: a rule that loops fails with a
// ProgramTimeoutError that names the rule and the direction, with both
// executors; the deadline is short so that the test is quick, and only the
// error is checked.
func TestConverter_ProgramTimeout(t *testing.T) {
	for _, ex := range []engine.Executor{engine.Native, engine.JQ} {
		c := loadRules(t, loopRules, engine.Options{Executor: ex, ProgramTimeout: 20 * time.Millisecond})
		ruleID := c.Rules()[0].Rule.ID()
		for _, tc := range []struct {
			obj map[string]any
			to  schema.GroupVersion
			dir rules.Direction
		}{
			{map[string]any{"apiVersion": "myapps.example.com/v1alpha1", "kind": "Customresource", "spec": map[string]any{"a": 1}}, poisonFrom, rules.Forward},
			{map[string]any{"apiVersion": "myapps.example.com/v1alpha1", "kind": "Customresource", "spec": map[string]any{}}, poisonFrom, rules.Forward},
			{map[string]any{"apiVersion": "myapps.example.com/v1beta1", "kind": "Customresource", "spec": map[string]any{"a": 1}}, poisonTo, rules.Reverse},
			{map[string]any{"apiVersion": "myapps.example.com/v1beta1", "kind": "Customresource", "spec": map[string]any{}}, poisonTo, rules.Reverse},
		} {
			_, err := c.Convert(context.Background(), tc.obj, tc.to)
			var te *engine.ProgramTimeoutError
			var ce *engine.ConversionError
			if !errors.As(err, &te) || !errors.As(err, &ce) || te.RuleID != ruleID || te.Direction != tc.dir || !strings.Contains(err.Error(), "did not finish within 20ms") {
				t.Errorf("executor %d, %v to %s: got %v", ex, tc.obj["spec"], tc.to, err)
			}
		}
	}
}
