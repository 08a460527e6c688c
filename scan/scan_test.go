package scan

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/mvpctl/mvpctl/rules/builtin"
)

func writeTree(t *testing.T, files map[string]string) string {
	t.Helper()
	root := t.TempDir()
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

// chart is a Helm chart as `helm template --output-dir` writes it: nested
// templates, a subchart, and files that are not Kubernetes objects.
var chart = map[string]string{
	"web/Chart.yaml":  "apiVersion: v2\nname: web\nversion: 1.0.0\n",
	"web/values.yaml": "replicas: 2\nimage: {tag: v1}\n",
	"web/templates/pdb.yaml": `---
# Source: web/templates/pdb.yaml
apiVersion: policy/v1beta1
kind: PodDisruptionBudget
metadata:
  name: web
  namespace: prod
spec:
  minAvailable: 1
`,
	"web/templates/network/ingress.yaml": `# Source: web/templates/network/ingress.yaml
apiVersion: v1
kind: Service
metadata: {name: web}
spec: {ports: [{port: 80}]}
---
apiVersion: extensions/v1beta1
kind: Ingress
metadata:
  name: web
spec:
  backend: {serviceName: web, servicePort: 80}
`,
	"web/templates/deployment.json": `{"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web"}}`,
	"web/charts/cron/templates/cronjob.yml": `apiVersion: batch/v1beta1
kind: CronJob
metadata: {name: nightly}
---
apiVersion: policy/v1beta1
kind: PodSecurityPolicy
metadata: {name: restricted}
`,
	"web/.git/config.yaml": "apiVersion: policy/v1beta1\nkind: PodDisruptionBudget\nmetadata: {name: hidden}\n",
	"web/README.md":        "apiVersion: policy/v1beta1\n",
}

func TestRun_NestedChart(t *testing.T) {
	root := writeTree(t, chart)
	res := Run(context.Background(), []string{root}, Options{Recursive: true, Target: builtin.Release{Major: 1, Minor: 36}})
	if len(res.Errors) > 0 {
		t.Fatalf("errors: %v", res.Errors)
	}
	p := func(s string) string { return filepath.Join(root, filepath.FromSlash(s)) }
	want := []Finding{
		{Location: Location{File: p("web/charts/cron/templates/cronjob.yml"), Line: 1}, APIVersion: "batch/v1beta1", Kind: "CronJob", Name: "nightly",
			Status: Removed, DeprecatedIn: "v1.21", RemovedIn: "v1.25", ReplacementAPIVersion: "batch/v1", ReplacementKind: "CronJob", Convertible: true},
		{Location: Location{File: p("web/charts/cron/templates/cronjob.yml"), Line: 5}, APIVersion: "policy/v1beta1", Kind: "PodSecurityPolicy", Name: "restricted",
			Status: Removed, DeprecatedIn: "v1.21", RemovedIn: "v1.25"},
		{Location: Location{File: p("web/templates/network/ingress.yaml"), Line: 7}, APIVersion: "extensions/v1beta1", Kind: "Ingress", Name: "web",
			Status: Removed, DeprecatedIn: "v1.14", RemovedIn: "v1.22", ReplacementAPIVersion: "networking.k8s.io/v1", ReplacementKind: "Ingress", Convertible: true},
		{Location: Location{File: p("web/templates/pdb.yaml"), Line: 3}, APIVersion: "policy/v1beta1", Kind: "PodDisruptionBudget", Namespace: "prod", Name: "web",
			Status: Removed, DeprecatedIn: "v1.21", RemovedIn: "v1.25", ReplacementAPIVersion: "policy/v1", ReplacementKind: "PodDisruptionBudget", Convertible: true},
	}
	if diff := cmp.Diff(want, res.Findings); diff != "" {
		t.Errorf("findings (-want +got):\n%s", diff)
	}
	if res.Documents != 8 || res.Files != 6 || len(res.Warnings) != 0 {
		t.Errorf("%d documents in %d files, want 8 in 6; warnings %v", res.Documents, res.Files, res.Warnings)
	}
}

// Without -R a directory is read one level deep, as kubectl does, and the
// scan says what it left out.
func TestRun_DirectoryWithoutRecursive(t *testing.T) {
	root := writeTree(t, chart)
	res := Run(context.Background(), []string{filepath.Join(root, "web")}, Options{})
	if len(res.Findings) != 0 || res.Files != 2 {
		t.Errorf("%d findings in %d files: %+v", len(res.Findings), res.Files, res.Findings)
	}
	if len(res.Warnings) != 1 || !strings.Contains(res.Warnings[0], "2 subdirectories not scanned (use -R)") {
		t.Errorf("warnings: %q", res.Warnings)
	}
}

// A directory whose manifests are all in subdirectories (helm template
// --output-dir writes chart/templates/...) gives nothing without -R: that is
// an error naming -R, not an empty scan that passes.
func TestRun_OnlySubdirectoriesWithoutRecursive(t *testing.T) {
	root := writeTree(t, chart)
	res := Run(context.Background(), []string{root}, Options{})
	if len(res.Errors) != 1 || res.Errors[0].Error() != root+": no *.yaml, *.yml or *.json files (1 subdirectory not read: use -R)" {
		t.Errorf("errors %v", res.Errors)
	}
	if res = Run(context.Background(), []string{root}, Options{Recursive: true}); len(res.Errors) != 0 || len(res.Findings) != 4 {
		t.Errorf("-R: errors %v, %d findings", res.Errors, len(res.Findings))
	}
}

// kubectl get -o yaml gives a List; each item is found at its own line.
const list = `apiVersion: v1
kind: List
items:
- apiVersion: apps/v1
  kind: Deployment
  metadata: {name: ok}
- apiVersion: networking.k8s.io/v1beta1
  kind: Ingress
  metadata:
    name: old
    namespace: shop
metadata: {resourceVersion: ""}
`

func TestRun_StdinList(t *testing.T) {
	res := Run(context.Background(), []string{"-"}, Options{Stdin: strings.NewReader(list)})
	if len(res.Errors) > 0 || res.Documents != 1 || len(res.Findings) != 1 {
		t.Fatalf("errors %v, %d documents, findings %+v", res.Errors, res.Documents, res.Findings)
	}
	f := res.Findings[0]
	if f.File != "<stdin>" || f.Line != 7 || f.Object() != "shop/old" || f.Status != Removed || f.RemovedIn != "v1.22" || !f.Convertible {
		t.Errorf("finding %+v", f)
	}
}

func TestRun_TargetVersion(t *testing.T) {
	in := "apiVersion: policy/v1beta1\nkind: PodDisruptionBudget\nmetadata: {name: p}\n"
	for target, want := range map[string]Status{"v1.20": "", "v1.21": Deprecated, "v1.24": Deprecated, "v1.25": Removed, "v1.36": Removed} {
		r, err := builtin.ParseRelease(target)
		if err != nil {
			t.Fatal(err)
		}
		res := Run(context.Background(), []string{"-"}, Options{Stdin: strings.NewReader(in), Target: r})
		got := Status("")
		if len(res.Findings) == 1 {
			got = res.Findings[0].Status
		}
		if got != want || len(res.Findings) > 1 {
			t.Errorf("%s: %q (%d findings), want %q", target, got, len(res.Findings), want)
		}
	}
	// flowcontrol v1beta1 names v1beta3, itself removed in v1.32: the
	// replacement given is the one the target serves, which the built-in
	// rules reach through v1beta3.
	res := Run(context.Background(), []string{"-"}, Options{Stdin: strings.NewReader("apiVersion: flowcontrol.apiserver.k8s.io/v1beta1\nkind: FlowSchema\nmetadata: {name: f}\n")})
	if len(res.Findings) != 1 || res.Findings[0].ReplacementAPIVersion != "flowcontrol.apiserver.k8s.io/v1" || !res.Findings[0].Convertible {
		t.Errorf("%+v", res.Findings)
	}
	// extensions/v1beta1 PodSecurityPolicy names policy/v1beta1, removed in
	// v1.25 without a replacement: none is given, as mvpctl convert says.
	res = Run(context.Background(), []string{"-"}, Options{Stdin: strings.NewReader("apiVersion: extensions/v1beta1\nkind: PodSecurityPolicy\nmetadata: {name: p}\n")})
	if len(res.Findings) != 1 || res.Findings[0].Replacement() != "" || !strings.Contains(res.Findings[0].Message(res.Target), "names no replacement") {
		t.Errorf("%+v", res.Findings)
	}
}

// PodSecurityPolicy: policy/v1beta1 was removed in v1.25 with no
// replacement, and the built-in rule converts it only to extensions/v1beta1,
// removed before it, so nothing converts it; extensions/v1beta1 converts to
// policy/v1beta1 while a release still serves that.
func TestRun_PodSecurityPolicy(t *testing.T) {
	scanAt := func(apiVersion string, target builtin.Release) Finding {
		t.Helper()
		in := "apiVersion: " + apiVersion + "\nkind: PodSecurityPolicy\nmetadata: {name: restricted}\n"
		res := Run(context.Background(), []string{"-"}, Options{Stdin: strings.NewReader(in), Target: target})
		if len(res.Findings) != 1 || len(res.Errors) != 0 {
			t.Fatalf("%s at %v: findings %+v, errors %v", apiVersion, target, res.Findings, res.Errors)
		}
		return res.Findings[0]
	}
	v125 := builtin.Release{Major: 1, Minor: 25}
	f := scanAt("policy/v1beta1", v125)
	if f.Status != Removed || f.RemovedIn != "v1.25" || f.Replacement() != "" || f.Convertible {
		t.Errorf("policy/v1beta1 at v1.25: %+v", f)
	}
	if msg := f.Message(v125); !strings.Contains(msg, "Kubernetes v1.25 names no replacement") || strings.Contains(msg, "mvpctl convert") {
		t.Errorf("message: %s", msg)
	}
	f = scanAt("extensions/v1beta1", builtin.Release{Major: 1, Minor: 20})
	if f.Status != Removed || f.RemovedIn != "v1.16" || f.Replacement() != "policy/v1beta1" || !f.Convertible {
		t.Errorf("extensions/v1beta1 at v1.20: %+v", f)
	}
	if f = scanAt("extensions/v1beta1", v125); f.Convertible {
		t.Errorf("extensions/v1beta1 at v1.25: %+v", f)
	}
}

func TestRun_BadInput(t *testing.T) {
	root := writeTree(t, map[string]string{
		"bad.yaml":    "apiVersion: v1\nkind: ConfigMap\n---\napiVersion: policy/v1beta1\nkind: PodDisruptionBudget\nmetadata: {name: after}\n---\napiVersion: policy/v1beta1\nkind: [\n",
		"empty/x.txt": "not a manifest",
	})
	res := Run(context.Background(), []string{filepath.Join(root, "bad.yaml"), filepath.Join(root, "missing.yaml"), filepath.Join(root, "empty")}, Options{})
	var msgs []string
	for _, e := range res.Errors {
		var ie *InputError
		if !errors.As(e, &ie) {
			t.Errorf("%T: %v", e, e)
		}
		msgs = append(msgs, strings.TrimPrefix(e.Error(), root+string(filepath.Separator)))
	}
	want := []string{
		"bad.yaml:9: yaml: did not find expected node content",
		"empty: no *.yaml, *.yml or *.json files",
		"missing.yaml: no such file or directory",
	}
	if diff := cmp.Diff(want, msgs); diff != "" {
		t.Errorf("errors (-want +got):\n%s", diff)
	}
	// The documents before the broken one are still scanned.
	if res.Documents != 3 {
		t.Errorf("%d documents, want 3", res.Documents)
	}
	if len(res.Findings) != 1 || res.Findings[0].Name != "after" || res.Findings[0].Line != 4 {
		t.Errorf("findings %+v", res.Findings)
	}
}

func TestSplitter(t *testing.T) {
	in := "--- # first\n# Source: a.yaml\nk: 1\n---\n\n---\n# leading comment\n# Source: b.yaml\nk: 2\n----\nk: 3\n--- x\nk: 4"
	sp := newSplitter(strings.NewReader(in), MaxDocument)
	type got struct {
		data   string
		line   int
		source string
	}
	var docs []got
	for {
		d, err := sp.next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		docs = append(docs, got{string(d.data), d.line, d.source})
	}
	want := []got{
		{"# Source: a.yaml\nk: 1\n", 2, "a.yaml"},
		{"\n", 5, ""},
		// "----" and "--- x" are content, not separators, as for kubectl.
		{"# leading comment\n# Source: b.yaml\nk: 2\n----\nk: 3\n--- x\nk: 4", 7, "b.yaml"},
	}
	if diff := cmp.Diff(want, docs, cmp.AllowUnexported(got{})); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

// A document over the bound is an error of its own; the next one is read.
func TestSplitter_TooLarge(t *testing.T) {
	in := "a: 1\n---\nb: " + strings.Repeat("x", 300) + "\nc: 1\n---\nd: 1\n"
	sp := newSplitter(strings.NewReader(in), 100)
	var out []string
	for {
		d, err := sp.next()
		if err == io.EOF {
			break
		}
		var tl *tooLargeError
		if errors.As(err, &tl) {
			out = append(out, fmt.Sprintf("too large at %d", tl.line))
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, string(d.data))
	}
	if diff := cmp.Diff([]string{"a: 1\n", "too large at 3", "d: 1\n"}, out); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

// helmSecretData is what Helm 3 stores in a release Secret's "release" key:
// base64 of gzipped JSON.
func helmSecretData(t testing.TB, release map[string]any) []byte {
	t.Helper()
	js, err := json.Marshal(release)
	if err != nil {
		t.Fatal(err)
	}
	var z bytes.Buffer
	zw := gzip.NewWriter(&z)
	if _, err := zw.Write(js); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return []byte(base64.StdEncoding.EncodeToString(z.Bytes()))
}

const helmManifest = `---
# Source: shop/templates/service.yaml
apiVersion: v1
kind: Service
metadata:
  name: shop
---
# Source: shop/templates/pdb.yaml
apiVersion: policy/v1beta1
kind: PodDisruptionBudget
metadata:
  name: shop
spec:
  minAvailable: 1
`

func TestDecodeHelmRelease(t *testing.T) {
	release := map[string]any{"name": "shop", "namespace": "prod", "version": 3, "manifest": helmManifest,
		"info": map[string]any{"status": "deployed"}, "chart": map[string]any{"metadata": map[string]any{"name": "shop"}}}
	rel, err := DecodeHelmRelease(helmSecretData(t, release))
	if err != nil {
		t.Fatal(err)
	}
	if rel.Name != "shop" || rel.Namespace != "prod" || rel.Version != 3 || rel.Manifest != helmManifest {
		t.Fatalf("%+v", rel)
	}
	findings, documents, errs := scanRelease(rel, newChecker(builtin.Newest), Location{Cluster: "prod-cluster"})
	if len(errs) > 0 || documents != 2 || len(findings) != 1 {
		t.Fatalf("%v, %d documents, %+v", errs, documents, findings)
	}
	f := findings[0]
	if f.HelmRelease != "prod/shop" || f.HelmRevision != 3 || f.File != "shop/templates/pdb.yaml" || f.Line != 0 || f.Cluster != "prod-cluster" || f.Name != "shop" {
		t.Errorf("finding %+v", f)
	}
	if got := f.Location.String(); got != "cluster:prod-cluster helm release prod/shop revision 3 shop/templates/pdb.yaml" {
		t.Errorf("location %q", got)
	}

	// Releases of early Helm 3 are not compressed.
	js, _ := json.Marshal(release)
	if rel, err := DecodeHelmRelease([]byte(base64.StdEncoding.EncodeToString(js))); err != nil || rel.Name != "shop" {
		t.Errorf("uncompressed: %v, %+v", err, rel)
	}
}

func TestDecodeHelmRelease_Bad(t *testing.T) {
	var bomb bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&bomb, gzip.BestSpeed)
	zeros := make([]byte, 1<<20)
	for range MaxRelease>>20 + 1 {
		zw.Write(zeros)
	}
	zw.Close()
	for name, data := range map[string][]byte{
		"not base64":        []byte("%%%"),
		"not JSON":          []byte(base64.StdEncoding.EncodeToString([]byte("{"))),
		"truncated gzip":    []byte(base64.StdEncoding.EncodeToString(append([]byte{0x1f, 0x8b, 0x08}, 0, 0))),
		"over the bound":    []byte(base64.StdEncoding.EncodeToString(bomb.Bytes())),
		"manifest not text": []byte(base64.StdEncoding.EncodeToString([]byte(`{"manifest": 1}`))),
	} {
		if _, err := DecodeHelmRelease(data); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
}

// Only documents whose text names a flagged version (or a flagged core kind,
// or has an escape sequence that could hide one) are decoded: a YAML error
// elsewhere cannot hide a finding and is not reported.
func TestRun_DecodesOnlyWhatMayBeFlagged(t *testing.T) {
	chk := newChecker(builtin.Release{Major: 1, Minor: 36})
	for doc, want := range map[string]bool{
		"apiVersion: apps/v1\nkind: Deployment\n":                                                         false,
		"apiVersion: v1\nkind: ConfigMap\ndata: {a: \"b/c\"}\n":                                           false,
		"apiVersion: extensions/v1beta1\nkind: Ingress\n":                                                 true,
		"{\"apiVersion\":\"policy/v1beta1\",\"kind\":\"PodDisruptionBudget\"}":                            true,
		"apiVersion: 'batch/v1beta1'\nkind: CronJob\n":                                                    true,
		"apiVersion: \"\\x62atch/v1beta1\"\nkind: CronJob\n":                                              true, // escaped
		"apiVersion: v1\nkind: Endpoints\n":                                                               true, // core, deprecated in v1.33
		"apiVersion: v1\nkind: List\nitems:\n- {apiVersion: policy/v1beta1, kind: PodDisruptionBudget}\n": true,
		"apiVersion: apps/v1\nkind: Deployment\nspec: [\n":                                                false, // broken, but cannot be flagged
	} {
		if got := chk.mayFlag([]byte(doc)); got != want {
			t.Errorf("mayFlag(%q) = %v", doc, got)
		}
	}
	// Whatever mayFlag lets through is decoded: the escaped apiVersion is found.
	res := Run(context.Background(), []string{"-"}, Options{Stdin: strings.NewReader("apiVersion: \"\\x62atch/v1beta1\"\nkind: CronJob\nmetadata: {name: c}\n")})
	if len(res.Findings) != 1 || res.Findings[0].APIVersion != "batch/v1beta1" {
		t.Errorf("escaped apiVersion: %+v %v", res.Findings, res.Errors)
	}
}

// helm template failing before a pipe leaves standard input empty: that is
// bad input, not a clean scan.
func TestRun_EmptyStdin(t *testing.T) {
	for _, in := range []string{"", "---\n# nothing\n"} {
		res := Run(context.Background(), []string{"-"}, Options{Stdin: strings.NewReader(in)})
		if len(res.Errors) != 1 || res.Errors[0].Error() != "<stdin>: no documents" {
			t.Errorf("%q: %v", in, res.Errors)
		}
	}
}

// kubectl get -o yaml of a typed list writes items without apiVersion and
// kind: they take the list's, and each is found at its own line.
const typedList = `apiVersion: extensions/v1beta1
kind: DeploymentList
metadata: {resourceVersion: ""}
items:
- metadata:
    name: web
    namespace: shop
  spec: {}
- apiVersion: apps/v1
  kind: Deployment
  metadata: {name: current}
- metadata: {name: api}
`

func TestRun_TypedListItemsWithoutType(t *testing.T) {
	res := Run(context.Background(), []string{"-"}, Options{Stdin: strings.NewReader(typedList)})
	if len(res.Errors) > 0 || res.Documents != 1 || len(res.Findings) != 2 {
		t.Fatalf("errors %v, %d documents, findings %+v", res.Errors, res.Documents, res.Findings)
	}
	for i, want := range []struct {
		line int
		obj  string
	}{{5, "shop/web"}, {12, "api"}} {
		f := res.Findings[i]
		if f.Line != want.line || f.Object() != want.obj || f.Kind != "Deployment" || f.APIVersion != "extensions/v1beta1" || f.Status != Removed || !f.Convertible {
			t.Errorf("finding %d: %+v, want line %d, %s", i, f, want.line, want.obj)
		}
	}
}

// An extensions/v1beta1 ThirdPartyResource (removed in 1.8, long before
// k8s.io/api had lifecycle data) is found, as removed with no replacement
// and a note saying what to use instead.
func TestRun_ThirdPartyResource(t *testing.T) {
	in := "apiVersion: extensions/v1beta1\nkind: ThirdPartyResource\nmetadata: {name: cron-tab.stable.example.com}\nversions: [{name: v1}]\n"
	target := builtin.Release{Major: 1, Minor: 36}
	res := Run(context.Background(), []string{"-"}, Options{Stdin: strings.NewReader(in), Target: target})
	if len(res.Findings) != 1 || len(res.Errors) != 0 {
		t.Fatalf("findings %+v, errors %v", res.Findings, res.Errors)
	}
	f := res.Findings[0]
	if f.Status != Removed || f.RemovedIn != "v1.8" || f.Replacement() != "" || f.Convertible || !strings.Contains(f.Note, "CustomResourceDefinition") {
		t.Errorf("finding: %+v", f)
	}
	if msg := f.Message(target); !strings.Contains(msg, "removed in v1.8") || !strings.Contains(msg, "replacement: none; use a CustomResourceDefinition") {
		t.Errorf("message: %s", msg)
	}
}
