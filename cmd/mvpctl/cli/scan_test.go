package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

// helmTree is what `helm template --output-dir` writes for a chart with a
// subchart: nested templates, files that are not Kubernetes objects, and
// removed APIs in several of them.
func helmTree(t *testing.T) string {
	t.Helper()
	root := t.TempDir()
	files := map[string]string{
		"shop/Chart.yaml":  "apiVersion: v2\nname: shop\nversion: 0.1.0\n",
		"shop/values.yaml": "replicas: 2\n",
		"shop/templates/pdb.yaml": `---
# Source: shop/templates/pdb.yaml
apiVersion: policy/v1beta1
kind: PodDisruptionBudget
metadata:
  name: shop
spec:
  minAvailable: 1
`,
		"shop/templates/web/ingress.yaml": `apiVersion: v1
kind: Service
metadata: {name: shop}
---
apiVersion: networking.k8s.io/v1beta1
kind: Ingress
metadata: {name: shop, namespace: web}
`,
		"shop/charts/db/templates/backup.yaml": `apiVersion: apps/v1
kind: Deployment
metadata: {name: db}
---
apiVersion: batch/v1beta1
kind: CronJob
metadata: {name: backup}
`,
	}
	for name, content := range files {
		p := filepath.Join(root, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

func TestScan_HelmTreeFails(t *testing.T) {
	root := helmTree(t)
	code, out, errOut := run(t, "", "scan", "-R", "-f", root)
	if code != exitFailure {
		t.Fatalf("exit %d, want 1\n%s\n%s", code, out, errOut)
	}
	rel := func(p string) string { return filepath.Join(root, filepath.FromSlash(p)) }
	for _, want := range []string{
		rel("shop/charts/db/templates/backup.yaml") + ":5 CronJob backup batch/v1beta1 removed v1.21 v1.25 batch/v1 yes",
		rel("shop/templates/pdb.yaml") + ":3 PodDisruptionBudget shop policy/v1beta1 removed v1.21 v1.25 policy/v1 yes",
		rel("shop/templates/web/ingress.yaml") + ":5 Ingress web/shop networking.k8s.io/v1beta1 removed v1.19 v1.22 networking.k8s.io/v1 yes",
		"3 removed and 0 deprecated in Kubernetes v1.37, in 7 documents of 5 files",
	} {
		if !hasLine(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if errOut != "" {
		t.Errorf("stderr: %s", errOut)
	}

	// Without -R the chart's templates are not read: say so.
	code, out, errOut = run(t, "", "scan", "-f", filepath.Join(root, "shop"))
	if code != 0 || !strings.Contains(errOut, "warning: "+filepath.Join(root, "shop")+": 2 subdirectories not scanned (use -R)") {
		t.Errorf("exit %d\n%s\n%s", code, out, errOut)
	}
}

// hasLine says whether text has a line with these fields, however aligned.
func hasLine(text, fields string) bool {
	for _, l := range strings.Split(text, "\n") {
		if strings.Join(strings.Fields(l), " ") == fields {
			return true
		}
	}
	return false
}

func TestScan_StdinList(t *testing.T) {
	list := `apiVersion: v1
kind: List
items:
- apiVersion: autoscaling/v2beta2
  kind: HorizontalPodAutoscaler
  metadata: {name: web, namespace: shop}
- apiVersion: v1
  kind: ConfigMap
  metadata: {name: c}
`
	code, out, errOut := run(t, list, "scan", "-f", "-", "-o", "json")
	if code != exitFailure {
		t.Fatalf("exit %d\n%s\n%s", code, out, errOut)
	}
	var rep scanReport
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatal(err)
	}
	if rep.Documents != 1 || len(rep.Findings) != 1 || rep.Summary["removed"] != 1 || rep.KubernetesVersion != "v1.37" {
		t.Fatalf("%+v", rep)
	}
	f := rep.Findings[0]
	if f.File != "<stdin>" || f.Line != 4 || f.Kind != "HorizontalPodAutoscaler" || f.RemovedIn != "v1.26" || f.ReplacementAPIVersion != "autoscaling/v2" || !f.Convertible {
		t.Errorf("%+v", f)
	}
}

// Deprecated but still served: exit 0, unless --fail-on deprecated.
func TestScan_FailOnDeprecated(t *testing.T) {
	in := "apiVersion: policy/v1beta1\nkind: PodDisruptionBudget\nmetadata: {name: p}\n"
	code, out, _ := run(t, in, "scan", "-f", "-", "--kubernetes-version", "v1.22")
	if code != 0 || !hasLine(out, "<stdin>:1 PodDisruptionBudget p policy/v1beta1 deprecated v1.21 v1.25 policy/v1 yes") {
		t.Errorf("exit %d\n%s", code, out)
	}
	if code, _, _ := run(t, in, "scan", "-f", "-", "--kubernetes-version", "v1.22", "--fail-on", "deprecated"); code != exitFailure {
		t.Errorf("--fail-on deprecated: exit %d", code)
	}
	if code, _, _ := run(t, in, "scan", "-f", "-", "--kubernetes-version", "1.20"); code != 0 {
		t.Errorf("v1.20: exit %d", code)
	}
}

func TestScan_BadInput(t *testing.T) {
	for name, c := range map[string]struct {
		stdin string
		args  []string
		msg   string
	}{
		"yaml syntax":     {"apiVersion: policy/v1beta1\nkind: [\n", []string{"-f", "-"}, "<stdin>:2: yaml: "},
		"empty stdin":     {"", []string{"-f", "-"}, "<stdin>: no documents"},
		"missing file":    {"", []string{"-f", "/nonexistent/x.yaml"}, "/nonexistent/x.yaml: no such file or directory"},
		"no input":        {"", nil, "give -f FILE"},
		"bad version":     {"", []string{"-f", "-", "--kubernetes-version", "latest"}, `--kubernetes-version: Kubernetes version "latest"`},
		"bad output":      {"", []string{"-f", "-", "-o", "xml"}, `unknown output format "xml"`},
		"bad fail-on":     {"", []string{"-f", "-", "--fail-on", "warning"}, `--fail-on "warning"`},
		"unknown context": {"", []string{"-f", "cluster:no-such-context-anywhere"}, "no-such-context-anywhere"},
	} {
		t.Run(name, func(t *testing.T) {
			t.Setenv("KUBECONFIG", filepath.Join(t.TempDir(), "none"))
			code, _, errOut := run(t, c.stdin, append([]string{"scan"}, c.args...)...)
			if code != exitUsage || !strings.Contains(errOut, c.msg) || strings.Count(strings.TrimSpace(errOut), "\n") > 0 {
				t.Errorf("exit %d, want 2 and one line with %q:\n%s", code, c.msg, errOut)
			}
		})
	}
}

func TestScan_Outputs(t *testing.T) {
	root := helmTree(t)
	code, out, _ := run(t, "", "scan", "-R", "-f", root, "-o", "yaml")
	var rep scanReport
	if err := yaml.Unmarshal([]byte(out), &rep); code != exitFailure || err != nil || len(rep.Findings) != 3 {
		t.Errorf("yaml: exit %d, %v, %+v", code, err, rep)
	}

	_, out, _ = run(t, "", "scan", "-R", "-f", root, "-o", "github")
	want := "::error file=" + filepath.ToSlash(filepath.Join(root, "shop/templates/pdb.yaml")) + ",line=3,col=1,title=removed-api::PodDisruptionBudget shop uses policy/v1beta1, removed in v1.25 (deprecated in v1.21); use policy/v1 (mvpctl convert converts it)"
	if !containsGitHub(out, want) {
		t.Errorf("github output lacks %q:\n%s", want, out)
	}

	_, out, _ = run(t, "", "scan", "-R", "-f", root, "-o", "sarif")
	var sarif struct {
		Runs []struct {
			Tool struct {
				Driver struct {
					Name  string
					Rules []struct{ ID string }
				}
			}
			Results []struct {
				RuleID    string
				RuleIndex int
				Level     string
			}
		}
	}
	if err := json.Unmarshal([]byte(out), &sarif); err != nil || len(sarif.Runs) != 1 {
		t.Fatalf("sarif: %v\n%s", err, out)
	}
	r := sarif.Runs[0]
	if r.Tool.Driver.Name != "mvpctl scan" || len(r.Tool.Driver.Rules) != 2 || r.Tool.Driver.Rules[0].ID != "removed-api" || len(r.Results) != 3 ||
		r.Results[0].RuleID != "removed-api" || r.Results[0].RuleIndex != 0 || r.Results[0].Level != "error" {
		t.Errorf("sarif: %+v", r)
	}

	_, out, _ = run(t, "", "scan", "-R", "-f", root, "-o", "markdown")
	if !strings.Contains(out, "| LOCATION | KIND | NAME |") || !regexp.MustCompile(`(?m)^\| .*pdb\.yaml:3 \| PodDisruptionBudget \| shop \| policy/v1beta1 \| removed \|`).MatchString(out) {
		t.Errorf("markdown:\n%s", out)
	}
}

// containsGitHub compares a workflow command with its properties escaped
// as the GitHub writer escapes them.
func containsGitHub(out, want string) bool {
	i := strings.Index(want, "file=") + len("file=")
	j := strings.Index(want, ",line=")
	file := strings.NewReplacer("%", "%25", ":", "%3A", ",", "%2C").Replace(want[i:j])
	return strings.Contains(out, want[:i]+file+want[j:])
}
