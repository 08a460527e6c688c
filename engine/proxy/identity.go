package proxy

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"sort"
	"strings"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// authenticate decides with which credentials a request goes upstream.
//
//   - Bearer tokens (and requests without credentials) pass through unchanged
//     on a connection without the proxy's client certificate, together with any
//     Impersonate-* headers: the apiserver authenticates and authorizes the
//     client itself.
//   - A verified client certificate (when ImpersonateClientCerts is set)
//     becomes impersonation: the proxy's own credentials plus Impersonate-User
//     (the certificate's CN) and Impersonate-Group (its O values), as
//     kube-rbac-proxy and Pinniped do. Any Authorization header is dropped.
//   - A client with a certificate that also sends Impersonate-* headers wants
//     to act as someone else. Its certificate cannot be forwarded, so the proxy
//     asks the apiserver (SubjectAccessReview) whether the certificate's user
//     may impersonate each of them, as the apiserver's impersonation filter
//     would, and answers the apiserver's 403 when not. Only then does the
//     proxy's identity carry the client's headers.
//
// It reports false when it has answered the request itself.
func (p *Proxy) authenticate(w http.ResponseWriter, r *http.Request) (identity bool, ok bool) {
	if !p.opts.ImpersonateClientCerts || r.TLS == nil || len(r.TLS.VerifiedChains) == 0 || len(r.TLS.VerifiedChains[0]) == 0 {
		return false, true
	}
	cert := r.TLS.VerifiedChains[0][0]
	user := cert.Subject.CommonName
	if user == "" {
		writeStatus(w, http.StatusUnauthorized, metav1.StatusReasonUnauthorized, "the client certificate has no common name", 0)
		return false, false
	}
	groups := append([]string(nil), cert.Subject.Organization...)
	r.Header.Del("Authorization")

	requested := impersonationHeaders(r.Header)
	if len(requested) > 0 {
		if err := p.authorizeImpersonation(r.Context(), user, groups, r.Header); err != nil {
			if fe, isForbidden := err.(*forbiddenError); isForbidden {
				writeStatus(w, http.StatusForbidden, metav1.StatusReasonForbidden, fe.Error(), 0)
			} else {
				writeStatus(w, http.StatusServiceUnavailable, metav1.StatusReasonServiceUnavailable,
					"cannot check impersonation with the kube-apiserver: "+err.Error(), p.opts.RetryAfterSeconds)
			}
			return false, false
		}
		return true, true
	}
	r.Header.Set("Impersonate-User", user)
	r.Header.Del("Impersonate-Group")
	for _, g := range groups {
		r.Header.Add("Impersonate-Group", g)
	}
	return true, true
}

func impersonationHeaders(h http.Header) []string {
	var out []string
	for k := range h {
		if strings.HasPrefix(k, "Impersonate-") {
			out = append(out, k)
		}
	}
	sort.Strings(out)
	return out
}

type forbiddenError struct{ msg string }

func (e *forbiddenError) Error() string { return e.msg }

// authorizeImpersonation checks, like the apiserver's impersonation filter,
// that user may impersonate every user, group, uid and extra in h.
func (p *Proxy) authorizeImpersonation(ctx context.Context, user string, groups []string, h http.Header) error {
	var checks []authorizationv1.ResourceAttributes
	if u := h.Get(authenticationv1.ImpersonateUserHeader); u != "" {
		attr := authorizationv1.ResourceAttributes{Verb: "impersonate", Resource: "users", Name: u}
		if ns, name, ok := serviceAccount(u); ok {
			attr = authorizationv1.ResourceAttributes{Verb: "impersonate", Resource: "serviceaccounts", Namespace: ns, Name: name}
		}
		checks = append(checks, attr)
	} else {
		return &forbiddenError{msg: "requested impersonation without a user (Impersonate-User)"}
	}
	for _, g := range h.Values(authenticationv1.ImpersonateGroupHeader) {
		checks = append(checks, authorizationv1.ResourceAttributes{Verb: "impersonate", Resource: "groups", Name: g})
	}
	if uid := h.Get(authenticationv1.ImpersonateUIDHeader); uid != "" {
		checks = append(checks, authorizationv1.ResourceAttributes{Verb: "impersonate", Group: "authentication.k8s.io", Resource: "uids", Name: uid})
	}
	for k, vs := range h {
		key, ok := strings.CutPrefix(k, authenticationv1.ImpersonateUserExtraHeaderPrefix)
		if !ok {
			continue
		}
		key = strings.ToLower(key)
		for _, v := range vs {
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

func resourceWithSub(a authorizationv1.ResourceAttributes) string {
	if a.Subresource != "" {
		return a.Resource + "/" + a.Subresource
	}
	return a.Resource
}

func serviceAccount(user string) (ns, name string, ok bool) {
	rest, ok := strings.CutPrefix(user, "system:serviceaccount:")
	if !ok {
		return "", "", false
	}
	ns, name, ok = strings.Cut(rest, ":")
	return ns, name, ok && ns != "" && name != ""
}

// subjectAccessReview asks a ready backend, with the proxy's identity.
func (p *Proxy) subjectAccessReview(ctx context.Context, user string, groups []string, attr authorizationv1.ResourceAttributes) (bool, string, error) {
	sar := authorizationv1.SubjectAccessReview{
		TypeMeta: metav1.TypeMeta{APIVersion: "authorization.k8s.io/v1", Kind: "SubjectAccessReview"},
		Spec: authorizationv1.SubjectAccessReviewSpec{
			ResourceAttributes: &attr,
			User:               user,
			Groups:             append(groups, "system:authenticated"),
		},
	}
	body, err := json.Marshal(sar)
	if err != nil {
		return false, "", err
	}
	key := gvr{"authorization.k8s.io", "v1", "subjectaccessreviews"}
	var lastErr error = fmt.Errorf("no ready kube-apiserver serves %s", key)
	for _, b := range p.readyBackends(&key) {
		ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, b.url.String()+"/apis/authorization.k8s.io/v1/subjectaccessreviews", bytes.NewReader(body))
		if err != nil {
			cancel()
			return false, "", err
		}
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json")
		b.setIdentity(req.Header)
		resp, err := b.identity.RoundTrip(req)
		if err != nil {
			cancel()
			lastErr = err
			continue
		}
		data, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
		resp.Body.Close()
		cancel()
		if err != nil {
			lastErr = err
			continue
		}
		if resp.StatusCode != http.StatusCreated && resp.StatusCode != http.StatusOK {
			return false, "", fmt.Errorf("SubjectAccessReview: HTTP %d: %s", resp.StatusCode, truncate(data, 300))
		}
		var out authorizationv1.SubjectAccessReview
		if err := json.Unmarshal(data, &out); err != nil {
			return false, "", fmt.Errorf("SubjectAccessReview: %w", err)
		}
		return out.Status.Allowed && !out.Status.Denied, out.Status.Reason, nil
	}
	return false, "", lastErr
}
