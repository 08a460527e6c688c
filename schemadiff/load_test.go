package schemadiff_test

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mvpctl/mvpctl/schemadiff"
)

func td(parts ...string) string {
	return filepath.Join(append([]string{"..", "testdata", "schemadiff"}, parts...)...)
}

func gunzip(t *testing.T, name string) []byte {
	t.Helper()
	f, err := os.Open(name)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	b, err := io.ReadAll(zr)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestLoad_Formats(t *testing.T) {
	dir := t.TempDir()
	// One /openapi/v3 group-version document, uncompressed.
	v3 := filepath.Join(dir, "autoscaling-v2.json")
	if err := os.WriteFile(v3, gunzip(t, td("k8s", "v1.36.3-v3", "apis__autoscaling__v2_openapi.json.gz")), 0o644); err != nil {
		t.Fatal(err)
	}
	// The CRD as plain YAML and as a kubectl List in JSON.
	crdYAML := gunzip(t, td("crd", "cluster-api-v1.11.0-machinehealthchecks.yaml.gz"))
	crdFile := filepath.Join(dir, "crd.yaml")
	if err := os.WriteFile(crdFile, crdYAML, 0o644); err != nil {
		t.Fatal(err)
	}
	mixed := filepath.Join(dir, "mixed")
	if err := os.Mkdir(mixed, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(mixed, "a.json"), gunzip(t, td("k8s", "v1.36.3-v3", "apis__autoscaling__v1_openapi.json.gz")), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(mixed, "b.yaml"), crdYAML, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(mixed, "README.md"), []byte("not a dump"), 0o644); err != nil {
		t.Fatal(err)
	}
	// A saved /openapi/v3 tree with its index document, as e2e dumps are.
	tree := filepath.Join(dir, "tree")
	if err := os.MkdirAll(filepath.Join(tree, "openapi", "v3", "apis", "autoscaling"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(tree, "openapi", "v3.json"), []byte(`{"paths": {"apis/autoscaling/v2": {"serverRelativeURL": "/openapi/v3/apis/autoscaling/v2?hash=1"}}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(tree, "openapi", "v3", "apis", "autoscaling", "v2.json"), gunzip(t, td("k8s", "v1.36.3-v3", "apis__autoscaling__v2_openapi.json.gz")), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(tree, "openapi", "v3", "apis", "autoscaling", ".hidden.json"), []byte("not json"), 0o644); err != nil {
		t.Fatal(err)
	}
	v1beta1CRD := filepath.Join(dir, "v1beta1-crd.yaml")
	if err := os.WriteFile(v1beta1CRD, []byte(`apiVersion: apiextensions.k8s.io/v1beta1
kind: CustomResourceDefinition
metadata: {name: widgets.example.com}
spec:
  group: example.com
  names: {kind: Widget, plural: widgets}
  validation:
    openAPIV3Schema:
      type: object
      properties:
        spec:
          type: object
          properties:
            size: {x-kubernetes-int-or-string: true}
  versions:
  - {name: v1alpha1, served: true, storage: false}
  - {name: v1beta1, served: true, storage: true}
  - {name: v1old, served: false, storage: false}
---
`), 0o644); err != nil {
		t.Fatal(err)
	}

	tests := []struct {
		source string
		format schemadiff.Format
		want   []string // GVK strings that must be present
		kinds  int
	}{
		{td("k8s", "v1.21.0-swagger.json.gz"), schemadiff.FormatOpenAPIV2, []string{"extensions/v1beta1 Ingress", "networking.k8s.io/v1beta1 Ingress", "apiextensions.k8s.io/v1beta1 CustomResourceDefinition"}, 19},
		{td("k8s", "v1.35.4-v3"), schemadiff.FormatOpenAPIV3, []string{"scheduling.k8s.io/v1alpha1 Workload", "autoscaling/v2 HorizontalPodAutoscaler"}, 4},
		{v3, schemadiff.FormatOpenAPIV3, []string{"autoscaling/v2 HorizontalPodAutoscaler"}, 1},
		{tree, schemadiff.FormatOpenAPIV3, []string{"autoscaling/v2 HorizontalPodAutoscaler"}, 1},
		{crdFile, schemadiff.FormatCRD, []string{"cluster.x-k8s.io/v1beta1 MachineHealthCheck", "cluster.x-k8s.io/v1beta2 MachineHealthCheck"}, 2},
		{mixed, schemadiff.FormatOpenAPIV3 + "+" + schemadiff.FormatCRD, []string{"autoscaling/v1 HorizontalPodAutoscaler", "cluster.x-k8s.io/v1beta2 MachineHealthCheck"}, 3},
		{v1beta1CRD, schemadiff.FormatCRD, []string{"example.com/v1alpha1 Widget", "example.com/v1beta1 Widget"}, 2},
	}
	for _, tt := range tests {
		t.Run(filepath.Base(tt.source), func(t *testing.T) {
			s, err := schemadiff.Load(context.Background(), tt.source)
			if err != nil {
				t.Fatal(err)
			}
			if s.Format != tt.format {
				t.Errorf("format = %q, want %q", s.Format, tt.format)
			}
			have := map[string]bool{}
			for _, g := range s.GVKs() {
				have[g.String()] = true
			}
			for _, w := range tt.want {
				if !have[w] {
					t.Errorf("missing %s; have %v", w, s.GVKs())
				}
			}
			if len(s.Kinds) != tt.kinds {
				t.Errorf("%d kinds, want %d: %v", len(s.Kinds), tt.kinds, s.GVKs())
			}
		})
	}
}

func TestLoad_Resources(t *testing.T) {
	s, err := schemadiff.Load(context.Background(), td("k8s", "v1.24.0-swagger.json.gz"))
	if err != nil {
		t.Fatal(err)
	}
	for gvk, want := range map[schemadiff.GVK]string{
		{Group: "policy", Version: "v1beta1", Kind: "PodDisruptionBudget"}:          "poddisruptionbudgets",
		{Group: "autoscaling", Version: "v2beta1", Kind: "HorizontalPodAutoscaler"}: "horizontalpodautoscalers",
		{Group: "discovery.k8s.io", Version: "v1", Kind: "EndpointSlice"}:           "endpointslices",
	} {
		k, ok := s.Kinds[gvk]
		if !ok {
			t.Errorf("%s not loaded", gvk)
			continue
		}
		if k.Resource != want {
			t.Errorf("%s: resource %q, want %q", gvk, k.Resource, want)
		}
	}
}

// TestLoad_Cluster reads /openapi/v3 through a kubeconfig context, from a
// server that answers like a kube-apiserver (discovery document, one document
// per group-version, /version).
func TestLoad_Cluster(t *testing.T) {
	docs := map[string][]byte{}
	entries, _ := os.ReadDir(td("k8s", "v1.35.4-v3"))
	for _, e := range entries {
		// apis__scheduling.k8s.io__v1alpha1_openapi.json.gz → apis/scheduling.k8s.io/v1alpha1
		p := strings.TrimSuffix(e.Name(), "_openapi.json.gz")
		p = strings.ReplaceAll(p, "__", "/")
		docs[p] = gunzip(t, td("k8s", "v1.35.4-v3", e.Name()))
	}
	var requests []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		requests = append(requests, r.URL.Path)
		switch {
		case r.URL.Path == "/version":
			fmt.Fprint(w, `{"major":"1","minor":"35","gitVersion":"v1.35.4"}`)
		case r.URL.Path == "/openapi/v3":
			paths := map[string]any{}
			for p := range docs {
				paths[p] = map[string]string{"serverRelativeURL": "/openapi/v3/" + p + "?hash=0"}
			}
			json.NewEncoder(w).Encode(map[string]any{"paths": paths})
		case strings.HasPrefix(r.URL.Path, "/openapi/v3/"):
			d, ok := docs[strings.TrimPrefix(r.URL.Path, "/openapi/v3/")]
			if !ok {
				http.NotFound(w, r)
				return
			}
			w.Header().Set("Content-Type", "application/json")
			w.Write(d)
		default:
			http.NotFound(w, r)
		}
	}))
	defer srv.Close()
	kubeconfig := filepath.Join(t.TempDir(), "config")
	if err := os.WriteFile(kubeconfig, []byte(fmt.Sprintf(`apiVersion: v1
kind: Config
clusters:
- name: c
  cluster: {server: %q}
users:
- name: u
  user: {token: t}
contexts:
- name: old
  context: {cluster: c, user: u}
current-context: old
`, srv.URL)), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("KUBECONFIG", kubeconfig)

	s, err := schemadiff.Load(context.Background(), "cluster:old")
	if err != nil {
		t.Fatal(err)
	}
	if s.Format != schemadiff.FormatCluster || s.Version != "v1.35.4" {
		t.Errorf("format %q version %q, want cluster v1.35.4", s.Format, s.Version)
	}
	if _, ok := s.Kinds[schemadiff.GVK{Group: "scheduling.k8s.io", Version: "v1alpha1", Kind: "Workload"}]; !ok {
		t.Errorf("Workload v1alpha1 not loaded from the cluster: %v", s.GVKs())
	}
	// The group document (apis/scheduling.k8s.io) has no schemas and is not fetched.
	for _, r := range requests {
		if r == "/openapi/v3/apis/scheduling.k8s.io" {
			t.Errorf("fetched the group document %s", r)
		}
	}

	_, err = schemadiff.Load(context.Background(), "cluster:missing")
	if err == nil || !strings.Contains(err.Error(), `cluster:missing: kubeconfig: context "missing" does not exist`) {
		t.Errorf("unknown context: err = %v", err)
	}
}

func TestLoad_Errors(t *testing.T) {
	tests := []struct {
		file string
		want string
	}{
		{"syntax.json", "syntax.json:3:27: invalid character ','"},
		{"syntax.yaml", "syntax.yaml:6: YAML syntax error"},
		{"broken-ref.json", `broken-ref.json:4:36: definition "io.example.v1.Foo": broken $ref "#/definitions/io.example.v1.FooSpec"`},
		{"broken-ref-v3.json", `broken-ref-v3.json:4:36: definition "io.example.v1.Foo": broken $ref "#/components/schemas/io.example.v1.Missing"`},
		{"empty.json", "empty.json: empty dump"},
		{"no-kinds.json", "no-kinds.json: empty dump: no Kubernetes kinds"},
		{"comments.yaml", "comments.yaml: empty dump"},
		{"plain.json", "plain.json: not an OpenAPI v2"},
		{"configmap.yaml", "configmap.yaml:1: a v1 ConfigMap manifest is not an OpenAPI document"},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			_, err := schemadiff.Load(context.Background(), td("bad", tt.file))
			if err == nil {
				t.Fatal("no error")
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %q does not contain %q", err, tt.want)
			}
			var le *schemadiff.LoadError
			if !errorsAs(err, &le) {
				t.Errorf("error %T is not a *LoadError", err)
			}
		})
	}
}

// TestDraftRules_Stable checks that drafting twice from freshly loaded dumps
// gives byte-identical rules and reports.
func TestDraftRules_Stable(t *testing.T) {
	var outs [][]byte
	for range 3 {
		old, err := schemadiff.Load(context.Background(), td("k8s", "v1.24.0-swagger.json.gz"))
		if err != nil {
			t.Fatal(err)
		}
		nw, err := schemadiff.Load(context.Background(), td("k8s", "v1.25.0-swagger.json.gz"))
		if err != nil {
			t.Fatal(err)
		}
		r := schemadiff.Diff(old, nw, schemadiff.Options{AllVersions: true})
		d := schemadiff.DraftRules(r, schemadiff.DraftOptions{})
		var b bytes.Buffer
		b.Write(d.YAML())
		schemadiff.WriteDraftReport(&b, r, d)
		schemadiff.WriteReport(&b, r, schemadiff.ReportJSON)
		outs = append(outs, b.Bytes())
	}
	for i := 1; i < len(outs); i++ {
		if !bytes.Equal(outs[0], outs[i]) {
			t.Fatalf("run %d differs from run 0", i)
		}
	}
}

func TestDiff_SameDumpIsEmpty(t *testing.T) {
	s, err := schemadiff.Load(context.Background(), td("k8s", "v1.25.0-swagger.json.gz"))
	if err != nil {
		t.Fatal(err)
	}
	r := schemadiff.Diff(s, s, schemadiff.Options{})
	if !r.Empty() || len(r.Migrations) != 0 {
		t.Errorf("diff of a dump with itself: %d deleted, %d added, %d migrations", len(r.Kinds.Deleted), len(r.Kinds.Added), len(r.Migrations))
	}
}

func TestKind_Fields(t *testing.T) {
	s, err := schemadiff.Load(context.Background(), td("k8s", "v1.22.0-swagger.json.gz"))
	if err != nil {
		t.Fatal(err)
	}
	k := s.Kinds[schemadiff.GVK{Group: "networking.k8s.io", Version: "v1", Kind: "Ingress"}]
	if k == nil {
		t.Fatal("no networking.k8s.io/v1 Ingress")
	}
	got := map[string]*schemadiff.Field{}
	for _, f := range k.Fields() {
		got[f.Path] = f
	}
	for path, typ := range map[string]string{
		"spec.defaultBackend.service.port.number":          schemadiff.TypeInteger,
		"spec.rules[*].http.paths[*].pathType":             schemadiff.TypeString,
		"spec.rules[*].http.paths[*].backend.service.name": schemadiff.TypeString,
		"metadata.annotations{*}":                          schemadiff.TypeString,
		"status.loadBalancer.ingress[*].ports[*].port":     schemadiff.TypeInteger,
		"spec.tls": schemadiff.TypeArray,
	} {
		f, ok := got[path]
		if !ok {
			t.Errorf("no field %s", path)
			continue
		}
		if f.Type != typ {
			t.Errorf("%s: type %s, want %s", path, f.Type, typ)
		}
	}
	if f := got["spec.rules[*].http.paths[*].pathType"]; f != nil && !f.Required {
		t.Error("pathType is required in networking.k8s.io/v1")
	}
	if _, ok := got["spec.backend"]; ok {
		t.Error("v1 has no spec.backend")
	}
}

// A schema whose allOf refers back to itself is merged a bounded number of
// times, as the schema checks of lint always did, instead of until the
// stack overflows.
func TestLoad_AllOfCycle(t *testing.T) {
	file := filepath.Join(t.TempDir(), "cycle.json")
	doc := `{"openapi": "3.0.0", "info": {"title": "x", "version": "1"}, "paths": {},
 "components": {"schemas": {
  "io.example.v1.Foo": {"type": "object", "x-kubernetes-group-version-kind": [{"group": "example.com", "version": "v1", "kind": "Foo"}],
   "properties": {"spec": {"$ref": "#/components/schemas/io.example.v1.Loop"}}},
  "io.example.v1.Loop": {"allOf": [{"$ref": "#/components/schemas/io.example.v1.Loop"}], "properties": {"size": {"type": "integer"}}}
 }}}`
	if err := os.WriteFile(file, []byte(doc), 0o644); err != nil {
		t.Fatal(err)
	}
	s, err := schemadiff.Load(context.Background(), file)
	if err != nil {
		t.Fatal(err)
	}
	k := s.Kinds[schemadiff.GVK{Group: "example.com", Version: "v1", Kind: "Foo"}]
	if k == nil {
		t.Fatal("no example.com/v1 Foo")
	}
	got := map[string]string{}
	for _, f := range k.Fields() {
		got[f.Path] = f.Type
	}
	if got["spec"] != schemadiff.TypeObject || got["spec.size"] != schemadiff.TypeInteger {
		t.Errorf("fields %v, want spec an object with an integer size", got)
	}
}
