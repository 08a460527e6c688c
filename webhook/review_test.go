package webhook

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsv1beta1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1beta1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/mvpctl/mvpctl/engine"
)

// widgetRules converts Widgets v1alpha1 → v1beta1 → v1.
const widgetRules = "testdata/widgets-rules.yaml"

func loadConverter(t testing.TB, path string, opts engine.Options) *engine.Converter {
	t.Helper()
	opts.Strict = true
	c, err := engine.Load(opts, path)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func rulesFile(t testing.TB, src string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "rules.yaml")
	if err := os.WriteFile(path, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func widget(version, name string) map[string]any {
	obj := map[string]any{
		"apiVersion": "example.com/" + version, "kind": "Widget",
		"metadata": map[string]any{"name": name, "namespace": "ns", "uid": "uid-" + name, "resourceVersion": "7",
			"generation": json.Number("9223372036854775807"), "labels": map[string]any{"app": name}},
	}
	switch version {
	case "v1alpha1":
		obj["spec"] = map[string]any{"size": json.Number("3"), "mode": "ephemeral", "color": "red", "legacy": true}
	case "v1":
		obj["spec"] = map[string]any{"replicas": json.Number("3"), "mode": "stateless", "style": map[string]any{"color": "red"}}
	}
	return obj
}

// reviewBody is a v1 ConversionReview of objs, encoded with the real type.
func reviewBody(t testing.TB, apiVersion, uid, desired string, objs ...map[string]any) []byte {
	t.Helper()
	req := &apiextensionsv1.ConversionRequest{UID: "", DesiredAPIVersion: desired}
	req.UID = typesUID(uid)
	for _, o := range objs {
		raw, err := json.Marshal(o)
		if err != nil {
			t.Fatal(err)
		}
		req.Objects = append(req.Objects, runtime.RawExtension{Raw: raw})
	}
	body, err := json.Marshal(apiextensionsv1.ConversionReview{
		TypeMeta: metav1.TypeMeta{APIVersion: apiVersion, Kind: "ConversionReview"}, Request: req})
	if err != nil {
		t.Fatal(err)
	}
	return body
}

type testServer struct {
	h       http.Handler
	metrics *Metrics
	reg     *prometheus.Registry
}

func newTestHandler(t testing.TB, conv *engine.Converter, opts HandlerOptions) *testServer {
	t.Helper()
	reg := prometheus.NewRegistry()
	m, err := NewMetrics(reg)
	if err != nil {
		t.Fatal(err)
	}
	opts.Converter = func() *engine.Converter { return conv }
	opts.Metrics = m
	return &testServer{h: NewHandler(opts), metrics: m, reg: reg}
}

// post sends a body and decodes a v1 (or v1beta1, same shape) response.
func (s *testServer) post(t testing.TB, body []byte) (int, *apiextensionsv1.ConversionReview, []byte) {
	t.Helper()
	rec := httptest.NewRecorder()
	s.h.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, "/convert", bytes.NewReader(body)))
	if rec.Code != http.StatusOK {
		return rec.Code, nil, rec.Body.Bytes()
	}
	var rev apiextensionsv1.ConversionReview
	if err := json.Unmarshal(rec.Body.Bytes(), &rev); err != nil {
		t.Fatalf("decoding the response: %v\n%s", err, rec.Body.Bytes())
	}
	return rec.Code, &rev, rec.Body.Bytes()
}

func decodeObjects(t testing.TB, raws []runtime.RawExtension) []map[string]any {
	t.Helper()
	var out []map[string]any
	for _, r := range raws {
		obj, err := engine.DecodeObject(r.Raw)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, obj)
	}
	return out
}

func TestHandler_ChainBothWaysRoundTripsExactly(t *testing.T) {
	s := newTestHandler(t, loadConverter(t, widgetRules, engine.Options{}), HandlerOptions{})
	in := []map[string]any{widget("v1alpha1", "a"), widget("v1alpha1", "b")}
	code, rev, raw := s.post(t, reviewBody(t, reviewV1, "uid-1", "example.com/v1", in...))
	if code != http.StatusOK || rev.Response.Result.Status != metav1.StatusSuccess {
		t.Fatalf("code %d: %s", code, raw)
	}
	if rev.Response.UID != "uid-1" || rev.APIVersion != reviewV1 || rev.Kind != reviewKind {
		t.Errorf("response uid %q apiVersion %q kind %q", rev.Response.UID, rev.APIVersion, rev.Kind)
	}
	stored := decodeObjects(t, rev.Response.ConvertedObjects)
	for i, obj := range stored {
		if obj["apiVersion"] != "example.com/v1" || obj["metadata"].(map[string]any)["name"] != in[i]["metadata"].(map[string]any)["name"] {
			t.Errorf("objects[%d]: %v", i, obj)
		}
	}
	// Back through v1beta1 to v1alpha1: the original, exactly.
	code, rev, raw = s.post(t, reviewBody(t, reviewV1, "uid-2", "example.com/v1alpha1", stored...))
	if code != http.StatusOK || rev.Response.Result.Status != metav1.StatusSuccess {
		t.Fatalf("code %d: %s", code, raw)
	}
	back := decodeObjects(t, rev.Response.ConvertedObjects)
	want := []map[string]any{widget("v1alpha1", "a"), widget("v1alpha1", "b")}
	if diff := cmp.Diff(want, back); diff != "" {
		t.Errorf("round trip (-want +got):\n%s", diff)
	}
}

func TestHandler_V1beta1Review(t *testing.T) {
	s := newTestHandler(t, loadConverter(t, widgetRules, engine.Options{}), HandlerOptions{})
	code, _, raw := s.post(t, reviewBody(t, reviewV1beta1, "uid-b", "example.com/v1beta1", widget("v1alpha1", "a")))
	if code != http.StatusOK {
		t.Fatalf("code %d: %s", code, raw)
	}
	var rev apiextensionsv1beta1.ConversionReview
	if err := json.Unmarshal(raw, &rev); err != nil {
		t.Fatal(err)
	}
	if rev.APIVersion != reviewV1beta1 || rev.Response.UID != "uid-b" || rev.Response.Result.Status != metav1.StatusSuccess || len(rev.Response.ConvertedObjects) != 1 {
		t.Fatalf("response: %s", raw)
	}
}

// failure posts a review that must fail and returns its message.
func (s *testServer) failure(t *testing.T, body []byte, reason Reason) string {
	t.Helper()
	before := testutil.ToFloat64(s.metrics.failures.WithLabelValues(string(reason)))
	code, rev, raw := s.post(t, body)
	if code != http.StatusOK {
		t.Fatalf("code %d, want 200 with a Failure: %s", code, raw)
	}
	if rev.Response.Result.Status != metav1.StatusFailure || len(rev.Response.ConvertedObjects) != 0 {
		t.Fatalf("want a Failure and no objects: %s", raw)
	}
	if rev.Response.UID == "" {
		t.Errorf("the Failure has no uid: %s", raw)
	}
	if got := testutil.ToFloat64(s.metrics.failures.WithLabelValues(string(reason))); got != before+1 {
		t.Errorf("failures{reason=%s} went from %v to %v, want +1", reason, before, got)
	}
	return rev.Response.Result.Message
}

func wantContains(t *testing.T, msg string, parts ...string) {
	t.Helper()
	for _, p := range parts {
		if !strings.Contains(msg, p) {
			t.Errorf("message %q does not say %q", msg, p)
		}
	}
}

func TestHandler_StepFailureNamesObjectRuleStepAndPath(t *testing.T) {
	conv := loadConverter(t, widgetRules, engine.Options{})
	s := newTestHandler(t, conv, HandlerOptions{})
	bad := widget("v1alpha1", "b")
	bad["spec"].(map[string]any)["size"] = "three"
	msg := s.failure(t, reviewBody(t, reviewV1, "u", "example.com/v1", widget("v1alpha1", "a"), bad), ReasonConversion)
	wantContains(t, msg, "objects[1] ns/b", conv.Rules()[0].Rule.ID(), "transformations[0]", "spec.size")
}

// contractRules break the contract in the ways a rule can.
const contractRules = `apiVersion: mvp.k8s.io/v1
kind: TransformationRules
metadata: {name: contract}
spec:
  apiMigrationRules:
  - apiGroup: example.com
    resource: widgets
    kind: Widget
    fromVersion: v1
    toVersion: v2
    transformations:
    - {path: metadata.labels.converted, action: set, value: "yes"}
  - apiGroup: example.com
    resource: widgets
    kind: Widget
    fromVersion: v1
    toVersion: v3
    transformations:
    - {path: metadata.name, action: rename, targetPath: metadata.generateName}
  - apiGroup: example.com
    resource: widgets
    kind: Widget
    fromVersion: v1
    toVersion: v4
    transformations:
    - {path: metadata.uid, action: set, value: forged}
  - apiGroup: example.com
    resource: widgets
    kind: Widget
    fromVersion: v1
    toVersion: v5
    transformations:
    - {action: jq, forward: '.kind = "Gadget"', reverse: '.kind = "Widget"'}
  - apiGroup: example.com
    resource: widgets
    kind: Widget
    fromVersion: v1
    toVersion: v6
    transformations:
    - {path: 'metadata.ownerReferences[*].name', action: set, value: other}
`

func TestHandler_Contract(t *testing.T) {
	s := newTestHandler(t, loadConverter(t, rulesFile(t, contractRules), engine.Options{}), HandlerOptions{})
	obj := func() map[string]any {
		o := widget("v1", "a")
		o["metadata"].(map[string]any)["ownerReferences"] = []any{map[string]any{"name": "owner", "uid": "o1", "kind": "Thing", "apiVersion": "v1"}}
		return o
	}
	// Labels may change.
	code, rev, raw := s.post(t, reviewBody(t, reviewV1, "u", "example.com/v2", obj()))
	if code != http.StatusOK || rev.Response.Result.Status != metav1.StatusSuccess {
		t.Fatalf("a label set by a rule: %s", raw)
	}
	for _, tc := range []struct {
		to   string
		says []string
	}{
		{"v3", []string{"objects[0] ns/a", "metadata fields changed"}},
		{"v4", []string{"objects[0] ns/a", "metadata.uid changed"}},
		{"v5", []string{"objects[0] ns/a", `kind changed from "Widget" to "Gadget"`}},
		{"v6", []string{"objects[0] ns/a", "metadata.ownerReferences changed"}},
	} {
		t.Run(tc.to, func(t *testing.T) {
			msg := s.failure(t, reviewBody(t, reviewV1, "u", "example.com/"+tc.to, obj()), ReasonContract)
			wantContains(t, msg, tc.says...)
		})
	}
}

func TestHandler_BadRequests(t *testing.T) {
	s := newTestHandler(t, loadConverter(t, widgetRules, engine.Options{}), HandlerOptions{MaxRequestBytes: 4096})
	for name, tc := range map[string]struct {
		body string
		code int
	}{
		"not JSON":       {"{", http.StatusBadRequest},
		"not an object":  {"[]", http.StatusBadRequest},
		"other kind":     {`{"apiVersion":"apiextensions.k8s.io/v1","kind":"AdmissionReview","request":{"uid":"u"}}`, http.StatusBadRequest},
		"other version":  {`{"apiVersion":"apiextensions.k8s.io/v2","kind":"ConversionReview","request":{"uid":"u"}}`, http.StatusBadRequest},
		"no request":     {`{"apiVersion":"apiextensions.k8s.io/v1","kind":"ConversionReview"}`, http.StatusBadRequest},
		"no uid":         {`{"apiVersion":"apiextensions.k8s.io/v1","kind":"ConversionReview","request":{"desiredAPIVersion":"example.com/v1"}}`, http.StatusBadRequest},
		"bad desired":    {`{"apiVersion":"apiextensions.k8s.io/v1","kind":"ConversionReview","request":{"uid":"u","desiredAPIVersion":"a/b/c"}}`, http.StatusBadRequest},
		"objects object": {`{"apiVersion":"apiextensions.k8s.io/v1","kind":"ConversionReview","request":{"uid":"u","desiredAPIVersion":"example.com/v1","objects":{}}}`, http.StatusBadRequest},
		"oversized":      {`{"apiVersion":"apiextensions.k8s.io/v1","kind":"ConversionReview","request":{"uid":"u","desiredAPIVersion":"example.com/v1","objects":[` + strings.Repeat(`{},`, 2000) + `{}]}}`, http.StatusRequestEntityTooLarge},
	} {
		t.Run(name, func(t *testing.T) {
			code, _, raw := s.post(t, []byte(tc.body))
			if code != tc.code {
				t.Fatalf("code %d, want %d: %s", code, tc.code, raw)
			}
			var st metav1.Status
			if err := json.Unmarshal(raw, &st); err != nil || st.Kind != "Status" || int(st.Code) != tc.code || st.Message == "" {
				t.Errorf("want a metav1.Status with code %d: %s", tc.code, raw)
			}
		})
	}
	rec := httptest.NewRecorder()
	s.h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/convert", nil))
	if rec.Code != http.StatusMethodNotAllowed {
		t.Errorf("GET: %d, want 405", rec.Code)
	}
}

func TestHandler_FailuresOfTheReview(t *testing.T) {
	s := newTestHandler(t, loadConverter(t, widgetRules, engine.Options{}), HandlerOptions{})
	msg := s.failure(t, reviewBody(t, reviewV1, "u", "example.com/v9", widget("v1alpha1", "a")), ReasonNoPath)
	wantContains(t, msg, "objects[0] ns/a", "v9")
	gadget := widget("v1alpha1", "g")
	gadget["kind"] = "Gadget"
	msg = s.failure(t, reviewBody(t, reviewV1, "u", "example.com/v1", widget("v1alpha1", "a"), gadget), ReasonOtherKind)
	wantContains(t, msg, "objects[1] ns/g", "Gadget")
	other := widget("v1alpha1", "o")
	other["apiVersion"] = "other.example.com/v1alpha1"
	msg = s.failure(t, reviewBody(t, reviewV1, "u", "example.com/v1", other), ReasonOtherKind)
	wantContains(t, msg, "objects[0] ns/o", "keeps the group")
	noMeta := widget("v1alpha1", "m")
	delete(noMeta, "metadata")
	s.failure(t, reviewBody(t, reviewV1, "u", "example.com/v1", noMeta), ReasonMalformed)
	body := []byte(`{"apiVersion":"apiextensions.k8s.io/v1","kind":"ConversionReview","request":{"uid":"u","desiredAPIVersion":"example.com/v1","objects":[1]}}`)
	wantContains(t, s.failure(t, body, ReasonMalformed), "objects[0]", "not a JSON object")
}

func TestHandler_TenThousandObjectsFail(t *testing.T) {
	s := newTestHandler(t, loadConverter(t, widgetRules, engine.Options{}), HandlerOptions{})
	objs := make([]string, 10000)
	for i := range objs {
		objs[i] = fmt.Sprintf(`{"apiVersion":"example.com/v1alpha1","kind":"Widget","metadata":{"name":"w%d"},"spec":{"size":1}}`, i)
	}
	body := `{"apiVersion":"apiextensions.k8s.io/v1","kind":"ConversionReview","request":{"uid":"u","desiredAPIVersion":"example.com/v1","objects":[` + strings.Join(objs, ",") + `]}}`
	msg := s.failure(t, []byte(body), ReasonTooManyObjects)
	wantContains(t, msg, "10000 objects", "5000")
}

const loopRules = `apiVersion: mvp.k8s.io/v1
kind: TransformationRules
metadata: {name: loop}
spec:
  apiMigrationRules:
  - apiGroup: example.com
    resource: widgets
    kind: Widget
    fromVersion: v1
    toVersion: v2
    transformations:
    - {action: jq, forward: 'until(false; .)', reverse: '.'}
`

func TestHandler_LoopingProgramFailsInTime(t *testing.T) {
	conv := loadConverter(t, rulesFile(t, loopRules), engine.Options{ProgramTimeout: 50 * time.Millisecond})
	s := newTestHandler(t, conv, HandlerOptions{})
	msg := s.failure(t, reviewBody(t, reviewV1, "u", "example.com/v2", widget("v1", "a"), widget("v1", "b")), ReasonTimeout)
	wantContains(t, msg, "objects[0] ns/a", conv.Rules()[0].Rule.ID(), "did not finish")
}

func TestHandler_NotReady(t *testing.T) {
	s := newTestHandler(t, nil, HandlerOptions{})
	s.failure(t, reviewBody(t, reviewV1, "u", "example.com/v1", widget("v1alpha1", "a")), ReasonNotReady)
}

func TestHandler_MetricsLabelsAreBounded(t *testing.T) {
	s := newTestHandler(t, loadConverter(t, widgetRules, engine.Options{}), HandlerOptions{})
	s.post(t, reviewBody(t, reviewV1, "u", "example.com/v1", widget("v1alpha1", "a")))
	other := widget("v1alpha1", "o")
	other["apiVersion"], other["kind"] = "random.example/v7", "Random"
	s.post(t, reviewBody(t, reviewV1, "u", "random.example/v8", other))
	families, err := s.reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, f := range families {
		if f.GetName() != "mvpctl_webhook_review_objects" {
			continue
		}
		for _, m := range f.GetMetric() {
			var l []string
			for _, p := range m.GetLabel() {
				l = append(l, p.GetName()+"="+p.GetValue())
			}
			got = append(got, strings.Join(l, ","))
		}
	}
	want := []string{"crd=other,from=other,to=other", "crd=widgets.example.com,from=v1alpha1,to=v1"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("review_objects series (-want +got):\n%s", diff)
	}
	if n := testutil.CollectAndCount(s.metrics.duration); n != 2 {
		t.Errorf("review_duration_seconds: %d series, want 2", n)
	}
}

// A round-trip annotation is anyone's to write: a bad one costs that
// object its round trip, never the review around it.
func TestHandler_BadRoundTripAnnotationIsIgnored(t *testing.T) {
	s := newTestHandler(t, loadConverter(t, widgetRules, engine.Options{}), HandlerOptions{})
	bad := widget("v1", "bad")
	bad["metadata"].(map[string]any)["annotations"] = map[string]any{"mvp.k8s.io/conversion-data": "{not json"}
	code, rev, raw := s.post(t, reviewBody(t, reviewV1, "u", "example.com/v1alpha1", widget("v1", "a"), bad))
	if code != http.StatusOK || rev.Response.Result.Status != metav1.StatusSuccess || len(rev.Response.ConvertedObjects) != 2 {
		t.Fatalf("code %d: %s", code, raw)
	}
}

// TestHandler_ConcurrentReviewsAreBounded: with every slot held (a body
// that does not arrive), a review waits for its deadline and gets 429.
func TestHandler_ConcurrentReviewsAreBounded(t *testing.T) {
	s := newTestHandler(t, loadConverter(t, widgetRules, engine.Options{}), HandlerOptions{MaxConcurrentReviews: 1, ReviewTimeout: 200 * time.Millisecond})
	h := s.h.(*handler)
	slow, hold := io.Pipe()
	first := make(chan int, 1)
	go func() {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, "/convert", slow))
		first <- rec.Code
	}()
	err := wait.PollUntilContextTimeout(context.Background(), 5*time.Millisecond, time.Minute, true, func(context.Context) (bool, error) {
		return len(h.slots) == 1, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	code, _, raw := s.post(t, reviewBody(t, reviewV1, "u", "example.com/v1", widget("v1alpha1", "a")))
	if code != http.StatusTooManyRequests {
		t.Errorf("code %d, want 429: %s", code, raw)
	}
	hold.CloseWithError(errors.New("client gone"))
	if code := <-first; code != http.StatusBadRequest {
		t.Errorf("the cut-off review: %d, want 400", code)
	}
}
