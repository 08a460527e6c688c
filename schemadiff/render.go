package schemadiff

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"

	yaml "go.yaml.in/yaml/v3"

	"github.com/mvpctl/mvpctl/rules"
)

// YAML writes the draft as a TransformationRules file: the rules, with each
// TODO as a comment where it belongs and its suggestion commented out below
// it. The output depends only on the draft, so equal dumps give equal bytes.
func (d *Draft) YAML() []byte {
	var w bytes.Buffer
	for _, h := range d.Header {
		fmt.Fprintf(&w, "# %s\n", h)
	}
	if n := len(d.TODOs); n > 0 {
		fmt.Fprintf(&w, "# %d TODO(s) to review.\n", n)
	}
	r := d.Rules
	if len(r.Spec.APIMigrationRules) == 0 && len(r.Spec.APIRoutingRules) == 0 {
		// A rules document must hold a rule: say why there is none instead.
		w.WriteString("# Nothing to migrate: the new dump serves every kind of the old one at the same\n# version, so no TransformationRules are needed.\n")
		return w.Bytes()
	}
	fmt.Fprintf(&w, "apiVersion: %s\nkind: %s\nmetadata:\n  name: %s\n", r.APIVersion, r.Kind, scalarYAML(r.Metadata.Name))
	w.WriteString("spec:\n")
	w.WriteString("  apiMigrationRules:\n")
	for i, mr := range r.Spec.APIMigrationRules {
		fmt.Fprintf(&w, "  - apiGroup: %s\n", scalarYAML(mr.APIGroup))
		if mr.ToAPIGroup != "" {
			fmt.Fprintf(&w, "    toApiGroup: %s\n", scalarYAML(mr.ToAPIGroup))
		}
		fmt.Fprintf(&w, "    resource: %s\n", scalarYAML(mr.Resource))
		if mr.Kind != "" {
			fmt.Fprintf(&w, "    kind: %s\n", scalarYAML(mr.Kind))
		}
		fmt.Fprintf(&w, "    fromVersion: %s\n    toVersion: %s\n", scalarYAML(mr.FromVersion), scalarYAML(mr.ToVersion))
		todos := d.todosOf(i)
		switch {
		case len(mr.Transformations) == 0 && len(todos) == 0:
			w.WriteString("    transformations: []\n")
		case len(mr.Transformations) == 0:
			// Only commented suggestions follow: null until one is accepted.
			w.WriteString("    transformations:\n")
		default:
			w.WriteString("    transformations:\n")
		}
		for j := 0; j <= len(mr.Transformations); j++ {
			for _, t := range todos {
				if t.Before == j {
					writeTODO(&w, t)
				}
			}
			if j < len(mr.Transformations) {
				writeTransformation(&w, "    ", mr.Transformations[j])
			}
		}
	}
	return w.Bytes()
}

func (d *Draft) todosOf(rule int) []TODO {
	var out []TODO
	for _, t := range d.TODOs {
		if t.Rule == rule {
			out = append(out, t)
		}
	}
	return out
}

func writeTODO(w *bytes.Buffer, t TODO) {
	fmt.Fprintf(w, "    # TODO(%s): %s: %s\n", t.Kind, t.Path, oneLine(t.Message))
	if len(t.Suggestion) == 0 {
		return
	}
	w.WriteString("    #   suggested:\n")
	var s bytes.Buffer
	for _, tr := range t.Suggestion {
		writeTransformation(&s, "", tr)
	}
	for _, line := range strings.Split(strings.TrimRight(s.String(), "\n"), "\n") {
		fmt.Fprintf(w, "    # %s\n", line)
	}
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

// writeTransformation writes one list item in a fixed key order.
func writeTransformation(w *bytes.Buffer, indent string, t rules.Transformation) {
	first := true
	kv := func(k, v string) {
		if first {
			fmt.Fprintf(w, "%s- %s: %s\n", indent, k, v)
			first = false
			return
		}
		fmt.Fprintf(w, "%s  %s: %s\n", indent, k, v)
	}
	str := func(k, v string) {
		if v != "" {
			kv(k, scalarYAML(v))
		}
	}
	val := func(k string, v *rules.Value) {
		if v != nil {
			kv(k, valueYAML(v.V))
		}
	}
	str("path", t.Path)
	str("action", string(t.Action))
	str("targetPath", t.TargetPath)
	str("type", string(t.Type))
	str("fromType", string(t.FromType))
	val("matchValue", t.MatchValue)
	val("replaceValue", t.ReplaceValue)
	if len(t.ValueMap) > 0 {
		kv("valueMap", "")
		for _, p := range t.ValueMap {
			fmt.Fprintf(w, "%s  - {from: %s, to: %s}\n", indent, valueYAML(p.From.V), valueYAML(p.To.V))
		}
	}
	val("defaultValue", t.DefaultValue)
	val("value", t.Value)
	str("forward", t.Forward)
	str("reverse", t.Reverse)
	str("when", t.When)
	str("description", t.Description)
}

// scalarYAML quotes a string only when YAML needs it, on one line.
func scalarYAML(s string) string {
	if s == "" {
		return `""`
	}
	b, err := yaml.Marshal(s)
	out := strings.TrimSuffix(string(b), "\n")
	if err != nil || strings.Contains(out, "\n") {
		return jsonString(s)
	}
	return out
}

func jsonString(s string) string {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s)
	return strings.TrimSuffix(b.String(), "\n")
}

// valueYAML writes a JSON value in flow style (JSON is YAML), keys sorted.
func valueYAML(v any) string {
	switch v := v.(type) {
	case string:
		// Keep strings that look like numbers or booleans quoted.
		return jsonString(v)
	case nil:
		return "null"
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return jsonString(fmt.Sprint(v))
	}
	return strings.TrimSuffix(b.String(), "\n")
}
