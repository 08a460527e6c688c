// Package proxy is the core of `mvpctl proxy`: an HTTP(S) server in front of
// several kube-apiservers of possibly different versions that presents them
// to clients as one cluster whose capabilities are the sum of its servers'.
//
// # Capability map
//
// Each backend's /version, aggregated discovery (apidiscovery.k8s.io/v2,
// profile=nopeer, falling back to legacy discovery) and /readyz are polled in
// the background. A backend that refuses a connection is taken out of
// rotation at once; one that becomes ready again is only used after its
// capabilities have been read again, because a restarted server may be a
// different version. Requests never wait for a refresh.
//
// # Routing
//
// Requests are parsed with k8s.io/apiserver's RequestInfoFactory. A resource
// request goes only to a ready backend whose discovery lists its
// group/version/resource; apiRoutingRules order the candidates, and among
// equals the one with the fewest outstanding short requests wins. A request
// that cannot have been processed is sent to the next candidate: the
// connection failed before its headers were written (whatever the verb), a
// read whose connection broke, a request a shutting-down server left
// unanswered on a reused keep-alive connection, a "not found" for a resource
// the server had listed. When no ready backend serves a group/version/resource
// that some backend served, or a resource nobody lists while a backend is not
// ready, the answer is 503 with a metav1.Status and Retry-After, never a 404:
// a false 404 makes the garbage collector and namespace deletion act on
// objects that exist (KEP-4020).
//
// # Pass-through
//
// Everything the proxy need not touch goes through httputil.ReverseProxy
// unchanged: protobuf and CBOR bodies, chunked lists, watch streams flushed
// per event, and HTTP/1.1 upgrades (exec, attach, port-forward over SPDY and
// WebSocket). Upstream connections are HTTP/1.1 with compression left to the
// client, which is both faster for large lists and byte-faithful.
//
// # Discovery
//
// /api, /apis, /apis/<group> and /apis/<group>/<version> (legacy and
// aggregated) and /openapi/v2 and /openapi/v3 are answered by the proxy as the
// union of the backends' documents.
//
// # Version emulation
//
// With a converter ([Rules.Converter], given in [Options.Rules] or to
// [Proxy.SetRules]), a request for a group/version/resource that no
// ready backend serves, and that the migration rules lead to a version a
// ready backend does serve, is emulated: its URL is rewritten to the served
// version, create and update bodies are converted forward, merge, strategic
// and JSON patches are applied by read-convert-patch-convert-update with a
// resourceVersion precondition, server-side apply bodies are converted
// forward, and answers are converted back (objects whole, lists and Tables
// item by item, watches event by event, Status untouched). Discovery lists
// each emulated version as its group's least preferred one. Emulated paths
// speak JSON only. The OpenAPI of an emulated version (/openapi/v3 and
// /openapi/v2) comes from Options.OpenAPIV3 or from the schema its CRD keeps
// for it. docs/emulation.md has the details.
//
// # Packages
//
// Emulation lives in internal/emulation, which reaches the proxy only
// through one interface, emulation.Host (send a request on the client's
// behalf, what the backends serve, read a client's body within the
// proxy's bounds, read a CRD). The pure merging of the backends' documents
// (discovery, OpenAPI, OpenAPI v3 to v2) is internal/apidoc; the
// metav1.Status answers and bounded reads both use are internal/response.
package proxy
