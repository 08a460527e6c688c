package schemadiff

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"github.com/getkin/kin-openapi/openapi2"
	"github.com/getkin/kin-openapi/openapi2conv"
	"github.com/getkin/kin-openapi/openapi3"
	yaml "go.yaml.in/yaml/v3"
)

// LoadError is a dump that cannot be read, with the position the parser
// gave, if any.
type LoadError struct {
	// Source is the file, directory or cluster:CONTEXT.
	Source string
	// Line and Col are 1-based; zero when unknown.
	Line, Col int
	// Err is what went wrong.
	Err error
}

func (e *LoadError) Error() string {
	switch {
	case e.Line > 0 && e.Col > 0:
		return fmt.Sprintf("%s:%d:%d: %v", e.Source, e.Line, e.Col, e.Err)
	case e.Line > 0:
		return fmt.Sprintf("%s:%d: %v", e.Source, e.Line, e.Err)
	}
	return fmt.Sprintf("%s: %v", e.Source, e.Err)
}

func (e *LoadError) Unwrap() error { return e.Err }

// ClusterPrefix selects a live cluster as a source: cluster:CONTEXT.
const ClusterPrefix = "cluster:"

// Load reads a dump and detects what it is: a Kubernetes /openapi/v2
// document, an /openapi/v3 group-version document or a directory of them, CRD
// manifests (YAML or JSON, one or many documents, a List), a directory mixing
// v3 documents and CRDs, or cluster:CONTEXT for a live cluster's /openapi/v3
// through that kubeconfig context. Files may be gzip-compressed.
func Load(ctx context.Context, source string) (*Spec, error) {
	if ctxName, ok := strings.CutPrefix(source, ClusterPrefix); ok {
		return loadCluster(ctx, source, ctxName)
	}
	fi, err := os.Stat(source)
	if err != nil {
		return nil, &LoadError{Source: source, Err: unwrapPathError(err)}
	}
	if fi.IsDir() {
		return loadDir(source)
	}
	data, err := readFile(source)
	if err != nil {
		return nil, err
	}
	spec := &Spec{Source: source}
	if err := spec.addDocument(source, data); err != nil {
		return nil, err
	}
	if len(spec.Kinds) == 0 {
		return nil, &LoadError{Source: source, Err: errors.New("empty dump: no Kubernetes kinds (no definition carries x-kubernetes-group-version-kind, no served CRD version)")}
	}
	return spec, nil
}

func unwrapPathError(err error) error {
	var pe *os.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

func readFile(name string) ([]byte, error) {
	data, err := os.ReadFile(name)
	if err != nil {
		return nil, &LoadError{Source: name, Err: unwrapPathError(err)}
	}
	if len(data) > 2 && data[0] == 0x1f && data[1] == 0x8b {
		zr, err := gzip.NewReader(bytes.NewReader(data))
		if err != nil {
			return nil, &LoadError{Source: name, Err: err}
		}
		data, err = io.ReadAll(zr)
		if err != nil {
			return nil, &LoadError{Source: name, Err: fmt.Errorf("gzip: %w", err)}
		}
	}
	return data, nil
}

// loadDir reads every .json and .yaml file below dir, in lexical order, so
// that a saved /openapi/v3 tree (api/v1.json, apis/apps/v1.json) loads as
// well as kubectl's flat file names.
func loadDir(dir string) (*Spec, error) {
	var files []string
	err := filepath.WalkDir(dir, func(p string, e fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if p != dir && strings.HasPrefix(e.Name(), ".") {
			if e.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		if !e.IsDir() && isDumpFile(e.Name()) {
			files = append(files, p)
		}
		return nil
	})
	if err != nil {
		return nil, &LoadError{Source: dir, Err: unwrapPathError(err)}
	}
	if len(files) == 0 {
		return nil, &LoadError{Source: dir, Err: errors.New("empty dump: no .json or .yaml files")}
	}
	spec := &Spec{Source: dir}
	for _, p := range files {
		data, err := readFile(p)
		if err != nil {
			return nil, err
		}
		if isOpenAPIV3Index(data) {
			continue // GET /openapi/v3: the list of documents, not one
		}
		if err := spec.addDocument(p, data); err != nil {
			return nil, err
		}
	}
	if len(spec.Kinds) == 0 {
		return nil, &LoadError{Source: dir, Err: errors.New("empty dump: no Kubernetes kinds in any file")}
	}
	return spec, nil
}

// isOpenAPIV3Index recognises the /openapi/v3 discovery document
// ({"paths": {"apis/apps/v1": {"serverRelativeURL": ...}}}).
func isOpenAPIV3Index(data []byte) bool {
	var idx struct {
		OpenAPI string                     `json:"openapi"`
		Paths   map[string]json.RawMessage `json:"paths"`
	}
	data = bytes.TrimSpace(data)
	if len(data) == 0 || data[0] != '{' || json.Unmarshal(data, &idx) != nil || idx.OpenAPI != "" || len(idx.Paths) == 0 {
		return false
	}
	for _, v := range idx.Paths {
		return bytes.Contains(v, []byte(`"serverRelativeURL"`))
	}
	return false
}

func isDumpFile(name string) bool {
	name = strings.TrimSuffix(name, ".gz")
	switch filepath.Ext(name) {
	case ".json", ".yaml", ".yml":
		return true
	}
	return false
}

// probe holds the top-level fields that tell documents apart.
type probe struct {
	Swagger    string          `json:"swagger"`
	OpenAPI    string          `json:"openapi"`
	Kind       string          `json:"kind"`
	APIVersion string          `json:"apiVersion"`
	Items      json.RawMessage `json:"items"`
}

// addDocument adds the kinds of one file to the spec.
func (s *Spec) addDocument(name string, data []byte) error {
	trimmed := bytes.TrimSpace(data)
	if len(trimmed) == 0 {
		return &LoadError{Source: name, Err: errors.New("empty dump: the file is empty")}
	}
	if trimmed[0] == '{' {
		top, p, err := parseTop(data)
		if err != nil {
			return jsonError(name, data, err)
		}
		return s.addJSON(name, data, top, p)
	}
	docs, err := splitYAML(name, data)
	if err != nil {
		return err
	}
	if len(docs) == 0 {
		return &LoadError{Source: name, Err: errors.New("empty dump: no YAML documents")}
	}
	for _, d := range docs {
		top, p, err := parseTop(d.json)
		if err != nil {
			return &LoadError{Source: name, Line: d.line, Err: err}
		}
		if err := s.addJSON(name, d.json, top, p); err != nil {
			var le *LoadError
			if errors.As(err, &le) && le.Line == 0 {
				le.Line = d.line
			}
			return err
		}
	}
	return nil
}

// parseTop splits a JSON object into its members in one pass and reads the
// members that tell documents apart.
func parseTop(data []byte) (map[string]json.RawMessage, probe, error) {
	var top map[string]json.RawMessage
	var p probe
	if err := json.Unmarshal(data, &top); err != nil {
		return nil, p, err
	}
	for k, dst := range map[string]*string{"swagger": &p.Swagger, "openapi": &p.OpenAPI, "kind": &p.Kind, "apiVersion": &p.APIVersion} {
		if raw, ok := top[k]; ok {
			_ = json.Unmarshal(raw, dst) // a non-string is "not this format"
		}
	}
	p.Items = top["items"]
	return top, p, nil
}

// joinTop writes members back as one JSON object, without re-validating them.
func joinTop(top map[string]json.RawMessage) []byte {
	var b bytes.Buffer
	b.WriteByte('{')
	for i, k := range slices.Sorted(maps.Keys(top)) {
		if i > 0 {
			b.WriteByte(',')
		}
		kb, _ := json.Marshal(k)
		b.Write(kb)
		b.WriteByte(':')
		b.Write(top[k])
	}
	b.WriteByte('}')
	return b.Bytes()
}

func (s *Spec) addJSON(name string, data []byte, top map[string]json.RawMessage, p probe) error {
	switch {
	case p.Swagger != "":
		if !strings.HasPrefix(p.Swagger, "2.") {
			return &LoadError{Source: name, Err: fmt.Errorf("unsupported swagger version %q", p.Swagger)}
		}
		s.noteFormat(FormatOpenAPIV2)
		return s.addV2(name, data, top)
	case p.OpenAPI != "":
		if !strings.HasPrefix(p.OpenAPI, "3.") {
			return &LoadError{Source: name, Err: fmt.Errorf("unsupported openapi version %q", p.OpenAPI)}
		}
		s.noteFormat(FormatOpenAPIV3)
		return s.addV3(name, data, top)
	case p.Kind == "CustomResourceDefinition":
		s.noteFormat(FormatCRD)
		return s.addCRD(name, data)
	case p.Kind == "CustomResourceDefinitionList" || (p.Kind == "List" && len(p.Items) > 0):
		var items []json.RawMessage
		if err := json.Unmarshal(p.Items, &items); err != nil {
			return &LoadError{Source: name, Err: err}
		}
		for _, it := range items {
			_, ip, err := parseTop(it)
			if err != nil {
				return &LoadError{Source: name, Err: err}
			}
			if ip.Kind != "CustomResourceDefinition" {
				return &LoadError{Source: name, Err: fmt.Errorf("list item of kind %q: only CustomResourceDefinitions are read", ip.Kind)}
			}
			s.noteFormat(FormatCRD)
			if err := s.addCRD(name, it); err != nil {
				return err
			}
		}
		return nil
	case p.Kind != "":
		return &LoadError{Source: name, Err: fmt.Errorf("a %s %s manifest is not an OpenAPI document or CustomResourceDefinition", p.APIVersion, p.Kind)}
	}
	return &LoadError{Source: name, Err: errors.New("not an OpenAPI v2 (swagger: \"2.0\") or v3 (openapi: 3.x) document, nor a CustomResourceDefinition")}
}

func (s *Spec) noteFormat(f Format) {
	switch s.Format {
	case "":
		s.Format = f
	case f:
	default:
		if !strings.Contains(string(s.Format), string(f)) {
			s.Format = s.Format + "+" + f
		}
	}
}

// jsonError turns an encoding/json error into a LoadError with a position.
func jsonError(name string, data []byte, err error) error {
	var off int64 = -1
	var se *json.SyntaxError
	var te *json.UnmarshalTypeError
	switch {
	case errors.As(err, &se):
		off = se.Offset
	case errors.As(err, &te):
		off = te.Offset
	}
	le := &LoadError{Source: name, Err: err}
	if off >= 0 {
		le.Line, le.Col = lineCol(data, int(off))
	}
	return le
}

func lineCol(data []byte, off int) (int, int) {
	if off > len(data) {
		off = len(data)
	}
	line := 1 + bytes.Count(data[:off], []byte("\n"))
	col := off - bytes.LastIndexByte(data[:off], '\n')
	return line, col
}

type yamlDoc struct {
	line int
	json []byte
}

// splitYAML decodes every document of a YAML stream into JSON, recording the
// line each starts on.
func splitYAML(name string, data []byte) ([]yamlDoc, error) {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var out []yamlDoc
	for {
		var n yaml.Node
		err := dec.Decode(&n)
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return nil, yamlError(name, err)
		}
		if len(n.Content) == 0 || (n.Content[0].Kind == yaml.ScalarNode && n.Content[0].Tag == "!!null") {
			continue
		}
		if n.Content[0].Kind != yaml.MappingNode {
			return nil, &LoadError{Source: name, Line: n.Content[0].Line, Col: n.Content[0].Column, Err: errors.New("not an OpenAPI document or CustomResourceDefinition: the document is not a mapping")}
		}
		var v any
		if err := n.Decode(&v); err != nil {
			return nil, &LoadError{Source: name, Line: n.Line, Err: err}
		}
		j, err := json.Marshal(jsonCompatible(v))
		if err != nil {
			return nil, &LoadError{Source: name, Line: n.Line, Err: err}
		}
		out = append(out, yamlDoc{line: n.Content[0].Line, json: j})
	}
}

// yamlError pulls the line out of a yaml.v3 error ("yaml: line 5: ...").
func yamlError(name string, err error) error {
	msg := err.Error()
	le := &LoadError{Source: name, Err: err}
	var line int
	if _, serr := fmt.Sscanf(strings.TrimPrefix(msg, "yaml: "), "line %d:", &line); serr == nil && line > 0 {
		le.Line = line
		rest := msg[strings.Index(msg, ":")+1:]
		rest = rest[strings.Index(rest, ":")+1:]
		le.Err = errors.New("YAML syntax error:" + rest)
	}
	return le
}

// jsonCompatible turns map[any]any, which YAML allows, into map[string]any.
func jsonCompatible(v any) any {
	switch v := v.(type) {
	case map[string]any:
		for k, e := range v {
			v[k] = jsonCompatible(e)
		}
		return v
	case map[any]any:
		m := make(map[string]any, len(v))
		for k, e := range v {
			m[fmt.Sprint(k)] = jsonCompatible(e)
		}
		return m
	case []any:
		for i, e := range v {
			v[i] = jsonCompatible(e)
		}
		return v
	}
	return v
}

// addV2 reads a Swagger 2.0 document: its definitions become OpenAPI 3
// schemas (kin-openapi's converter), its list operations name the resources.
func (s *Spec) addV2(name string, data []byte, top map[string]json.RawMessage) error {
	// Paths are most of a Kubernetes swagger.json and only the list
	// operations' extensions matter here: read them with a light decoder and
	// hand kin-openapi the rest.
	paths, err := listExtensions(top["paths"])
	if err != nil {
		return jsonError(name, data, fmt.Errorf("paths: %w", err))
	}
	delete(top, "paths")
	trimmed := joinTop(top)
	var doc openapi2.T
	if err := openapi2.UnmarshalFromData(trimmed, &doc); err != nil {
		return &LoadError{Source: name, Err: err}
	}
	if len(doc.Definitions) == 0 {
		return &LoadError{Source: name, Err: errors.New("empty dump: the document has no definitions")}
	}
	s.setInfo(doc.Info.Title, doc.Info.Version)
	for n, d := range doc.Definitions {
		if d == nil || (d.Ref == "" && d.Value == nil) {
			return &LoadError{Source: name, Err: fmt.Errorf("definition %q is empty", n)}
		}
	}
	doc3 := &openapi3.T{
		OpenAPI:    "3.0.3",
		Info:       &openapi3.Info{Title: doc.Info.Title, Version: doc.Info.Version},
		Paths:      openapi3.NewPaths(),
		Components: &openapi3.Components{Schemas: openapi2conv.ToV3Schemas(doc.Definitions)},
	}
	if err := resolveRefs(doc3); err != nil {
		return refError(name, data, err, "#/definitions/")
	}
	s.indexDefinitions(doc3.Components.Schemas, resourcesFromPaths(paths))
	return nil
}

// listExtensions reads the x-kubernetes extensions of each path's GET
// operation.
func listExtensions(raw json.RawMessage) (map[string]map[string]any, error) {
	if len(raw) == 0 {
		return nil, nil
	}
	var items map[string]struct {
		Get *struct {
			Action string `json:"x-kubernetes-action"`
			GVK    any    `json:"x-kubernetes-group-version-kind"`
		} `json:"get"`
	}
	if err := json.Unmarshal(raw, &items); err != nil {
		return nil, err
	}
	out := make(map[string]map[string]any, len(items))
	for p, it := range items {
		if it.Get != nil && it.Get.Action != "" {
			out[p] = map[string]any{"x-kubernetes-action": it.Get.Action, "x-kubernetes-group-version-kind": it.Get.GVK}
		}
	}
	return out, nil
}

// addV3 reads an OpenAPI 3 document such as /openapi/v3/apis/apps/v1.
func (s *Spec) addV3(name string, data []byte, top map[string]json.RawMessage) error {
	// As for v2, only the schemas go through kin-openapi: resolving every
	// operation of a group-version document costs more than the schemas.
	paths, err := listExtensions(top["paths"])
	if err != nil {
		return jsonError(name, data, fmt.Errorf("paths: %w", err))
	}
	top["paths"] = json.RawMessage("{}")
	trimmed := joinTop(top)
	doc := &openapi3.T{}
	if err := doc.UnmarshalJSON(trimmed); err != nil {
		return &LoadError{Source: name, Err: err}
	}
	if doc.Info != nil {
		s.setInfo(doc.Info.Title, doc.Info.Version)
	}
	if doc.Components == nil || len(doc.Components.Schemas) == 0 {
		// A group document (/openapi/v3/apis/apps) lists no schemas; in a
		// directory that is normal, alone it is an empty dump.
		return nil
	}
	if err := resolveRefs(doc); err != nil {
		return refError(name, data, err, "#/components/schemas/")
	}
	s.indexDefinitions(doc.Components.Schemas, resourcesFromPaths(paths))
	return nil
}

func (s *Spec) setInfo(title, version string) {
	if s.Title == "" {
		s.Title = title
	}
	if s.Version == "" && version != "unversioned" {
		s.Version = version
	}
}

// refError names the broken reference the way the document spells it and
// points at its first use.
func refError(name string, data []byte, err error, prefix string) error {
	var re *brokenRefError
	if !errors.As(err, &re) {
		return &LoadError{Source: name, Err: err}
	}
	ref := prefix + strings.TrimPrefix(re.ref, "#/components/schemas/")
	le := &LoadError{Source: name, Err: fmt.Errorf("definition %q: broken $ref %q: no such definition", re.def, ref)}
	if i := bytes.Index(data, []byte(`"`+ref+`"`)); i >= 0 {
		le.Line, le.Col = lineCol(data, i)
	}
	return le
}

type brokenRefError struct{ def, ref string }

func (e *brokenRefError) Error() string {
	return fmt.Sprintf("definition %q: broken $ref %q: no such definition", e.def, e.ref)
}

// resolveRefs resolves every $ref of the document, turning a missing target
// into an error that names it.
func resolveRefs(doc *openapi3.T) error {
	if err := checkRefs(doc.Components.Schemas); err != nil {
		return err
	}
	return explainRefError(openapi3.NewLoader().ResolveRefsIn(doc, nil))
}

// checkRefs reports the first broken local $ref (sorted by definition name),
// naming the definition that holds it: kin-openapi's own error names only the
// target.
func checkRefs(defs map[string]*openapi3.SchemaRef) error {
	names := make([]string, 0, len(defs))
	for n := range defs {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		if bad := findBrokenRef(defs, defs[n], 0); bad != "" {
			return &brokenRefError{def: n, ref: bad}
		}
	}
	return nil
}

func findBrokenRef(defs map[string]*openapi3.SchemaRef, r *openapi3.SchemaRef, depth int) string {
	if r == nil || depth > 64 {
		return ""
	}
	if r.Ref != "" {
		if target, ok := strings.CutPrefix(r.Ref, "#/components/schemas/"); ok {
			if _, ok := defs[target]; !ok {
				return r.Ref
			}
			return ""
		}
		if !strings.HasPrefix(r.Ref, "#/") {
			return "" // external refs are the loader's business
		}
		return r.Ref
	}
	v := r.Value
	if v == nil {
		return ""
	}
	for _, p := range slices.Sorted(maps.Keys(v.Properties)) {
		if b := findBrokenRef(defs, v.Properties[p], depth+1); b != "" {
			return b
		}
	}
	for _, list := range []openapi3.SchemaRefs{v.AllOf, v.AnyOf, v.OneOf} {
		for _, e := range list {
			if b := findBrokenRef(defs, e, depth+1); b != "" {
				return b
			}
		}
	}
	if b := findBrokenRef(defs, v.Items, depth+1); b != "" {
		return b
	}
	return findBrokenRef(defs, v.AdditionalProperties.Schema, depth+1)
}

// explainRefError marks what kin-openapi's resolver reports about refs that
// checkRefs does not see (refs into a definition's members, external refs).
func explainRefError(err error) error {
	if err == nil {
		return nil
	}
	msg := err.Error()
	if strings.Contains(msg, "bad data in") || strings.Contains(msg, "failed to resolve") || strings.Contains(msg, "not found") {
		return fmt.Errorf("broken $ref: %w", err)
	}
	return err
}

// addCRD reads one CustomResourceDefinition (apiextensions.k8s.io v1 or
// v1beta1) and adds each served version's openAPIV3Schema.
func (s *Spec) addCRD(name string, data []byte) error {
	var crd struct {
		APIVersion string `json:"apiVersion"`
		Metadata   struct {
			Name string `json:"name"`
		} `json:"metadata"`
		Spec struct {
			Group string `json:"group"`
			Names struct {
				Kind   string `json:"kind"`
				Plural string `json:"plural"`
			} `json:"names"`
			Version    string          `json:"version"`
			Validation json.RawMessage `json:"validation"`
			Versions   []struct {
				Name   string          `json:"name"`
				Served *bool           `json:"served"`
				Schema json.RawMessage `json:"schema"`
			} `json:"versions"`
		} `json:"spec"`
	}
	if err := json.Unmarshal(data, &crd); err != nil {
		return &LoadError{Source: name, Err: fmt.Errorf("CustomResourceDefinition: %w", err)}
	}
	sp := crd.Spec
	if sp.Group == "" || sp.Names.Kind == "" {
		return &LoadError{Source: name, Err: fmt.Errorf("CustomResourceDefinition %q: spec.group and spec.names.kind are required", crd.Metadata.Name)}
	}
	type version struct {
		name   string
		schema json.RawMessage
	}
	var versions []version
	for _, v := range sp.Versions {
		if v.Served != nil && !*v.Served {
			continue
		}
		sch := v.Schema
		if len(sch) == 0 || string(sch) == "null" {
			sch = sp.Validation // v1beta1: one schema for every version
		}
		versions = append(versions, version{v.Name, sch})
	}
	if len(sp.Versions) == 0 && sp.Version != "" {
		versions = append(versions, version{sp.Version, sp.Validation})
	}
	if len(versions) == 0 {
		return nil
	}
	plural := sp.Names.Plural
	if plural == "" {
		plural = guessResource(sp.Names.Kind)
	}
	for _, v := range versions {
		var holder struct {
			OpenAPIV3Schema json.RawMessage `json:"openAPIV3Schema"`
		}
		if len(v.schema) > 0 && string(v.schema) != "null" {
			if err := json.Unmarshal(v.schema, &holder); err != nil {
				return &LoadError{Source: name, Err: fmt.Errorf("CustomResourceDefinition %q version %s: %w", crd.Metadata.Name, v.name, err)}
			}
		}
		sch := &openapi3.Schema{}
		if len(holder.OpenAPIV3Schema) > 0 {
			if err := sch.UnmarshalJSON(holder.OpenAPIV3Schema); err != nil {
				return &LoadError{Source: name, Err: fmt.Errorf("CustomResourceDefinition %q version %s: openAPIV3Schema: %w", crd.Metadata.Name, v.name, err)}
			}
		} else {
			sch.Extensions = map[string]any{"x-kubernetes-preserve-unknown-fields": true}
		}
		s.addKind(&Kind{
			GVK:        GVK{Group: sp.Group, Version: v.name, Kind: sp.Names.Kind},
			Resource:   plural,
			Definition: crd.Metadata.Name + "/" + v.name,
			Schema:     &openapi3.SchemaRef{Value: sch},
		})
	}
	return nil
}

// loadFromDocuments builds a spec from named documents already in memory, as
// fetched from a cluster's /openapi/v3.
func loadFromDocuments(source string, docs map[string][]byte) (*Spec, error) {
	spec := &Spec{Source: source}
	for _, n := range slices.Sorted(maps.Keys(docs)) {
		if err := spec.addDocument(source+"/"+n, docs[n]); err != nil {
			return nil, err
		}
	}
	if len(spec.Kinds) == 0 {
		return nil, &LoadError{Source: source, Err: errors.New("empty dump: the cluster's /openapi/v3 lists no kinds")}
	}
	return spec, nil
}
