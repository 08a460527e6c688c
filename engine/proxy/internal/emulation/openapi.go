package emulation

import (
	"bytes"
	"context"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/kube-openapi/pkg/spec3"

	"github.com/mvpctl/mvpctl/engine/proxy/internal/apidoc"
)

// OpenAPI are the OpenAPI documents of the emulated versions no backend
// lists: the Options.OpenAPIV3 documents, else documents built from the
// schema a CRD keeps for the version (served: false).
type OpenAPI struct {
	// V3 maps /openapi/v3 paths (apis/<group>/<version>) to documents.
	V3 map[string][]byte
	// V2 are Swagger 2.0 documents of the emulated versions, to merge into
	// /openapi/v2 after the backends'; V2Key names them for a cache key.
	V2    [][]byte
	V2Key string
}

// noOpenAPI is the OpenAPI of a view that emulates nothing.
var noOpenAPI = &OpenAPI{V3: map[string][]byte{}, V2Key: apidoc.ETag(nil)}

// openAPICache holds a view's OpenAPI, built on first use: it belongs to
// one view, so that it follows the emulated versions and is read again when
// the view is rebuilt (rules, backends, refresh).
type openAPICache struct {
	mu   sync.Mutex
	docs *OpenAPI
	// crds holds the CRDs read so far, nil for none; a CRD that could not be
	// read is absent and read again on the next use.
	crds     map[string]*apiextensionsv1.CustomResourceDefinition
	complete bool
}

// ListsOpenAPIV3 reports whether path is the /openapi/v3 path of an
// emulated version no backend lists.
func (v *View) ListsOpenAPIV3(path string) bool {
	if v == nil {
		return false
	}
	for _, t := range v.targets {
		if t.unlisted && apidoc.OpenAPIV3PathOf(t.requested.Group, t.requested.Version) == path {
			return true
		}
	}
	return false
}

// OpenAPI returns the view's OpenAPI documents, building them (and reading
// CRDs from a backend) on first use, and again while a CRD could not be
// read.
func (v *View) OpenAPI(ctx context.Context) *OpenAPI {
	if v == nil {
		return noOpenAPI
	}
	c := &v.openAPI
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.docs != nil && c.complete {
		return c.docs
	}
	if c.crds == nil {
		c.crds = map[string]*apiextensionsv1.CustomResourceDefinition{}
	}
	// A client that goes away must not fail the others waiting here.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	c.docs, c.complete = v.buildOpenAPI(ctx, c.crds)
	return c.docs
}

// buildOpenAPI builds the documents of the emulated versions no backend
// lists. It reports false when a CRD could not be read (it is left out).
func (v *View) buildOpenAPI(ctx context.Context, crds map[string]*apiextensionsv1.CustomResourceDefinition) (*OpenAPI, bool) {
	e := v.rules.e
	byPath := map[string][]target{}
	for _, t := range v.targets {
		if t.unlisted {
			path := apidoc.OpenAPIV3PathOf(t.requested.Group, t.requested.Version)
			byPath[path] = append(byPath[path], t)
		}
	}
	docs := &OpenAPI{V3: map[string][]byte{}}
	complete := true
	for _, path := range slices.Sorted(maps.Keys(byPath)) {
		if doc, ok := e.opts.OpenAPIV3[path]; ok {
			docs.V3[path] = doc
			if v2 := e.openAPIV2Of(path, doc); v2 != nil {
				docs.V2 = append(docs.V2, v2)
			}
			continue
		}
		v3, v2s, ok := e.crdOpenAPI(ctx, byPath[path], crds)
		complete = complete && ok
		docs.V2 = append(docs.V2, v2s...)
		if len(v3) == 0 {
			continue
		}
		b, err := apidoc.MergeOpenAPIV3(v3...)
		if err != nil {
			e.log.Warn("building the OpenAPI of an emulated CRD version", "path", path, "error", err)
			continue
		}
		docs.V3[path] = b
	}
	docs.V2Key = apidoc.ETag(bytes.Join(docs.V2, []byte{0}))
	return docs, complete
}

// crdOpenAPI builds the documents of the emulated resources of one
// group/version from their CRDs, reading the CRDs not read yet into crds.
// It reports false when a CRD could not be read.
func (e *Emulator) crdOpenAPI(ctx context.Context, ts []target, crds map[string]*apiextensionsv1.CustomResourceDefinition) (v3 []*spec3.OpenAPI, v2 [][]byte, complete bool) {
	complete = true
	slices.SortFunc(ts, func(a, b target) int { return strings.Compare(a.resource, b.resource) })
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
			if crd, err = e.host.CRD(ctx, name); err != nil {
				e.log.Warn("reading a CRD for the OpenAPI of an emulated version", "crd", name, "error", err)
				complete = false
				continue
			}
			crds[name] = crd
		}
		doc3, doc2, err := apidoc.CRDOpenAPI(crd, t.requested.Version)
		if err != nil {
			e.log.Warn("building the OpenAPI of an emulated CRD version", "crd", name, "version", t.requested.Version, "error", err)
			continue
		}
		if doc3 != nil {
			v3 = append(v3, doc3)
			v2 = append(v2, doc2)
		}
	}
	return v3, v2, complete
}

// convertedV2 is an Options.OpenAPIV3 document in OpenAPI v2 (nil when it
// does not convert).
type convertedV2 struct{ doc []byte }

// openAPIV2Of converts an Options.OpenAPIV3 document once; nil when it does
// not convert (logged).
func (e *Emulator) openAPIV2Of(path string, doc []byte) []byte {
	if c, ok := e.openAPIV2.Load(path); ok {
		return c.(convertedV2).doc
	}
	v2, err := apidoc.OpenAPIV3ToV2(doc)
	if err != nil {
		e.log.Warn("converting an --openapi-from document to OpenAPI v2: it is left out of /openapi/v2", "path", path, "error", err)
	}
	e.openAPIV2.Store(path, convertedV2{v2})
	return v2
}
