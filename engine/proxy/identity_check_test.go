package proxy

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apiserver/pkg/endpoints/request"
)

// The transport is the last line: a request whose identity headers are not
// exactly its client's is not sent, whatever went wrong before it.
func TestRoutingTransport_RefusesARequestWithoutItsIdentity(t *testing.T) {
	ca := newTestCA(t)
	g := newIdentityRig(t, ca, Options{}, allowUsers(), "v1/configmaps")
	alice := &identity{proxy: true, header: http.Header{"Impersonate-User": {"alice"}, "Impersonate-Group": {"team-a"}}}
	token := &identity{header: http.Header{"Authorization": {"Bearer abc"}}}
	send := func(id *identity, h http.Header) error {
		t.Helper()
		req := httptest.NewRequest(http.MethodGet, "http://proxy.test"+cmPath+"/x", nil)
		req.RequestURI = ""
		req.Header = h
		rt := &route{candidates: g.p.list(), id: id, info: &request.RequestInfo{}}
		req = req.WithContext(context.WithValue(req.Context(), routeKey{}, rt))
		resp, err := (&routingTransport{p: g.p}).RoundTrip(req)
		if resp != nil {
			resp.Body.Close()
		}
		return err
	}
	for _, tc := range []struct {
		name string
		id   *identity
		h    http.Header
	}{
		{"no identity decided", nil, http.Header{}},
		{"impersonation lost", alice, http.Header{}},
		{"group lost", alice, http.Header{"Impersonate-User": {"alice"}}},
		{"another user", alice, http.Header{"Impersonate-User": {"bob"}, "Impersonate-Group": {"team-a"}}},
		{"a group more", alice, http.Header{"Impersonate-User": {"alice"}, "Impersonate-Group": {"team-a", "system:masters"}}},
		{"an extra more", alice, http.Header{"Impersonate-User": {"alice"}, "Impersonate-Group": {"team-a"}, "Impersonate-Extra-Scopes": {"all"}}},
		{"a front-proxy header", alice, http.Header{"Impersonate-User": {"alice"}, "Impersonate-Group": {"team-a"}, "X-Remote-User": {"alice"}}},
		{"non-canonical impersonation", alice, http.Header{"Impersonate-User": {"alice"}, "Impersonate-Group": {"team-a"}, "impersonate-group": {"system:masters"}}},
		{"the proxy's credentials without impersonation", &identity{proxy: true, header: http.Header{}}, http.Header{}},
		{"token lost", token, http.Header{}},
		{"token with impersonation it did not send", token, http.Header{"Authorization": {"Bearer abc"}, "Impersonate-User": {"system:admin"}}},
	} {
		err := send(tc.id, tc.h)
		var ie *identityError
		if !errors.As(err, &ie) {
			t.Errorf("%s: RoundTrip error %v, want a refusal", tc.name, err)
		}
	}
	if seen, _ := g.take(); len(seen) > 0 {
		t.Fatalf("refused requests reached the backend: %+v", seen)
	}

	if err := send(alice, alice.header.Clone()); err != nil {
		t.Fatal(err)
	}
	seen, _ := g.take()
	wantImpersonating(t, seen, "alice", "team-a")

	// The client is told it is the proxy's fault, without details of whom.
	rec := httptest.NewRecorder()
	req := httptest.NewRequest(http.MethodGet, cmPath, nil)
	req = req.WithContext(context.WithValue(req.Context(), routeKey{}, &route{}))
	g.p.errorHandler(rec, req, &identityError{"lost"})
	wantStatusReason(t, rec.Code, rec.Body.Bytes(), http.StatusInternalServerError, metav1.StatusReasonInternalError, "refused to send")
}
