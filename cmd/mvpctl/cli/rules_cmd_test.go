package cli

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mvpctl/mvpctl/rules"
)

// A kubeconfig whose server refuses connections: commands that must not
// reach a cluster prove it by not failing on that.
func deadKubeconfig(t *testing.T) string {
	t.Helper()
	return writeFile(t, "kubeconfig", `apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "https://127.0.0.1:1"}}]
users: [{name: u, user: {token: x}}]
contexts: [{name: c, context: {cluster: c, user: u}}]
current-context: c
`)
}

func TestRulesApply_LintsFirst(t *testing.T) {
	kc := deadKubeconfig(t)
	bad := writeFile(t, "bad.yaml", `apiVersion: mvp.k8s.io/v1
kind: TransformationRules
metadata: {name: bad}
spec:
  apiMigrationRules:
  - {apiGroup: apps, resource: deployments, fromVersion: v1beta1, toVersion: v1,
     transformations: [{path: spec.x, action: rname}]}
`)
	code, out, errOut := run(t, "", "rules", "apply", "--kubeconfig", kc, "-f", bad)
	if code != exitUsage || out != "" || !strings.Contains(errOut, "bad.yaml:7:") || !strings.Contains(errOut, `Unsupported value: "rname"`) {
		t.Errorf("exit %d, stdout %q, stderr:\n%s", code, out, errOut)
	}
	code, _, errOut = run(t, "", "rules", "apply", "--kubeconfig", kc, "-f", filepath.Join(t.TempDir(), "missing.yaml"))
	if code != exitUsage || !strings.Contains(errOut, "no such file") {
		t.Errorf("missing file: exit %d, %s", code, errOut)
	}
	if code, _, _ := run(t, "", "rules", "apply", "--kubeconfig", kc); code != exitUsage {
		t.Errorf("no -f: exit %d", code)
	}
	if code, _, _ := run(t, "", "rules", "apply", "--kubeconfig", kc, "-f", seedRules, "--dry-run", "everything"); code != exitUsage {
		t.Errorf("--dry-run everything: exit %d", code)
	}
	// A client dry run checks the files and never reaches the cluster.
	code, out, errOut = run(t, "", "rules", "apply", "--kubeconfig", kc, "-f", seedRules, "--dry-run=client")
	if code != 0 || !strings.Contains(out, "applied (dry run)") {
		t.Errorf("--dry-run=client: exit %d, stdout %q, stderr %s", code, out, errOut)
	}
	// A good file gets as far as the cluster, which cannot be reached: the
	// kubeconfig is wrong (exit 2), in one line.
	code, _, errOut = run(t, "", "rules", "apply", "--kubeconfig", kc, "-f", seedRules)
	if code != exitUsage || errOut != "mvpctl: the connection to the server 127.0.0.1:1 was refused; is the kubeconfig's server right?\n" {
		t.Errorf("unreachable cluster: exit %d, %q", code, errOut)
	}
}

// The applied object is the document as decoded: exact numbers, every
// field, nothing added.
func TestRuleObject_Seed(t *testing.T) {
	rs, err := rules.Load(seedRules)
	if err != nil {
		t.Fatal(err)
	}
	u, err := ruleObject(rs.Documents[0].Rules)
	if err != nil {
		t.Fatal(err)
	}
	if u.GetAPIVersion() != rules.APIVersion || u.GetKind() != rules.KindTransformationRules || u.GetName() != rs.Documents[0].Rules.Metadata.Name {
		t.Fatalf("object %v", u.Object)
	}
	data, _ := json.Marshal(u.Object)
	back, err := rules.ParseAll(rules.Source{Name: "object.json", Data: data})
	if err != nil {
		t.Fatalf("the object does not parse back: %v", err)
	}
	a, _ := json.Marshal(rs.Documents[0].Rules)
	b, _ := json.Marshal(back.Documents[0].Rules)
	if string(a) != string(b) {
		t.Errorf("object differs from the file:\n%s\n%s", a, b)
	}
}

func TestRulesGet_BadOutput(t *testing.T) {
	if code, _, errOut := run(t, "", "rules", "get", "--kubeconfig", deadKubeconfig(t), "-o", "xml"); code != exitUsage || !strings.Contains(errOut, "xml") {
		t.Errorf("exit %d: %s", code, errOut)
	}
}

// An unreadable or invalid rules file at start-up is a clear error, exit 2.
func TestRulesWatch_BadFilesAtStart(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "missing.yaml")
	code, _, errOut := run(t, "", "rules", "watch", "--rules", missing)
	if code != exitUsage || !strings.Contains(errOut, missing) || !strings.Contains(errOut, "no such file") {
		t.Errorf("missing file: exit %d, %q", code, errOut)
	}
	bad := writeFile(t, "bad.yaml", "apiVersion: mvp.k8s.io/v1\nkind: TransformationRules\nmetadata: {name: x}\nspec: {apiRoutingRules: [{resource: x, preferApiServerVersion: latest}]}\n")
	code, _, errOut = run(t, "", "rules", "watch", "--rules", bad)
	if code != exitUsage || !strings.Contains(errOut, "bad.yaml:4:") || !strings.Contains(errOut, "preferApiServerVersion") {
		t.Errorf("invalid file: exit %d, %q", code, errOut)
	}
	if code, _, _ := run(t, "", "rules", "watch"); code != exitUsage {
		t.Errorf("no source: exit %d", code)
	}
}
