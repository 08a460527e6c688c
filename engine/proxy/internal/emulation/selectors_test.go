package emulation

import (
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/mvpctl/mvpctl/engine"
	"github.com/mvpctl/mvpctl/engine/proxy/internal/proxytest"
)

// statusMessage is the message of a BadRequest Status.
func statusMessage(t *testing.T, body []byte) string {
	t.Helper()
	var st metav1.Status
	if err := json.Unmarshal(body, &st); err != nil || st.Kind != "Status" || st.Reason != metav1.StatusReasonBadRequest {
		t.Errorf("not a BadRequest Status (%v): %s", err, body)
	}
	return st.Message
}

// selectorRules has the seed's steps plus one more, given as YAML.
func selectorRules(step string) string {
	return proxytest.SeedRules + "    - " + step + "\n"
}

// selectorProxy emulates v1alpha1 with rules and records the selectors the
// backend receives.
func selectorProxy(t *testing.T, rulesYAML string) (base string, got func() url.Values) {
	t.Helper()
	var mu sync.Mutex
	var last url.Values
	e := startEmulation(t, config{conv: proxytest.Converter(t, rulesYAML, engine.Options{}), handler: func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		last = r.URL.Query()
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"kind":"CustomresourceList","apiVersion":"myapps.example.com/v1beta1","metadata":{},"items":[]}`)
	}})
	return e.url + "/apis/myapps.example.com/v1alpha1/customresources", func() url.Values {
		mu.Lock()
		defer mu.Unlock()
		return last
	}
}

func TestEmulation_LabelSelector(t *testing.T) {
	const rule = "customresources.myapps.example.com/v1alpha1->v1beta1"
	for _, tc := range []struct {
		name, step string
		reject     string // part of the 400's message; empty: passed to the backend
	}{
		{"seed rules", "", ""},
		{"whole-object jq on spec", `{action: jq, forward: '.spec.x = 1', reverse: 'del(.spec.x)'}`, ""},
		{"whole-object jq reading labels", `{action: jq, forward: '.spec.app = .metadata.labels.app', reverse: 'del(.spec.app)'}`, ""},
		{"whole-object jq setting a label in reverse", `{action: jq, forward: '.', reverse: '.metadata.labels.x = "y"'}`, "transformations[2] may change labels: jq on the whole object: its reverse expression may change metadata.labels.x"},
		{"whole-object jq with with_entries", `{action: jq, forward: 'with_entries(.)', reverse: '.'}`, "its forward expression may change any field (with_entries(.))"},
		{"whole-object jq rebuilding metadata", `{action: jq, forward: '.metadata = {name: .metadata.name, namespace: .metadata.namespace}', reverse: '.'}`, "may change metadata"},
		{"set on a label", `{action: set, path: metadata.labels.team, value: a}`, "set changes metadata.labels.team"},
		{"ensureFieldExistence on a label", `{action: ensureFieldExistence, path: 'metadata.labels["app.kubernetes.io/name"]', defaultValue: x}`, "ensureFieldExistence changes"},
		{"remove labels", `{action: remove, path: metadata.labels}`, "remove changes metadata.labels"},
		{"newField on a label", `{action: newField, path: metadata.labels.tier}`, "newField changes metadata.labels.tier"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rulesYAML := proxytest.SeedRules
			if tc.step != "" {
				rulesYAML = selectorRules(tc.step)
			}
			base, got := selectorProxy(t, rulesYAML)
			code, _, body := proxytest.Do(t, nil, proxytest.NewRequest(t, "GET", base+"?labelSelector=app%3Dseed", ""))
			if tc.reject == "" {
				if code != http.StatusOK || got().Get("labelSelector") != "app=seed" {
					t.Errorf("%d %s; backend got %v", code, body, got())
				}
				return
			}
			msg := statusMessage(t, body)
			if code != http.StatusBadRequest || !strings.Contains(msg, "rule "+rule) || !strings.Contains(msg, tc.reject) {
				t.Errorf("%d %s", code, body)
			}
			if got() != nil {
				t.Errorf("the backend was asked: %v", got())
			}
		})
	}
}

func TestEmulation_FieldSelectorAndWholeObjectJQ(t *testing.T) {
	base, got := selectorProxy(t, selectorRules(`{action: jq, forward: '.spec.x = (.spec.y | tostring)', reverse: 'del(.spec.x)'}`))
	// A field the jq step does not write passes; renames still apply.
	code, _, body := proxytest.Do(t, nil, proxytest.NewRequest(t, "GET", base+"?fieldSelector=spec.other%3Da,spec.config.legacyTimeout%3D5", ""))
	if code != http.StatusOK || got().Get("fieldSelector") != "spec.config.requestTimeoutSeconds=5,spec.other=a" {
		t.Errorf("%d %s; backend got %v", code, body, got())
	}
	code, _, body = proxytest.Do(t, nil, proxytest.NewRequest(t, "GET", base+"?fieldSelector=spec.x%3D1", ""))
	if code != http.StatusBadRequest || !strings.Contains(statusMessage(t, body), "transformations[2] may change it: jq on the whole object: its forward expression may change spec.x") {
		t.Errorf("%d %s", code, body)
	}
}

// A version newer than the served one is emulated by the rules' reverse
// programs: a renamed field maps from targetPath back to path.
func TestEmulation_FieldSelectorThroughReverseProgram(t *testing.T) {
	var mu sync.Mutex
	var query string
	e := startEmulation(t, config{served: "v1alpha1", handler: func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		query = r.URL.Query().Get("fieldSelector")
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"kind":"CustomresourceList","apiVersion":"myapps.example.com/v1alpha1","metadata":{},"items":[]}`)
	}})
	code, _, body := proxytest.Do(t, nil, proxytest.NewRequest(t, "GET", e.url+"/apis/myapps.example.com/v1beta1/customresources?fieldSelector=spec.config.requestTimeoutSeconds%3D5", ""))
	mu.Lock()
	defer mu.Unlock()
	if code != http.StatusOK || query != "spec.config.legacyTimeout=5" {
		t.Errorf("%d %s; backend got %q", code, body, query)
	}
}
