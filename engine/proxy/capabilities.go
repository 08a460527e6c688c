package proxy

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"mime"
	"net/http"
	"time"

	apidiscoveryv2 "k8s.io/api/apidiscovery/v2"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/version"
	apimachineryversion "k8s.io/apimachinery/pkg/version"

	"github.com/mvpctl/mvpctl/engine/proxy/internal/apidoc"
	"github.com/mvpctl/mvpctl/engine/proxy/internal/response"
)

// aggregatedAccept asks for aggregated discovery of what the server itself
// serves (profile=nopeer: with the peer proxy enabled a server otherwise
// includes its peers' resources), then without the profile for servers that
// do not know it, then legacy discovery.
const aggregatedAccept = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList;profile=nopeer," +
	"application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList," +
	"application/json"

// gvr names what a backend serves. resource is "pods" or, for a
// subresource, "pods/log".
type gvr struct{ group, version, resource string }

func (k gvr) String() string {
	if k.group == "" {
		return k.version + "/" + k.resource
	}
	return k.group + "/" + k.version + "/" + k.resource
}

// capabilities is what one backend serves, as read from its discovery.
type capabilities struct {
	fetched    time.Time
	aggregated bool
	// groups is the backend's aggregated discovery: the core group first,
	// then /apis in the server's order of preference.
	groups []apidiscoveryv2.APIGroupDiscovery
	served map[gvr]struct{}
	// resources lists every group/resource (without version), for telling a
	// resource the proxy has never heard of from one it has.
	resources map[gvr]struct{}
	// openAPIV3 maps an /openapi/v3 index path (apis/apps/v1) to its
	// serverRelativeURL, hash included.
	openAPIV3 map[string]string
}

func (c *capabilities) serves(k gvr) bool {
	if c == nil {
		return false
	}
	_, ok := c.served[k]
	return ok
}

func newCapabilities(groups []apidiscoveryv2.APIGroupDiscovery, aggregated bool) *capabilities {
	c := &capabilities{
		fetched:    time.Now(),
		aggregated: aggregated,
		groups:     groups,
		served:     map[gvr]struct{}{},
		resources:  map[gvr]struct{}{},
	}
	for _, g := range groups {
		for _, v := range g.Versions {
			for _, r := range v.Resources {
				c.served[gvr{g.Name, v.Version, r.Resource}] = struct{}{}
				c.resources[gvr{group: g.Name, resource: r.Resource}] = struct{}{}
				for _, s := range r.Subresources {
					c.served[gvr{g.Name, v.Version, r.Resource + "/" + s.Subresource}] = struct{}{}
				}
			}
		}
	}
	return c
}

// fetchDoc GETs path with the proxy's identity, revalidating a cached copy
// with If-None-Match so that an unchanged document costs a 304. etag is
// empty when the server sends none.
func (b *backend) fetchDoc(ctx context.Context, path, accept string) (body []byte, contentType, etag string, err error) {
	key := path + "\x00" + accept
	b.mu.Lock()
	cached, ok := b.etags[key]
	b.mu.Unlock()
	hdr := map[string]string{}
	if ok && cached.etag != "" {
		hdr["If-None-Match"] = cached.etag
	}
	resp, err := b.get(ctx, path, accept, hdr)
	if err != nil {
		return nil, "", "", err
	}
	defer resp.Body.Close()
	if resp.StatusCode == http.StatusNotModified && ok {
		_, _ = io.Copy(io.Discard, resp.Body)
		return cached.body, cached.contentType, cached.etag, nil
	}
	body, err = response.ReadObject(resp.Body, b.maxObject)
	if err != nil {
		return nil, "", "", fmt.Errorf("GET %s: %w", path, err)
	}
	if resp.StatusCode != http.StatusOK {
		return nil, "", "", &httpStatusError{path: path, code: resp.StatusCode, body: string(truncate(body, 200))}
	}
	contentType = resp.Header.Get("Content-Type")
	if etag = resp.Header.Get("ETag"); etag != "" {
		b.mu.Lock()
		b.etags[key] = cachedDoc{etag: etag, body: body, contentType: contentType}
		b.mu.Unlock()
	}
	return body, contentType, etag, nil
}

type httpStatusError struct {
	path string
	code int
	body string
}

func (e *httpStatusError) Error() string {
	return fmt.Sprintf("GET %s: HTTP %d: %s", e.path, e.code, e.body)
}

func truncate(b []byte, n int) []byte {
	if len(b) > n {
		return b[:n]
	}
	return b
}

func isAggregated(contentType string) bool {
	_, params, err := mime.ParseMediaType(contentType)
	return err == nil && params["g"] == "apidiscovery.k8s.io" && params["v"] == "v2" && params["as"] == "APIGroupDiscoveryList"
}

// fetchVersion reads /version.
func (b *backend) fetchVersion(ctx context.Context) (*apimachineryversion.Info, *version.Version, error) {
	body, _, _, err := b.fetchDoc(ctx, "/version", "application/json")
	if err != nil {
		return nil, nil, err
	}
	var info apimachineryversion.Info
	if err := json.Unmarshal(body, &info); err != nil {
		return nil, nil, fmt.Errorf("GET /version: %w", err)
	}
	v, err := version.ParseGeneric(info.GitVersion)
	if err != nil {
		return &info, nil, fmt.Errorf("GET /version: gitVersion %q: %w", info.GitVersion, err)
	}
	return &info, v, nil
}

// fetchCapabilities reads the backend's aggregated discovery, or its legacy
// discovery when the server does not offer the aggregated form.
func (b *backend) fetchCapabilities(ctx context.Context) (*capabilities, error) {
	var groups []apidiscoveryv2.APIGroupDiscovery
	aggregated := true
	for _, root := range []string{"/api", "/apis"} {
		body, ct, _, err := b.fetchDoc(ctx, root, aggregatedAccept)
		if err != nil {
			return nil, err
		}
		if isAggregated(ct) {
			var list apidiscoveryv2.APIGroupDiscoveryList
			if err := json.Unmarshal(body, &list); err != nil {
				return nil, fmt.Errorf("GET %s: %w", root, err)
			}
			groups = append(groups, list.Items...)
			continue
		}
		aggregated = false
		legacy, err := b.fetchLegacy(ctx, root, body)
		if err != nil {
			return nil, err
		}
		groups = append(groups, legacy...)
	}
	c := newCapabilities(groups, aggregated)
	c.openAPIV3 = b.fetchOpenAPIV3Index(ctx)
	return c, nil
}

// fetchOpenAPIV3Index reads /openapi/v3; a server without it has none.
func (b *backend) fetchOpenAPIV3Index(ctx context.Context) map[string]string {
	body, _, _, err := b.fetchDoc(ctx, "/openapi/v3", "application/json")
	if err != nil {
		return nil
	}
	var idx struct {
		Paths map[string]struct {
			ServerRelativeURL string `json:"serverRelativeURL"`
		} `json:"paths"`
	}
	if json.Unmarshal(body, &idx) != nil {
		return nil
	}
	m := make(map[string]string, len(idx.Paths))
	for p, v := range idx.Paths {
		m[p] = v.ServerRelativeURL
	}
	return m
}

// fetchLegacy turns legacy discovery (/api → APIVersions, /apis →
// APIGroupList, then one APIResourceList per group version) into the
// aggregated form.
func (b *backend) fetchLegacy(ctx context.Context, root string, body []byte) ([]apidiscoveryv2.APIGroupDiscovery, error) {
	type gvPath struct{ group, version, path string }
	var out []apidiscoveryv2.APIGroupDiscovery
	var paths [][]gvPath
	if root == "/api" {
		var vs metav1.APIVersions
		if err := json.Unmarshal(body, &vs); err != nil {
			return nil, fmt.Errorf("GET /api: %w", err)
		}
		var ps []gvPath
		for _, v := range vs.Versions {
			ps = append(ps, gvPath{"", v, "/api/" + v})
		}
		out = append(out, apidiscoveryv2.APIGroupDiscovery{})
		paths = append(paths, ps)
	} else {
		var gl metav1.APIGroupList
		if err := json.Unmarshal(body, &gl); err != nil {
			return nil, fmt.Errorf("GET /apis: %w", err)
		}
		for _, g := range gl.Groups {
			// The preferred version comes first, as in aggregated discovery.
			versions := []string{g.PreferredVersion.Version}
			for _, v := range g.Versions {
				if v.Version != g.PreferredVersion.Version {
					versions = append(versions, v.Version)
				}
			}
			var ps []gvPath
			for _, v := range versions {
				if v != "" {
					ps = append(ps, gvPath{g.Name, v, "/apis/" + g.Name + "/" + v})
				}
			}
			out = append(out, apidiscoveryv2.APIGroupDiscovery{ObjectMeta: metav1.ObjectMeta{Name: g.Name}})
			paths = append(paths, ps)
		}
	}
	for i, ps := range paths {
		for _, p := range ps {
			body, _, _, err := b.fetchDoc(ctx, p.path, "application/json")
			if err != nil {
				return nil, err
			}
			var rl metav1.APIResourceList
			if err := json.Unmarshal(body, &rl); err != nil {
				return nil, fmt.Errorf("GET %s: %w", p.path, err)
			}
			out[i].Versions = append(out[i].Versions, apidoc.LegacyToAggregated(p.group, p.version, rl.APIResources))
		}
	}
	return out, nil
}
