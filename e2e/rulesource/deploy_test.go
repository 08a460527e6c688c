package rulesource_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mvpctl/mvpctl/e2e/framework"
)

// testDeploy renders deploy/ with kubectl kustomize, has the server accept
// every manifest (dry run, then for real), and runs the rules watcher as
// the proxy's ServiceAccount: the shipped RBAC is enough for the informer,
// the status and the Events, and grants no impersonation.
func testDeploy(t *testing.T, cp *framework.ControlPlane, kc string) {
	for _, dir := range []string{"../../deploy", "../../deploy/overlays/client-certificates"} {
		rendered := mustKubectl(t, kc, "", "kustomize", dir)
		if n := strings.Count(rendered, "\nkind: "); n < 10 {
			t.Fatalf("%s renders %d objects", dir, n)
		}
		// Namespaced objects need their namespace to exist even in a dry run.
		if _, err := kubectl(t, kc, "", "get", "namespace", "mvpctl-system"); err != nil {
			mustKubectl(t, kc, "", "create", "namespace", "mvpctl-system")
		}
		out, err := kubectl(t, kc, rendered, "apply", "--dry-run=server", "-f", "-")
		if err != nil {
			t.Fatalf("server-side dry run of %s: %v", dir, err)
		}
		if got, want := strings.Count(out, "(server dry run)"), strings.Count(rendered, "\nkind: "); got != want {
			t.Errorf("%s: %d objects accepted in the dry run, want %d:\n%s", dir, got, want, out)
		}
	}
	rendered := mustKubectl(t, kc, "", "kustomize", "../../deploy")
	mustKubectl(t, kc, rendered, "apply", "-f", "-")

	sa := "system:serviceaccount:mvpctl-system:mvpctl-proxy"
	for _, c := range []struct {
		verb, resource string
		want           string
	}{
		{"watch", "transformationrules.mvp.k8s.io", "yes"},
		{"update", "transformationrules.mvp.k8s.io --subresource=status", "yes"},
		{"create", "events -n default", "yes"},
		{"create", "events -n kube-system", "no"},
		{"update", "transformationrules.mvp.k8s.io", "no"},
		{"create", "transformationrules.mvp.k8s.io", "no"},
		{"impersonate", "users", "no"},
		{"get", "secrets", "no"},
		{"list", "pods", "no"},
	} {
		out, _ := kubectl(t, kc, "", append([]string{"auth", "can-i", c.verb}, append(strings.Fields(c.resource), "--as", sa)...)...)
		if strings.TrimSpace(out) != c.want {
			t.Errorf("can %s %s %s? %q, want %s", sa, c.verb, c.resource, strings.TrimSpace(out), c.want)
		}
	}

	// The ServiceAccount's own token, as the pod would have it.
	token := strings.TrimSpace(mustKubectl(t, kc, "", "create", "token", "mvpctl-proxy", "-n", "mvpctl-system", "--duration", "1h"))
	saKubeconfig := filepath.Join(t.TempDir(), "sa.kubeconfig")
	cfg := "apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster:\n    server: " + cp.Server(0).URL +
		"\n    certificate-authority: " + cp.PKI.CAFile + "\nusers:\n- name: sa\n  user:\n    token: " + token +
		"\ncontexts:\n- name: c\n  context: {cluster: c, user: sa}\ncurrent-context: c\n"
	if err := os.WriteFile(saKubeconfig, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	w := startWatcher(t, "serviceaccount", saKubeconfig)
	w.waitFor(t, "the cluster's rules", 30*time.Second, func(l watchLine) bool { return len(l.Documents) > 0 })
	doc := `apiVersion: mvp.k8s.io/v1
kind: TransformationRules
metadata: {name: deploy-check}
spec:
  apiMigrationRules:
  - {apiGroup: batch, resource: cronjobs, fromVersion: v1beta1, toVersion: v1,
     transformations: [{path: spec.x, action: remove}]}
`
	mustKubectl(t, kc, doc, "apply", "-f", "-")
	w.waitFor(t, "the new object", 30*time.Second, func(l watchLine) bool {
		for _, d := range l.Documents {
			if strings.HasSuffix(d, "/deploy-check") {
				return true
			}
		}
		return false
	})
	deadline := time.Now().Add(10 * time.Second)
	for {
		out, _ := kubectl(t, kc, "", "get", "transformationrules", "deploy-check", "-o", `jsonpath={.status.conditions[?(@.type=="Ready")].status}`)
		if out == "True" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the ServiceAccount did not write Ready=True: %q", out)
		}
		time.Sleep(100 * time.Millisecond)
	}
	events := mustKubectl(t, kc, "", "get", "events", "-n", "default", "--field-selector", "involvedObject.name=deploy-check,reason=Loaded", "-o", "jsonpath={.items[*].source.component}")
	if !strings.Contains(events, "mvpctl") {
		t.Errorf("no Loaded event recorded by the ServiceAccount: %q", events)
	}
	if data, _ := os.ReadFile(w.log); strings.Contains(string(data), "forbidden") {
		t.Errorf("the ServiceAccount was refused something:\n%s", data)
	}
}
