package schemadiff_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/mvpctl/mvpctl/engine"
	"github.com/mvpctl/mvpctl/rules"
	"github.com/mvpctl/mvpctl/schemadiff"
)

// oraclePair is one pair of testdata/oracle (Kubernetes' own conversions)
// and the upstream dumps the rules for it are drafted from.
type oraclePair struct {
	dir        string // testdata/oracle/<dir>
	kind       string
	from, to   schema.GroupVersion
	fromLabel  string // file label of the from version in the oracle
	toLabel    string
	oldDump    string // testdata/schemadiff/k8s/...
	newDump    string
	allVersion bool // the from version is still served by the new dump
}

var oraclePairs = []oraclePair{
	{"ingress-networking-v1beta1-v1", "Ingress", gv("networking.k8s.io", "v1beta1"), gv("networking.k8s.io", "v1"), "v1beta1", "v1", "v1.21.0-swagger.json.gz", "v1.22.0-swagger.json.gz", false},
	{"ingress-extensions-v1beta1-networking-v1", "Ingress", gv("extensions", "v1beta1"), gv("networking.k8s.io", "v1"), "v1beta1", "v1", "v1.21.0-swagger.json.gz", "v1.22.0-swagger.json.gz", false},
	{"cronjob-batch-v1beta1-v1", "CronJob", gv("batch", "v1beta1"), gv("batch", "v1"), "v1beta1", "v1", "v1.24.0-swagger.json.gz", "v1.25.0-swagger.json.gz", false},
	{"pdb-policy-v1beta1-v1", "PodDisruptionBudget", gv("policy", "v1beta1"), gv("policy", "v1"), "v1beta1", "v1", "v1.24.0-swagger.json.gz", "v1.25.0-swagger.json.gz", false},
	{"hpa-autoscaling-v2beta2-v2", "HorizontalPodAutoscaler", gv("autoscaling", "v2beta2"), gv("autoscaling", "v2"), "v2beta2", "v2", "v1.24.0-swagger.json.gz", "v1.25.0-swagger.json.gz", true},
	{"hpa-autoscaling-v1-v2", "HorizontalPodAutoscaler", gv("autoscaling", "v1"), gv("autoscaling", "v2"), "v1", "v2", "v1.24.0-swagger.json.gz", "v1.25.0-swagger.json.gz", true},
}

func gv(g, v string) schema.GroupVersion { return schema.GroupVersion{Group: g, Version: v} }

// accuracy counts the leaf fields of Kubernetes' outputs.
type accuracy struct {
	fields    int      // leaves in Kubernetes' outputs
	asIs      int      // right with the rules as generated
	withTODOs int      // right once every TODO suggestion is applied
	wrong     []string // still wrong (missing, different or extra) after the edits
	todos     int
}

// TestOracle_GeneratedRules is the proof of generated rules: drafted from the
// upstream dumps, they must load, validate and compile, and convert
// Kubernetes' own fixtures (testdata/oracle, the outputs of Kubernetes'
// conversion functions) the way Kubernetes does. The per-kind accuracy is
// recorded in testdata/schemadiff/oracle-accuracy.md (-update rewrites it),
// so any change in what the generator gets right shows up as a diff.
func TestOracle_GeneratedRules(t *testing.T) {
	var table bytes.Buffer
	table.WriteString("| pair | oracle fields | right as generated | needed the TODO edits | right after TODO edits | TODOs | still wrong |\n| --- | --- | --- | --- | --- | --- | --- |\n")
	var details bytes.Buffer
	for _, p := range oraclePairs {
		t.Run(p.dir, func(t *testing.T) {
			oracleDir := filepath.Join("..", "testdata", "oracle", p.dir)
			if _, err := os.Stat(oracleDir); err != nil {
				t.Skipf("no oracle fixtures: %v", err)
			}
			draft := draftFor(t, p)
			asIs := converterFor(t, "generated.yaml", draft.YAML())
			edited := converterFor(t, "edited.yaml", yamlOf(t, draft.WithSuggestions()))
			acc := accuracy{}
			for _, t2 := range draft.TODOs {
				mr := draft.Rules.Spec.APIMigrationRules[t2.Rule]
				if mr.Kind == p.kind && mr.FromVersion == p.from.Version && (mr.APIGroup == p.from.Group) {
					acc.todos++
				}
			}
			inputs, _ := filepath.Glob(filepath.Join(oracleDir, "in", "*.json"))
			if len(inputs) == 0 {
				t.Fatalf("no inputs in %s", oracleDir)
			}
			for _, in := range inputs {
				base := strings.TrimSuffix(filepath.Base(in), ".json")
				name, label, _ := strings.Cut(base, ".")
				var target schema.GroupVersion
				var outLabel string
				switch label {
				case p.fromLabel:
					target, outLabel = p.to, p.toLabel
				case p.toLabel:
					target, outLabel = p.from, p.fromLabel
				default:
					t.Fatalf("%s: unknown version label %q", in, label)
				}
				want := readJSON(t, filepath.Join(oracleDir, "out", name+"."+outLabel+".json"))
				input := leaves(normalize(readJSON(t, in)))
				gotAsIs := convert(t, asIs, readJSON(t, in), target)
				gotEdited := convert(t, edited, readJSON(t, in), target)
				wl := leaves(normalize(want))
				// Typed encoding writes non-omitempty structs as {} where the
				// input had nothing: not a conversion result.
				for k, v := range wl {
					if _, inInput := input[k]; v == "{}" && !inInput {
						delete(wl, k)
					}
				}
				// served/ is the output after the source version's defaulting,
				// which is what a kube-apiserver converts; a TODO edit that
				// emulates the defaulting (pathType) matches it.
				served := map[string]string{}
				if s, err := os.ReadFile(filepath.Join(oracleDir, "served", name+"."+outLabel+".json")); err == nil {
					var m map[string]any
					if err := json.Unmarshal(s, &m); err != nil {
						t.Fatal(err)
					}
					served = leaves(normalize(m))
				}
				a := leaves(normalize(gotAsIs))
				e := leaves(normalize(gotEdited))
				acc.fields += len(wl)
				for _, k := range slices.Sorted(maps.Keys(wl)) {
					if a[k] == wl[k] {
						acc.asIs++
					}
					if e[k] == wl[k] || (e[k] != "" && e[k] == served[k]) {
						acc.withTODOs++
					} else if v, ok := e[k]; ok {
						acc.wrong = append(acc.wrong, fmt.Sprintf("%s.%s: %s: got %s, want %s", name, outLabel, k, v, wl[k]))
					} else {
						acc.wrong = append(acc.wrong, fmt.Sprintf("%s.%s: %s: missing (want %s)", name, outLabel, k, wl[k]))
					}
				}
				for _, k := range slices.Sorted(maps.Keys(e)) {
					if _, ok := wl[k]; !ok && served[k] != e[k] {
						acc.wrong = append(acc.wrong, fmt.Sprintf("%s.%s: %s: unexpected %s", name, outLabel, k, e[k]))
					}
				}
			}
			fmt.Fprintf(&table, "| %s | %d | %d (%.0f%%) | %d | %d (%.0f%%) | %d | %d |\n", p.dir, acc.fields, acc.asIs, pct(acc.asIs, acc.fields), acc.withTODOs-acc.asIs, acc.withTODOs, pct(acc.withTODOs, acc.fields), acc.todos, len(acc.wrong))
			if len(acc.wrong) > 0 {
				fmt.Fprintf(&details, "\n### %s\n\n", p.dir)
				for _, w := range acc.wrong {
					fmt.Fprintf(&details, "- `%s`\n", strings.ReplaceAll(w, "`", "'"))
				}
			}
		})
	}
	got := "# Generated rules against Kubernetes' conversions\n\n" +
		"Written by TestOracle_GeneratedRules (go test ./schemadiff -run Oracle -update). Leaf fields of\n" +
		"Kubernetes' outputs (testdata/oracle/*/out, both directions) that the generated rules reproduce.\n" +
		"Normalised as the oracle README says: nulls dropped, zero values in status dropped, {} that typed\n" +
		"encoding adds where the input had nothing dropped, mvp.k8s.io/conversion-data ignored. After the\n" +
		"TODO edits a field also counts as right when it equals served/ (Kubernetes' output after the\n" +
		"source version's defaulting, which a TODO such as pathType's ensureFieldExistence emulates).\n\n" +
		table.String()
	if details.Len() > 0 {
		got += "\n## Still wrong after the TODO edits\n" + details.String()
	}
	golden(t, filepath.Join("..", "testdata", "schemadiff", "oracle-accuracy.md"), []byte(got))
}

func pct(a, b int) float64 {
	if b == 0 {
		return 0
	}
	return 100 * float64(a) / float64(b)
}

func draftFor(t *testing.T, p oraclePair) *schemadiff.Draft {
	t.Helper()
	ctx := context.Background()
	old, err := schemadiff.Load(ctx, filepath.Join("..", "testdata", "schemadiff", "k8s", p.oldDump))
	if err != nil {
		t.Fatal(err)
	}
	nw, err := schemadiff.Load(ctx, filepath.Join("..", "testdata", "schemadiff", "k8s", p.newDump))
	if err != nil {
		t.Fatal(err)
	}
	r := schemadiff.Diff(old, nw, schemadiff.Options{Kind: p.kind, AllVersions: p.allVersion})
	return schemadiff.DraftRules(r, schemadiff.DraftOptions{})
}

func yamlOf(t *testing.T, tr *rules.TransformationRules) []byte {
	t.Helper()
	d := &schemadiff.Draft{Rules: tr}
	return d.YAML()
}

// converterFor parses, validates and compiles rules the way mvpctl does.
func converterFor(t *testing.T, name string, data []byte) *engine.Converter {
	t.Helper()
	rs, err := rules.Parse(name, data)
	if err != nil {
		t.Fatalf("generated rules do not parse: %v\n%s", err, data)
	}
	if errs := rs.Validate(); len(errs) > 0 {
		t.Fatalf("generated rules are invalid: %v\n%s", errs, data)
	}
	compiled, err := rules.Compile(rs, rules.CompileOptions{})
	if err != nil {
		t.Fatalf("generated rules do not compile: %v\n%s", err, data)
	}
	return engine.NewConverter(compiled, engine.Options{})
}

func convert(t *testing.T, c *engine.Converter, obj map[string]any, to schema.GroupVersion) map[string]any {
	t.Helper()
	out, err := c.Convert(context.Background(), obj, to)
	if err != nil {
		t.Fatalf("convert to %s: %v", to, err)
	}
	return out
}

func readJSON(t *testing.T, name string) map[string]any {
	t.Helper()
	data, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var m map[string]any
	if err := dec.Decode(&m); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return m
}

// normalize drops what typed encoding adds and mvpctl's round-trip
// annotation: nulls everywhere, zero values in status.
func normalize(obj map[string]any) map[string]any {
	out := dropNulls(obj, false).(map[string]any)
	if md, ok := out["metadata"].(map[string]any); ok {
		if an, ok := md["annotations"].(map[string]any); ok {
			delete(an, rules.ConversionDataAnnotation)
			if len(an) == 0 {
				delete(md, "annotations")
			}
		}
	}
	if st, ok := out["status"]; ok {
		st = dropNulls(st, true)
		if m, ok := st.(map[string]any); ok && len(m) == 0 || st == nil {
			delete(out, "status")
		} else {
			out["status"] = st
		}
	}
	return out
}

func dropNulls(v any, zeros bool) any {
	switch v := v.(type) {
	case map[string]any:
		m := map[string]any{}
		for k, e := range v {
			e = dropNulls(e, zeros)
			if e == nil {
				continue
			}
			if zeros {
				if em, ok := e.(map[string]any); ok && len(em) == 0 {
					continue
				}
			}
			m[k] = e
		}
		return m
	case []any:
		s := make([]any, 0, len(v))
		for _, e := range v {
			s = append(s, dropNulls(e, zeros))
		}
		if len(s) == 0 && zeros {
			return nil
		}
		return s
	case json.Number:
		if zeros && (v == "0" || v == "0.0") {
			return nil
		}
	case float64:
		if zeros && v == 0 {
			return nil
		}
	case string:
		if zeros && v == "" {
			return nil
		}
	case bool:
		if zeros && !v {
			return nil
		}
	}
	return v
}

// leaves flattens a JSON value to path → JSON-encoded leaf; an empty object
// or list is a leaf too.
func leaves(v any) map[string]string {
	out := map[string]string{}
	var walk func(p string, v any)
	walk = func(p string, v any) {
		switch v := v.(type) {
		case map[string]any:
			if len(v) == 0 {
				out[p] = "{}"
			}
			for k, e := range v {
				walk(p+"."+k, e)
			}
		case []any:
			if len(v) == 0 {
				out[p] = "[]"
			}
			for i, e := range v {
				walk(fmt.Sprintf("%s[%d]", p, i), e)
			}
		default:
			b, _ := json.Marshal(v)
			out[p] = string(b)
		}
	}
	walk("", v)
	return out
}

func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	want, err := os.ReadFile(name)
	if *update {
		if err != nil || !bytes.Equal(want, got) {
			if err := os.WriteFile(name, got, 0o666); err != nil {
				t.Fatal(err)
			}
		}
		return
	}
	if err != nil {
		t.Fatalf("%v (run with -update to create it)", err)
	}
	if diff := cmp.Diff(string(want), string(got)); diff != "" {
		t.Errorf("%s (-want +got):\n%s", name, diff)
	}
}

func rulesOf(mrs ...rules.MigrationRule) *rules.TransformationRules {
	return &rules.TransformationRules{APIVersion: rules.APIVersion, Kind: rules.KindTransformationRules, Metadata: rules.ObjectMeta{Name: "x"}, Spec: rules.Spec{APIMigrationRules: mrs}}
}
