package proxy

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/getkin/kin-openapi/openapi2conv"
	"github.com/getkin/kin-openapi/openapi3"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apiextensions-apiserver/pkg/controller/openapi/builder"
	"k8s.io/kube-openapi/pkg/handler"
	"k8s.io/kube-openapi/pkg/spec3"
)

// OpenAPIV3Path finds the /openapi/v3 path (apis/policy/v1beta1, api/v1) of
// a group/version's OpenAPI v3 document from the API paths it describes.
func OpenAPIV3Path(doc []byte) (string, error) {
	var d struct {
		OpenAPI string                     `json:"openapi"`
		Paths   map[string]json.RawMessage `json:"paths"`
	}
	if err := json.Unmarshal(doc, &d); err != nil {
		return "", fmt.Errorf("not an OpenAPI v3 document: %w", err)
	}
	if !strings.HasPrefix(d.OpenAPI, "3.") {
		return "", fmt.Errorf("not an OpenAPI v3 document (openapi: %q)", d.OpenAPI)
	}
	key := ""
	for p := range d.Paths {
		parts := strings.Split(strings.Trim(p, "/"), "/")
		var k string
		switch {
		case len(parts) >= 2 && parts[0] == "api":
			k = "api/" + parts[1]
		case len(parts) >= 3 && parts[0] == "apis":
			k = "apis/" + parts[1] + "/" + parts[2]
		default:
			continue
		}
		if key != "" && k != key {
			return "", fmt.Errorf("the document describes both %s and %s: give one group/version per document", key, k)
		}
		key = k
	}
	if key == "" {
		return "", fmt.Errorf("the document has no /api or /apis paths")
	}
	return key, nil
}

// openAPIV3PathOf is the /openapi/v3 path of a group/version.
func openAPIV3PathOf(group, version string) string {
	if group == "" {
		return "api/" + version
	}
	return "apis/" + group + "/" + version
}

// emulatedOpenAPI is the OpenAPI of the emulated versions no backend lists:
// the --openapi-from documents, else documents built from the schema a CRD
// keeps for the version (served: false). It is built on first use and
// belongs to one discovery union, so that it follows the emulated versions
// and is read again when the union is rebuilt (rules, backends, refresh).
type emulatedOpenAPI struct {
	mu   sync.Mutex
	docs *emulatedDocs
	// crds holds the CRDs read so far, nil for none; a CRD that could not be
	// read is absent and read again on the next use.
	crds     map[string]*apiextensionsv1.CustomResourceDefinition
	complete bool
}

type emulatedDocs struct {
	v3    map[string][]byte // /openapi/v3 path → document
	index []byte            // the /openapi/v3 index: the backends' and v3's
	// v2 are Swagger 2.0 documents of the emulated versions, merged into
	// /openapi/v2 after the backends'; v2Key names them in its cache key.
	v2    [][]byte
	v2Key string
}

// listsEmulated reports whether path is the /openapi/v3 path of an emulated
// version no backend lists.
func (u *discoveryUnion) listsEmulated(path string) bool {
	for k, t := range u.emulated {
		if t.listed && openAPIV3PathOf(k.group, k.version) == path {
			return true
		}
	}
	return false
}

// emulatedDocs returns the union's emulated OpenAPI documents, building them
// (and reading CRDs from a backend) on first use.
func (p *Proxy) emulatedDocs(ctx context.Context, u *discoveryUnion) *emulatedDocs {
	e := &u.openAPI
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.docs != nil && e.complete {
		return e.docs
	}
	if e.crds == nil {
		e.crds = map[string]*apiextensionsv1.CustomResourceDefinition{}
	}
	// A client that goes away must not fail the others waiting here.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	e.docs, e.complete = p.buildEmulatedDocs(ctx, u, e.crds)
	return e.docs
}

// buildEmulatedDocs builds the documents of the emulated versions no backend
// lists. It reports false when a CRD could not be read (it is left out).
func (p *Proxy) buildEmulatedDocs(ctx context.Context, u *discoveryUnion, crds map[string]*apiextensionsv1.CustomResourceDefinition) (*emulatedDocs, bool) {
	byPath := map[string][]emulatedTarget{}
	for k, t := range u.emulated {
		if t.listed {
			path := openAPIV3PathOf(k.group, k.version)
			byPath[path] = append(byPath[path], t)
		}
	}
	paths := make([]string, 0, len(byPath))
	for path := range byPath {
		paths = append(paths, path)
	}
	slices.Sort(paths)
	docs := &emulatedDocs{v3: map[string][]byte{}}
	complete := true
	for _, path := range paths {
		if doc, ok := p.opts.OpenAPIV3[path]; ok {
			docs.v3[path] = doc
			if v2 := p.openAPIV2Of(path, doc); v2 != nil {
				docs.v2 = append(docs.v2, v2)
			}
			continue
		}
		ts := byPath[path]
		slices.SortFunc(ts, func(a, b emulatedTarget) int { return strings.Compare(a.resource, b.resource) })
		var v3s []*spec3.OpenAPI
		for _, t := range ts {
			// A CRD's group has a dot; the built-in groups without one
			// (apps, policy, ...) are not asked about.
			if !strings.Contains(t.requested.Group, ".") {
				continue
			}
			name := t.resource + "." + t.requested.Group
			crd, known := crds[name]
			if !known {
				var err error
				if crd, err = p.fetchCRD(ctx, name); err != nil {
					p.log.Warn("reading a CRD for the OpenAPI of an emulated version", "crd", name, "error", err)
					complete = false
					continue
				}
				crds[name] = crd
			}
			v3, v2, err := crdOpenAPI(crd, t.requested.Version)
			if err != nil {
				p.log.Warn("building the OpenAPI of an emulated CRD version", "crd", name, "version", t.requested.Version, "error", err)
				continue
			}
			if v3 != nil {
				v3s = append(v3s, v3)
				docs.v2 = append(docs.v2, v2)
			}
		}
		if len(v3s) == 0 {
			continue
		}
		merged, err := builder.MergeSpecsV3(v3s...)
		if err == nil {
			var b []byte
			if b, err = json.Marshal(merged); err == nil {
				docs.v3[path] = b
			}
		}
		if err != nil {
			p.log.Warn("building the OpenAPI of an emulated CRD version", "path", path, "error", err)
		}
	}
	docs.v2Key = etagOf(bytes.Join(docs.v2, []byte{0}))
	docs.index = mergeOpenAPIV3Index(u.openAPIV3Paths, docs.v3)
	return docs, complete
}

// crdOpenAPI builds the OpenAPI v3 and v2 documents of one version of a CRD
// as kube-apiserver builds them for a served version (v2 with its defaults
// pruned, as it merges them). Both are nil when the CRD has no schema for
// the version.
func crdOpenAPI(crd *apiextensionsv1.CustomResourceDefinition, version string) (*spec3.OpenAPI, []byte, error) {
	if crd == nil {
		return nil, nil, nil
	}
	i := slices.IndexFunc(crd.Spec.Versions, func(v apiextensionsv1.CustomResourceDefinitionVersion) bool { return v.Name == version })
	if i < 0 || crd.Spec.Versions[i].Schema == nil || crd.Spec.Versions[i].Schema.OpenAPIV3Schema == nil {
		return nil, nil, nil
	}
	v3, err := builder.BuildOpenAPIV3(crd, version, builder.Options{V2: false, IncludeSelectableFields: true})
	if err != nil {
		return nil, nil, err
	}
	v2, err := builder.BuildOpenAPIV2(crd, version, builder.Options{V2: true, IncludeSelectableFields: true})
	if err != nil {
		return nil, nil, err
	}
	v2.Definitions = handler.PruneDefaults(v2.Definitions)
	b, err := json.Marshal(v2)
	if err != nil {
		return nil, nil, err
	}
	return v3, b, nil
}

// convertedV2 is an Options.OpenAPIV3 document in OpenAPI v2 (nil when it
// does not convert).
type convertedV2 struct{ doc []byte }

// openAPIV2Of converts an Options.OpenAPIV3 document once; nil when it does
// not convert (logged).
func (p *Proxy) openAPIV2Of(path string, doc []byte) []byte {
	if c, ok := p.openAPIFromV2.Load(path); ok {
		return c.(convertedV2).doc
	}
	v2, err := openAPIV3ToV2(doc)
	if err != nil {
		p.log.Warn("converting an --openapi-from document to OpenAPI v2: it is left out of /openapi/v2", "path", path, "error", err)
	}
	p.openAPIFromV2.Store(path, convertedV2{v2})
	return v2
}

// openAPIV3ToV2 converts an OpenAPI v3 document to Swagger 2.0 with
// kin-openapi, for /openapi/v2.
func openAPIV3ToV2(doc []byte) (v2 []byte, err error) {
	defer func() {
		// The document comes from the user; a converter bug must not take
		// /openapi/v2 down.
		if r := recover(); r != nil {
			v2, err = nil, fmt.Errorf("kin-openapi: %v", r)
		}
	}()
	d, err := openapi3.NewLoader().LoadFromData(doc)
	if err != nil {
		return nil, err
	}
	if d.Info == nil {
		d.Info = &openapi3.Info{Title: "Kubernetes", Version: "unversioned"}
	}
	t, err := openapi2conv.FromV3(d)
	if err != nil {
		return nil, err
	}
	if v2, err = json.Marshal(t); err != nil {
		return nil, err
	}
	// kin-openapi leaves the references inside additionalProperties
	// pointing into components.
	return bytes.ReplaceAll(v2, []byte(`"$ref":"#/components/schemas/`), []byte(`"$ref":"#/definitions/`)), nil
}

// fetchCRD reads a CustomResourceDefinition with the proxy's own identity
// from a ready backend, the newest first. It returns nil, nil when there is
// none, and when the proxy may not read it (logged).
func (p *Proxy) fetchCRD(ctx context.Context, name string) (*apiextensionsv1.CustomResourceDefinition, error) {
	var ready []*backend
	for _, b := range p.list() {
		if b.snapshot().ready {
			ready = append(ready, b)
		}
	}
	slices.SortStableFunc(ready, func(a, b *backend) int { return compareVersions(b.snapshot(), a.snapshot()) })
	err := errors.New("no kube-apiserver is ready")
	path := "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/" + url.PathEscape(name)
	for _, b := range ready {
		resp, rerr := b.get(ctx, path, "application/json", nil)
		if rerr != nil {
			err = rerr
			continue
		}
		body, rerr := readObject(resp.Body, p.opts.MaxObjectBytes)
		resp.Body.Close()
		switch {
		case rerr != nil:
			err = rerr
			continue
		case resp.StatusCode == http.StatusNotFound:
			return nil, nil
		case resp.StatusCode == http.StatusUnauthorized || resp.StatusCode == http.StatusForbidden:
			p.log.Warn("the proxy's identity may not read a CRD: the emulated version has no OpenAPI from it", "crd", name, "backend", b.name, "code", resp.StatusCode)
			return nil, nil
		case resp.StatusCode != http.StatusOK:
			err = &httpStatusError{path: path, code: resp.StatusCode, body: string(truncate(body, 200))}
			continue
		}
		var crd apiextensionsv1.CustomResourceDefinition
		if err := json.Unmarshal(body, &crd); err != nil {
			return nil, fmt.Errorf("GET %s: %w", path, err)
		}
		return &crd, nil
	}
	return nil, err
}

// serveEmulatedOpenAPIV3 answers /openapi/v3/<path> for an emulated
// version's document.
func (p *Proxy) serveEmulatedOpenAPIV3(w http.ResponseWriter, r *http.Request, path string) bool {
	u := p.discoveryUnion()
	if u == nil || !u.listsEmulated(path) {
		return false
	}
	doc, ok := p.emulatedDocs(r.Context(), u).v3[path]
	if !ok {
		return false
	}
	serveWithETag(w, r, "application/json", doc, etagOf(doc))
	return true
}
