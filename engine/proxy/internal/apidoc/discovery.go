// Package apidoc merges the documents that describe a cluster's API, as the
// proxy shows several kube-apiservers as one: aggregated and legacy
// discovery, OpenAPI v2 and the /openapi/v3 index. It also builds the
// OpenAPI of a CustomResourceDefinition version and converts OpenAPI v3 to
// v2. Every function is pure: the proxy fetches the documents, this package
// only combines them.
package apidoc

import (
	"crypto/sha512"
	"encoding/json"
	"fmt"
	"mime"
	"slices"
	"strings"

	apidiscoveryv2 "k8s.io/api/apidiscovery/v2"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
)

// AggregatedContentType is the media type of aggregated discovery
// (apidiscovery.k8s.io/v2) in JSON.
const AggregatedContentType = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"

// ETag names a document by its content, as kube-apiserver names its
// discovery and OpenAPI documents.
func ETag(b []byte) string { return fmt.Sprintf("%X", sha512.Sum512(b)) }

// WantsAggregated picks aggregated discovery when the client lists its JSON
// form before plain JSON (the order client-go and kubectl send).
func WantsAggregated(accept string) bool {
	for _, part := range strings.Split(accept, ",") {
		mt, params, err := mime.ParseMediaType(strings.TrimSpace(part))
		if err != nil {
			continue
		}
		if mt != "application/json" && mt != "*/*" && mt != "application/*" {
			continue
		}
		return params["g"] == "apidiscovery.k8s.io" && params["v"] == "v2" && params["as"] == "APIGroupDiscoveryList"
	}
	return false
}

// MergeGroups is the union of several aggregated discovery documents, the
// first one's order and definitions winning.
func MergeGroups(lists [][]apidiscoveryv2.APIGroupDiscovery) []apidiscoveryv2.APIGroupDiscovery {
	var out []apidiscoveryv2.APIGroupDiscovery
	groupIdx := map[string]int{}
	for _, list := range lists {
		for _, g := range list {
			gi, ok := groupIdx[g.Name]
			if !ok {
				groupIdx[g.Name] = len(out)
				out = append(out, *g.DeepCopy())
				continue
			}
			mergeVersions(&out[gi], g.Versions)
		}
	}
	return out
}

// mergeVersions adds versions to a group: unknown versions whole, and to a
// known version its unknown resources.
func mergeVersions(mg *apidiscoveryv2.APIGroupDiscovery, versions []apidiscoveryv2.APIVersionDiscovery) {
	for _, v := range versions {
		vi := slices.IndexFunc(mg.Versions, func(x apidiscoveryv2.APIVersionDiscovery) bool { return x.Version == v.Version })
		if vi < 0 {
			mg.Versions = append(mg.Versions, *v.DeepCopy())
			continue
		}
		mv := &mg.Versions[vi]
		if v.Freshness == apidiscoveryv2.DiscoveryFreshnessCurrent {
			mv.Freshness = apidiscoveryv2.DiscoveryFreshnessCurrent
		}
		for _, r := range v.Resources {
			if !slices.ContainsFunc(mv.Resources, func(x apidiscoveryv2.APIResourceDiscovery) bool { return x.Resource == r.Resource }) {
				mv.Resources = append(mv.Resources, *r.DeepCopy())
			}
		}
	}
}

// Alias is a version of a resource that discovery lists as a copy of the
// same resource in another version: an emulated version, listed like the
// version it is converted from.
type Alias struct {
	// Version is the group/version listed.
	Version schema.GroupVersion
	// Of is the group/version whose resource is copied.
	Of       schema.GroupVersion
	Resource string
	// Kind is the resource's kind in Version.
	Kind string
}

// key orders aliases: group/version/resource, version/resource for the
// core group.
func (a Alias) key() string {
	if a.Version.Group == "" {
		return a.Version.Version + "/" + a.Resource
	}
	return a.Version.Group + "/" + a.Version.Version + "/" + a.Resource
}

// AddAliases adds each alias to groups as the last (least preferred)
// version of its group, its resource a copy of the one it copies (verbs,
// scope, short names, categories, subresources) with the alias's kind. An
// alias of a resource groups does not list is left out.
func AddAliases(groups []apidiscoveryv2.APIGroupDiscovery, aliases []Alias) []apidiscoveryv2.APIGroupDiscovery {
	aliases = slices.Clone(aliases)
	slices.SortFunc(aliases, func(a, b Alias) int { return strings.Compare(a.key(), b.key()) })
	for _, a := range aliases {
		src := FindResource(groups, a.Of, a.Resource)
		if src == nil {
			continue
		}
		res := *src.DeepCopy()
		res.ResponseKind = &metav1.GroupVersionKind{Group: a.Version.Group, Version: a.Version.Version, Kind: a.Kind}
		for i := range res.Subresources {
			if rk := res.Subresources[i].ResponseKind; rk != nil && rk.Group == a.Of.Group && rk.Version == a.Of.Version {
				res.Subresources[i].ResponseKind = &metav1.GroupVersionKind{Group: a.Version.Group, Version: a.Version.Version, Kind: rk.Kind}
			}
		}
		gi := slices.IndexFunc(groups, func(g apidiscoveryv2.APIGroupDiscovery) bool { return g.Name == a.Version.Group })
		if gi < 0 {
			g := apidiscoveryv2.APIGroupDiscovery{}
			g.Name = a.Version.Group
			groups = append(groups, g)
			gi = len(groups) - 1
		}
		g := &groups[gi]
		vi := slices.IndexFunc(g.Versions, func(v apidiscoveryv2.APIVersionDiscovery) bool { return v.Version == a.Version.Version })
		if vi < 0 {
			g.Versions = append(g.Versions, apidiscoveryv2.APIVersionDiscovery{Version: a.Version.Version, Freshness: apidiscoveryv2.DiscoveryFreshnessCurrent})
			vi = len(g.Versions) - 1
		}
		g.Versions[vi].Resources = append(g.Versions[vi].Resources, res)
	}
	return groups
}

// FindResource is the resource of a group/version in groups, or nil.
func FindResource(groups []apidiscoveryv2.APIGroupDiscovery, gv schema.GroupVersion, resource string) *apidiscoveryv2.APIResourceDiscovery {
	for gi := range groups {
		if groups[gi].Name != gv.Group {
			continue
		}
		for vi := range groups[gi].Versions {
			v := &groups[gi].Versions[vi]
			if v.Version != gv.Version {
				continue
			}
			for ri := range v.Resources {
				if v.Resources[ri].Resource == resource {
					return &v.Resources[ri]
				}
			}
		}
	}
	return nil
}

// Documents are the discovery documents of one set of groups, serialised
// once.
type Documents struct {
	// Core and APIs are aggregated /api and /apis; their ETags name them.
	Core, APIs         []byte
	CoreETag, APIsETag string
	// LegacyAPIGroups is legacy /apis (an APIGroupList).
	LegacyAPIGroups []byte
	// Legacy maps /api/v1, /apis/<group> and /apis/<group>/<version> to
	// their legacy documents.
	Legacy map[string][]byte
	// LegacyVersions are the versions of the core group, for legacy /api.
	LegacyVersions []string
}

// Render serialises groups (the core group named "") as aggregated and
// legacy discovery.
func Render(groups []apidiscoveryv2.APIGroupDiscovery) Documents {
	var core, apis apidiscoveryv2.APIGroupDiscoveryList
	core.TypeMeta = metav1.TypeMeta{APIVersion: "apidiscovery.k8s.io/v2", Kind: "APIGroupDiscoveryList"}
	apis.TypeMeta = core.TypeMeta
	for _, g := range groups {
		if g.Name == "" {
			core.Items = append(core.Items, g)
		} else {
			apis.Items = append(apis.Items, g)
		}
	}
	d := Documents{Legacy: map[string][]byte{}}
	d.Core, _ = json.Marshal(core)
	d.APIs, _ = json.Marshal(apis)
	d.CoreETag, d.APIsETag = ETag(d.Core), ETag(d.APIs)

	groupList, resources, _ := discovery.SplitGroupsAndResources(apis)
	groupList.TypeMeta = metav1.TypeMeta{Kind: "APIGroupList", APIVersion: "v1"}
	d.LegacyAPIGroups, _ = json.Marshal(groupList)
	for _, g := range groupList.Groups {
		g.TypeMeta = metav1.TypeMeta{Kind: "APIGroup", APIVersion: "v1"}
		d.Legacy["/apis/"+g.Name], _ = json.Marshal(g)
	}
	coreGroups, coreResources, _ := discovery.SplitGroupsAndResources(core)
	for _, g := range coreGroups.Groups {
		for _, v := range g.Versions {
			d.LegacyVersions = append(d.LegacyVersions, v.Version)
		}
	}
	d.addResourceLists("/api/", coreResources)
	d.addResourceLists("/apis/", resources)
	return d
}

func (d *Documents) addResourceLists(prefix string, m map[schema.GroupVersion]*metav1.APIResourceList) {
	for gv, rl := range m {
		rl.TypeMeta = metav1.TypeMeta{Kind: "APIResourceList", APIVersion: "v1"}
		path := prefix + gv.Group + "/" + gv.Version
		if gv.Group == "" {
			path = prefix + gv.Version
		}
		d.Legacy[path], _ = json.Marshal(rl)
	}
}

// LegacyToAggregated turns the legacy discovery of one group/version (an
// APIResourceList's resources) into its aggregated form: subresources
// ("pods/log") under their resources.
func LegacyToAggregated(group, ver string, in []metav1.APIResource) apidiscoveryv2.APIVersionDiscovery {
	v := apidiscoveryv2.APIVersionDiscovery{Version: ver, Freshness: apidiscoveryv2.DiscoveryFreshnessCurrent}
	index := map[string]int{}
	kind := func(r metav1.APIResource) *metav1.GroupVersionKind {
		if r.Kind == "" {
			return nil
		}
		gvk := metav1.GroupVersionKind{Group: group, Version: ver, Kind: r.Kind}
		if r.Group != "" || r.Version != "" {
			gvk.Group, gvk.Version = r.Group, r.Version
		}
		return &gvk
	}
	for _, r := range in {
		if strings.Contains(r.Name, "/") {
			continue
		}
		scope := apidiscoveryv2.ScopeCluster
		if r.Namespaced {
			scope = apidiscoveryv2.ScopeNamespace
		}
		rk := kind(r)
		if rk == nil {
			rk = &metav1.GroupVersionKind{}
		}
		index[r.Name] = len(v.Resources)
		v.Resources = append(v.Resources, apidiscoveryv2.APIResourceDiscovery{
			Resource:         r.Name,
			ResponseKind:     rk,
			Scope:            scope,
			SingularResource: r.SingularName,
			Verbs:            r.Verbs,
			ShortNames:       r.ShortNames,
			Categories:       r.Categories,
		})
	}
	for _, r := range in {
		parent, sub, ok := strings.Cut(r.Name, "/")
		if !ok {
			continue
		}
		i, ok := index[parent]
		if !ok {
			continue
		}
		v.Resources[i].Subresources = append(v.Resources[i].Subresources, apidiscoveryv2.APISubresourceDiscovery{
			Subresource:  sub,
			ResponseKind: kind(r),
			Verbs:        r.Verbs,
		})
	}
	return v
}
