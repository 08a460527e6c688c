package schemadiff

import (
	"fmt"
	"sort"
	"strings"

	"github.com/getkin/kin-openapi/openapi3"
	"k8s.io/apimachinery/pkg/version"
)

// Format names the kind of document a [Spec] was loaded from.
type Format string

// The input formats that [Load] detects.
const (
	FormatOpenAPIV2 Format = "openapi-v2"
	FormatOpenAPIV3 Format = "openapi-v3"
	FormatCRD       Format = "crd"
	FormatCluster   Format = "cluster"
)

// GVK is a group, version and kind. The core group is the empty string.
type GVK struct {
	Group   string `json:"group"`
	Version string `json:"version"`
	Kind    string `json:"kind"`
}

// GroupVersion is "group/version", or "version" for the core group.
func (g GVK) GroupVersion() string {
	if g.Group == "" {
		return g.Version
	}
	return g.Group + "/" + g.Version
}

// String is "group/version, Kind=kind" in the style of apimachinery.
func (g GVK) String() string { return g.GroupVersion() + " " + g.Kind }

// GK is a group and kind: what identifies a kind across versions.
type GK struct {
	Group string `json:"group"`
	Kind  string `json:"kind"`
}

func (g GVK) gk() GK { return GK{g.Group, g.Kind} }

// Kind is one kind served by a dump, with its resolved schema.
type Kind struct {
	GVK
	// Resource is the lower-case plural resource name; guessed from Kind
	// when the dump has no paths for it.
	Resource string `json:"resource"`
	// Definition is the OpenAPI definition name (io.k8s.api.apps.v1.Deployment)
	// or, for a CRD, "<crd name>/<version>".
	Definition string `json:"definition"`
	// Schema is the kind's schema with every $ref resolved.
	Schema *openapi3.SchemaRef `json:"-"`
}

// Spec is one loaded dump: the kinds it serves.
type Spec struct {
	// Source is the file, directory or cluster:CONTEXT it came from.
	Source string
	// Format is the detected input format.
	Format Format
	// Title and Version come from the document's info (Kubernetes, v1.22.0).
	Title, Version string
	// Kinds maps every served group/version/kind to its schema.
	Kinds map[GVK]*Kind
}

// GVKs lists the spec's kinds in a stable order.
func (s *Spec) GVKs() []GVK {
	out := make([]GVK, 0, len(s.Kinds))
	for k := range s.Kinds {
		out = append(out, k)
	}
	sortGVKs(out)
	return out
}

// Versions lists the versions the spec serves for a group and kind, most
// preferred first (Kubernetes version priority: v2 > v1 > v1beta2 > v1alpha1).
func (s *Spec) Versions(gk GK) []string {
	var vs []string
	for k := range s.Kinds {
		if k.Group == gk.Group && k.Kind == gk.Kind {
			vs = append(vs, k.Version)
		}
	}
	sortVersions(vs)
	return vs
}

// Preferred is the most preferred version the spec serves for gk, or "".
func (s *Spec) Preferred(gk GK) string {
	if vs := s.Versions(gk); len(vs) > 0 {
		return vs[0]
	}
	return ""
}

// sortVersions sorts most preferred first.
func sortVersions(vs []string) {
	sort.Slice(vs, func(i, j int) bool {
		return version.CompareKubeAwareVersionStrings(vs[i], vs[j]) > 0
	})
}

func sortGVKs(s []GVK) {
	sort.Slice(s, func(i, j int) bool {
		a, b := s[i], s[j]
		if a.Group != b.Group {
			return a.Group < b.Group
		}
		if a.Kind != b.Kind {
			return a.Kind < b.Kind
		}
		return version.CompareKubeAwareVersionStrings(a.Version, b.Version) > 0
	})
}

// addKind records a kind, keeping the first definition seen for a GVK so the
// result does not depend on map order (callers feed definitions sorted).
func (s *Spec) addKind(k *Kind) {
	if s.Kinds == nil {
		s.Kinds = map[GVK]*Kind{}
	}
	if _, ok := s.Kinds[k.GVK]; ok {
		return
	}
	s.Kinds[k.GVK] = k
}

// gvkExtension reads x-kubernetes-group-version-kind, which is a list in
// Kubernetes dumps and a single object in some hand-written ones.
func gvkExtension(ext map[string]any) []GVK {
	raw, ok := ext["x-kubernetes-group-version-kind"]
	if !ok {
		return nil
	}
	var items []any
	switch v := raw.(type) {
	case []any:
		items = v
	case map[string]any:
		items = []any{v}
	}
	var out []GVK
	for _, it := range items {
		m, ok := it.(map[string]any)
		if !ok {
			continue
		}
		g, _ := m["group"].(string)
		v, _ := m["version"].(string)
		k, _ := m["kind"].(string)
		if v != "" && k != "" {
			out = append(out, GVK{g, v, k})
		}
	}
	return out
}

// indexDefinitions adds every definition that is a top-level kind. Types that
// carry several GVKs (DeleteOptions, WatchEvent, Status) and lists are not
// kinds a client migrates.
func (s *Spec) indexDefinitions(defs map[string]*openapi3.SchemaRef, resources map[GVK]string) {
	names := make([]string, 0, len(defs))
	for n := range defs {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		ref := defs[n]
		if ref == nil || ref.Value == nil {
			continue
		}
		gvks := gvkExtension(ref.Value.Extensions)
		if len(gvks) != 1 || isListKind(gvks[0].Kind, ref.Value) || isMetaRef(n) {
			continue
		}
		g := gvks[0]
		res := resources[g]
		if res == "" {
			res = guessResource(g.Kind)
		}
		s.addKind(&Kind{GVK: g, Resource: res, Definition: n, Schema: &openapi3.SchemaRef{Ref: "#/definitions/" + n, Value: ref.Value}})
	}
}

func isListKind(kind string, s *openapi3.Schema) bool {
	if !strings.HasSuffix(kind, "List") {
		return false
	}
	items := s.Properties["items"]
	return items != nil && items.Value != nil && items.Value.Type.Is("array")
}

// resourcesFromPaths maps GVKs to plural resource names using the list
// operations of a Kubernetes dump (x-kubernetes-action: list).
func resourcesFromPaths(paths map[string]map[string]any) map[GVK]string {
	out := map[GVK]string{}
	keys := make([]string, 0, len(paths))
	for p := range paths {
		keys = append(keys, p)
	}
	sort.Strings(keys)
	for _, p := range keys {
		if strings.Contains(p, "/watch/") {
			continue
		}
		ext := paths[p]
		if a, _ := ext["x-kubernetes-action"].(string); a != "list" {
			continue
		}
		gvks := gvkExtension(ext)
		if len(gvks) != 1 {
			continue
		}
		seg := p[strings.LastIndex(p, "/")+1:]
		if seg == "" || strings.HasPrefix(seg, "{") {
			continue
		}
		if _, ok := out[gvks[0]]; !ok {
			out[gvks[0]] = seg
		}
	}
	return out
}

// guessResource is the plural Kubernetes' RESTMapper guesses for a kind.
func guessResource(kind string) string {
	k := strings.ToLower(kind)
	switch {
	case k == "":
		return ""
	case strings.HasSuffix(k, "s"), strings.HasSuffix(k, "x"), strings.HasSuffix(k, "ch"), strings.HasSuffix(k, "sh"):
		return k + "es"
	case strings.HasSuffix(k, "y") && len(k) > 1 && !strings.ContainsRune("aeiou", rune(k[len(k)-2])):
		return k[:len(k)-1] + "ies"
	}
	return k + "s"
}

func (s *Spec) String() string {
	return fmt.Sprintf("%s (%s, %d kinds)", s.Source, s.Format, len(s.Kinds))
}

// Fields flattens the kind's schema: every property with its path in the
// rules' path language (spec.rules[*].http.paths[*].backend), parents before
// children and siblings sorted. Map values appear as {*} and recursive
// definitions end at their first repetition. Lint checks use it to tell
// whether a rule's path exists in a version.
func (k *Kind) Fields() []*Field {
	var out []*Field
	buildTree(k.Schema).walk(func(n *node) {
		if n.parent != nil {
			out = append(out, fieldRef(n))
		}
	})
	return out
}
