package rules

import (
	"encoding/json"
	"strings"
	"testing"
)

const valueMapRules = `apiVersion: mvp.k8s.io/v1
kind: TransformationRules
metadata: {name: sizes}
spec:
  apiMigrationRules:
  - apiGroup: example.com
    resource: widgets
    fromVersion: v1alpha1
    toVersion: v1
    transformations:
    - path: spec.size
      action: modify
      valueMap: %s
`

// A valueMap written as a mapping of string values is the list of pairs it
// stands for, in order, positioned at its keys.
func TestParse_ValueMapAsMapping(t *testing.T) {
	parse := func(valueMap string) *RuleSet {
		t.Helper()
		rs, err := Parse("r.yaml", []byte(strings.Replace(valueMapRules, "%s", valueMap, 1)))
		if err != nil {
			t.Fatalf("valueMap %s: %v", valueMap, err)
		}
		return rs
	}
	mapping := parse("{S: small, M: medium, \"1\": 2}")
	list := parse("[{from: S, to: small}, {from: M, to: medium}, {from: \"1\", to: 2}]")
	got, _ := json.Marshal(mapping.Documents[0].Rules)
	want, _ := json.Marshal(list.Documents[0].Rules)
	if string(got) != string(want) {
		t.Errorf("mapping decodes to\n%s\nthe list of pairs to\n%s", got, want)
	}
	if _, err := Compile(mapping, CompileOptions{}); err != nil {
		t.Fatal(err)
	}
	if p := mapping.Documents[0].Pos("spec.apiMigrationRules[0].transformations[0].valueMap[1].from"); p.Line != 13 || p.Col != 28 {
		t.Errorf("valueMap[1].from at %v, want its key at 13:28", p)
	}
}

func TestParse_ValueMapMappingErrors(t *testing.T) {
	for valueMap, want := range map[string]string{
		"{1: one}":         `r.yaml:13:18: spec.apiMigrationRules[0].transformations[0].valueMap[0].from: Invalid value: "1": a key of a valueMap mapping is a string`,
		"{S: small, S: s}": `r.yaml:13:28: spec.apiMigrationRules[0].transformations[0].valueMap[S]: Duplicate value: "S"`,
		"{S: small, M: ~}": `valueMap[1].to: Required value`,
	} {
		_, err := ParseAll(Source{Name: "r.yaml", Data: []byte(strings.Replace(valueMapRules, "%s", valueMap, 1))})
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("valueMap %s: got %v, want %q", valueMap, err, want)
		}
	}
}
