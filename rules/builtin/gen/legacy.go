package main

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// legacyAPIReleases are the k8s.io/api releases before lifecycle methods
// existed (v0.19), newest first, one per minor: every one the Go module
// proxy has. The releases before v0.15 were tagged kubernetes-1.x.y, which
// is no semantic version: proxy.golang.org answers 403 "not available" for
// them (kubernetes-1.8.0 … kubernetes-1.14.10), so what they removed is
// taken from Kubernetes' documentation instead (documented.go).
var legacyAPIReleases = []string{"v0.18.19", "v0.17.17", "v0.16.15", "v0.15.12"}

// readKinds lists the kinds of every API package of a module release from
// its register.go (scheme.AddKnownTypes(SchemeGroupVersion, &Kind{}, ...)),
// for releases without lifecycle methods. Resource and scope come from the
// +genclient tags, as for newer releases.
func readKinds(m module, dir string) ([]entry, error) {
	var out []entry
	err := filepath.WalkDir(filepath.Join(dir, apiRoots[m.Path]), func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == "testdata" || d.Name() == "vendor") {
			return filepath.SkipDir
		}
		if d.IsDir() || d.Name() != "register.go" {
			return nil
		}
		src, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		kinds, err := knownTypes(p, src)
		if err != nil || len(kinds) == 0 {
			return err
		}
		pkg, err := scanPackage(filepath.Dir(p))
		if err != nil {
			return fmt.Errorf("%s: %w", m, err)
		}
		for _, k := range kinds {
			e := entry{Group: pkg.group, Version: filepath.Base(filepath.Dir(p)), Kind: k, Source: m.String()}
			if c, ok := pkg.clients[k]; ok && c.verbs {
				e.Resource = resourceName(e.gvk())
				e.Namespaced = c.namespaced
			}
			out = append(out, e)
		}
		return nil
	})
	return out, err
}

// knownTypes returns the kinds a register.go adds with AddKnownTypes, lists
// left out.
func knownTypes(file string, src []byte) ([]string, error) {
	f, err := parser.ParseFile(token.NewFileSet(), file, src, parser.SkipObjectResolution)
	if err != nil {
		return nil, err
	}
	var kinds []string
	ast.Inspect(f, func(n ast.Node) bool {
		call, ok := n.(*ast.CallExpr)
		if !ok {
			return true
		}
		if sel, ok := call.Fun.(*ast.SelectorExpr); !ok || sel.Sel.Name != "AddKnownTypes" {
			return true
		}
		for _, arg := range call.Args[1:] {
			u, ok := arg.(*ast.UnaryExpr)
			if !ok || u.Op != token.AND {
				continue
			}
			lit, ok := u.X.(*ast.CompositeLit)
			if !ok {
				continue
			}
			if id, ok := lit.Type.(*ast.Ident); ok && !strings.HasSuffix(id.Name, "List") {
				kinds = append(kinds, id.Name)
			}
		}
		return false
	})
	return kinds, nil
}

// kinds is every kind of one k8s.io/api release.
type kinds struct {
	release release
	entries []entry
}

// deriveRemovals describes the kinds that some release read has and a later
// one no longer has, and that no lifecycle method describes (lifecycle holds
// every kind read from those): introduced is the first release read that has
// the kind (left zero for the oldest release read, which may not be the
// first to have it), removed the first release read that no longer has it.
// releases are oldest first.
func deriveRemovals(releases []kinds, lifecycle []entry) []entry {
	described := map[string]bool{}
	for _, e := range lifecycle {
		described[key(e)] = true
	}
	type span struct {
		e          entry
		first, end int // first release with the kind; first without it (-1: none yet)
	}
	byKey := map[string]*span{}
	var order []string
	for i, rel := range releases {
		here := map[string]bool{}
		for _, e := range rel.entries {
			k := key(e)
			here[k] = true
			s := byKey[k]
			if s == nil {
				s = &span{e: e, first: i, end: -1}
				byKey[k] = s
				order = append(order, k)
			}
			if s.end < 0 {
				s.e = e // the newest release's source, resource and scope
			}
		}
		for k, s := range byKey {
			if !here[k] && s.end < 0 {
				s.end = i
			}
		}
	}
	var out []entry
	for _, k := range order {
		s := byKey[k]
		if described[k] || s.end < 0 {
			continue
		}
		e := s.e
		if s.first > 0 {
			e.Introduced = releases[s.first].release
		}
		e.Removed = releases[s.end].release
		out = append(out, e)
	}
	sortEntries(out)
	return out
}

// inferReplacements names, for derived entries, the kind of the same name
// that is still served (not removed) elsewhere: the one in the same group,
// else the only one in any group.
func inferReplacements(derived, all []entry) {
	for i := range derived {
		e := &derived[i]
		if e.Replacement != nil {
			continue
		}
		var same, other []kindRef
		seen := map[string]bool{key(*e): true}
		for _, o := range all {
			if o.Kind != e.Kind || !o.Removed.IsZero() || seen[key(o)] {
				continue
			}
			seen[key(o)] = true
			r := kindRef{o.Group, o.Version, o.Kind}
			if o.Group == e.Group {
				same = append(same, r)
			} else {
				other = append(other, r)
			}
		}
		for _, c := range [][]kindRef{same, other} {
			sort.Slice(c, func(i, j int) bool { return c[i].Group+"/"+c[i].Version < c[j].Group+"/"+c[j].Version })
			if len(c) == 1 {
				e.Replacement = &c[0]
				break
			}
		}
	}
}
