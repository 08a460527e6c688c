package proxy

import (
	"context"
	"crypto/sha256"
	"crypto/x509"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"net/textproto"
	"net/url"
	"slices"
	"strings"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apiserver/pkg/authentication/serviceaccount"

	"github.com/mvpctl/mvpctl/engine/proxy/internal/response"
)

// identityKey is the context key of a client request's *identity.
type identityKey struct{}

// identity is who one client request goes upstream as. authenticate decides
// it once per client request; the requests the proxy sends on the client's
// behalf (an emulation's reads and writes, discovery access checks) carry it
// in their context and are not authenticated again. rewrite sets exactly its
// headers on every outgoing request, after httputil.ReverseProxy has removed
// the hop-by-hop ones, and the transport refuses to send a request that does
// not carry them.
type identity struct {
	// proxy sends the request with the proxy's own credentials,
	// impersonating: the client presented a verified certificate. Otherwise
	// the request goes with the client's own credentials (or none), over a
	// connection without the proxy's certificate.
	proxy bool
	// header holds every identity header (Authorization, Impersonate-*) the
	// request goes upstream with, under canonical keys. With proxy it holds
	// the certificate's user and groups, or the client's own Impersonate-*
	// headers once a backend authorized each of them; the transport adds the
	// proxy's Authorization. Without proxy it holds the client's own.
	header http.Header
}

func identityFrom(ctx context.Context) *identity {
	id, _ := ctx.Value(identityKey{}).(*identity)
	return id
}

// identify returns r carrying its identity in its context: the one the
// context holds already (a request the proxy sends on a client's behalf) or
// the one authenticate decides for a client's request. It reports false
// when it has answered.
func (p *Proxy) identify(w http.ResponseWriter, r *http.Request) (*http.Request, bool) {
	if identityFrom(r.Context()) != nil {
		return r, true
	}
	if r.Context().Value(innerKey{}) != nil {
		// Never authenticate a copy of a client's request as if it were
		// the client: its headers may no longer say who the client is.
		response.WriteStatus(w, http.StatusInternalServerError, metav1.StatusReasonInternalError, "an inner request lost its client's identity", 0)
		return r, false
	}
	id, ok := p.authenticate(w, r)
	if !ok {
		return r, false
	}
	return r.WithContext(context.WithValue(r.Context(), identityKey{}, id)), true
}

// authenticate decides with which credentials a request goes upstream.
//
//   - Bearer tokens (and requests without credentials) pass through
//     unchanged on a connection without the proxy's client certificate,
//     together with any Impersonate-* headers: the apiserver authenticates
//     and authorizes the client itself.
//   - A verified client certificate (when ImpersonateClientCerts is set)
//     becomes impersonation: the proxy's own credentials plus
//     Impersonate-User (the certificate's CN) and Impersonate-Group (its O
//     values), as kube-rbac-proxy and Pinniped do. Any Authorization header
//     is dropped.
//   - A client with a certificate that also sends Impersonate-* headers
//     wants to act as someone else. Its certificate cannot be forwarded, so
//     the proxy asks the apiserver (SubjectAccessReview) whether the
//     certificate's user may impersonate each of them, as the apiserver's
//     impersonation filter would, and answers the apiserver's 403 when not.
//     Only then does the proxy's identity carry the client's headers.
//
// It reports false when it has answered the request itself.
func (p *Proxy) authenticate(w http.ResponseWriter, r *http.Request) (*identity, bool) {
	cert := p.verifiedClientCert(r)
	if cert == nil {
		h := identityHeaders(r.Header, true)
		if h == nil {
			return anonymous, true
		}
		return &identity{header: h}, true
	}
	user := cert.Subject.CommonName
	if user == "" {
		response.WriteStatus(w, http.StatusUnauthorized, metav1.StatusReasonUnauthorized, "the client certificate has no common name", 0)
		return nil, false
	}
	groups := cert.Subject.Organization
	if requested := identityHeaders(r.Header, false); len(requested) > 0 {
		if err := p.authorizeImpersonation(r.Context(), user, groups, requested); err != nil {
			var fe *forbiddenError
			var be *badImpersonationError
			switch {
			case errors.As(err, &be):
				response.WriteStatus(w, http.StatusBadRequest, metav1.StatusReasonBadRequest, be.Error(), 0)
			case errors.As(err, &fe):
				response.WriteStatus(w, http.StatusForbidden, metav1.StatusReasonForbidden, fe.Error(), 0)
			default:
				response.WriteStatus(w, http.StatusServiceUnavailable, metav1.StatusReasonServiceUnavailable,
					"cannot check impersonation with the kube-apiserver: "+err.Error(), p.opts.RetryAfterSeconds)
			}
			return nil, false
		}
		return &identity{proxy: true, header: requested}, true
	}
	h := http.Header{authenticationv1.ImpersonateUserHeader: {user}}
	if len(groups) > 0 {
		h[authenticationv1.ImpersonateGroupHeader] = slices.Clone(groups)
	}
	return &identity{proxy: true, header: h}, true
}

// verifiedClientCert is the client's certificate when it is turned into
// impersonation, else nil.
func (p *Proxy) verifiedClientCert(r *http.Request) *x509.Certificate {
	if !p.opts.ImpersonateClientCerts || r.TLS == nil || len(r.TLS.VerifiedChains) == 0 || len(r.TLS.VerifiedChains[0]) == 0 {
		return nil
	}
	return r.TLS.VerifiedChains[0][0]
}

// anonymous is the identity of a request without credentials.
var anonymous = &identity{}

// identityHeaders collects a client's Impersonate-* headers (and its
// Authorization, if asked) under the canonical keys the apiserver reads;
// nil when there are none.
func identityHeaders(h http.Header, withAuthorization bool) http.Header {
	var out http.Header
	for k, vs := range h {
		ck := http.CanonicalHeaderKey(k)
		if strings.HasPrefix(ck, "Impersonate-") || withAuthorization && ck == "Authorization" {
			if out == nil {
				out = http.Header{}
			}
			// Shared with the request, clipped: an append copies.
			if prev, ok := out[ck]; ok {
				out[ck] = append(slices.Clip(prev), vs...)
			} else {
				out[ck] = slices.Clip(vs)
			}
		}
	}
	return out
}

// isIdentityHeader: a header that says who makes a request. X-Remote-* are
// kube-apiserver's default request-header (front proxy) names: they would
// count if the proxy's certificate were ever a front-proxy one.
func isIdentityHeader(name string) bool {
	return strings.EqualFold(name, "Authorization") || hasPrefixFold(name, "Impersonate-") || hasPrefixFold(name, "X-Remote-")
}

func hasPrefixFold(s, prefix string) bool {
	return len(s) >= len(prefix) && strings.EqualFold(s[:len(prefix)], prefix)
}

// connectionNamesIdentity returns an identity header that the Connection
// header names: httputil.ReverseProxy would remove it as hop-by-hop, and a
// client must not choose which of its identity headers arrive.
func connectionNamesIdentity(h http.Header) (string, bool) {
	for _, v := range h["Connection"] {
		for _, tok := range strings.Split(v, ",") {
			if tok = textproto.TrimString(tok); isIdentityHeader(tok) {
				return tok, true
			}
		}
	}
	return "", false
}

// set makes h carry exactly the identity's headers: whatever identity
// headers the client sent are removed first. With the proxy's credentials a
// bearer token offered in Sec-WebSocket-Protocol is removed too; the
// proxy's Authorization is added by the transport.
func (id *identity) set(h http.Header) {
	for k := range h {
		if isIdentityHeader(k) {
			delete(h, k)
		}
	}
	if id == nil {
		return
	}
	for k, vs := range id.header {
		h[k] = slices.Clip(vs) // an append to the request's header copies
	}
	if id.proxy {
		dropWebSocketBearer(h)
	}
}

// webSocketBearerPrefix marks a bearer token offered as a WebSocket
// subprotocol, which kube-apiserver authenticates like an Authorization
// header.
const webSocketBearerPrefix = "base64url.bearer.authorization.k8s.io."

func dropWebSocketBearer(h http.Header) {
	vs, ok := h["Sec-Websocket-Protocol"]
	if !ok {
		return
	}
	var keep []string
	for _, v := range vs {
		for _, p := range strings.Split(v, ",") {
			if p = strings.TrimSpace(p); p != "" && !strings.HasPrefix(p, webSocketBearerPrefix) {
				keep = append(keep, p)
			}
		}
	}
	if len(keep) == 0 {
		delete(h, "Sec-Websocket-Protocol")
		return
	}
	h["Sec-Websocket-Protocol"] = []string{strings.Join(keep, ", ")}
}

// identityError is a request the proxy refused to send because it did not
// carry its client's identity.
type identityError struct{ msg string }

func (e *identityError) Error() string { return e.msg }

// check is the last look at an outgoing request before it is sent: its
// identity headers must be exactly the identity's, and a request sent with
// the proxy's credentials must impersonate someone. The Authorization of a
// request with the proxy's credentials is not compared: the transport
// replaces it with the proxy's own.
func (id *identity) check(h http.Header) error {
	if id == nil {
		return &identityError{"no identity was decided for the request"}
	}
	if id.proxy && id.header.Get(authenticationv1.ImpersonateUserHeader) == "" {
		return &identityError{"the request would go with the proxy's credentials without impersonating anyone"}
	}
	// set writes canonical keys only: any other spelling is a mismatch.
	n := 0
	for k, vs := range h {
		if !isIdentityHeader(k) || id.proxy && k == "Authorization" {
			continue
		}
		if want, ok := id.header[k]; !ok || !slices.Equal(vs, want) {
			return &identityError{fmt.Sprintf("the request's identity header %s is not the client's (the client's are %v)", k, slices.Sorted(maps.Keys(id.header)))}
		}
		n++
	}
	if n != len(id.header) {
		return &identityError{fmt.Sprintf("the request lacks some of the client's identity headers %v", slices.Sorted(maps.Keys(id.header)))}
	}
	return nil
}

// key identifies the identity for caches: a hash, so that no credential is
// kept in memory as a map key.
func (id *identity) key(parts ...string) [sha256.Size]byte {
	h := sha256.New()
	if id == nil {
		id = &identity{}
	}
	if id.proxy {
		h.Write([]byte{1})
	} else {
		h.Write([]byte{0})
	}
	for _, k := range slices.Sorted(maps.Keys(id.header)) {
		h.Write([]byte{0})
		h.Write([]byte(k))
		for _, v := range id.header[k] {
			h.Write([]byte{1})
			h.Write([]byte(v))
		}
	}
	for _, p := range parts {
		h.Write([]byte{2})
		h.Write([]byte(p))
	}
	var key [sha256.Size]byte
	h.Sum(key[:0])
	return key
}

type forbiddenError struct{ msg string }

func (e *forbiddenError) Error() string { return e.msg }

// badImpersonationError is impersonation the apiserver refuses as malformed
// (400), whoever asks: groups, a uid or extras without a user.
type badImpersonationError struct{ msg string }

func (e *badImpersonationError) Error() string { return e.msg }

// authorizeImpersonation checks, like the apiserver's impersonation filter,
// that user may impersonate every user, group, uid and extra in h (whose
// keys are canonical).
func (p *Proxy) authorizeImpersonation(ctx context.Context, user string, groups []string, h http.Header) error {
	var checks []authorizationv1.ResourceAttributes
	if u := h.Get(authenticationv1.ImpersonateUserHeader); u != "" {
		attr := authorizationv1.ResourceAttributes{Verb: "impersonate", Resource: "users", Name: u}
		if ns, name, err := serviceaccount.SplitUsername(u); err == nil {
			attr = authorizationv1.ResourceAttributes{Verb: "impersonate", Resource: "serviceaccounts", Namespace: ns, Name: name}
		}
		checks = append(checks, attr)
	} else {
		return &badImpersonationError{msg: "requested impersonation without impersonating a user (Impersonate-User)"}
	}
	for _, g := range h.Values(authenticationv1.ImpersonateGroupHeader) {
		checks = append(checks, authorizationv1.ResourceAttributes{Verb: "impersonate", Resource: "groups", Name: g})
	}
	if uid := h.Get(authenticationv1.ImpersonateUIDHeader); uid != "" {
		checks = append(checks, authorizationv1.ResourceAttributes{Verb: "impersonate", Group: "authentication.k8s.io", Resource: "uids", Name: uid})
	}
	for _, k := range slices.Sorted(maps.Keys(h)) {
		key, ok := strings.CutPrefix(k, authenticationv1.ImpersonateUserExtraHeaderPrefix)
		if !ok {
			continue
		}
		key = extraKey(key)
		for _, v := range h[k] {
			checks = append(checks, authorizationv1.ResourceAttributes{Verb: "impersonate", Group: "authentication.k8s.io", Resource: "userextras", Subresource: key, Name: v})
		}
	}
	for _, attr := range checks {
		allowed, reason, err := p.subjectAccessReview(ctx, user, groups, attr)
		if err != nil {
			return err
		}
		if !allowed {
			msg := fmt.Sprintf("%s %q is forbidden: User %q cannot impersonate resource %q in API group %q", attr.Resource, attr.Name, user, resourceWithSub(attr), attr.Group)
			if attr.Namespace != "" {
				msg += fmt.Sprintf(" in the namespace %q", attr.Namespace)
			} else {
				msg += " at the cluster scope"
			}
			if reason != "" {
				msg += ": " + reason
			}
			return &forbiddenError{msg: msg}
		}
	}
	return nil
}

// extraKey is the user-extra key an Impersonate-Extra-<key> header names,
// read as kube-apiserver's impersonation filter reads it: lower-cased, then
// percent-decoded (kept as it is when it does not decode).
func extraKey(encoded string) string {
	encoded = strings.ToLower(encoded)
	key, err := url.PathUnescape(encoded)
	if err != nil {
		return encoded
	}
	return key
}

func resourceWithSub(a authorizationv1.ResourceAttributes) string {
	if a.Subresource != "" {
		return a.Resource + "/" + a.Subresource
	}
	return a.Resource
}

// subjectAccessReview asks a ready backend, with the proxy's identity.
func (p *Proxy) subjectAccessReview(ctx context.Context, user string, groups []string, attr authorizationv1.ResourceAttributes) (bool, string, error) {
	sar := &authorizationv1.SubjectAccessReview{
		Spec: authorizationv1.SubjectAccessReviewSpec{
			ResourceAttributes: &attr,
			User:               user,
			Groups:             append(slices.Clone(groups), "system:authenticated"),
		},
	}
	key := gvr{"authorization.k8s.io", "v1", "subjectaccessreviews"}
	var lastErr error = fmt.Errorf("no ready kube-apiserver serves %s", key)
	for _, b := range p.readyBackends(&key) {
		rctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		release, err := b.onBehalf(rctx)
		if err != nil {
			cancel()
			return false, "", fmt.Errorf("SubjectAccessReview: waiting for a connection: %w", err)
		}
		out, err := b.authz.SubjectAccessReviews().Create(rctx, sar, metav1.CreateOptions{})
		release()
		cancel()
		if err != nil {
			// An answer (a Status) is the cluster's; only a backend that
			// could not be asked is skipped for the next.
			var answered apierrors.APIStatus
			if errors.As(err, &answered) || ctx.Err() != nil {
				return false, "", fmt.Errorf("SubjectAccessReview: %w", err)
			}
			lastErr = err
			continue
		}
		return out.Status.Allowed && !out.Status.Denied, out.Status.Reason, nil
	}
	return false, "", lastErr
}

// Established credentials: how many are remembered, and for how long a
// backend's authentication of them is trusted (as the access cache).
const (
	maxEstablished = 4096
	establishedTTL = 10 * time.Second
)

// selfSubjectReview is the cheapest request a backend authenticates: any
// authenticated user may create one (GA since Kubernetes 1.28).
const (
	selfSubjectReviewPath = "/apis/authentication.k8s.io/v1/selfsubjectreviews"
	selfSubjectReviewBody = `{"apiVersion":"authentication.k8s.io/v1","kind":"SelfSubjectReview"}`
)

// establish makes sure a backend has authenticated the client before the
// proxy buffers and converts a request body for it: a client that sends its
// own credentials (or none) is known to nobody until a backend has checked
// them, and the conversion is the expensive part of emulation. It sends a
// SelfSubjectReview with the client's identity; a 2xx or a 403 (the
// authorizer's answer: authentication succeeded, e.g. an anonymous user on a
// cluster that allows anonymous requests) establishes it for a while. The
// apiserver's other answers (401, 400, 429, 5xx) go to the client, and false
// is reported.
// A verified client certificate is established by the TLS handshake.
func (p *Proxy) establish(w http.ResponseWriter, r *http.Request) bool {
	id := identityFrom(r.Context())
	if id == nil {
		response.WriteStatus(w, http.StatusInternalServerError, metav1.StatusReasonInternalError, "no identity was decided for the request", 0)
		return false
	}
	if id.proxy {
		return true
	}
	key := id.key(selfSubjectReviewPath)
	if _, ok := p.established.Get(key); ok {
		return true
	}
	// An inner request: the client's request is the one counted.
	b := p.selfSubjectReview(r)
	switch code := b.Code; {
	case code >= 200 && code < 300, code == http.StatusForbidden:
		p.established.Add(key, reviewedUser(b), establishedTTL)
		return true
	case code == http.StatusNotFound, code < 200, code >= 300 && code < 400:
		response.WriteStatus(w, http.StatusServiceUnavailable, metav1.StatusReasonServiceUnavailable,
			fmt.Sprintf("cannot establish the client's identity before converting its request: a SelfSubjectReview (authentication.k8s.io/v1) got HTTP %d", code), 0)
	default:
		// The apiserver's own answer for this client: 401, a 400 for
		// malformed impersonation, 429, 5xx.
		b.CopyTo(w)
	}
	return false
}
