package emulation

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/mvpctl/mvpctl/engine/proxy/internal/proxytest"
)

// badObject is a served object whose value the seed rule's converting
// rename (type: integer) cannot convert back: the served schema of an
// int-or-string field allows it.
func badObject(value string) string {
	return `{"apiVersion":"myapps.example.com/v1beta1","kind":"Customresource","metadata":{"name":"bad","namespace":"shop","resourceVersion":"9"},"spec":{"config":{"requestTimeoutSeconds":` + value + `}}}`
}

// failureParts are what the message of a failed conversion names: the
// object (kind, namespace/name, version), the rule, the step and the path.
var failureParts = []string{
	"converting Customresource shop/bad (myapps.example.com/v1beta1) reverse by rule customresources.myapps.example.com/v1alpha1->v1beta1",
	"transformations[0] (convert spec.config.requestTimeoutSeconds, renamed from spec.config.legacyTimeout, to integer)",
	"at spec.config.requestTimeoutSeconds",
	`cannot convert string "x" to integer`,
}

func failuresCounted(t *testing.T, e *env) float64 {
	t.Helper()
	return proxytest.Counter(t, e.reg, "mvpctl_proxy_emulation_conversion_failures_total", map[string]string{"group": "myapps.example.com", "version": "v1alpha1", "resource": "customresources"})
}

func decodeStatus(t *testing.T, body []byte) metav1.Status {
	t.Helper()
	var st metav1.Status
	if err := json.Unmarshal(body, &st); err != nil || st.Kind != "Status" {
		t.Fatalf("not a Status (%v): %s", err, body)
	}
	return st
}

// A LIST that meets an object the rules cannot convert back is a 500
// Status naming the object, the rule, the step and the path, as
// kube-apiserver answers a LIST whose conversion webhook fails; the
// failure is counted per emulated resource and logged once per object.
func TestEmulation_ListConversionFailureIsAStatus(t *testing.T) {
	var logs proxytest.Buffer
	e := startEmulation(t, config{opts: Options{Logger: slog.New(slog.NewTextHandler(&logs, nil))}, handler: func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"kind":"CustomresourceList","apiVersion":"myapps.example.com/v1beta1","metadata":{},"items":[%s,%s]}`, proxytest.ServedObject, badObject(`"x"`))
	}})
	for range 2 {
		code, _, body := proxytest.Do(t, nil, proxytest.NewRequest(t, "GET", e.url+"/apis/myapps.example.com/v1alpha1/customresources", ""))
		st := decodeStatus(t, body)
		if code != http.StatusInternalServerError || st.Code != 500 || st.Reason != metav1.StatusReasonInternalError {
			t.Errorf("%d %s", code, body)
		}
		for _, want := range append([]string{"version emulation: items[1]: "}, failureParts...) {
			if !strings.Contains(st.Message, want) {
				t.Errorf("message lacks %q: %s", want, st.Message)
			}
		}
	}
	if n := failuresCounted(t, e); n != 2 {
		t.Errorf("mvpctl_proxy_emulation_conversion_failures_total = %v, want 2", n)
	}
	if n := strings.Count(logs.String(), "does not convert"); n != 1 || !strings.Contains(logs.String(), "namespace=shop name=bad resourceVersion=9") {
		t.Errorf("%d log lines:\n%s", n, logs.String())
	}
}

// A failure after the first listHeadBytes of a converted list, whose
// headers have left, aborts the response: the client must not take a
// partial list for a whole one. It is counted all the same.
func TestEmulation_LateListConversionFailureAbortsTheResponse(t *testing.T) {
	good := make([]string, 2*listHeadBytes/len(proxytest.ClientObject))
	for i := range good {
		good[i] = proxytest.ServedObject
	}
	e := startEmulation(t, config{handler: func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"kind":"CustomresourceList","apiVersion":"myapps.example.com/v1beta1","metadata":{},"items":[%s,%s]}`, strings.Join(good, ","), badObject(`"x"`))
	}})
	resp, err := http.Get(e.url + "/apis/myapps.example.com/v1alpha1/customresources")
	if err == nil {
		defer resp.Body.Close()
		var body []byte
		if body, err = io.ReadAll(resp.Body); err == nil {
			t.Fatalf("%d: a list with an item that cannot be converted ended cleanly (%d bytes)", resp.StatusCode, len(body))
		}
	}
	if n := failuresCounted(t, e); n != 1 {
		t.Errorf("mvpctl_proxy_emulation_conversion_failures_total = %v, want 1", n)
	}
}

// A WATCH that meets such an object ends with an ERROR event whose Status
// names the object, the rule, the step and the path.
func TestEmulation_WatchConversionFailureNamesTheObject(t *testing.T) {
	e := startEmulation(t, config{handler: func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, "{\"type\":\"ADDED\",\"object\":%s}\n{\"type\":\"MODIFIED\",\"object\":%s}\n", proxytest.ServedObject, badObject(`"x"`))
	}})
	resp, err := http.Get(e.url + "/apis/myapps.example.com/v1alpha1/customresources?watch=true")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var events []string
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		events = append(events, sc.Text())
	}
	if len(events) != 2 {
		t.Fatalf("%d events: %q", len(events), events)
	}
	var ev struct {
		Type   string          `json:"type"`
		Object json.RawMessage `json:"object"`
	}
	if err := json.Unmarshal([]byte(events[1]), &ev); err != nil || ev.Type != "ERROR" {
		t.Fatalf("%v: %s", err, events[1])
	}
	st := decodeStatus(t, ev.Object)
	for _, want := range failureParts {
		if st.Code != 500 || !strings.Contains(st.Message, want) {
			t.Errorf("%d: message lacks %q: %s", st.Code, want, st.Message)
		}
	}
	if n := failuresCounted(t, e); n != 1 {
		t.Errorf("mvpctl_proxy_emulation_conversion_failures_total = %v, want 1", n)
	}
}

// The message quotes the value the step failed on, which anyone who may
// write the object wrote: it is bounded, the object and the rule first.
func TestEmulation_ConversionFailureMessageIsBounded(t *testing.T) {
	huge := `{"x":"` + strings.Repeat("a", 1<<20) + `"}`
	e := startEmulation(t, config{handler: func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, badObject(huge))
	}})
	code, _, body := proxytest.Do(t, nil, proxytest.NewRequest(t, "GET", e.url+"/apis/myapps.example.com/v1alpha1/namespaces/shop/customresources/bad", ""))
	st := decodeStatus(t, body)
	if code != 500 || len(st.Message) > maxFailureMessageBytes+64 || !strings.Contains(st.Message, failureParts[0]) {
		t.Errorf("%d, message of %d bytes: %.300s", code, len(st.Message), st.Message)
	}
}

// A backend's list that ends early is never answered as a whole list: a
// 502 Status while the headers have not left.
func TestEmulation_TruncatedListIsNotAWholeList(t *testing.T) {
	url := serveEmulation(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"kind":"CustomresourceList","apiVersion":"myapps.example.com/v1beta1","metadata":{},"items":[%s,`, proxytest.ServedObject)
	})
	code, _, body := proxytest.Do(t, nil, proxytest.NewRequest(t, "GET", url+"/apis/myapps.example.com/v1alpha1/customresources", ""))
	if st := decodeStatus(t, body); code != http.StatusBadGateway || !strings.Contains(st.Message, "the kube-apiserver's list could not be read") {
		t.Errorf("%d %s", code, body)
	}
}
