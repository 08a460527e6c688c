package proxy

import (
	"context"
	"crypto/tls"
	"fmt"
	"net/http"
	"net/url"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/oauth2"
	"k8s.io/apimachinery/pkg/util/version"
	apimachineryversion "k8s.io/apimachinery/pkg/version"
	authorizationv1client "k8s.io/client-go/kubernetes/typed/authorization/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/transport"
)

// Backend describes one kube-apiserver behind the proxy.
type Backend struct {
	// Name labels the backend in metrics, logs and /debug/capabilities.
	// Empty means the host:port of URL.
	Name string
	// URL is the server's base URL, e.g. https://127.0.0.1:6443. A path other
	// than / is not supported.
	URL *url.URL
	// TLS verifies the server (RootCAs, ServerName) and, when it holds
	// Certificates, is the proxy's own client identity. Nil means the system
	// roots and no client certificate.
	TLS *tls.Config
	// BearerToken is the proxy's own identity when it has no client
	// certificate. Empty means none.
	BearerToken string
	// BearerTokenFile, when BearerToken is empty, holds the token instead.
	// It is read again every minute, as client-go does, so that a rotated
	// ServiceAccount token is picked up.
	BearerTokenFile string
}

// backend is a Backend at run time: its transports, its health and its
// capabilities. state is replaced as a whole, so readers never lock.
type backend struct {
	name        string
	url         *url.URL
	token       string
	tokenSource oauth2.TokenSource // from Backend.BearerTokenFile; nil without

	// own carries the proxy's own requests; identity the impersonated
	// requests of certificate users (both present the proxy's client
	// certificate); plain presents none, so that a client's bearer token is
	// what the server authenticates (kube-apiserver tries x509 before
	// tokens). Each has its own connections and budget.
	own      *upstreamPool
	identity *upstreamPool
	plain    *upstreamPool
	// behalf holds the slots of the own pool's requests that clients cause
	// (onBehalf).
	behalf chan struct{}
	// maxObject bounds a document read whole (discovery, OpenAPI).
	maxObject int64
	// authz asks the backend's authorizer, with the proxy's identity.
	authz authorizationv1client.AuthorizationV1Interface

	// outstanding counts short (not long-running) requests in flight; it
	// balances load among equal candidates.
	outstanding atomic.Int64
	// longRunning counts watches, logs and upgraded connections in flight.
	longRunning atomic.Int64

	state atomic.Pointer[backendState]
	// refresh asks the poller to read discovery again at its next probe.
	refresh atomic.Bool
	// wake asks the poller to probe now.
	wake chan struct{}

	mu    sync.Mutex // guards etags
	etags map[string]cachedDoc
}

// backendState is one immutable snapshot of a backend's health and
// capabilities.
type backendState struct {
	// ready: the last /readyz succeeded and the capabilities were read after
	// the backend last became ready.
	ready      bool
	lastError  string
	readySince time.Time

	versionInfo *apimachineryversion.Info
	version     *version.Version

	caps *capabilities
}

type cachedDoc struct {
	etag        string
	body        []byte
	contentType string
}

// upstreamLimits bound a backend's connections and what is read whole from
// it.
type upstreamLimits struct {
	maxIdle   int           // idle connections kept, per pool
	maxConns  int           // connections, per client pool
	ownConns  int           // connections of the proxy's own pool
	connWait  time.Duration // how long a request waits for a connection
	maxObject int64         // bytes of one object or document
}

func newBackend(cfg Backend, lim upstreamLimits) (*backend, error) {
	if cfg.URL == nil || cfg.URL.Host == "" {
		return nil, fmt.Errorf("backend %q: URL needs a scheme and host", cfg.Name)
	}
	if cfg.URL.Scheme != "https" && cfg.URL.Scheme != "http" {
		return nil, fmt.Errorf("backend %s: scheme must be https or http", cfg.URL)
	}
	if p := cfg.URL.Path; p != "" && p != "/" {
		return nil, fmt.Errorf("backend %s: a path prefix is not supported", cfg.URL)
	}
	if lim.ownConns <= 0 {
		lim.ownConns = DefaultOwnConnsPerBackend
	}
	if lim.maxConns <= 0 {
		lim.maxConns = DefaultMaxUpstreamConnsPerBackend
	}
	if lim.connWait <= 0 {
		lim.connWait = DefaultUpstreamConnWait
	}
	u := &url.URL{Scheme: cfg.URL.Scheme, Host: cfg.URL.Host}
	name := cfg.Name
	if name == "" {
		name = u.Host
	}
	var idTLS, plainTLS *tls.Config
	if cfg.TLS != nil {
		idTLS = cfg.TLS.Clone()
		plainTLS = cfg.TLS.Clone()
		plainTLS.Certificates = nil
		plainTLS.GetClientCertificate = nil
	} else {
		idTLS, plainTLS = &tls.Config{}, &tls.Config{}
	}
	b := &backend{
		name:     name,
		url:      u,
		token:    cfg.BearerToken,
		own:      newUpstreamPool(poolOwn, idTLS, min(lim.maxIdle, lim.ownConns), lim.ownConns, lim.connWait),
		identity: newUpstreamPool(poolImpersonating, idTLS, lim.maxIdle, lim.maxConns, lim.connWait),
		plain:    newUpstreamPool(poolClient, plainTLS, lim.maxIdle, lim.maxConns, lim.connWait),
		behalf:   make(chan struct{}, onBehalfPerBackend),
		wake:     make(chan struct{}, 1),
		etags:    map[string]cachedDoc{},
	}
	b.maxObject = lim.maxObject
	if cfg.BearerToken == "" && cfg.BearerTokenFile != "" {
		b.tokenSource = transport.NewCachedFileTokenSource(cfg.BearerTokenFile)
		if _, err := b.tokenSource.Token(); err != nil {
			return nil, fmt.Errorf("backend %s: %w", name, err)
		}
	}
	// Unlimited: a review is made for a client's request, which has its
	// own limits.
	rc := &rest.Config{Host: u.String(), QPS: -1, WarningHandler: rest.NoWarnings{},
		ContentConfig: rest.ContentConfig{ContentType: "application/json", AcceptContentTypes: "application/json"}}
	authz, err := authorizationv1client.NewForConfigAndClient(rc, &http.Client{Transport: proxyCredentials{b}})
	if err != nil {
		return nil, fmt.Errorf("backend %s: %w", name, err)
	}
	b.authz = authz
	b.state.Store(&backendState{lastError: "not probed yet"})
	return b, nil
}

// proxyUserAgent is the User-Agent of the requests the proxy makes for
// itself.
const proxyUserAgent = "mvpctl-proxy"

// proxyCredentials sends requests with the proxy's own identity (its client
// certificate and bearer token) and User-Agent.
type proxyCredentials struct{ b *backend }

func (c proxyCredentials) RoundTrip(req *http.Request) (*http.Response, error) {
	req = req.Clone(req.Context()) // a RoundTripper leaves its request alone
	req.Header.Set("User-Agent", proxyUserAgent)
	c.b.setIdentity(req.Header)
	return c.b.own.RoundTrip(req)
}

// setIdentity puts the proxy's own bearer token, if it has one, on req in
// place of any other Authorization.
func (b *backend) setIdentity(h http.Header) {
	h.Del("Authorization")
	token := b.token
	if b.tokenSource != nil {
		// On a failed re-read the source keeps the last token it read.
		if t, err := b.tokenSource.Token(); err == nil {
			token = t.AccessToken
		}
	}
	if token != "" {
		h.Set("Authorization", "Bearer "+token)
	}
}

func (b *backend) snapshot() *backendState { return b.state.Load() }

// kick asks the poller to probe the backend now, without waiting.
func (b *backend) kick() {
	select {
	case b.wake <- struct{}{}:
	default:
	}
}

// markDown takes the backend out of rotation after a failed connection; the
// poller puts it back once /readyz succeeds and discovery was read again.
func (b *backend) markDown(reason string) {
	for {
		old := b.state.Load()
		if !old.ready {
			return
		}
		next := *old
		next.ready = false
		next.lastError = reason
		if b.state.CompareAndSwap(old, &next) {
			b.kick()
			return
		}
	}
}

// roundTripper returns the pool of a client's request: with the proxy's
// identity (impersonating) or without any client credentials.
func (b *backend) roundTripper(withIdentity bool) http.RoundTripper {
	if withIdentity {
		return b.identity
	}
	return b.plain
}

// get performs a GET with the proxy's identity, on its own pool.
func (b *backend) get(ctx context.Context, path, accept string, hdr map[string]string) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, b.url.String()+path, nil)
	if err != nil {
		return nil, err
	}
	if accept != "" {
		req.Header.Set("Accept", accept)
	}
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	req.Header.Set("User-Agent", proxyUserAgent)
	b.setIdentity(req.Header)
	return b.own.RoundTrip(req)
}

// pools are the backend's connection pools.
func (b *backend) pools() []*upstreamPool { return []*upstreamPool{b.own, b.identity, b.plain} }

// transports are the transports of every pool.
func (b *backend) transports() []*http.Transport {
	var out []*http.Transport
	for _, u := range b.pools() {
		out = append(out, u.h2, u.h1)
	}
	return out
}

func (b *backend) close() {
	for _, u := range b.pools() {
		u.closeIdle()
	}
}
