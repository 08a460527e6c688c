package proxy

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	openapiv2 "github.com/google/gnostic-models/openapiv2"
	"google.golang.org/protobuf/proto"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The protobuf media types of /openapi/v2: the one kube-apiserver answers
// with, and the older one client-go still asks for.
const (
	openAPIV2Protobuf           = "application/com.github.proto-openapi.spec.v2.v1.0+protobuf"
	openAPIV2ProtobufDeprecated = "application/com.github.proto-openapi.spec.v2@v1.0+protobuf"
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
	wantProto := prefersProtobuf(r.Header.Get("Accept"))
	body, etag, err := p.mergedOpenAPIV2(ctx, wantProto)
	if err != nil {
		writeStatus(w, http.StatusServiceUnavailable, metav1.StatusReasonServiceUnavailable, "/openapi/v2: "+err.Error(), p.opts.RetryAfterSeconds)
		return
	}
	ct := "application/json"
	if wantProto {
		ct = openAPIV2Protobuf
	}
	serveWithETag(w, r, ct, body, etag)
}

// prefersProtobuf chooses, like kube-openapi's handler, between the JSON and
// the protobuf form of /openapi/v2: the highest q wins, then the first listed.
func prefersProtobuf(accept string) bool {
	bestQ, proto := -1.0, false
	for _, part := range strings.Split(accept, ",") {
		// Not mime.ParseMediaType: "@" in the deprecated protobuf type is not
		// a token character.
		fields := strings.Split(part, ";")
		q := 1.0
		for _, f := range fields[1:] {
			if v, ok := strings.CutPrefix(strings.TrimSpace(f), "q="); ok {
				if parsed, err := strconv.ParseFloat(v, 64); err == nil {
					q = parsed
				}
			}
		}
		var isProto bool
		switch strings.ToLower(strings.TrimSpace(fields[0])) {
		case openAPIV2Protobuf, openAPIV2ProtobufDeprecated:
			isProto = true
		case "application/json", "*/*", "application/*":
		default:
			continue
		}
		if q > bestQ {
			bestQ, proto = q, isProto
		}
	}
	return proto
}

func (p *Proxy) mergedOpenAPIV2(ctx context.Context, wantProto bool) ([]byte, string, error) {
	var ready []*backend
	for _, b := range p.list() {
		if b.snapshot().ready {
			ready = append(ready, b)
		}
	}
	if len(ready) == 0 {
		return nil, "", fmt.Errorf("no kube-apiserver is ready")
	}
	slices.SortStableFunc(ready, func(a, b *backend) int { return compareVersions(b.snapshot(), a.snapshot()) })
	var docs [][]byte
	var key strings.Builder
	for _, b := range ready {
		body, _, etag, err := b.fetchDocETag(ctx, "/openapi/v2", "application/json")
		if err != nil {
			continue // a server that cannot answer now leaves the union
		}
		if etag == "" {
			etag = etagOf(body)
		}
		docs = append(docs, body)
		fmt.Fprintf(&key, "%s=%s;", b.name, etag)
	}
	if len(docs) == 0 {
		return nil, "", fmt.Errorf("no kube-apiserver answered")
	}
	// The emulated versions' documents come last: a backend's entries win.
	if u := p.discoveryUnion(); u != nil {
		emu := p.emulatedDocs(ctx, u)
		docs = append(docs, emu.v2...)
		fmt.Fprintf(&key, "emulated=%s;", emu.v2Key)
	}
	c := &p.openAPIV2
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.key != key.String() {
		merged, err := mergeOpenAPIV2(docs)
		if err != nil {
			return nil, "", err
		}
		c.key, c.json, c.etag, c.protobuf = key.String(), merged, etagOf(merged), nil
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

// mergeOpenAPIV2 merges Swagger 2.0 documents, the first one's entries
// winning; paths and definitions are unions.
func mergeOpenAPIV2(docs [][]byte) ([]byte, error) {
	var out map[string]json.RawMessage
	union := map[string]map[string]json.RawMessage{"paths": {}, "definitions": {}}
	for i, d := range docs {
		var top map[string]json.RawMessage
		if err := json.Unmarshal(d, &top); err != nil {
			return nil, fmt.Errorf("document %d: %w", i, err)
		}
		if out == nil {
			out = top
		}
		for field, m := range union {
			var entries map[string]json.RawMessage
			if raw, ok := top[field]; ok {
				if err := json.Unmarshal(raw, &entries); err != nil {
					return nil, fmt.Errorf("document %d: %s: %w", i, field, err)
				}
			}
			for k, v := range entries {
				if _, ok := m[k]; !ok {
					m[k] = v
				}
			}
		}
	}
	for field, m := range union {
		raw, err := json.Marshal(m)
		if err != nil {
			return nil, err
		}
		out[field] = raw
	}
	return json.Marshal(out)
}
