package cli

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
)

// TestProxyCmd_ReloadsRulesFile edits the --rules file of a running proxy:
// the emulated version appears in discovery when the rule is added, and
// goes when it is removed; a broken edit changes nothing.
func TestProxyCmd_ReloadsRulesFile(t *testing.T) {
	backend := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		switch r.URL.Path {
		case "/readyz":
			io.WriteString(w, "ok")
		case "/version":
			io.WriteString(w, `{"major":"1","minor":"36","gitVersion":"v1.36.3"}`)
		case "/api":
			io.WriteString(w, `{"kind":"APIVersions","versions":["v1"]}`)
		case "/api/v1":
			io.WriteString(w, `{"kind":"APIResourceList","groupVersion":"v1","resources":[]}`)
		case "/apis":
			io.WriteString(w, `{"kind":"APIGroupList","groups":[{"name":"myapps.example.com","versions":[{"groupVersion":"myapps.example.com/v1beta1","version":"v1beta1"}],"preferredVersion":{"groupVersion":"myapps.example.com/v1beta1","version":"v1beta1"}}]}`)
		case "/apis/myapps.example.com/v1beta1":
			io.WriteString(w, `{"kind":"APIResourceList","groupVersion":"myapps.example.com/v1beta1","resources":[{"name":"customresources","singularName":"customresource","namespaced":true,"kind":"CustomResource","verbs":["get","list"]}]}`)
		default:
			http.NotFound(w, r)
		}
	}))
	defer backend.Close()
	dir := t.TempDir()
	rulesFile := filepath.Join(dir, "rules.yaml")
	const routingOnly = `apiVersion: mvp.k8s.io/v1
kind: TransformationRules
metadata: {name: r}
spec:
  apiRoutingRules:
  - {apiGroup: myapps.example.com, resource: customresources, preferApiServerVersion: ">=1.36"}
`
	const withMigration = routingOnly + `  apiMigrationRules:
  - apiGroup: myapps.example.com
    resource: customresources
    fromVersion: v1alpha1
    toVersion: v1beta1
    transformations:
    - {path: spec.legacyTimeout, action: rename, targetPath: spec.requestTimeoutSeconds}
`
	write := func(data string) {
		// Written whole and renamed into place, as editors and ConfigMap
		// volumes do.
		tmp := rulesFile + ".tmp"
		if err := os.WriteFile(tmp, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(tmp, rulesFile); err != nil {
			t.Fatal(err)
		}
	}
	write(routingOnly)

	run := startProxyCmd(t, "--backend", backend.URL, "--insecure-skip-tls-verify", "--health-interval", "50ms", "--rules", rulesFile)
	host, tr, _ := run.client(t)
	stderr := run.stderr
	// versions reads the group's versions through the proxy.
	versions := func() string {
		req, err := http.NewRequest(http.MethodGet, host+"/apis/myapps.example.com", nil)
		if err != nil {
			t.Fatal(err)
		}
		resp, err := tr.RoundTrip(req)
		if err != nil {
			return err.Error()
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return string(b)
	}
	waitFor := func(what string, ok func(string) bool) {
		t.Helper()
		var last string
		err := wait.PollUntilContextTimeout(t.Context(), 20*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
			last = versions()
			return ok(last), nil
		})
		if err == nil {
			return
		}
		t.Fatalf("%s: /apis/myapps.example.com through the proxy is %s\nstderr: %s", what, last, stderr.String())
	}
	served := func(s string) bool { return strings.Contains(s, `"version":"v1beta1"`) }
	emulated := func(s string) bool { return strings.Contains(s, `"version":"v1alpha1"`) }

	waitFor("routing rules only", func(s string) bool { return served(s) && !emulated(s) })
	write(withMigration)
	waitFor("migration rule added", func(s string) bool { return served(s) && emulated(s) })
	write(withMigration + "    - {path: spec.x, action: explode}\n")
	waitFor("a broken edit logged", func(string) bool { return strings.Contains(stderr.String(), "rules files rejected") })
	if s := versions(); !emulated(s) {
		t.Errorf("a broken edit replaced the rules: %s", s)
	}
	write(routingOnly)
	waitFor("migration rule removed", func(s string) bool { return served(s) && !emulated(s) })
}
