package proxy

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
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

// emulatedOpenAPIV3 lists the given OpenAPI v3 documents of emulated
// versions that no backend lists, for the /openapi/v3 index.
func (p *Proxy) emulatedOpenAPIV3(emulated map[gvr]emulatedTarget) map[string]string {
	out := map[string]string{}
	for k, t := range emulated {
		if !t.listed {
			continue
		}
		path := "apis/" + k.group + "/" + k.version
		if k.group == "" {
			path = "api/" + k.version
		}
		if doc, ok := p.opts.OpenAPIV3[path]; ok {
			out[path] = "/openapi/v3/" + path + "?hash=" + etagOf(doc)
		}
	}
	return out
}

// serveEmulatedOpenAPIV3 answers /openapi/v3/<path> for an emulated
// version's document.
func (p *Proxy) serveEmulatedOpenAPIV3(w http.ResponseWriter, r *http.Request, path string) bool {
	doc, ok := p.opts.OpenAPIV3[path]
	if !ok {
		return false
	}
	u := p.discoveryUnion()
	if u == nil {
		return false
	}
	listed := false
	for k, t := range u.emulated {
		if t.listed && (path == "apis/"+k.group+"/"+k.version || k.group == "" && path == "api/"+k.version) {
			listed = true
			break
		}
	}
	if !listed {
		return false
	}
	serveWithETag(w, r, "application/json", doc, etagOf(doc))
	return true
}
