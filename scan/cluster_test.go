package scan

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// fakeAPIServer answers discovery and the LISTs a cluster scan makes, as a
// kube-apiserver does (legacy discovery, PartialObjectMetadataList for the
// metadata client), and records the requests.
type fakeAPIServer struct {
	mu       sync.Mutex
	requests []string
	lists    map[string]string // path → list JSON
}

func (f *fakeAPIServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	f.requests = append(f.requests, r.URL.Path+"?"+r.URL.RawQuery)
	f.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	discovery := map[string]string{
		"/api":  `{"kind":"APIVersions","versions":["v1"]}`,
		"/apis": `{"kind":"APIGroupList","apiVersion":"v1","groups":[{"name":"policy","versions":[{"groupVersion":"policy/v1","version":"v1"}],"preferredVersion":{"groupVersion":"policy/v1","version":"v1"}},{"name":"apps","versions":[{"groupVersion":"apps/v1","version":"v1"}],"preferredVersion":{"groupVersion":"apps/v1","version":"v1"}}]}`,
		"/api/v1": `{"kind":"APIResourceList","groupVersion":"v1","resources":[
			{"name":"configmaps","namespaced":true,"kind":"ConfigMap","verbs":["list","get"]},
			{"name":"secrets","namespaced":true,"kind":"Secret","verbs":["list","get"]},
			{"name":"pods","namespaced":true,"kind":"Pod","verbs":["list","get"]}]}`,
		"/apis/policy/v1": `{"kind":"APIResourceList","groupVersion":"policy/v1","resources":[
			{"name":"poddisruptionbudgets","namespaced":true,"kind":"PodDisruptionBudget","verbs":["list","get"]},
			{"name":"poddisruptionbudgets/status","namespaced":true,"kind":"PodDisruptionBudget","verbs":["get"]}]}`,
		"/apis/apps/v1": `{"kind":"APIResourceList","groupVersion":"apps/v1","resources":[
			{"name":"deployments","namespaced":true,"kind":"Deployment","verbs":["list","get"]}]}`,
	}
	if d, ok := discovery[r.URL.Path]; ok {
		fmt.Fprint(w, d)
		return
	}
	if l, ok := f.lists[r.URL.Path]; ok {
		fmt.Fprint(w, l)
		return
	}
	w.WriteHeader(http.StatusNotFound)
	fmt.Fprint(w, `{"kind":"Status","apiVersion":"v1","status":"Failure","reason":"NotFound","code":404}`)
}

func metadataList(items ...string) string {
	return `{"kind":"PartialObjectMetadataList","apiVersion":"meta.k8s.io/v1","metadata":{},"items":[` + strings.Join(items, ",") + `]}`
}

func metadataItem(t *testing.T, uid, ns, name string, applied map[string]any) string {
	t.Helper()
	meta := map[string]any{"uid": uid, "namespace": ns, "name": name}
	if applied != nil {
		js, err := json.Marshal(applied)
		if err != nil {
			t.Fatal(err)
		}
		meta["annotations"] = map[string]string{LastAppliedAnnotation: string(js)}
	}
	js, err := json.Marshal(map[string]any{"kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1", "metadata": meta})
	if err != nil {
		t.Fatal(err)
	}
	return string(js)
}

func kubeconfigFor(t *testing.T, server string) {
	t.Helper()
	p := filepath.Join(t.TempDir(), "config")
	cfg := fmt.Sprintf(`apiVersion: v1
kind: Config
clusters:
- name: c
  cluster: {server: %q}
users:
- name: u
  user: {token: t}
contexts:
- name: prod
  context: {cluster: c, user: u}
current-context: prod
`, server)
	if err := os.WriteFile(p, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("KUBECONFIG", p)
}

// A cluster scan reads what was applied: the last-applied annotation (the
// apiserver would give the objects back converted to a version it serves)
// and the deployed revision of each Helm release.
func TestRun_Cluster(t *testing.T) {
	release := helmSecretData(t, map[string]any{"name": "shop", "namespace": "prod", "version": 3, "manifest": helmManifest})
	older := helmSecretData(t, map[string]any{"name": "shop", "namespace": "prod", "version": 2, "manifest": "apiVersion: extensions/v1beta1\nkind: Ingress\nmetadata: {name: old}\n"})
	secret := func(name, version string, data []byte) string {
		js, _ := json.Marshal(map[string]any{"metadata": map[string]any{"name": name, "namespace": "prod",
			"labels": map[string]string{"owner": "helm", "name": "shop", "status": "deployed", "version": version}},
			"type": "helm.sh/release.v1", "data": map[string][]byte{"release": data}})
		return string(js)
	}
	fake := &fakeAPIServer{lists: map[string]string{
		"/apis/policy/v1/poddisruptionbudgets": metadataList(
			metadataItem(t, "u1", "prod", "web", map[string]any{"apiVersion": "policy/v1beta1", "kind": "PodDisruptionBudget", "metadata": map[string]any{"name": "web"}}),
			metadataItem(t, "u2", "prod", "api", map[string]any{"apiVersion": "policy/v1", "kind": "PodDisruptionBudget"}),
			metadataItem(t, "u3", "prod", "created", nil)),
		"/apis/apps/v1/deployments": metadataList(
			metadataItem(t, "u4", "", "legacy", map[string]any{"apiVersion": "extensions/v1beta1", "kind": "Deployment"})),
		// Helm keeps every revision; the two marked deployed (a Helm bug, but
		// seen) are told apart by their version label.
		"/api/v1/secrets":    `{"kind":"SecretList","apiVersion":"v1","metadata":{},"items":[` + secret("sh.helm.release.v1.shop.v2", "2", older) + "," + secret("sh.helm.release.v1.shop.v3", "3", release) + `]}`,
		"/api/v1/configmaps": `{"kind":"ConfigMapList","apiVersion":"v1","metadata":{},"items":[]}`,
	}}
	srv := httptest.NewServer(fake)
	defer srv.Close()
	kubeconfigFor(t, srv.URL)

	res := Run(context.Background(), []string{"cluster:"}, Options{})
	if len(res.Errors) > 0 || len(res.Warnings) > 0 {
		t.Fatalf("errors %v, warnings %v", res.Errors, res.Warnings)
	}
	type short struct{ Where, Object, APIVersion, Kind string }
	var got []short
	for _, f := range res.Findings {
		got = append(got, short{f.Location.String(), f.Object(), f.APIVersion, f.Kind})
	}
	want := []short{
		{"cluster:prod", "legacy", "extensions/v1beta1", "Deployment"},
		{"cluster:prod", "prod/web", "policy/v1beta1", "PodDisruptionBudget"},
		{"cluster:prod helm release prod/shop revision 3 shop/templates/pdb.yaml", "shop", "policy/v1beta1", "PodDisruptionBudget"},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("findings (-want +got):\n%s", diff)
	}
	// Only resources of kinds with a flagged version are listed, and Helm
	// releases are asked for by label and type.
	for _, r := range fake.requests {
		if strings.HasPrefix(r, "/api/v1/pods") {
			t.Errorf("listed pods: %s", r)
		}
		if strings.HasPrefix(r, "/api/v1/secrets") && (!strings.Contains(r, "labelSelector=owner%3Dhelm%2Cstatus%3Ddeployed") || !strings.Contains(r, "fieldSelector=type%3Dhelm.sh%2Frelease.v1")) {
			t.Errorf("secrets request %s", r)
		}
	}
}

func TestRun_ClusterUnreachable(t *testing.T) {
	srv := httptest.NewServer(http.NotFoundHandler())
	srv.Close()
	kubeconfigFor(t, srv.URL)
	res := Run(context.Background(), []string{"cluster:prod"}, Options{})
	if len(res.Errors) != 1 || !strings.HasPrefix(res.Errors[0].Error(), "cluster:prod: discovery:") {
		t.Errorf("errors %v", res.Errors)
	}
	res = Run(context.Background(), []string{"cluster:nosuchcontext"}, Options{})
	if len(res.Errors) != 1 || !strings.Contains(res.Errors[0].Error(), "nosuchcontext") {
		t.Errorf("errors %v", res.Errors)
	}
}
