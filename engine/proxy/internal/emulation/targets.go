package emulation

import (
	"slices"

	apidiscoveryv2 "k8s.io/api/apidiscovery/v2"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// target is how one group/version/resource that the rules connect to a
// served version is emulated.
type target struct {
	requested schema.GroupVersion
	served    schema.GroupVersion
	resource  string
	// kind is the resource's kind, the same in both versions (the served
	// version's discovery names it).
	kind string
	// unlisted says that no backend lists the requested version, so
	// discovery shows it as emulated.
	unlisted bool
}

// listedAt is a resource as discovery lists it in one group/version.
type listedAt struct {
	gv  schema.GroupVersion
	res *apidiscoveryv2.APIResourceDiscovery
}

// targets finds, for every group/version/resource the rules mention, the
// version it is emulated from: among the versions listed in groups that a
// chain of rules reaches, the one with the fewest hops (the server's
// preferred version among equals). Versions that groups lists are included
// too (unlisted false): they are emulated while no ready backend serves
// them, e.g. during a rolling upgrade once the last old server is gone.
func (rs *Rules) targets(groups []apidiscoveryv2.APIGroupDiscovery) map[schema.GroupVersionResource]target {
	out := map[schema.GroupVersionResource]target{}
	for resource, gvs := range rs.conv.Versions() {
		served := listed(groups, resource, gvs)
		for _, from := range gvs {
			best := rs.nearest(from, served)
			if best < 0 {
				continue
			}
			isListed := slices.ContainsFunc(served, func(s listedAt) bool { return s.gv == from })
			out[from.WithResource(resource)] = target{
				requested: from, served: served[best].gv, resource: resource,
				kind: served[best].res.ResponseKind.Kind, unlisted: !isListed,
			}
		}
	}
	return out
}

// listed is where groups lists resource among the versions gvs, in the
// servers' order.
func listed(groups []apidiscoveryv2.APIGroupDiscovery, resource string, gvs []schema.GroupVersion) []listedAt {
	var out []listedAt
	for gi := range groups {
		g := &groups[gi]
		for vi := range g.Versions {
			v := &g.Versions[vi]
			gv := schema.GroupVersion{Group: g.Name, Version: v.Version}
			for ri := range v.Resources {
				r := &v.Resources[ri]
				if r.Resource == resource && slices.Contains(gvs, gv) {
					out = append(out, listedAt{gv, r})
				}
			}
		}
	}
	return out
}

// nearest is the index in served of the version other than from that the
// fewest rules lead to from from, the first among equals; -1 for none.
func (rs *Rules) nearest(from schema.GroupVersion, served []listedAt) int {
	best, bestHops := -1, 0
	for i, s := range served {
		if s.gv == from || s.res.ResponseKind == nil {
			continue
		}
		progs, _, err := rs.conv.Path(from.WithKind(s.res.ResponseKind.Kind), s.gv)
		if err != nil || len(progs) == 0 {
			continue
		}
		if best < 0 || len(progs) < bestHops {
			best, bestHops = i, len(progs)
		}
	}
	return best
}
