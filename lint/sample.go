package lint

import (
	"encoding/json"
	"fmt"
	"hash/fnv"
	"maps"
	"math/rand/v2"
	"slices"

	"github.com/mvpctl/mvpctl/rules"
	"github.com/mvpctl/mvpctl/schemadiff"
)

// generator makes sample objects from a kind's schema. The same seed, rule
// and direction give the same objects.
type generator struct {
	rnd *rand.Rand
	// hints are values the rule itself names for a field (matchValue,
	// valueMap, defaultValue...), keyed by the field's schema path, so that
	// the samples reach the interesting branches.
	hints map[string][]any
	n     int
}

func newGenerator(seed uint64, rule *rules.MigrationRule, dir rules.Direction) *generator {
	h := fnv.New64a()
	fmt.Fprintf(h, "%s/%s", rule.ID(), dir)
	g := &generator{rnd: rand.New(rand.NewPCG(seed, h.Sum64())), hints: map[string][]any{}}
	for _, t := range rule.Transformations {
		p, err := rules.ParsePath(t.Path)
		if err != nil {
			continue
		}
		key := schemaPath(p).String()
		for _, v := range []*rules.Value{t.MatchValue, t.ReplaceValue, t.DefaultValue, t.Value} {
			if v != nil {
				g.hints[key] = append(g.hints[key], v.V)
			}
		}
		for _, pr := range t.ValueMap {
			for _, v := range []*rules.Value{pr.From, pr.To} {
				if v != nil {
					g.hints[key] = append(g.hints[key], v.V)
				}
			}
		}
	}
	return g
}

// object makes one sample object of a kind.
func (g *generator) object(root *snode, apiVersion, kind string) map[string]any {
	g.n++
	obj, _ := g.value(root, nil, 0).(map[string]any)
	if obj == nil {
		obj = map[string]any{}
	}
	obj["apiVersion"] = apiVersion
	obj["kind"] = kind
	obj["metadata"] = g.metadata()
	return obj
}

func (g *generator) metadata() map[string]any {
	m := map[string]any{"name": fmt.Sprintf("sample-%d", g.n), "namespace": "default"}
	if g.rnd.IntN(3) == 0 {
		m["labels"] = map[string]any{"app": "sample"}
	}
	if g.rnd.IntN(3) == 0 {
		m["annotations"] = map[string]any{"example.com/note": "kept"}
	}
	if g.rnd.IntN(4) == 0 {
		m["generation"] = json.Number("9223372036854775807")
	}
	return m
}

var (
	sampleInts    = []string{"0", "1", "3", "80", "8080", "-1", "9223372036854775807"}
	sampleStrings = []string{"a", "web", "http", "8080", "true", "", "x.example.com/y"}
)

func (g *generator) value(n *snode, at rules.Path, depth int) any {
	if hs := g.hints[at.String()]; len(hs) > 0 && g.rnd.IntN(2) == 0 {
		return rules.DeepCopyJSON(hs[g.rnd.IntN(len(hs))])
	}
	if len(n.Enum) > 0 {
		return jsonValue(n.Enum[g.rnd.IntN(len(n.Enum))])
	}
	switch n.Type {
	case schemadiff.TypeObject:
		obj := map[string]any{}
		keys := slices.Sorted(maps.Keys(n.Properties))
		for _, k := range keys {
			if len(at) == 0 && (k == "apiVersion" || k == "kind" || k == "metadata") {
				continue
			}
			if !n.Required[k] && (depth > 6 || g.rnd.Float64() > 0.75-0.08*float64(depth)) {
				continue
			}
			c, _ := n.child(k)
			if !n.Required[k] && (c.Type == schemadiff.TypeArray || c.Type == schemadiff.TypeMap) && g.rnd.IntN(20) == 0 {
				// Typed Go clients send null for nil slices and maps
				// without omitempty (autoscaling/v2 status.currentMetrics).
				obj[k] = nil
				continue
			}
			obj[k] = g.value(c, append(append(rules.Path{}, at...), rules.Step{Kind: rules.StepKey, Key: k}), depth+1)
		}
		return obj
	case schemadiff.TypeArray:
		var out []any
		if depth <= 8 {
			for range g.rnd.IntN(3) {
				out = append(out, g.value(n.element(), append(append(rules.Path{}, at...), rules.Step{Kind: rules.StepWildcard}), depth+1))
			}
		}
		if out == nil {
			out = []any{}
		}
		return out
	case schemadiff.TypeMap:
		m := map[string]any{}
		if depth <= 8 {
			for i := range g.rnd.IntN(3) {
				m[fmt.Sprintf("k%d", i)] = g.value(n.element(), append(append(rules.Path{}, at...), rules.Step{Kind: rules.StepWildcard}), depth+1)
			}
		}
		return m
	case "string":
		return sampleStrings[g.rnd.IntN(len(sampleStrings))]
	case "integer":
		return json.Number(sampleInts[g.rnd.IntN(len(sampleInts))])
	case "number":
		return json.Number([]string{"0", "1.5", "2", "-3.25"}[g.rnd.IntN(4)])
	case "boolean":
		return g.rnd.IntN(2) == 0
	case string(rules.TypeIntOrString):
		if g.rnd.IntN(2) == 0 {
			return json.Number(sampleInts[g.rnd.IntN(len(sampleInts))])
		}
		return sampleStrings[g.rnd.IntN(len(sampleStrings))]
	}
	// Any value: a small object or a string.
	if g.rnd.IntN(2) == 0 {
		return map[string]any{"x": "y"}
	}
	return "any"
}

// jsonValue turns a value kin-openapi decoded (float64 numbers) into the
// engine's form (json.Number).
func jsonValue(v any) any {
	b, err := json.Marshal(v)
	if err != nil {
		return v
	}
	var out any
	if err := unmarshalNumber(b, &out); err != nil {
		return v
	}
	return out
}
