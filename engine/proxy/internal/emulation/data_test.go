package emulation

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/mvpctl/mvpctl/engine"
	"github.com/mvpctl/mvpctl/engine/proxy/internal/proxytest"
)

// poisonedObject is proxytest.ServedObject after someone who may update it set the
// round-trip annotation to garbage.
var poisonedObject = strings.Replace(proxytest.ServedObject, `"resourceVersion":"42",`, `"resourceVersion":"42","annotations":{"mvp.k8s.io/conversion-data":"{not json"},`, 1)

// TestEmulation_PoisonedConversionDataIsIgnored: one object with a bad
// round-trip annotation must not break a LIST or a WATCH of the emulated
// version for everyone: every object is delivered, the poisoned one
// converted as if it had no annotation; a GET of it succeeds. The object is
// counted each time and logged once.
func TestEmulation_PoisonedConversionDataIsIgnored(t *testing.T) {
	other := strings.Replace(proxytest.ServedObject, `"name":"a"`, `"name":"b"`, 1)
	otherClient := strings.Replace(proxytest.ClientObject, `"name":"a"`, `"name":"b"`, 1)
	var logs proxytest.Buffer
	e := startEmulation(t, config{opts: Options{Logger: slog.New(slog.NewTextHandler(&logs, nil))}, handler: func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		switch {
		case r.URL.Query().Get("watch") == "true":
			fmt.Fprintf(w, "{\"type\":\"ADDED\",\"object\":%s}\n{\"type\":\"ADDED\",\"object\":%s}\n", poisonedObject, other)
		case strings.HasSuffix(r.URL.Path, "/customresources"):
			fmt.Fprintf(w, `{"kind":"CustomresourceList","apiVersion":"myapps.example.com/v1beta1","metadata":{"resourceVersion":"7"},"items":[%s,%s]}`, poisonedObject, other)
		default:
			io.WriteString(w, poisonedObject)
		}
	}})
	url := e.url + "/apis/myapps.example.com/v1alpha1"

	code, _, body := proxytest.Do(t, nil, proxytest.NewRequest(t, "GET", url+"/customresources", ""))
	if code != 200 {
		t.Fatalf("LIST: %d %s", code, body)
	}
	proxytest.SameJSON(t, fmt.Sprintf(`{"kind":"CustomresourceList","apiVersion":"myapps.example.com/v1alpha1","metadata":{"resourceVersion":"7"},"items":[%s,%s]}`, proxytest.ClientObject, otherClient), string(body))

	resp, err := http.Get(url + "/customresources?watch=true")
	if err != nil {
		t.Fatal(err)
	}
	var events []string
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		events = append(events, sc.Text())
	}
	resp.Body.Close()
	if len(events) != 2 {
		t.Fatalf("WATCH: %d events: %q", len(events), events)
	}
	proxytest.SameJSON(t, fmt.Sprintf(`{"type":"ADDED","object":%s}`, proxytest.ClientObject), events[0])
	proxytest.SameJSON(t, fmt.Sprintf(`{"type":"ADDED","object":%s}`, otherClient), events[1])

	code, _, body = proxytest.Do(t, nil, proxytest.NewRequest(t, "GET", url+"/namespaces/ns/customresources/a", ""))
	if code != 200 {
		t.Fatalf("GET: %d %s", code, body)
	}
	proxytest.SameJSON(t, proxytest.ClientObject, string(body))

	if n := proxytest.Counter(t, e.reg, "mvpctl_proxy_conversion_data_ignored_total", map[string]string{"group": "myapps.example.com", "version": "v1beta1", "resource": "customresources"}); n != 3 {
		t.Errorf("mvpctl_proxy_conversion_data_ignored_total = %v, want 3", n)
	}
	if n := strings.Count(logs.String(), "round-trip annotation"); n != 1 || !strings.Contains(logs.String(), "namespace=ns name=a resourceVersion=42") {
		t.Errorf("%d log lines:\n%s", n, logs.String())
	}
}

// TestEmulation_LoopingRuleIs500: a rule whose program never ends answers a
// 500 Status naming the rule once its deadline has passed, for a response
// (reverse) and for a client's object (forward), instead of holding the
// request and a CPU. The deadline is short so that the test is quick; only
// the answers are checked.
func TestEmulation_LoopingRuleIs500(t *testing.T) {
	conv := proxytest.Converter(t, proxytest.LoopRules, engine.Options{ProgramTimeout: 50 * time.Millisecond})
	var writes atomic.Int64
	e := startEmulation(t, config{conv: conv, handler: func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet {
			writes.Add(1)
		}
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, proxytest.ServedObject)
	}})
	url := e.url + "/apis/myapps.example.com/v1alpha1/namespaces/ns/customresources"
	for _, tc := range []struct{ method, url, body, direction string }{
		{"GET", url + "/a", "", "reverse"},
		{"POST", url, proxytest.ClientObject, "forward"},
	} {
		code, _, body := proxytest.Do(t, nil, proxytest.NewRequest(t, tc.method, tc.url, tc.body))
		var st metav1.Status
		if err := json.Unmarshal(body, &st); err != nil {
			t.Fatalf("%v: %s", err, body)
		}
		want := tc.direction + " by rule customresources.myapps.example.com/v1alpha1->v1beta1: the program did not finish within 50ms"
		if code != 500 || st.Kind != "Status" || st.Reason != metav1.StatusReasonInternalError || !strings.Contains(st.Message, want) {
			t.Errorf("%s: %d %s", tc.method, code, body)
		}
	}
	if writes.Load() != 0 {
		t.Errorf("%d writes reached the backend", writes.Load())
	}
}
