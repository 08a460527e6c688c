package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// lifecycleFile is what prerelease-lifecycle-gen writes into an API package.
const lifecycleFile = "zz_generated.prerelease-lifecycle.go"

// module is one release of a Go module holding API packages.
type module struct {
	Path, Version string
}

func (m module) String() string { return m.Path + "@" + m.Version }

// apiRoots are the directories of each module that hold built-in API
// packages; other directories (examples, test fixtures) are not read.
var apiRoots = map[string]string{
	"k8s.io/api":                     ".",
	"k8s.io/apiextensions-apiserver": "pkg/apis/apiextensions",
	"k8s.io/kube-aggregator":         "pkg/apis/apiregistration",
}

// liveModules are the modules read from go.mod's versions.
var liveModules = []string{"k8s.io/api", "k8s.io/apiextensions-apiserver"}

// historyAPIReleases are the k8s.io/api releases whose kinds the newest one
// may no longer have, newest first: one per minor release since the first
// with lifecycle methods (v0.19). Patch releases do not change API types, so
// any patch of a minor serves; the newest one known is listed (the module
// proxy's version list is incomplete and cannot be asked for it).
var historyAPIReleases = []string{
	"v0.36.6", "v0.35.10", "v0.34.13", "v0.33.13", "v0.32.13", "v0.31.14",
	"v0.30.14", "v0.29.15", "v0.28.15", "v0.27.16", "v0.26.15", "v0.25.16",
	"v0.24.17", "v0.23.17", "v0.22.17", "v0.21.14", "v0.20.15", "v0.19.16",
}

// entry is one kind's lifecycle, as read from one module release.
type entry struct {
	Group       string
	Version     string
	Kind        string
	Introduced  release
	Deprecated  release
	Removed     release
	Replacement *kindRef
	// Note says what to use instead when no kind replaces this one
	// (ThirdPartyResource: a CustomResourceDefinition).
	Note string
	// Resource is the plural REST resource; empty for kinds client-gen
	// makes no client for (subresources, options, review payloads).
	Resource   string
	Namespaced bool
	Source     string
}

type kindRef struct {
	Group   string
	Version string
	Kind    string
}

func (e entry) gvk() schema.GroupVersionKind {
	return schema.GroupVersionKind{Group: e.Group, Version: e.Version, Kind: e.Kind}
}

// release is a Kubernetes major.minor.
type release struct{ Major, Minor int }

func (r release) IsZero() bool { return r == release{} }

func (r release) String() string { return fmt.Sprintf("%d.%d", r.Major, r.Minor) }

// goModule runs `go list -m -json` (a module of go.mod: no version, read
// from the module cache) or `go mod download -json` (module@version, fetched
// through the module proxy) and returns the module release and its directory.
func goModule(command, target string) (module, string, error) {
	args := append(strings.Fields(command), "-json", target)
	cmd := exec.Command("go", args...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	var info struct{ Path, Version, Dir, Error string }
	if err == nil {
		err = json.Unmarshal(out, &info)
	}
	if err != nil {
		return module{}, "", fmt.Errorf("go %s: %v: %s", strings.Join(args, " "), err, stderr.Bytes())
	}
	if info.Error != "" || info.Dir == "" {
		return module{}, "", fmt.Errorf("go %s: no module directory (go mod download?) %s", strings.Join(args, " "), info.Error)
	}
	return module{info.Path, info.Version}, info.Dir, nil
}

// requiredVersion is the version of a module that go.mod requires.
func requiredVersion(path string) (string, error) {
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Version}}", path).Output()
	if err != nil {
		return "", fmt.Errorf("go list -m %s: %v", path, err)
	}
	return strings.TrimSpace(string(out)), nil
}

// readModule reads the lifecycle of every kind in a module release's API
// packages.
func readModule(m module, dir string) ([]entry, error) {
	root := filepath.Join(dir, apiRoots[m.Path])
	var out []entry
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == "testdata" || d.Name() == "vendor") {
			return filepath.SkipDir
		}
		if d.IsDir() || d.Name() != lifecycleFile {
			return nil
		}
		entries, err := readPackage(filepath.Dir(p), m.String())
		if err != nil {
			return fmt.Errorf("%s: %w", m, err)
		}
		out = append(out, entries...)
		return nil
	})
	return out, err
}

// readPackage reads one API package: its GroupName constant, the +genclient
// tags of its types and their APILifecycle* methods, generated or written by
// hand (core/v1 lifecycle.go deprecates Endpoints). The version is the
// package's directory name, as in every Kubernetes API package.
func readPackage(dir, source string) ([]entry, error) {
	p, err := scanPackage(dir)
	if err != nil {
		return nil, err
	}
	byKind := map[string]*entry{}
	var kinds []string
	for _, fn := range p.methods {
		kind, err := receiverType(fn)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", p.fset.Position(fn.Pos()), err)
		}
		if strings.HasSuffix(kind, "List") {
			continue // lists are not kinds of their own
		}
		e := byKind[kind]
		if e == nil {
			e = &entry{Group: p.group, Version: filepath.Base(dir), Kind: kind, Source: source}
			byKind[kind] = e
			kinds = append(kinds, kind)
		}
		if err := setField(e, fn); err != nil {
			return nil, fmt.Errorf("%s: %s.%s: %w", p.fset.Position(fn.Pos()), kind, fn.Name.Name, err)
		}
	}
	out := make([]entry, 0, len(kinds))
	for _, k := range kinds {
		e := byKind[k]
		if c, ok := p.clients[k]; ok && c.verbs {
			e.Resource = resourceName(e.gvk())
			e.Namespaced = c.namespaced
		}
		out = append(out, *e)
	}
	return out, nil
}

// client is what a type's +genclient tags say: whether client-gen makes a
// client with verbs for it (a REST resource of its own), and its scope.
type client struct{ verbs, namespaced bool }

// resourceName is the plural REST resource of a kind, as kubectl guesses it
// when discovery is not at hand (meta.UnsafeGuessKindToResource). Every kind
// with a client in these modules is named that way: client-gen's own
// exceptions (Endpoints) are the ones the guess knows too.
func resourceName(gvk schema.GroupVersionKind) string {
	plural, _ := meta.UnsafeGuessKindToResource(gvk)
	return plural.Resource
}

// apiPackage is what readPackage needs from a package's Go files.
type apiPackage struct {
	fset    *token.FileSet
	group   string
	clients map[string]client
	methods []*ast.FuncDecl // APILifecycle* methods, in file order
}

// scanPackage reads a package's Go files for `const GroupName = "..."`, the
// +genclient tags of its types and the APILifecycle* methods. Files that
// mention none of them (generated.pb.go and other large generated files)
// are not parsed.
func scanPackage(dir string) (*apiPackage, error) {
	files, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		return nil, err
	}
	p := &apiPackage{fset: token.NewFileSet(), clients: map[string]client{}}
	found := false
	for _, file := range files {
		if strings.HasSuffix(file, "_test.go") {
			continue
		}
		src, err := os.ReadFile(file)
		if err != nil {
			return nil, err
		}
		if !bytes.Contains(src, []byte("GroupName")) && !bytes.Contains(src, []byte("+genclient")) && !bytes.Contains(src, []byte("APILifecycle")) {
			continue
		}
		f, err := parser.ParseFile(p.fset, file, src, parser.ParseComments|parser.SkipObjectResolution)
		if err != nil {
			return nil, err
		}
		if g, ok := groupConst(f); ok {
			p.group, found = g, true
		}
		typeTags(f, p.clients)
		for _, decl := range f.Decls {
			if fn, ok := decl.(*ast.FuncDecl); ok && fn.Recv != nil && strings.HasPrefix(fn.Name.Name, "APILifecycle") {
				p.methods = append(p.methods, fn)
			}
		}
	}
	if !found {
		return nil, fmt.Errorf("%s: no GroupName constant", dir)
	}
	return p, nil
}

func groupConst(f *ast.File) (string, bool) {
	for _, decl := range f.Decls {
		gd, ok := decl.(*ast.GenDecl)
		if !ok || gd.Tok != token.CONST {
			continue
		}
		for _, spec := range gd.Specs {
			vs := spec.(*ast.ValueSpec)
			for i, name := range vs.Names {
				if name.Name == "GroupName" && i < len(vs.Values) {
					g, err := stringLit(vs.Values[i])
					return g, err == nil
				}
			}
		}
	}
	return "", false
}

// typeTags records the +genclient tags of each type declaration: they sit in
// the comment blocks between the previous declaration and the type (gengo
// reads the same two blocks).
func typeTags(f *ast.File, into map[string]client) {
	prevEnd := f.Name.End()
	for _, decl := range f.Decls {
		gd, ok := decl.(*ast.GenDecl)
		if ok && gd.Tok == token.TYPE && len(gd.Specs) == 1 {
			var tags []string
			for _, cg := range f.Comments {
				if cg.Pos() > prevEnd && cg.End() <= gd.Pos() {
					for _, c := range cg.List {
						tags = append(tags, strings.TrimSpace(strings.TrimPrefix(c.Text, "//")))
					}
				}
			}
			if c, ok := genclient(tags); ok {
				into[gd.Specs[0].(*ast.TypeSpec).Name.Name] = c
			}
		}
		prevEnd = decl.End()
	}
}

func genclient(tags []string) (client, bool) {
	c, ok := client{verbs: true, namespaced: true}, false
	for _, t := range tags {
		switch {
		case t == "+genclient":
			ok = true
		case t == "+genclient:noVerbs":
			c.verbs = false
		case t == "+genclient:nonNamespaced":
			c.namespaced = false
		}
	}
	return c, ok
}

func receiverType(fn *ast.FuncDecl) (string, error) {
	t := fn.Recv.List[0].Type
	if star, ok := t.(*ast.StarExpr); ok {
		t = star.X
	}
	id, ok := t.(*ast.Ident)
	if !ok {
		return "", fmt.Errorf("unexpected receiver type %T", t)
	}
	return id.Name, nil
}

// setField reads a method's single return statement into the entry.
func setField(e *entry, fn *ast.FuncDecl) error {
	if fn.Body == nil || len(fn.Body.List) != 1 {
		return fmt.Errorf("want a single return statement")
	}
	ret, ok := fn.Body.List[0].(*ast.ReturnStmt)
	if !ok {
		return fmt.Errorf("want a single return statement")
	}
	switch fn.Name.Name {
	case "APILifecycleIntroduced":
		return readRelease(ret, &e.Introduced)
	case "APILifecycleDeprecated":
		return readRelease(ret, &e.Deprecated)
	case "APILifecycleRemoved":
		return readRelease(ret, &e.Removed)
	case "APILifecycleReplacement":
		r, err := readGVK(ret)
		e.Replacement = r
		return err
	}
	return fmt.Errorf("unknown lifecycle method")
}

func readRelease(ret *ast.ReturnStmt, into *release) error {
	if len(ret.Results) != 2 {
		return fmt.Errorf("want return major, minor")
	}
	major, err := intLit(ret.Results[0])
	if err != nil {
		return err
	}
	minor, err := intLit(ret.Results[1])
	if err != nil {
		return err
	}
	*into = release{major, minor}
	return nil
}

// readGVK reads `return schema.GroupVersionKind{Group: "...", Version: "...", Kind: "..."}`.
func readGVK(ret *ast.ReturnStmt) (*kindRef, error) {
	if len(ret.Results) != 1 {
		return nil, fmt.Errorf("want one result")
	}
	lit, ok := ret.Results[0].(*ast.CompositeLit)
	if !ok {
		return nil, fmt.Errorf("want a GroupVersionKind literal")
	}
	var g kindRef
	for _, elt := range lit.Elts {
		kv, ok := elt.(*ast.KeyValueExpr)
		if !ok {
			return nil, fmt.Errorf("want keyed fields")
		}
		key, _ := kv.Key.(*ast.Ident)
		val, err := stringLit(kv.Value)
		if err != nil || key == nil {
			return nil, fmt.Errorf("want Field: \"string\"")
		}
		switch key.Name {
		case "Group":
			g.Group = val
		case "Version":
			g.Version = val
		case "Kind":
			g.Kind = val
		default:
			return nil, fmt.Errorf("unknown field %s", key.Name)
		}
	}
	return &g, nil
}

func intLit(e ast.Expr) (int, error) {
	lit, ok := e.(*ast.BasicLit)
	if !ok || lit.Kind != token.INT {
		return 0, fmt.Errorf("want an integer literal")
	}
	return strconv.Atoi(lit.Value)
}

func stringLit(e ast.Expr) (string, error) {
	lit, ok := e.(*ast.BasicLit)
	if !ok || lit.Kind != token.STRING {
		return "", fmt.Errorf("want a string literal")
	}
	return strconv.Unquote(lit.Value)
}

// liveEntries reads go.mod's versions of the live modules from the module
// cache.
func liveEntries() ([]entry, error) {
	var out []entry
	for _, path := range liveModules {
		m, dir, err := goModule("list -m", path)
		if err != nil {
			return nil, err
		}
		entries, err := readModule(m, dir)
		if err != nil {
			return nil, err
		}
		out = append(out, entries...)
	}
	return out, nil
}
