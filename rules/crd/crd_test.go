package crd

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	yamlv3 "go.yaml.in/yaml/v3"
	"golang.org/x/tools/txtar"
	"k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	structuralschema "k8s.io/apiextensions-apiserver/pkg/apiserver/schema"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/pruning"
	apiservervalidation "k8s.io/apiextensions-apiserver/pkg/apiserver/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/yaml"

	"github.com/mvpctl/mvpctl/rules"
)

const manifest = "../../deploy/crd/transformationrules.mvp.k8s.io.yaml"

func TestYAML_UpToDate(t *testing.T) {
	docs, err := LoadDocs("..")
	if err != nil {
		t.Fatal(err)
	}
	want, err := YAML(docs)
	if err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(manifest)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("%s is out of date: run go generate ./rules/crd", manifest)
	}
	// Every field of the spec is documented.
	var missing []string
	walkSchema(schemaOf(t, docs).Properties["spec"], "spec", func(path string, s apiextensionsv1.JSONSchemaProps) {
		if s.Description == "" {
			missing = append(missing, path)
		}
	})
	if len(missing) > 0 {
		t.Errorf("fields without a description: %v", missing)
	}
}

func walkSchema(s apiextensionsv1.JSONSchemaProps, path string, f func(string, apiextensionsv1.JSONSchemaProps)) {
	f(path, s)
	for name, p := range s.Properties {
		walkSchema(p, path+"."+name, f)
	}
	if s.Items != nil && s.Items.Schema != nil {
		for name, p := range s.Items.Schema.Properties {
			walkSchema(p, path+"[*]."+name, f)
		}
	}
}

func schemaOf(t *testing.T, docs Docs) apiextensionsv1.JSONSchemaProps {
	t.Helper()
	c, err := New(docs)
	if err != nil {
		t.Fatal(err)
	}
	return *c.Spec.Versions[0].Schema.OpenAPIV3Schema
}

// structural converts the schema the way kube-apiserver does.
func structural(t *testing.T) (*structuralschema.Structural, apiservervalidation.SchemaValidator) {
	t.Helper()
	v1 := schemaOf(t, nil)
	var internal apiextensions.JSONSchemaProps
	if err := apiextensionsv1.Convert_v1_JSONSchemaProps_To_apiextensions_JSONSchemaProps(&v1, &internal, nil); err != nil {
		t.Fatal(err)
	}
	ss, err := structuralschema.NewStructural(&internal)
	if err != nil {
		t.Fatalf("not a structural schema: %v", err)
	}
	if errs := structuralschema.ValidateStructural(field.NewPath("openAPIV3Schema"), ss); len(errs) > 0 {
		t.Fatalf("not a structural schema: %v", errs.ToAggregate())
	}
	validator, _, err := apiservervalidation.NewSchemaValidator(&internal)
	if err != nil {
		t.Fatal(err)
	}
	return ss, validator
}

// check does to obj what kube-apiserver does to a created custom resource
// with strict field validation: unknown fields, then the schema.
func check(t *testing.T, obj map[string]any) []string {
	t.Helper()
	ss, validator := structural(t)
	var problems []string
	for _, p := range pruning.PruneWithOptions(obj, ss, true, structuralschema.UnknownFieldPathOptions{TrackUnknownFieldPaths: true}) {
		problems = append(problems, "unknown field "+p)
	}
	for _, e := range apiservervalidation.ValidateCustomResource(nil, obj, validator) {
		problems = append(problems, e.Error())
	}
	return problems
}

// ruleFiles are the repository's rules documents: rules files, examples and
// the rules.yaml of every golden case.
func ruleFiles(t *testing.T) map[string][]byte {
	t.Helper()
	out := map[string][]byte{}
	for _, pat := range []string{"../builtin/*.yaml", "../../testdata/examples/*/*rules*.yaml", "../../deploy/base/rules/*.yaml"} {
		files, _ := filepath.Glob(pat)
		for _, f := range files {
			data, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			out[f] = data
		}
	}
	cases, _ := filepath.Glob("../../testdata/cases/*.txtar")
	for _, c := range cases {
		ar, err := txtar.ParseFile(c)
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range ar.Files {
			if f.Name == "rules.yaml" {
				out[c] = f.Data
			}
		}
	}
	if len(out) < 10 {
		t.Fatalf("found only %d rules files", len(out))
	}
	return out
}

// documents splits YAML into JSON objects as kubectl would send them.
func documents(t *testing.T, data []byte) []map[string]any {
	t.Helper()
	dec := yamlv3.NewDecoder(bytes.NewReader(data))
	var out []map[string]any
	for {
		var n yamlv3.Node
		if err := dec.Decode(&n); err == io.EOF {
			break
		} else if err != nil {
			t.Fatal(err)
		}
		b, err := yamlv3.Marshal(&n)
		if err != nil {
			t.Fatal(err)
		}
		j, err := yaml.YAMLToJSON(b)
		if err != nil {
			t.Fatal(err)
		}
		var m map[string]any
		if err := json.Unmarshal(j, &m); err != nil {
			t.Fatal(err)
		}
		if m != nil {
			out = append(out, m)
		}
	}
	return out
}

// A file that lints clean applies clean, and one the schema rejects does
// not lint.
func TestSchema_AcceptsWhatLintAccepts(t *testing.T) {
	clean, rejected := 0, 0
	for name, data := range ruleFiles(t) {
		_, lintErr := rules.ParseAll(rules.Source{Name: name, Data: data})
		var problems []string
		for _, obj := range documents(t, data) {
			problems = append(problems, check(t, obj)...)
		}
		switch {
		case lintErr == nil && len(problems) > 0:
			t.Errorf("%s lints clean but the schema rejects it: %v", name, problems)
		case lintErr == nil:
			clean++
		case len(problems) > 0:
			rejected++
		}
	}
	if clean < 10 {
		t.Errorf("only %d files lint clean", clean)
	}
	t.Logf("%d files lint clean and pass the schema; %d fail both", clean, rejected)
}

func seedObject() map[string]any {
	return map[string]any{
		"apiVersion": rules.APIVersion,
		"kind":       rules.KindTransformationRules,
		"metadata":   map[string]any{"name": "seed"},
		"spec": map[string]any{
			"apiMigrationRules": []any{map[string]any{
				"apiGroup": "myapps.example.com", "resource": "customresources",
				"fromVersion": "v1alpha1", "toVersion": "v1beta1",
				"transformations": []any{
					map[string]any{"path": "spec.stateManagement", "action": "modify", "matchValue": "ephemeral", "replaceValue": map[string]any{"any": []any{"json", 1.5, nil}}},
				},
			}},
			"apiRoutingRules": []any{map[string]any{"apiGroup": "apps", "resource": "*", "preferApiServerVersion": ">=1.32"}},
		},
	}
}

func TestSchema_Rejects(t *testing.T) {
	if p := check(t, seedObject()); len(p) > 0 {
		t.Fatalf("seed object rejected: %v", p)
	}
	long := strings.Repeat("x", MaxExpressionLength+1)
	many := make([]any, MaxTransformations+1)
	for i := range many {
		many[i] = map[string]any{"path": fmt.Sprintf("spec.f%d", i), "action": "remove"}
	}
	for _, tc := range []struct {
		name string
		edit func(rule, tr map[string]any)
		want string
	}{
		{"misspelled field", func(_, tr map[string]any) { tr["targetpath"] = "spec.x" }, "unknown field spec.apiMigrationRules[0].transformations[0].targetpath"},
		{"unknown action", func(_, tr map[string]any) { tr["action"] = "rname" }, `spec.apiMigrationRules[0].transformations[0].action: Unsupported value: "rname"`},
		{"unknown type", func(_, tr map[string]any) { tr["type"] = "int" }, `transformations[0].type: Unsupported value: "int"`},
		{"missing action", func(_, tr map[string]any) { delete(tr, "action") }, "transformations[0].action: Required value"},
		{"bad version", func(r, _ map[string]any) { r["fromVersion"] = "1beta1" }, "spec.apiMigrationRules[0].fromVersion in body should match"},
		{"missing resource", func(r, _ map[string]any) { delete(r, "resource") }, "spec.apiMigrationRules[0].resource: Required value"},
		{"huge jq", func(_, tr map[string]any) {
			tr["action"], tr["forward"], tr["reverse"] = "jq", long, "."
			delete(tr, "matchValue")
			delete(tr, "replaceValue")
		}, "transformations[0].forward: Too long"},
		{"too many transformations", func(r, _ map[string]any) { r["transformations"] = many }, "spec.apiMigrationRules[0].transformations: Too many"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			obj := seedObject()
			rule := obj["spec"].(map[string]any)["apiMigrationRules"].([]any)[0].(map[string]any)
			tc.edit(rule, rule["transformations"].([]any)[0].(map[string]any))
			problems := check(t, obj)
			if !strings.Contains(strings.Join(problems, "\n"), tc.want) {
				t.Fatalf("want a problem containing %q, got %q", tc.want, problems)
			}
		})
	}
}

// The CRD's schema accepts exactly the preferApiServerVersion values of the
// table that validation and the proxy accept (rules' tests hold those two
// to the same table).
func TestSchema_ServerVersionPatterns(t *testing.T) {
	data, err := os.ReadFile("../../testdata/server-version-patterns.json")
	if err != nil {
		t.Fatal(err)
	}
	var table struct{ Valid, Invalid []string }
	if err := json.Unmarshal(data, &table); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		patterns []string
		valid    bool
	}{{table.Valid, true}, {table.Invalid, false}} {
		for _, s := range tc.patterns {
			obj := seedObject()
			obj["spec"].(map[string]any)["apiRoutingRules"].([]any)[0].(map[string]any)["preferApiServerVersion"] = s
			if problems := check(t, obj); (len(problems) == 0) != tc.valid {
				t.Errorf("%q: want valid=%v, the schema says %q", s, tc.valid, problems)
			}
		}
	}
}

// The schema's patterns accept what rules.Validate accepts.
func TestPatterns_MatchValidate(t *testing.T) {
	base := func(group, resource, from, kind, prefer string) []byte {
		return fmt.Appendf(nil, `apiVersion: mvp.k8s.io/v1
kind: TransformationRules
metadata: {name: x}
spec:
  apiMigrationRules:
  - {apiGroup: %q, resource: %q, kind: %q, fromVersion: %q, toVersion: v9}
  apiRoutingRules:
  - {resource: "*", preferApiServerVersion: %q}
`, group, resource, kind, from, prefer)
	}
	type probe struct{ group, resource, from, kind, prefer string }
	ok := probe{"apps", "deployments", "v1beta1", "Deployment", "v1.32.y"}
	var probes []probe
	for _, g := range []string{"apps", "a.b-c.d", "Apps", "-a", "a..b", "a_b"} {
		p := ok
		p.group = g
		probes = append(probes, p)
	}
	for _, r := range []string{"ingresses", "a-b", "Pods", "a.b", "-x"} {
		p := ok
		p.resource = r
		probes = append(probes, p)
	}
	for _, v := range []string{"v1", "v2alpha3", "v0", "v1gamma1", "1", "v1beta"} {
		p := ok
		p.from = v
		probes = append(probes, p)
	}
	for _, k := range []string{"Ingress", "ingress", "In-gress", "I2"} {
		p := ok
		p.kind = k
		probes = append(probes, p)
	}
	for _, s := range []string{"v1.32.y", "v1.32.x", "1.32", ">=1.32", ">= v1.32.4", "v1.32.*", "v1", "latest", "v1.32.4.5"} {
		p := ok
		p.prefer = s
		probes = append(probes, p)
	}
	for _, p := range probes {
		data := base(p.group, p.resource, p.from, p.kind, p.prefer)
		_, lintErr := rules.ParseAll(rules.Source{Name: "x.yaml", Data: data})
		problems := check(t, documents(t, data)[0])
		if (lintErr == nil) != (len(problems) == 0) {
			t.Errorf("%+v: lint %v, schema %v", p, lintErr, problems)
		}
	}
	for _, re := range []string{versionPattern, kindPattern, groupPattern, resourcePattern, routeResourcePattern, serverVersionPattern} {
		regexp.MustCompile(re)
	}
}
