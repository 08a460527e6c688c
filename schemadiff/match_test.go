package schemadiff

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
)

func schemaOf(t *testing.T, js string) *openapi3.SchemaRef {
	t.Helper()
	s := &openapi3.Schema{}
	if err := json.Unmarshal([]byte(js), s); err != nil {
		t.Fatal(err)
	}
	return &openapi3.SchemaRef{Value: s}
}

// TestDiffSchemas_Moves covers the move evidence on small CRD-like schemas.
func TestDiffSchemas_Moves(t *testing.T) {
	tests := []struct {
		name     string
		old, new string
		want     []string // "from → to" of moves, in order
		added    []string
		deleted  []string
	}{
		{
			name:  "leaf into a new parent (serviceName → service.name)",
			old:   `{"type":"object","properties":{"backend":{"type":"object","properties":{"serviceName":{"type":"string","description":"name of the referenced service"}}}}}`,
			new:   `{"type":"object","properties":{"backend":{"type":"object","properties":{"service":{"type":"object","properties":{"name":{"type":"string","description":"name of the referenced service"}}}}}}}`,
			want:  []string{"backend.serviceName → backend.service.name"},
			added: nil,
		},
		{
			name: "object rename in place wins over its children",
			old:  `{"type":"object","properties":{"backend":{"type":"object","properties":{"a":{"type":"string"},"b":{"type":"integer"}}}}}`,
			new:  `{"type":"object","properties":{"defaultBackend":{"type":"object","properties":{"a":{"type":"string"},"b":{"type":"integer"}}}}}`,
			want: []string{"backend → defaultBackend"},
		},
		{
			name: "int-or-string split into number and name",
			old:  `{"type":"object","properties":{"servicePort":{"x-kubernetes-int-or-string":true}}}`,
			new:  `{"type":"object","properties":{"service":{"type":"object","properties":{"port":{"type":"object","properties":{"number":{"type":"integer"},"name":{"type":"string"}}}}}}}`,
			want: []string{"servicePort → service.port"},
		},
		{
			name:    "unrelated fields are not moves",
			old:     `{"type":"object","properties":{"replicas":{"type":"integer","description":"number of pods"}}}`,
			new:     `{"type":"object","properties":{"hostname":{"type":"string","description":"the DNS name"}}}`,
			added:   []string{"hostname"},
			deleted: []string{"replicas"},
		},
		{
			name: "list renamed and moved (Cluster API unhealthyConditions)",
			old:  `{"type":"object","properties":{"spec":{"type":"object","properties":{"unhealthyConditions":{"type":"array","description":"conditions that determine a node unhealthy","items":{"type":"object","properties":{"type":{"type":"string"},"status":{"type":"string"}}}}}}}}`,
			new:  `{"type":"object","properties":{"spec":{"type":"object","properties":{"checks":{"type":"object","properties":{"unhealthyNodeConditions":{"type":"array","description":"conditions that determine a node unhealthy","items":{"type":"object","properties":{"type":{"type":"string"},"status":{"type":"string"}}}}}}}}}}`,
			want: []string{"spec.unhealthyConditions → spec.checks.unhealthyNodeConditions"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := diffSchemas(buildTree(schemaOf(t, tt.old)), buildTree(schemaOf(t, tt.new)))
			var got []string
			for _, m := range d.Moved {
				got = append(got, m.From.Path+" → "+m.To.Path)
			}
			if strings.Join(got, "\n") != strings.Join(tt.want, "\n") {
				t.Errorf("moves:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(tt.want, "\n"))
			}
			var added, deleted []string
			for _, f := range d.Added {
				added = append(added, f.Path)
			}
			for _, f := range d.Deleted {
				deleted = append(deleted, f.Path)
			}
			if strings.Join(added, ",") != strings.Join(tt.added, ",") || strings.Join(deleted, ",") != strings.Join(tt.deleted, ",") {
				t.Errorf("added %v deleted %v, want %v %v", added, deleted, tt.added, tt.deleted)
			}
		})
	}
}

func TestFieldDiff_Attributes(t *testing.T) {
	old := `{"type":"object","properties":{"mode":{"type":"string","enum":["a","b"],"default":"a"},"port":{"type":"integer"},"size":{"type":"string"}},"required":["size"]}`
	new := `{"type":"object","properties":{"mode":{"type":"string","enum":["a","c"],"default":"c"},"port":{"x-kubernetes-int-or-string":true},"size":{"type":"integer"}},"required":["mode"]}`
	d := diffSchemas(buildTree(schemaOf(t, old)), buildTree(schemaOf(t, new)))
	got := map[string]*FieldDiff{}
	for _, m := range d.Modified {
		got[m.Path] = m
	}
	if m := got["mode"]; m == nil || m.Enum == nil || strings.Join(m.Enum.Added, ",") != `"c"` || strings.Join(m.Enum.Deleted, ",") != `"b"` || m.Default == nil || m.Required == nil {
		t.Errorf("mode: %+v", m)
	}
	if m := got["port"]; m == nil || m.Type == nil || m.Type.To != TypeIntOrString {
		t.Errorf("port: %+v", m)
	}
	if m := got["size"]; m == nil || m.Type == nil || m.Required == nil {
		t.Errorf("size: %+v", m)
	}
	dr := DraftRules(&Report{Migrations: []*Migration{{From: GVK{"g", "v1", "K"}, To: GVK{"g", "v2", "K"}, FromResource: "ks", ToResource: "ks", Schema: d}}}, DraftOptions{})
	kinds := map[TODOKind]int{}
	for _, td := range dr.TODOs {
		kinds[td.Kind]++
	}
	// mode becomes required but has a default: the server fills it, no TODO.
	want := map[TODOKind]int{TODOEnumRemoved: 1, TODODefaultChanged: 1, TODONewRequired: 0, TODOTypeChanged: 1}
	for k, n := range want {
		if kinds[k] != n {
			t.Errorf("%d %s TODOs, want %d (all: %v)", kinds[k], k, n, kinds)
		}
	}
	// int → int-or-string widens: a note, no TODO.
	var widened bool
	for _, n := range dr.Notes {
		widened = widened || (n.Path == "port" && strings.Contains(n.Message, "widened"))
	}
	if !widened {
		t.Errorf("no widening note: %v", dr.Notes)
	}
}

func TestDefaultFromDescription(t *testing.T) {
	tests := []struct {
		desc string
		want any
		ok   bool
	}{
		{`PathType determines ... Defaults to "ImplementationSpecific".`, "ImplementationSpecific", true},
		{"Defaults to 5.", "5", true},
		{"Defaults to true", true, true},
		{"Defaults to the empty string.", nil, false},
		{"No default at all.", nil, false},
	}
	for _, tt := range tests {
		got, ok := defaultFromDescription(tt.desc)
		if ok != tt.ok || got != tt.want {
			t.Errorf("defaultFromDescription(%q) = %v, %v; want %v, %v", tt.desc, got, ok, tt.want, tt.ok)
		}
	}
}

func TestGuessResource(t *testing.T) {
	for kind, want := range map[string]string{"Ingress": "ingresses", "NetworkPolicy": "networkpolicies", "Gateway": "gateways", "Endpoints": "endpointses", "Mesh": "meshes"} {
		if got := guessResource(kind); got != want {
			t.Errorf("guessResource(%q) = %q, want %q", kind, got, want)
		}
	}
}
