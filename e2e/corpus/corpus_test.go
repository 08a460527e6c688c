package corpus

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/yaml"
)

var testRules = []Rule{
	{Kind: "FlowSchema", FromAPIVersion: "flowcontrol.apiserver.k8s.io/v1beta3", ToAPIVersion: "flowcontrol.apiserver.k8s.io/v1", RemovedIn: "v1.32"},
	{Kind: "FlowSchema", FromAPIVersion: "flowcontrol.apiserver.k8s.io/v1beta1", ToAPIVersion: "flowcontrol.apiserver.k8s.io/v1beta3", RemovedIn: "v1.26"},
	{Kind: "Ingress", FromAPIVersion: "extensions/v1beta1", ToAPIVersion: "networking.k8s.io/v1", DeprecatedIn: "v1.14", RemovedIn: "v1.22"},
	{Kind: "HorizontalPodAutoscaler", FromAPIVersion: "autoscaling/v1", ToAPIVersion: "autoscaling/v2"},
}

// Every rule's old version is there once, sorted, with the end of its
// chain of rules as target.
func TestVersionsOf(t *testing.T) {
	c, err := versionsOf(testRules)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, v := range c.Versions {
		got = append(got, v.GroupVersion().String()+" "+v.Kind+" -> "+v.Target.String()+" "+v.RemovedIn)
	}
	want := []string{
		"autoscaling/v1 HorizontalPodAutoscaler -> autoscaling/v2 ",
		"extensions/v1beta1 Ingress -> networking.k8s.io/v1 v1.22",
		"flowcontrol.apiserver.k8s.io/v1beta1 FlowSchema -> flowcontrol.apiserver.k8s.io/v1 v1.26",
		"flowcontrol.apiserver.k8s.io/v1beta3 FlowSchema -> flowcontrol.apiserver.k8s.io/v1 v1.32",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("versions:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

func writeFile(t *testing.T, p, data string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
}

// The oracle's hand-written inputs of old versions make the corpus, once
// each; fuzzed fixtures, outputs, other versions and duplicates do not.
func TestReadOracle(t *testing.T) {
	repo := t.TempDir()
	oracle := filepath.Join(repo, "testdata", "oracle")
	ing := `{"apiVersion": "extensions/v1beta1", "kind": "Ingress", "metadata": {"name": "web"}}`
	writeFile(t, filepath.Join(oracle, "ingress-a", "in", "web.v1beta1.json"), ing)
	writeFile(t, filepath.Join(oracle, "ingress-b", "in", "web.v1beta1.json"), ing)
	writeFile(t, filepath.Join(oracle, "ingress-a", "in", "fuzzed.v1beta1.json"), strings.Replace(ing, "web", "fuzz", 1))
	writeFile(t, filepath.Join(oracle, "ingress-a", "in", "web.v1.json"), `{"apiVersion": "networking.k8s.io/v1", "kind": "Ingress"}`)
	writeFile(t, filepath.Join(oracle, "ingress-a", "out", "api.v1beta1.json"), strings.Replace(ing, "web", "out", 1))
	writeFile(t, filepath.Join(oracle, "ingress-a", "in", "api.v1beta1.yaml"), "apiVersion: extensions/v1beta1\nkind: Ingress\nmetadata: {name: api}\n")
	writeFile(t, filepath.Join(oracle, "hpa", "in", "cpu.v1.json"), `{"apiVersion": "autoscaling/v1", "kind": "HorizontalPodAutoscaler"}`)
	c, err := versionsOf(testRules)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.readOracle(oracle, Options{Repo: repo, MaxManifests: 10}); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, v := range c.Versions {
		for _, m := range v.Manifests {
			got = append(got, v.Kind+" "+m.Source+" "+m.Name)
		}
	}
	want := []string{
		"HorizontalPodAutoscaler testdata/oracle/hpa/in/cpu.v1.json hpa--cpu.v1.yaml",
		"Ingress testdata/oracle/ingress-a/in/api.v1beta1.yaml ingress-a--api.v1beta1.yaml",
		"Ingress testdata/oracle/ingress-a/in/web.v1beta1.json ingress-a--web.v1beta1.yaml",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("manifests:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	bounded, err := versionsOf(testRules)
	if err != nil {
		t.Fatal(err)
	}
	if err := bounded.readOracle(oracle, Options{Repo: repo, MaxManifests: 2}); err == nil || !strings.Contains(err.Error(), "more than 2 manifests") {
		t.Errorf("over the bound: %v", err)
	}
	gvk := schema.GroupVersionKind{Group: "extensions", Version: "v1beta1", Kind: "Ingress"}
	if c.Version(gvk) == nil || c.Version(gvk.GroupVersion().WithKind("Deployment")) != nil {
		t.Error("Version does not find what the rules convert, or finds what they do not")
	}
}

// Strings that YAML 1.1 reads as booleans or numbers stay strings through
// BlockYAML and sigs.k8s.io/yaml, as kubectl-convert and mvpctl read them.
func TestBlockYAML_YAML11(t *testing.T) {
	in := `{"labels": {"a": "yes", "b": "on", "c": "N", "d": "0755", "e": "1_000", "f": "12:30", "g": "plain", "h": "two\nlines"}}`
	y, err := BlockYAML([]byte(in))
	if err != nil {
		t.Fatal(err)
	}
	js, err := yaml.YAMLToJSON(y)
	if err != nil {
		t.Fatal(err)
	}
	var got, want any
	if err := json.Unmarshal(js, &got); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal([]byte(in), &want); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("read back %v, want %v; YAML:\n%s", got, want, y)
	}
	if !strings.Contains(string(y), "g: plain\n") {
		t.Errorf("a plain string was quoted:\n%s", y)
	}
}

// Manifests are written as block YAML in the order of their source, with
// strings that would read as another type quoted.
func TestBlockYAML(t *testing.T) {
	got, err := BlockYAML([]byte(`{"kind": "Service", "apiVersion": "v1", "spec": {"ports": [{"port": 80, "name": "80", "enabled": "true"}]}}`))
	if err != nil {
		t.Fatal(err)
	}
	want := "kind: Service\napiVersion: v1\nspec:\n  ports:\n    - port: 80\n      name: \"80\"\n      enabled: \"true\"\n"
	if string(got) != want {
		t.Errorf("BlockYAML =\n%s\nwant\n%s", got, want)
	}
}
