package emulation

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/mvpctl/mvpctl/engine/proxy/internal/proxytest"
)

// patchEmulated sends a patch of the emulated version of object a.
func patchEmulated(t *testing.T, url, contentType, patch string) (int, metav1.Status, []byte) {
	t.Helper()
	code, _, body := proxytest.Do(t, nil, proxytest.NewRequest(t, "PATCH", url+"/apis/myapps.example.com/v1alpha1/namespaces/ns/customresources/a", patch, "Content-Type", contentType))
	var st metav1.Status
	if code != http.StatusOK {
		if err := json.Unmarshal(body, &st); err != nil || st.Kind != "Status" {
			t.Fatalf("%d is not a Status: %s", code, body)
		}
	}
	return code, st, body
}

// TestEmulation_JSONPatchCopyBombIsRefused: copy operations that double
// spec again and again stop at kube-apiserver's limit on the bytes copies
// add, with its 422, before the object is built, and nothing is written.
func TestEmulation_JSONPatchCopyBombIsRefused(t *testing.T) {
	padded := strings.Replace(proxytest.ServedObject, `"stateManagement":"stateless"`, `"stateManagement":"stateless","pad":"`+strings.Repeat("x", 200)+`"`, 1)
	s := newStore(t, padded)
	url := serveEmulation(t, s.handle)
	var ops []string
	for i := 0; i < 18; i++ { // unbounded: 2^18 copies of spec, 60 MB
		ops = append(ops, fmt.Sprintf(`{"op":"copy","from":"/spec","path":"/spec/c%d"}`, i))
	}
	code, st, body := patchEmulated(t, url, "application/json-patch+json", "["+strings.Join(ops, ",")+"]")
	if code != http.StatusUnprocessableEntity || st.Reason != metav1.StatusReasonInvalid {
		t.Errorf("%d %.300s", code, body)
	}
	if writes, verbs, _ := s.snapshot(); writes != 0 {
		t.Errorf("%d writes: %q", writes, verbs)
	}
}

// TestEmulation_JSONPatchTooManyOperations: kube-apiserver's limit of
// 10,000 operations, its 413, before the object is read.
func TestEmulation_JSONPatchTooManyOperations(t *testing.T) {
	s := newStore(t, proxytest.ServedObject)
	url := serveEmulation(t, s.handle)
	patch := "[" + strings.Repeat(`{"op":"test","path":"/kind","value":"Customresource"},`, 10000) + `{"op":"test","path":"/kind","value":"Customresource"}]`
	code, st, body := patchEmulated(t, url, "application/json-patch+json", patch)
	if code != http.StatusRequestEntityTooLarge || st.Reason != metav1.StatusReasonRequestEntityTooLarge ||
		st.Message != "Request entity too large: The allowed maximum operations in a JSON patch is 10000, got 10001" {
		t.Errorf("%d %s", code, body)
	}
	if _, verbs, _ := s.snapshot(); len(verbs) != 0 {
		t.Errorf("the backend got %q", verbs)
	}
}

// TestEmulation_PatchedObjectOverTheBodyLimit: the patched object is what
// would be written: past the request body limit it is refused with the
// apiserver's 413, for any patch type.
func TestEmulation_PatchedObjectOverTheBodyLimit(t *testing.T) {
	s := newStore(t, strings.Replace(proxytest.ServedObject, `"stateManagement":"stateless"`, `"stateManagement":"stateless","pad":"`+strings.Repeat("x", 2000)+`"`, 1))
	e := startEmulation(t, config{handler: s.handle, opts: Options{MaxRequestBodyBytes: 4096}})
	for _, tc := range []struct{ contentType, patch string }{
		{"application/merge-patch+json", `{"spec":{"more":"` + strings.Repeat("y", 3000) + `"}}`},
		{"application/json-patch+json", `[{"op":"copy","from":"/spec/pad","path":"/spec/pad2"},{"op":"copy","from":"/spec/pad","path":"/spec/pad3"}]`},
	} {
		code, st, body := patchEmulated(t, e.url, tc.contentType, tc.patch)
		if code != http.StatusRequestEntityTooLarge || st.Reason != metav1.StatusReasonRequestEntityTooLarge || st.Message != "Request entity too large: limit is 4096" {
			t.Errorf("%s: %d %s", tc.contentType, code, body)
		}
	}
	if writes, verbs, _ := s.snapshot(); writes != 0 {
		t.Errorf("%d writes: %q", writes, verbs)
	}
}

// TestEmulation_PatchIsSentAsAJSONPatchTestingTheResourceVersion: the
// served version gets a PATCH (RBAC sees verb patch, as for a real patch),
// a JSON patch whose first operation tests the resourceVersion read and
// whose others change only what the client's patch changed.
func TestEmulation_PatchIsSentAsAJSONPatchTestingTheResourceVersion(t *testing.T) {
	s := newStore(t, proxytest.ServedObject)
	url := serveEmulation(t, s.handle)
	code, _, body := patchEmulated(t, url, "application/merge-patch+json", `{"spec":{"config":{"legacyTimeout":60}}}`)
	if code != http.StatusOK {
		t.Fatalf("%d %s", code, body)
	}
	proxytest.SameJSON(t, strings.Replace(strings.Replace(proxytest.ClientObject, `"legacyTimeout":30`, `"legacyTimeout":60`, 1), `"resourceVersion":"42"`, `"resourceVersion":"43"`, 1), string(body))
	_, verbs, _ := s.snapshot()
	if strings.Join(verbs, ", ") != "GET, PATCH application/json-patch+json" {
		t.Fatalf("the backend got %q", verbs)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	proxytest.SameJSON(t, `[{"op":"test","path":"/metadata/resourceVersion","value":"42"},{"op":"replace","path":"/spec/config/requestTimeoutSeconds","value":60}]`, s.patches[0])
}

// TestEmulation_PatchNullingTheResourceVersionKeepsAConcurrentChange: a
// patch that removes metadata.resourceVersion has no precondition of its
// own, but the write still cannot overwrite what another writer changed
// between the read and the write: the test of the resourceVersion fails,
// and the patch is applied again to the new object.
func TestEmulation_PatchNullingTheResourceVersionKeepsAConcurrentChange(t *testing.T) {
	s := newStore(t, proxytest.ServedObject)
	s.conflicts = 1
	s.concurrent = func(obj map[string]any) { obj["spec"].(map[string]any)["stateManagement"] = "durable" }
	url := serveEmulation(t, s.handle)
	code, _, body := patchEmulated(t, url, "application/merge-patch+json", `{"metadata":{"resourceVersion":null},"spec":{"config":{"legacyTimeout":60}}}`)
	if code != http.StatusOK {
		t.Fatalf("%d %s", code, body)
	}
	writes, verbs, obj := s.snapshot()
	spec, _ := json.Marshal(obj["spec"])
	proxytest.SameJSON(t, `{"config":{"requestTimeoutSeconds":60},"stateManagement":"durable"}`, string(spec))
	if writes != 2 {
		t.Errorf("%d writes: %q", writes, verbs)
	}
}

// TestEmulation_PatchFailureOfAnUnchangedObjectIsTheClients: a write that
// fails although nothing changed the object is answered, not retried.
func TestEmulation_PatchFailureOfAnUnchangedObjectIsTheClients(t *testing.T) {
	s := newStore(t, proxytest.ServedObject)
	url := serveEmulation(t, func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPatch {
			s.mu.Lock()
			s.verbs = append(s.verbs, r.Method)
			s.mu.Unlock()
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusUnprocessableEntity)
			io.WriteString(w, `{"kind":"Status","apiVersion":"v1","status":"Failure","reason":"Invalid","code":422,"message":"Customresource.myapps.example.com \"a\" is invalid: spec.config.requestTimeoutSeconds: Invalid value: 60: must be less than or equal to 50"}`)
			return
		}
		s.handle(w, r)
	})
	code, st, body := patchEmulated(t, url, "application/merge-patch+json", `{"spec":{"config":{"legacyTimeout":60}}}`)
	if code != http.StatusUnprocessableEntity || !strings.Contains(st.Message, "must be less than or equal to 50") {
		t.Errorf("%d %s", code, body)
	}
	if _, verbs, _ := s.snapshot(); strings.Join(verbs, ", ") != "GET, PATCH, GET" {
		t.Errorf("the backend got %q", verbs)
	}
}
