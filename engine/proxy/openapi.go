package proxy

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	openapiv2 "github.com/google/gnostic-models/openapiv2"
	"google.golang.org/protobuf/proto"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/mvpctl/mvpctl/engine/proxy/internal/apidoc"
	"github.com/mvpctl/mvpctl/engine/proxy/internal/response"
)

// openAPIV2Cache holds the merged /openapi/v2 document for one set of
// backend documents (named by their ETags).
type openAPIV2Cache struct {
	mu       sync.Mutex
	key      string
	json     []byte
	etag     string
	protobuf []byte // built on the first protobuf request
}

// serveOpenAPIV2 answers /openapi/v2 with the union of the ready backends'
// documents: paths and definitions of every server, the newest server's
// winning where they overlap, then those of the emulated versions no backend
// lists. The backends' documents are revalidated with If-None-Match on each
// request, so a CRD change shows at once.
func (p *Proxy) serveOpenAPIV2(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), 30*time.Second)
	defer cancel()
	wantProto := apidoc.PrefersProtobuf(r.Header.Get("Accept"))
	body, etag, err := p.mergedOpenAPIV2(ctx, wantProto)
	if err != nil {
		response.WriteStatus(w, http.StatusServiceUnavailable, metav1.StatusReasonServiceUnavailable, "/openapi/v2: "+err.Error(), p.opts.RetryAfterSeconds)
		return
	}
	ct := "application/json"
	if wantProto {
		ct = apidoc.OpenAPIV2Protobuf
	}
	serveWithETag(w, r, ct, body, etag)
}

func (p *Proxy) mergedOpenAPIV2(ctx context.Context, wantProto bool) ([]byte, string, error) {
	ready := p.readyBackends(nil)
	if len(ready) == 0 {
		return nil, "", fmt.Errorf("no kube-apiserver is ready")
	}
	slices.SortStableFunc(ready, func(a, b *backend) int { return compareVersions(b.snapshot(), a.snapshot()) })
	var docs [][]byte
	var key strings.Builder
	for _, b := range ready {
		release, err := b.onBehalf(ctx)
		if err != nil {
			return nil, "", err
		}
		body, _, etag, err := b.fetchDoc(ctx, "/openapi/v2", "application/json")
		release()
		if err != nil {
			continue // a server that cannot answer now leaves the union
		}
		if etag == "" {
			etag = apidoc.ETag(body)
		}
		docs = append(docs, body)
		fmt.Fprintf(&key, "%s=%s;", b.name, etag)
	}
	if len(docs) == 0 {
		return nil, "", fmt.Errorf("no kube-apiserver answered")
	}
	// The emulated versions' documents come last: a backend's entries win.
	if u := p.discoveryUnion(); u != nil {
		emu := u.emu.OpenAPI(ctx)
		docs = append(docs, emu.V2...)
		fmt.Fprintf(&key, "emulated=%s;", emu.V2Key)
	}
	c := &p.openAPIV2
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.key != key.String() {
		merged, err := apidoc.MergeOpenAPIV2(docs)
		if err != nil {
			return nil, "", err
		}
		c.key, c.json, c.etag, c.protobuf = key.String(), merged, apidoc.ETag(merged), nil
	}
	if !wantProto {
		return c.json, c.etag, nil
	}
	if c.protobuf == nil {
		doc, err := openapiv2.ParseDocument(c.json)
		if err != nil {
			return nil, "", fmt.Errorf("converting the merged document to protobuf: %w", err)
		}
		if c.protobuf, err = proto.Marshal(doc); err != nil {
			return nil, "", err
		}
	}
	return c.protobuf, c.etag + "-pb", nil
}
