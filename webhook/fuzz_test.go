package webhook

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utiljson "k8s.io/apimachinery/pkg/util/json"

	"github.com/mvpctl/mvpctl/engine"
)

// FuzzReview sends anything as a review: the answer is a 4xx Status, or a
// review under the request's uid that either fails as a whole or holds
// exactly the request's objects, each at the desired version; never a 5xx
// or a panic.
func FuzzReview(f *testing.F) {
	w := func(v, name string) map[string]any { return widget(v, name) }
	f.Add(reviewBody(f, reviewV1, "u", "example.com/v1", w("v1alpha1", "a"), w("v1beta1", "b")))
	f.Add(reviewBody(f, reviewV1beta1, "u", "example.com/v1alpha1", w("v1", "a")))
	f.Add(reviewBody(f, reviewV1, "u", "example.com/v2", w("v1", "a")))
	f.Add([]byte(`{"apiVersion":"apiextensions.k8s.io/v1","kind":"ConversionReview","request":{"uid":"u","desiredAPIVersion":"example.com/v1","objects":[{"apiVersion":"example.com/v1alpha1","kind":"Widget","metadata":{"name":"x","annotations":{"mvp.k8s.io/conversion-data":"{\"$created\":1}"}},"spec":{"size":"big"}}]}}`))
	f.Add([]byte(`{"apiVersion":"apiextensions.k8s.io/v1","kind":"ConversionReview","request":{"uid":"u","desiredAPIVersion":"example.com/v1","objects":[null,1,"x",[],{}]}}`))
	f.Add([]byte(`{"apiVersion":"apiextensions.k8s.io/v1","kind":"ConversionReview","request":{"uid":"u","desiredAPIVersion":"/","objects":[]}}`))
	f.Add([]byte(`{`))
	f.Add([]byte(strings.Repeat("[", 10000)))
	conv := loadConverter(f, widgetRules, engine.Options{})
	s := newTestHandler(f, conv, HandlerOptions{MaxRequestBytes: 1 << 16, MaxObjectsPerReview: 100})
	f.Fuzz(func(t *testing.T, body []byte) {
		code, rev, raw := s.post(t, body)
		switch {
		case code >= 500:
			t.Fatalf("code %d: %s", code, raw)
		case code != http.StatusOK:
			var st metav1.Status
			if err := json.Unmarshal(raw, &st); err != nil || st.Kind != "Status" {
				t.Fatalf("code %d without a Status: %s", code, raw)
			}
			return
		}
		// What the request says, read as Kubernetes reads JSON (keys are
		// case-sensitive, unlike encoding/json's).
		var req apiextensionsv1.ConversionReview
		if err := utiljson.Unmarshal(body, &req); err != nil || req.Request == nil {
			return // the handler's decoder is more lenient (e.g. invalid UTF-8)
		}
		if rev.Response == nil || rev.Response.UID != req.Request.UID {
			t.Fatalf("response uid differs from %q: %s", req.Request.UID, raw)
		}
		if rev.Response.Result.Status == metav1.StatusFailure {
			if len(rev.Response.ConvertedObjects) != 0 || rev.Response.Result.Message == "" {
				t.Fatalf("a Failure with objects or without a message: %s", raw)
			}
			return
		}
		if len(rev.Response.ConvertedObjects) != len(req.Request.Objects) {
			t.Fatalf("%d objects for %d: %s", len(rev.Response.ConvertedObjects), len(req.Request.Objects), raw)
		}
		for i, o := range decodeObjects(t, rev.Response.ConvertedObjects) {
			if o["apiVersion"] != req.Request.DesiredAPIVersion {
				t.Fatalf("objects[%d] at %v, want %s", i, o["apiVersion"], req.Request.DesiredAPIVersion)
			}
		}
	})
}
