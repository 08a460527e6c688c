package engine_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/mvpctl/mvpctl/engine"
	"github.com/mvpctl/mvpctl/rules"
)

// FuzzConvertRoundTrip feeds arbitrary JSON objects through every rule set
// shipped (rules/builtin and testdata): whatever the object holds, converting it to the
// other version and back must give it back exactly, the native executor and
// the jq programs must agree, and nothing may panic.
func FuzzConvertRoundTrip(f *testing.F) {
	ruleFiles, _ := filepath.Glob("../rules/builtin/*.yaml")
	ruleFiles = append(ruleFiles, "../testdata/examples/seed/mvp-rules.yaml", "../testdata/bench/deployment-rules.yaml")
	var convs [][2]*engine.Converter
	for _, file := range ruleFiles {
		n, err := engine.Load(engine.Options{}, file)
		if err != nil {
			f.Fatal(err)
		}
		j, _ := engine.Load(engine.Options{Executor: engine.JQ}, file)
		convs = append(convs, [2]*engine.Converter{n, j})
	}
	seeds, _ := filepath.Glob("../testdata/oracle/*/in/*.json")
	seeds = append(seeds, "../testdata/bench/deployment.json")
	for _, s := range seeds {
		if data, err := os.ReadFile(s); err == nil {
			f.Add(uint8(0), false, data)
		}
	}
	f.Add(uint8(1), true, []byte(`{"metadata":{"annotations":{"mvp.k8s.io/conversion-data":"{}"}},"spec":{"selector":{}}}`))
	f.Fuzz(func(t *testing.T, which uint8, reverse bool, data []byte) {
		pair := convs[int(which)%len(convs)]
		rule := pair[0].Rules()[int(which)/len(convs)%len(pair[0].Rules())]
		checkRoundTrip(t, pair, rule, reverse, data, false)
	})
}

// FuzzSetParentsRoundTrip is FuzzConvertRoundTrip for set steps whose
// parents may be missing, null, empty or of another type
// (testdata/set-parents-rules.yaml), also under a wildcard.
func FuzzSetParentsRoundTrip(f *testing.F) {
	const file = "testdata/set-parents-rules.yaml"
	n, err := engine.Load(engine.Options{}, file)
	if err != nil {
		f.Fatal(err)
	}
	j, err := engine.Load(engine.Options{Executor: engine.JQ}, file)
	if err != nil {
		f.Fatal(err)
	}
	pair := [2]*engine.Converter{n, j}
	f.Add(false, []byte(`{"metadata":{"labels":null},"spec":{"a":{},"items":[{},null,{"meta":null},{"meta":3}]}}`))
	f.Add(false, []byte(`{"spec":{"a":{"b":{}},"items":{"x":{}}}}`))
	f.Add(true, []byte(`{"metadata":{"labels":{"team":"y"}},"spec":{"a":{"b":1,"c":{}},"items":[{"meta":{"tag":2}}]}}`))
	f.Add(true, []byte(`{"spec":{"a":5,"items":[{"meta":{"tag":{"t":[1]}}}]}}`))
	f.Fuzz(func(t *testing.T, reverse bool, data []byte) {
		checkRoundTrip(t, pair, pair[0].Rules()[0], reverse, data, true)
	})
}

// checkRoundTrip converts the object in data by rule with both executors of
// pair (forward, or reverse), requires the same outcome (with sameErrors,
// the same error), and converts the result back: it must give the object
// again.
func checkRoundTrip(t *testing.T, pair [2]*engine.Converter, rule *rules.Compiled, reverse bool, data []byte, sameErrors bool) {
	obj, err := engine.DecodeObject(data)
	if err != nil {
		return
	}
	from, to := rule.Forward.From, rule.Forward.To
	if reverse {
		from, to = to, from
	}
	obj["apiVersion"] = from.String()
	obj["kind"] = kindOf(rule.Rule)
	meta, ok := obj["metadata"].(map[string]any)
	if !ok {
		meta = map[string]any{"name": "fuzz"}
		obj["metadata"] = meta
	}
	// The conversion-data annotation belongs to mvpctl: data for a rule
	// is consumed by design, so inputs start without it.
	if ann, ok := meta["annotations"].(map[string]any); ok {
		delete(ann, rules.ConversionDataAnnotation)
	}
	orig := rules.DeepCopyJSON(obj).(map[string]any)
	out, err := pair[0].Convert(context.Background(), rules.DeepCopyJSON(obj).(map[string]any), to)
	outJQ, errJQ := pair[1].Convert(context.Background(), obj, to)
	if (err == nil) != (errJQ == nil) || sameErrors && err != nil && err.Error() != errJQ.Error() {
		t.Fatalf("executors disagree: native %v, jq %v", err, errJQ)
	}
	if err != nil {
		return // a conversion error is a clean outcome for arbitrary input
	}
	if diff := cmp.Diff(out, outJQ, numberComparer); diff != "" {
		t.Fatalf("executors disagree (-native +jq):\n%s", diff)
	}
	back, err := pair[0].Convert(context.Background(), out, from)
	if err != nil {
		t.Fatalf("converted object does not convert back: %v", err)
	}
	if diff := cmp.Diff(orig, back, numberComparer); diff != "" {
		t.Fatalf("round trip %s -> %s -> %s changed the object (-in +back):\n%s", from, to, from, diff)
	}
}

func kindOf(r *rules.MigrationRule) string {
	if r.Kind != "" {
		return r.Kind
	}
	return map[string]string{"customresources": "CustomResource", "poddisruptionbudgets": "PodDisruptionBudget"}[r.Resource]
}
