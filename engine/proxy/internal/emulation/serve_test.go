package emulation

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/mvpctl/mvpctl/engine/proxy/internal/proxytest"
)

func TestEmulation_GetRewritesURLAndConvertsResponse(t *testing.T) {
	var gotPath, gotAccept string
	url := serveEmulation(t, func(w http.ResponseWriter, r *http.Request) {
		gotPath, gotAccept = r.URL.Path, r.Header.Get("Accept")
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, proxytest.ServedObject)
	})
	code, hdr, body := proxytest.Do(t, nil, proxytest.NewRequest(t, "GET", url+"/apis/myapps.example.com/v1alpha1/namespaces/ns/customresources/a", "", "Accept", "application/vnd.kubernetes.protobuf, application/json"))
	if code != 200 || hdr.Get("Content-Type") != "application/json" {
		t.Fatalf("%d %s: %s", code, hdr.Get("Content-Type"), body)
	}
	if gotPath != "/apis/myapps.example.com/v1beta1/namespaces/ns/customresources/a" || gotAccept != "application/json" {
		t.Errorf("backend got %s with Accept %q", gotPath, gotAccept)
	}
	proxytest.SameJSON(t, proxytest.ClientObject, string(body))
	if !strings.Contains(string(body), "9223372036854775807") {
		t.Errorf("int64 not exact: %s", body)
	}
}

func TestEmulation_ProtobufOnlyIs406(t *testing.T) {
	var hits atomic.Int64
	url := serveEmulation(t, func(w http.ResponseWriter, r *http.Request) { hits.Add(1) })
	code, _, body := proxytest.Do(t, nil, proxytest.NewRequest(t, "GET", url+"/apis/myapps.example.com/v1alpha1/namespaces/ns/customresources/a", "", "Accept", "application/vnd.kubernetes.protobuf"))
	if code != http.StatusNotAcceptable || !strings.Contains(string(body), `"reason":"NotAcceptable"`) || !strings.Contains(string(body), "application/json") {
		t.Errorf("%d %s", code, body)
	}
	if hits.Load() != 0 {
		t.Errorf("the backend was asked")
	}
}

func TestEmulation_CreateConvertsBodyForward(t *testing.T) {
	var got string
	url := serveEmulation(t, func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		got = string(b)
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusCreated)
		w.Write(b)
	})
	in := `{"apiVersion":"myapps.example.com/v1alpha1","kind":"Customresource","metadata":{"name":"a","namespace":"ns"},"spec":{"config":{"legacyTimeout":30},"stateManagement":"ephemeral"}}`
	code, _, body := proxytest.Do(t, nil, proxytest.NewRequest(t, "POST", url+"/apis/myapps.example.com/v1alpha1/namespaces/ns/customresources", in))
	if code != http.StatusCreated {
		t.Fatalf("%d %s", code, body)
	}
	proxytest.SameJSON(t, `{"apiVersion":"myapps.example.com/v1beta1","kind":"Customresource","metadata":{"name":"a","namespace":"ns"},"spec":{"config":{"requestTimeoutSeconds":30},"stateManagement":"stateless"}}`, got)
	proxytest.SameJSON(t, in, string(body))

	// Without apiVersion and kind the body takes the URL's, as in the apiserver.
	code, _, body = proxytest.Do(t, nil, proxytest.NewRequest(t, "POST", url+"/apis/myapps.example.com/v1alpha1/namespaces/ns/customresources", `{"metadata":{"name":"b"},"spec":{"config":{"legacyTimeout":5}}}`))
	if code != http.StatusCreated {
		t.Fatalf("%d %s", code, body)
	}
	proxytest.SameJSON(t, `{"apiVersion":"myapps.example.com/v1beta1","kind":"Customresource","metadata":{"name":"b"},"spec":{"config":{"requestTimeoutSeconds":5}}}`, got)
}

func TestEmulation_InvalidBodies(t *testing.T) {
	var hits atomic.Int64
	url := serveEmulation(t, func(w http.ResponseWriter, r *http.Request) { hits.Add(1) })
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
			code, _, body := proxytest.Do(t, nil, proxytest.NewRequest(t, "POST", url+"/apis/myapps.example.com/v1alpha1/namespaces/ns/customresources", tc.body))
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
	url := serveEmulation(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"apiVersion":"myapps.example.com/v1beta1","kind":"Customresource","metadata":{"name":"a"},"spec":{"config":{"requestTimeoutSeconds":{"x":1}}}}`)
	})
	code, _, body := proxytest.Do(t, nil, proxytest.NewRequest(t, "GET", url+"/apis/myapps.example.com/v1alpha1/namespaces/ns/customresources/a", ""))
	t.Logf("%s", body)
	if code != 500 || !strings.Contains(string(body), "reverse") || !strings.Contains(string(body), "requestTimeoutSeconds") || !strings.Contains(string(body), "rule") {
		t.Errorf("%d %s", code, body)
	}
}

func TestEmulation_ListIsConvertedItemByItem(t *testing.T) {
	url := serveEmulation(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"kind":"CustomresourceList","apiVersion":"myapps.example.com/v1beta1","metadata":{"resourceVersion":"7","continue":"abc"},"items":[%s,%s]}`, proxytest.ServedObject, proxytest.ServedObject)
	})
	code, _, body := proxytest.Do(t, nil, proxytest.NewRequest(t, "GET", url+"/apis/myapps.example.com/v1alpha1/customresources?limit=2", ""))
	if code != 200 {
		t.Fatalf("%d %s", code, body)
	}
	proxytest.SameJSON(t, fmt.Sprintf(`{"kind":"CustomresourceList","apiVersion":"myapps.example.com/v1alpha1","metadata":{"resourceVersion":"7","continue":"abc"},"items":[%s,%s]}`, proxytest.ClientObject, proxytest.ClientObject), string(body))
}

func TestEmulation_TableRowsObjectsAreConverted(t *testing.T) {
	var accept string
	url := serveEmulation(t, func(w http.ResponseWriter, r *http.Request) {
		accept = r.Header.Get("Accept")
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"kind":"Table","apiVersion":"meta.k8s.io/v1","metadata":{"resourceVersion":"7"},"columnDefinitions":[{"name":"Name","type":"string"}],"rows":[{"cells":["a"],"object":%s},{"cells":["b"],"object":{"kind":"PartialObjectMetadata","apiVersion":"meta.k8s.io/v1","metadata":{"name":"b"}}}]}`, proxytest.ServedObject)
	})
	code, _, body := proxytest.Do(t, nil, proxytest.NewRequest(t, "GET", url+"/apis/myapps.example.com/v1alpha1/customresources?includeObject=Object", "", "Accept", "application/json;as=Table;v=v1;g=meta.k8s.io,application/vnd.kubernetes.protobuf;as=Table;v=v1;g=meta.k8s.io,application/json"))
	if code != http.StatusOK {
		t.Fatalf("%d %s", code, body)
	}
	if accept != "application/json;as=Table;v=v1;g=meta.k8s.io,application/json" {
		t.Errorf("backend Accept %q", accept)
	}
	proxytest.SameJSON(t, fmt.Sprintf(`{"kind":"Table","apiVersion":"meta.k8s.io/v1","metadata":{"resourceVersion":"7"},"columnDefinitions":[{"name":"Name","type":"string"}],"rows":[{"cells":["a"],"object":%s},{"cells":["b"],"object":{"kind":"PartialObjectMetadata","apiVersion":"meta.k8s.io/v1","metadata":{"name":"b"}}}]}`, proxytest.ClientObject), string(body))
}

func TestEmulation_WatchIsConvertedEventByEvent(t *testing.T) {
	release := make(chan struct{})
	url := serveEmulation(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, "{\"type\":\"ADDED\",\"object\":%s}\n", proxytest.ServedObject)
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
	proxytest.SameJSON(t, fmt.Sprintf(`{"type":"ADDED","object":%s}`, proxytest.ClientObject), sc.Text())
	close(release)
	var rest []string
	for sc.Scan() {
		rest = append(rest, sc.Text())
	}
	if len(rest) != 2 {
		t.Fatalf("events: %q", rest)
	}
	proxytest.SameJSON(t, `{"type":"BOOKMARK","object":{"kind":"Customresource","apiVersion":"myapps.example.com/v1alpha1","metadata":{"resourceVersion":"50","annotations":{"k8s.io/initial-events-end":"true"}}}}`, rest[0])
	proxytest.SameJSON(t, `{"type":"ERROR","object":{"kind":"Status","apiVersion":"v1","status":"Failure","message":"too old resource version","reason":"Expired","code":410}}`, rest[1])
}

func TestEmulation_StatusPassesThrough(t *testing.T) {
	notFound := `{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"customresources.myapps.example.com \"a\" not found","reason":"NotFound","details":{"name":"a","group":"myapps.example.com","kind":"customresources"},"code":404}`
	url := serveEmulation(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(404)
		io.WriteString(w, notFound)
	})
	code, _, body := proxytest.Do(t, nil, proxytest.NewRequest(t, "GET", url+"/apis/myapps.example.com/v1alpha1/namespaces/ns/customresources/a", ""))
	if code != 404 {
		t.Fatalf("%d", code)
	}
	proxytest.SameJSON(t, notFound, string(body))
}

func TestEmulation_FieldSelectors(t *testing.T) {
	var query string
	url := serveEmulation(t, func(w http.ResponseWriter, r *http.Request) {
		query = r.URL.Query().Get("fieldSelector")
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"kind":"CustomresourceList","apiVersion":"myapps.example.com/v1beta1","metadata":{},"items":[]}`)
	})
	code, _, body := proxytest.Do(t, nil, proxytest.NewRequest(t, "GET", url+"/apis/myapps.example.com/v1alpha1/customresources?fieldSelector=metadata.name%3Da,spec.config.legacyTimeout%3D30", ""))
	if code != 200 || query != "metadata.name=a,spec.config.requestTimeoutSeconds=30" {
		t.Errorf("%d %s; backend got %q", code, body, query)
	}
	code, _, body = proxytest.Do(t, nil, proxytest.NewRequest(t, "GET", url+"/apis/myapps.example.com/v1alpha1/customresources?fieldSelector=spec.stateManagement%3Dephemeral", ""))
	if code != 400 || !strings.Contains(string(body), "spec.stateManagement") || !strings.Contains(string(body), "modify") {
		t.Errorf("%d %s", code, body)
	}
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
			s := newStore(t, proxytest.ServedObject)
			s.conflicts = tc.conflicts
			url := serveEmulation(t, s.handle)
			code, _, body := proxytest.Do(t, nil, proxytest.NewRequest(t, "PATCH", url+"/apis/myapps.example.com/v1alpha1/namespaces/ns/customresources/a?fieldManager=me", tc.patch, "Content-Type", tc.contentType))
			if code != 200 {
				t.Fatalf("%d %s", code, body)
			}
			s.mu.Lock()
			spec, _ := json.Marshal(s.obj["spec"])
			writes, verbs := s.writes, s.verbs
			s.mu.Unlock()
			proxytest.SameJSON(t, tc.wantSpec, string(spec))
			if writes != tc.conflicts+1 || verbs[len(verbs)-1] != "PATCH application/json-patch+json" {
				t.Errorf("%d writes: %q", writes, verbs)
			}
			var out map[string]any
			if err := json.Unmarshal(body, &out); err != nil {
				t.Fatalf("%v: %s", err, body)
			}
			if out["apiVersion"] != "myapps.example.com/v1alpha1" {
				t.Errorf("answer: %s", body)
			}
		})
	}
}

func TestEmulation_PatchFailures(t *testing.T) {
	s := newStore(t, proxytest.ServedObject)
	url := serveEmulation(t, s.handle)
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
			code, _, body := proxytest.Do(t, nil, proxytest.NewRequest(t, "PATCH", url+"/apis/myapps.example.com/v1alpha1/namespaces/ns/customresources/a", tc.patch, "Content-Type", tc.contentType))
			if code != tc.code || !strings.Contains(string(body), `"kind":"Status"`) {
				t.Errorf("%d %s", code, body)
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
	url := serveEmulation(t, func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		got, ct = string(b), r.Header.Get("Content-Type")
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, proxytest.ServedObject)
	})
	code, _, body := proxytest.Do(t, nil, proxytest.NewRequest(t, "PATCH", url+"/apis/myapps.example.com/v1alpha1/namespaces/ns/customresources/a?fieldManager=me", "apiVersion: myapps.example.com/v1alpha1\nkind: Customresource\nmetadata: {name: a, namespace: ns}\nspec:\n  config: {legacyTimeout: 30}\n", "Content-Type", "application/apply-patch+yaml"))
	if code != 200 || ct != "application/apply-patch+yaml" {
		t.Fatalf("%d %s (backend content type %q)", code, body, ct)
	}
	proxytest.SameJSON(t, `{"apiVersion":"myapps.example.com/v1beta1","kind":"Customresource","metadata":{"name":"a","namespace":"ns"},"spec":{"config":{"requestTimeoutSeconds":30}}}`, got)
	proxytest.SameJSON(t, proxytest.ClientObject, string(body))
}

func TestEmulation_WatchConversionFailureIsAnErrorEvent(t *testing.T) {
	url := serveEmulation(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"type":"ADDED","object":{"apiVersion":"myapps.example.com/v1beta1","kind":"Customresource","metadata":{"name":"bad"},"spec":{"config":{"requestTimeoutSeconds":"x"}}}}`+"\n")
	})
	code, _, body := proxytest.Do(t, nil, proxytest.NewRequest(t, "GET", url+"/apis/myapps.example.com/v1alpha1/customresources?watch=true", ""))
	if code != 200 || !strings.HasPrefix(string(body), `{"type":"ERROR","object":{"kind":"Status"`) || !strings.Contains(string(body), `"code":500`) || !strings.Contains(string(body), "reverse by rule") {
		t.Errorf("%d %s", code, body)
	}
}

func TestEmulation_ListWithNullItems(t *testing.T) {
	url := serveEmulation(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"kind":"CustomresourceList","apiVersion":"myapps.example.com/v1beta1","metadata":{"resourceVersion":"3"},"items":null}`)
	})
	code, _, body := proxytest.Do(t, nil, proxytest.NewRequest(t, "GET", url+"/apis/myapps.example.com/v1alpha1/customresources", ""))
	if code != 200 {
		t.Fatalf("%d", code)
	}
	proxytest.SameJSON(t, `{"kind":"CustomresourceList","apiVersion":"myapps.example.com/v1alpha1","metadata":{"resourceVersion":"3"},"items":null}`, string(body))
}
