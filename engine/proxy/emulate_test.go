package proxy

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/google/go-cmp/cmp"
	jsonpatch "gopkg.in/evanphx/json-patch.v4"

	"github.com/mvpctl/mvpctl/engine"
)

const seedRules = `apiVersion: mvp.k8s.io/v1
kind: TransformationRules
metadata: {name: seed}
spec:
  apiMigrationRules:
  - apiGroup: myapps.example.com
    resource: customresources
    fromVersion: v1alpha1
    toVersion: v1beta1
    transformations:
    - {path: spec.config.legacyTimeout, action: rename,
       targetPath: spec.config.requestTimeoutSeconds, type: integer}
    - {path: spec.stateManagement, action: modify,
       matchValue: ephemeral, replaceValue: stateless}
`

func seedConverter(t *testing.T) *engine.Converter {
	t.Helper()
	path := filepath.Join(t.TempDir(), "rules.yaml")
	if err := os.WriteFile(path, []byte(seedRules), 0o644); err != nil {
		t.Fatal(err)
	}
	c, err := engine.Load(engine.Options{}, path)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// servedObject is a v1beta1 object as the apiserver stores it.
const servedObject = `{"apiVersion":"myapps.example.com/v1beta1","kind":"Customresource","metadata":{"name":"a","namespace":"ns","resourceVersion":"42","generation":9223372036854775807,"managedFields":[{"manager":"kubectl","operation":"Apply","apiVersion":"myapps.example.com/v1beta1","fieldsType":"FieldsV1","fieldsV1":{"f:spec":{}}}]},"spec":{"config":{"requestTimeoutSeconds":30},"stateManagement":"stateless"}}`

// clientObject is the same object in v1alpha1.
const clientObject = `{"apiVersion":"myapps.example.com/v1alpha1","kind":"Customresource","metadata":{"name":"a","namespace":"ns","resourceVersion":"42","generation":9223372036854775807,"managedFields":[{"manager":"kubectl","operation":"Apply","apiVersion":"myapps.example.com/v1beta1","fieldsType":"FieldsV1","fieldsV1":{"f:spec":{}}}]},"spec":{"config":{"legacyTimeout":30},"stateManagement":"ephemeral"}}`

func emulationProxy(t *testing.T, h http.HandlerFunc) (*Proxy, string, *fakeAPIServer) {
	t.Helper()
	f := newFake(t, "a", "v1.36.3", "myapps.example.com/v1beta1/customresources", "myapps.example.com/v1beta1/customresources/status")
	f.setHandler(h)
	p, srv := startProxy(t, Options{Converter: seedConverter(t)}, f)
	return p, srv.URL, f
}

func sameJSON(t *testing.T, want, got string) {
	t.Helper()
	var w, g any
	if err := json.Unmarshal([]byte(want), &w); err != nil {
		t.Fatalf("want: %v: %s", err, want)
	}
	if err := json.Unmarshal([]byte(got), &g); err != nil {
		t.Fatalf("got: %v: %s", err, got)
	}
	if diff := cmp.Diff(w, g); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

func TestEmulation_DiscoveryListsEmulatedVersionLast(t *testing.T) {
	_, url, _ := emulationProxy(t, nil)
	req, _ := http.NewRequest("GET", url+"/apis", nil)
	req.Header.Set("Accept", aggregatedAccept)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var list struct {
		Items []struct {
			Metadata struct{ Name string }
			Versions []struct {
				Version   string
				Resources []struct {
					Resource     string
					ResponseKind struct{ Group, Version, Kind string }
					Verbs        []string
					Subresources []struct{ Subresource string }
				}
			}
		}
	}
	if err := json.NewDecoder(resp.Body).Decode(&list); err != nil {
		t.Fatal(err)
	}
	var versions []string
	for _, g := range list.Items {
		if g.Metadata.Name != "myapps.example.com" {
			continue
		}
		for _, v := range g.Versions {
			versions = append(versions, v.Version)
			if v.Version == "v1alpha1" {
				r := v.Resources[0]
				if r.Resource != "customresources" || r.ResponseKind.Version != "v1alpha1" || r.ResponseKind.Kind != "Customresource" || len(r.Verbs) != 7 || len(r.Subresources) != 1 {
					t.Errorf("emulated resource: %+v", r)
				}
			}
		}
	}
	if diff := cmp.Diff([]string{"v1beta1", "v1alpha1"}, versions); diff != "" {
		t.Errorf("versions (-want +got):\n%s", diff)
	}
	code, _, body := doJSON(t, "GET", url+"/apis/myapps.example.com/v1alpha1", "")
	if code != 200 || !strings.Contains(string(body), `"groupVersion":"myapps.example.com/v1alpha1"`) || !strings.Contains(string(body), `"name":"customresources"`) {
		t.Errorf("legacy discovery: %d %s", code, body)
	}
	code, _, body = doJSON(t, "GET", url+"/apis/myapps.example.com", "")
	if code != 200 || !strings.Contains(string(body), `"preferredVersion":{"groupVersion":"myapps.example.com/v1beta1"`) {
		t.Errorf("the emulated version must not be preferred: %d %s", code, body)
	}
}

func TestEmulation_GetRewritesURLAndConvertsResponse(t *testing.T) {
	var gotPath, gotAccept string
	p, url, _ := emulationProxy(t, func(w http.ResponseWriter, r *http.Request) {
		gotPath, gotAccept = r.URL.Path, r.Header.Get("Accept")
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, servedObject)
	})
	req, _ := http.NewRequest("GET", url+"/apis/myapps.example.com/v1alpha1/namespaces/ns/customresources/a", nil)
	req.Header.Set("Accept", "application/vnd.kubernetes.protobuf, application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "application/json" {
		t.Fatalf("%d %s: %s", resp.StatusCode, resp.Header.Get("Content-Type"), body)
	}
	if gotPath != "/apis/myapps.example.com/v1beta1/namespaces/ns/customresources/a" || gotAccept != "application/json" {
		t.Errorf("backend got %s with Accept %q", gotPath, gotAccept)
	}
	sameJSON(t, clientObject, string(body))
	if !strings.Contains(string(body), "9223372036854775807") {
		t.Errorf("int64 not exact: %s", body)
	}
	// Counted once, as emulated, under the version the client asked for.
	if e, l, v := counterValue(t, p, "decision", "emulated"), counterValue(t, p, "decision", "local"), counterValue(t, p, "version", "v1alpha1"); e != 1 || l != 0 || v != 1 {
		t.Errorf("requests counted: emulated %v, local %v, v1alpha1 %v", e, l, v)
	}
}

func TestEmulation_ProtobufOnlyIs406(t *testing.T) {
	var hits atomic.Int64
	_, url, _ := emulationProxy(t, func(w http.ResponseWriter, r *http.Request) { hits.Add(1) })
	req, _ := http.NewRequest("GET", url+"/apis/myapps.example.com/v1alpha1/namespaces/ns/customresources/a", nil)
	req.Header.Set("Accept", "application/vnd.kubernetes.protobuf")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusNotAcceptable || !strings.Contains(string(body), `"reason":"NotAcceptable"`) || !strings.Contains(string(body), "application/json") {
		t.Errorf("%d %s", resp.StatusCode, body)
	}
	if hits.Load() != 0 {
		t.Errorf("the backend was asked")
	}
}

func TestEmulation_CreateConvertsBodyForward(t *testing.T) {
	var got string
	_, url, _ := emulationProxy(t, func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		got = string(b)
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusCreated)
		w.Write(b)
	})
	in := `{"apiVersion":"myapps.example.com/v1alpha1","kind":"Customresource","metadata":{"name":"a","namespace":"ns"},"spec":{"config":{"legacyTimeout":30},"stateManagement":"ephemeral"}}`
	code, _, body := doJSON(t, "POST", url+"/apis/myapps.example.com/v1alpha1/namespaces/ns/customresources", in)
	if code != http.StatusCreated {
		t.Fatalf("%d %s", code, body)
	}
	sameJSON(t, `{"apiVersion":"myapps.example.com/v1beta1","kind":"Customresource","metadata":{"name":"a","namespace":"ns"},"spec":{"config":{"requestTimeoutSeconds":30},"stateManagement":"stateless"}}`, got)
	sameJSON(t, in, string(body))

	// Without apiVersion and kind the body takes the URL's, as in the apiserver.
	code, _, body = doJSON(t, "POST", url+"/apis/myapps.example.com/v1alpha1/namespaces/ns/customresources", `{"metadata":{"name":"b"},"spec":{"config":{"legacyTimeout":5}}}`)
	if code != http.StatusCreated {
		t.Fatalf("%d %s", code, body)
	}
	sameJSON(t, `{"apiVersion":"myapps.example.com/v1beta1","kind":"Customresource","metadata":{"name":"b"},"spec":{"config":{"requestTimeoutSeconds":5}}}`, got)
}

func TestEmulation_InvalidBodies(t *testing.T) {
	var hits atomic.Int64
	_, url, _ := emulationProxy(t, func(w http.ResponseWriter, r *http.Request) { hits.Add(1) })
	for _, tc := range []struct {
		name, body string
		code       int
		want       string
	}{
		{"not JSON", `{"apiVersion":`, 400, "not a JSON object"},
		{"other version", `{"apiVersion":"myapps.example.com/v1beta1","kind":"Customresource","metadata":{"name":"a"}}`, 400, "this URL takes myapps.example.com/v1alpha1"},
		{"no kind", `{"apiVersion":"myapps.example.com/v1alpha1","metadata":{"name":"a"}}`, 400, "this URL takes"},
		{"conversion fails", `{"apiVersion":"myapps.example.com/v1alpha1","kind":"Customresource","metadata":{"name":"a"},"spec":{"config":{"legacyTimeout":"soon"}}}`, 400, "cannot be handled as a Customresource: version emulation: converting Customresource a (myapps.example.com/v1alpha1) forward"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, _, body := doJSON(t, "POST", url+"/apis/myapps.example.com/v1alpha1/namespaces/ns/customresources", tc.body)
			if code != tc.code || !strings.Contains(string(body), tc.want) || !strings.Contains(string(body), `"kind":"Status"`) {
				t.Errorf("%d %s", code, body)
			}
		})
	}
	if hits.Load() != 0 {
		t.Errorf("%d requests reached the backend", hits.Load())
	}
}

func TestEmulation_ConversionErrorNamesRuleDirectionAndPath(t *testing.T) {
	_, url, _ := emulationProxy(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"apiVersion":"myapps.example.com/v1beta1","kind":"Customresource","metadata":{"name":"a"},"spec":{"config":{"requestTimeoutSeconds":{"x":1}}}}`)
	})
	code, _, body := doJSON(t, "GET", url+"/apis/myapps.example.com/v1alpha1/namespaces/ns/customresources/a", "")
	t.Logf("%s", body)
	if code != 500 || !strings.Contains(string(body), "reverse") || !strings.Contains(string(body), "requestTimeoutSeconds") || !strings.Contains(string(body), "rule") {
		t.Errorf("%d %s", code, body)
	}
}

func TestEmulation_ListIsConvertedItemByItem(t *testing.T) {
	_, url, _ := emulationProxy(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"kind":"CustomresourceList","apiVersion":"myapps.example.com/v1beta1","metadata":{"resourceVersion":"7","continue":"abc"},"items":[%s,%s]}`, servedObject, servedObject)
	})
	code, _, body := doJSON(t, "GET", url+"/apis/myapps.example.com/v1alpha1/customresources?limit=2", "")
	if code != 200 {
		t.Fatalf("%d %s", code, body)
	}
	sameJSON(t, fmt.Sprintf(`{"kind":"CustomresourceList","apiVersion":"myapps.example.com/v1alpha1","metadata":{"resourceVersion":"7","continue":"abc"},"items":[%s,%s]}`, clientObject, clientObject), string(body))
}

func TestEmulation_TableRowsObjectsAreConverted(t *testing.T) {
	var accept string
	_, url, _ := emulationProxy(t, func(w http.ResponseWriter, r *http.Request) {
		accept = r.Header.Get("Accept")
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"kind":"Table","apiVersion":"meta.k8s.io/v1","metadata":{"resourceVersion":"7"},"columnDefinitions":[{"name":"Name","type":"string"}],"rows":[{"cells":["a"],"object":%s},{"cells":["b"],"object":{"kind":"PartialObjectMetadata","apiVersion":"meta.k8s.io/v1","metadata":{"name":"b"}}}]}`, servedObject)
	})
	req, _ := http.NewRequest("GET", url+"/apis/myapps.example.com/v1alpha1/customresources?includeObject=Object", nil)
	req.Header.Set("Accept", "application/json;as=Table;v=v1;g=meta.k8s.io,application/vnd.kubernetes.protobuf;as=Table;v=v1;g=meta.k8s.io,application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if accept != "application/json;as=Table;v=v1;g=meta.k8s.io,application/json" {
		t.Errorf("backend Accept %q", accept)
	}
	sameJSON(t, fmt.Sprintf(`{"kind":"Table","apiVersion":"meta.k8s.io/v1","metadata":{"resourceVersion":"7"},"columnDefinitions":[{"name":"Name","type":"string"}],"rows":[{"cells":["a"],"object":%s},{"cells":["b"],"object":{"kind":"PartialObjectMetadata","apiVersion":"meta.k8s.io/v1","metadata":{"name":"b"}}}]}`, clientObject), string(body))
}

func TestEmulation_WatchIsConvertedEventByEvent(t *testing.T) {
	release := make(chan struct{})
	_, url, _ := emulationProxy(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, "{\"type\":\"ADDED\",\"object\":%s}\n", servedObject)
		w.(http.Flusher).Flush()
		<-release
		fmt.Fprintf(w, "{\"type\":\"BOOKMARK\",\"object\":{\"kind\":\"Customresource\",\"apiVersion\":\"myapps.example.com/v1beta1\",\"metadata\":{\"resourceVersion\":\"50\",\"annotations\":{\"k8s.io/initial-events-end\":\"true\"}}}}\n")
		io.WriteString(w, `{"type":"ERROR","object":{"kind":"Status","apiVersion":"v1","status":"Failure","message":"too old resource version","reason":"Expired","code":410}}`+"\n")
	})
	resp, err := http.Get(url + "/apis/myapps.example.com/v1alpha1/customresources?watch=true")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(nil, 1<<20)
	if !sc.Scan() {
		t.Fatalf("no first event: %v", sc.Err())
	}
	// The first event arrives before the backend sends the next one.
	sameJSON(t, fmt.Sprintf(`{"type":"ADDED","object":%s}`, clientObject), sc.Text())
	close(release)
	var rest []string
	for sc.Scan() {
		rest = append(rest, sc.Text())
	}
	if len(rest) != 2 {
		t.Fatalf("events: %q", rest)
	}
	sameJSON(t, `{"type":"BOOKMARK","object":{"kind":"Customresource","apiVersion":"myapps.example.com/v1alpha1","metadata":{"resourceVersion":"50","annotations":{"k8s.io/initial-events-end":"true"}}}}`, rest[0])
	sameJSON(t, `{"type":"ERROR","object":{"kind":"Status","apiVersion":"v1","status":"Failure","message":"too old resource version","reason":"Expired","code":410}}`, rest[1])
}

func TestEmulation_StatusPassesThrough(t *testing.T) {
	notFound := `{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"customresources.myapps.example.com \"a\" not found","reason":"NotFound","details":{"name":"a","group":"myapps.example.com","kind":"customresources"},"code":404}`
	_, url, _ := emulationProxy(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(404)
		io.WriteString(w, notFound)
	})
	code, _, body := doJSON(t, "GET", url+"/apis/myapps.example.com/v1alpha1/namespaces/ns/customresources/a", "")
	if code != 404 {
		t.Fatalf("%d", code)
	}
	sameJSON(t, notFound, string(body))
}

func TestEmulation_FieldSelectors(t *testing.T) {
	var query string
	_, url, _ := emulationProxy(t, func(w http.ResponseWriter, r *http.Request) {
		query = r.URL.Query().Get("fieldSelector")
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"kind":"CustomresourceList","apiVersion":"myapps.example.com/v1beta1","metadata":{},"items":[]}`)
	})
	code, _, body := doJSON(t, "GET", url+"/apis/myapps.example.com/v1alpha1/customresources?fieldSelector=metadata.name%3Da,spec.config.legacyTimeout%3D30", "")
	if code != 200 || query != "metadata.name=a,spec.config.requestTimeoutSeconds=30" {
		t.Errorf("%d %s; backend got %q", code, body, query)
	}
	code, _, body = doJSON(t, "GET", url+"/apis/myapps.example.com/v1alpha1/customresources?fieldSelector=spec.stateManagement%3Dephemeral", "")
	if code != 400 || !strings.Contains(string(body), "spec.stateManagement") || !strings.Contains(string(body), "modify") {
		t.Errorf("%d %s", code, body)
	}
}

// store is a fake backend holding one v1beta1 object with kube-apiserver's
// optimistic concurrency, for the read-convert-patch-convert-write path:
// GET, PUT (a resourceVersion in the body is a precondition) and PATCH
// (JSON and merge patches with the apiserver's json-patch; a patched
// resourceVersion other than the current one is a conflict).
type store struct {
	mu  sync.Mutex
	obj map[string]any
	rv  int
	// conflicts is the number of writes before which another writer
	// changes the object (concurrent, or just its resourceVersion).
	conflicts  int
	concurrent func(obj map[string]any)
	verbs      []string // each request's method, and a PATCH's content type
	writes     int
	patches    []string // the bodies of the PATCHes
}

func (s *store) handle(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	verb := r.Method
	if r.Method == http.MethodPatch {
		verb += " " + r.Header.Get("Content-Type")
	}
	s.verbs = append(s.verbs, verb)
	if r.Method == http.MethodGet {
		b, _ := json.Marshal(s.obj)
		w.Write(b)
		return
	}
	if r.Method != http.MethodPut && r.Method != http.MethodPatch {
		w.WriteHeader(http.StatusMethodNotAllowed)
		return
	}
	s.writes++
	if s.conflicts > 0 {
		s.conflicts--
		if s.concurrent != nil {
			s.concurrent(s.obj)
		}
		s.rv++
		s.obj["metadata"].(map[string]any)["resourceVersion"] = fmt.Sprint(s.rv)
	}
	body, _ := io.ReadAll(r.Body)
	in, code := s.written(r, body)
	if code == 0 {
		if rv, _ := in["metadata"].(map[string]any)["resourceVersion"].(string); rv != "" && rv != fmt.Sprint(s.rv) {
			code = http.StatusConflict
		}
	}
	switch code {
	case http.StatusConflict:
		w.WriteHeader(code)
		io.WriteString(w, `{"kind":"Status","apiVersion":"v1","status":"Failure","reason":"Conflict","code":409,"message":"the object has been modified"}`)
		return
	case http.StatusUnprocessableEntity:
		w.WriteHeader(code)
		io.WriteString(w, `{"kind":"Status","apiVersion":"v1","status":"Failure","reason":"Invalid","code":422,"message":"the server rejected our request due to an error in our request"}`)
		return
	}
	s.rv++
	in["metadata"].(map[string]any)["resourceVersion"] = fmt.Sprint(s.rv)
	s.obj = in
	b, _ := json.Marshal(s.obj)
	w.Write(b)
}

// written is the object a PUT or PATCH would write, or the error code.
func (s *store) written(r *http.Request, body []byte) (map[string]any, int) {
	if r.Method == http.MethodPut {
		in, err := engine.DecodeObject(body)
		if err != nil {
			return nil, http.StatusBadRequest
		}
		return in, 0
	}
	s.patches = append(s.patches, string(body))
	cur, _ := json.Marshal(s.obj)
	var out []byte
	var err error
	switch r.Header.Get("Content-Type") {
	case "application/json-patch+json":
		var p jsonpatch.Patch
		if p, err = jsonpatch.DecodePatch(body); err == nil {
			out, err = p.Apply(cur)
		}
	case "application/merge-patch+json":
		out, err = jsonpatch.MergePatch(cur, body)
	default:
		return nil, http.StatusUnsupportedMediaType
	}
	if err != nil {
		return nil, http.StatusUnprocessableEntity
	}
	in, err := engine.DecodeObject(out)
	if err != nil {
		return nil, http.StatusUnprocessableEntity
	}
	return in, 0
}

func TestEmulation_PatchesReadConvertPatchConvertAndPatch(t *testing.T) {
	for _, tc := range []struct {
		name, contentType, patch string
		conflicts                int
		wantSpec                 string
	}{
		{"merge", "application/merge-patch+json", `{"spec":{"config":{"legacyTimeout":60}}}`, 0, `{"config":{"requestTimeoutSeconds":60},"stateManagement":"stateless"}`},
		{"json", "application/json-patch+json", `[{"op":"replace","path":"/spec/config/legacyTimeout","value":90},{"op":"test","path":"/spec/stateManagement","value":"ephemeral"}]`, 0, `{"config":{"requestTimeoutSeconds":90},"stateManagement":"stateless"}`},
		{"merge after conflicts", "application/merge-patch+json", `{"spec":{"stateManagement":"durable"}}`, 2, `{"config":{"requestTimeoutSeconds":30},"stateManagement":"durable"}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := &store{rv: 42, conflicts: tc.conflicts}
			s.obj, _ = engine.DecodeObject([]byte(servedObject))
			_, url, _ := emulationProxy(t, s.handle)
			req, _ := http.NewRequest("PATCH", url+"/apis/myapps.example.com/v1alpha1/namespaces/ns/customresources/a?fieldManager=me", strings.NewReader(tc.patch))
			req.Header.Set("Content-Type", tc.contentType)
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != 200 {
				t.Fatalf("%d %s", resp.StatusCode, body)
			}
			s.mu.Lock()
			spec, _ := json.Marshal(s.obj["spec"])
			writes, verbs := s.writes, s.verbs
			s.mu.Unlock()
			sameJSON(t, tc.wantSpec, string(spec))
			if writes != tc.conflicts+1 || verbs[len(verbs)-1] != "PATCH application/json-patch+json" {
				t.Errorf("%d writes: %q", writes, verbs)
			}
			var out map[string]any
			json.Unmarshal(body, &out)
			if out["apiVersion"] != "myapps.example.com/v1alpha1" {
				t.Errorf("answer: %s", body)
			}
		})
	}
}

func TestEmulation_PatchFailures(t *testing.T) {
	s := &store{rv: 42}
	s.obj, _ = engine.DecodeObject([]byte(servedObject))
	_, url, _ := emulationProxy(t, s.handle)
	for _, tc := range []struct {
		name, contentType, patch string
		code                     int
	}{
		{"json patch test fails", "application/json-patch+json", `[{"op":"test","path":"/spec/stateManagement","value":"stateless"}]`, 422},
		{"strategic on a custom resource", "application/strategic-merge-patch+json", `{"spec":{}}`, 415},
		{"client precondition conflicts", "application/merge-patch+json", `{"metadata":{"resourceVersion":"1"},"spec":{"stateManagement":"x"}}`, 409},
		{"changes the kind", "application/merge-patch+json", `{"kind":"Other"}`, 400},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req, _ := http.NewRequest("PATCH", url+"/apis/myapps.example.com/v1alpha1/namespaces/ns/customresources/a", strings.NewReader(tc.patch))
			req.Header.Set("Content-Type", tc.contentType)
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != tc.code || !strings.Contains(string(body), `"kind":"Status"`) {
				t.Errorf("%d %s", resp.StatusCode, body)
			}
		})
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.writes != 1 { // only the client's own precondition reached the store
		t.Errorf("%d writes", s.writes)
	}
}

func TestEmulation_ServerSideApplyConvertsTheObject(t *testing.T) {
	var got, ct string
	_, url, _ := emulationProxy(t, func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		got, ct = string(b), r.Header.Get("Content-Type")
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, servedObject)
	})
	req, _ := http.NewRequest("PATCH", url+"/apis/myapps.example.com/v1alpha1/namespaces/ns/customresources/a?fieldManager=me", strings.NewReader("apiVersion: myapps.example.com/v1alpha1\nkind: Customresource\nmetadata: {name: a, namespace: ns}\nspec:\n  config: {legacyTimeout: 30}\n"))
	req.Header.Set("Content-Type", "application/apply-patch+yaml")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || ct != "application/apply-patch+yaml" {
		t.Fatalf("%d %s (backend content type %q)", resp.StatusCode, body, ct)
	}
	sameJSON(t, `{"apiVersion":"myapps.example.com/v1beta1","kind":"Customresource","metadata":{"name":"a","namespace":"ns"},"spec":{"config":{"requestTimeoutSeconds":30}}}`, got)
	sameJSON(t, clientObject, string(body))
}

func TestEmulation_ServedVersionIsNotEmulated(t *testing.T) {
	var path string
	_, url, _ := emulationProxy(t, func(w http.ResponseWriter, r *http.Request) {
		path = r.URL.Path
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, servedObject)
	})
	code, _, body := doJSON(t, "GET", url+"/apis/myapps.example.com/v1beta1/namespaces/ns/customresources/a", "")
	if code != 200 || path != "/apis/myapps.example.com/v1beta1/namespaces/ns/customresources/a" {
		t.Fatalf("%d %s", code, path)
	}
	sameJSON(t, servedObject, string(body))
}

func TestEmulation_ListConversionFailureBreaksTheResponse(t *testing.T) {
	_, url, _ := emulationProxy(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"kind":"CustomresourceList","apiVersion":"myapps.example.com/v1beta1","metadata":{},"items":[%s,{"apiVersion":"myapps.example.com/v1beta1","kind":"Customresource","metadata":{"name":"bad"},"spec":{"config":{"requestTimeoutSeconds":"x"}}}]}`, servedObject)
	})
	resp, err := http.Get(url + "/apis/myapps.example.com/v1alpha1/customresources")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	// The response is aborted: the client cannot take it for a whole list.
	body, err := io.ReadAll(resp.Body)
	if err == nil {
		t.Fatalf("a list with an item that cannot be converted ended cleanly: %s", body)
	}
}

func TestEmulation_WatchConversionFailureIsAnErrorEvent(t *testing.T) {
	_, url, _ := emulationProxy(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"type":"ADDED","object":{"apiVersion":"myapps.example.com/v1beta1","kind":"Customresource","metadata":{"name":"bad"},"spec":{"config":{"requestTimeoutSeconds":"x"}}}}`+"\n")
	})
	code, _, body := doJSON(t, "GET", url+"/apis/myapps.example.com/v1alpha1/customresources?watch=true", "")
	if code != 200 || !strings.HasPrefix(string(body), `{"type":"ERROR","object":{"kind":"Status"`) || !strings.Contains(string(body), `"code":500`) || !strings.Contains(string(body), "reverse by rule") {
		t.Errorf("%d %s", code, body)
	}
}

func TestEmulation_ListWithNullItems(t *testing.T) {
	_, url, _ := emulationProxy(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"kind":"CustomresourceList","apiVersion":"myapps.example.com/v1beta1","metadata":{"resourceVersion":"3"},"items":null}`)
	})
	code, _, body := doJSON(t, "GET", url+"/apis/myapps.example.com/v1alpha1/customresources", "")
	if code != 200 {
		t.Fatalf("%d", code)
	}
	sameJSON(t, `{"kind":"CustomresourceList","apiVersion":"myapps.example.com/v1alpha1","metadata":{"resourceVersion":"3"},"items":null}`, string(body))
}

func TestEmulation_OpenAPIV3DocumentOfEmulatedVersion(t *testing.T) {
	doc := []byte(`{"openapi":"3.0.0","paths":{"/apis/myapps.example.com/v1alpha1/namespaces/{namespace}/customresources":{}},"components":{"schemas":{}}}`)
	f := newFake(t, "a", "v1.36.3", "myapps.example.com/v1beta1/customresources")
	_, srv := startProxy(t, Options{Converter: seedConverter(t), OpenAPIV3: map[string][]byte{"apis/myapps.example.com/v1alpha1": doc}}, f)
	code, _, body := doJSON(t, "GET", srv.URL+"/openapi/v3", "")
	var index struct {
		Paths map[string]struct{ ServerRelativeURL string }
	}
	if err := json.Unmarshal(body, &index); err != nil || code != 200 {
		t.Fatalf("%d %s", code, body)
	}
	u := index.Paths["apis/myapps.example.com/v1alpha1"].ServerRelativeURL
	if !strings.HasPrefix(u, "/openapi/v3/apis/myapps.example.com/v1alpha1?hash=") {
		t.Fatalf("index: %s", body)
	}
	code, _, body = doJSON(t, "GET", srv.URL+u, "")
	if code != 200 || string(body) != string(doc) {
		t.Errorf("%d %s", code, body)
	}
}

func TestOpenAPIV3Path(t *testing.T) {
	for _, tc := range []struct{ doc, want, err string }{
		{`{"openapi":"3.0.0","paths":{"/apis/policy/v1beta1/":{},"/apis/policy/v1beta1/poddisruptionbudgets":{}}}`, "apis/policy/v1beta1", ""},
		{`{"openapi":"3.0.0","paths":{"/api/v1/pods":{}}}`, "api/v1", ""},
		{`{"openapi":"3.0.0","paths":{"/apis/a/v1/x":{},"/apis/b/v1/y":{}}}`, "", "both"},
		{`{"swagger":"2.0","paths":{"/api/v1/pods":{}}}`, "", "not an OpenAPI v3"},
		{`{"openapi":"3.0.0","paths":{"/version":{}}}`, "", "no /api"},
	} {
		got, err := OpenAPIV3Path([]byte(tc.doc))
		if got != tc.want || (err == nil) != (tc.err == "") || err != nil && !strings.Contains(err.Error(), tc.err) {
			t.Errorf("%s: got %q, %v; want %q, %q", tc.doc, got, err, tc.want, tc.err)
		}
	}
}
