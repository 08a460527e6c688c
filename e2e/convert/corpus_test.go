package convert_test

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/yaml"

	"github.com/mvpctl/mvpctl/e2e/bins"
	"github.com/mvpctl/mvpctl/e2e/corpus"
	"github.com/mvpctl/mvpctl/e2e/framework"
)

// refusals are the corpus objects a v1.36 server refuses after
// conversion for reasons of their own, not of the conversion: each is
// refused the same when Kubernetes converts it (the oracle's out/ and
// served/ and the comparison with kubectl-convert show mvpctl writes what
// Kubernetes writes). Key: the server's name of the object; value: what
// its refusal must say, and why.
var refusals = map[string]struct{ says, why string }{
	`ValidatingAdmissionPolicy.admissionregistration.k8s.io "require-team-label"`: {"must evaluate to one of [string null_type]", "v1.36's CEL type check is stricter than the manifest's expression"},
	`HorizontalPodAutoscaler.autoscaling "worker"`:                                {"containerResource.container: Required value", "the manifest names no container"},
	`HorizontalPodAutoscaler.autoscaling "api"`:                                   {`object.target.value: Invalid value: "0"`, "v2beta1's targetValue 0 beside averageValue becomes v2's value 0, as Kubernetes converts it"},
	`Event "worker-3.17a0c4000000"`:                                               {"needs to be unset", "an event as a server wrote it, deprecated fields and series together, which no client may create"},
	`Ingress.networking.k8s.io "quoted"`:                                          {`port.name: Invalid value: "8080"`, `servicePort "8080" (a string) becomes a port name, as Kubernetes converts it`},
	`PriorityLevelConfiguration.flowcontrol.apiserver.k8s.io "exempt-monitoring"`: {"must be 'Exempt' if and only if `name` is 'exempt'", "only the built-in exempt level may be Exempt"},
	`VolumeAttributesClass.storage.k8s.io "default"`:                              {"parameters: Required value", "the manifest has no parameters"},
}

// undecidedWebhooks is how many webhooks of the corpus leave sideEffects
// unset (v1beta1: Unknown), which v1 refuses: deny-privileged,
// example-operator-mutating-webhook and platform-defaults.
const undecidedWebhooks = 3

// legacySigner is the signer v1beta1 defaulted for requests it could not
// attribute to a kubelet; certificates.k8s.io/v1 refuses it for new objects.
const legacySigner = "kubernetes.io/legacy-unknown"

// The whole corpus (realistic manifests of every old version the built-in
// rules convert) upgraded for v1.36 in one command, then applied in one
// batch with server-side apply, --dry-run=server and strict field
// validation to a v1.36 kube-apiserver: every object is accepted, the
// v1beta1 CRDs and webhooks included (convert makes them valid for v1, the
// webhooks' sideEffects decided by a flag after scan and convert reported
// them), but for the refusals listed, which are the manifests' own. Objects the test cannot apply are skipped with the reason
// listed in the log: a removed version Kubernetes names no replacement for
// (convert refuses them, and must say so), a version v1.36 still serves
// but does not enable by default (convert leaves it as it is), and a CSR
// whose request v1beta1 could not attribute to a kubelet, to which it gave
// the legacy signer that v1 refuses for new objects (as Kubernetes itself
// does for such an object, created at v1beta1 and read as v1).
func TestConvert_CorpusAcceptedByV136(t *testing.T) {
	start := time.Now()
	mvpctl := framework.Mvpctl(t)
	kubectl, err := bins.Find(bins.Kubectl, serverVersion)
	if err != nil {
		t.Fatal(err)
	}
	c, err := corpus.Load(t.Context(), corpus.Options{Mvpctl: mvpctl, Repo: filepath.Join("..", "..")})
	if err != nil {
		t.Fatal(err)
	}
	work := t.TempDir()
	if _, err := c.Write(filepath.Join(work, "corpus")); err != nil {
		t.Fatal(err)
	}
	// What v1.36 refuses and only the user can decide is reported, by scan
	// before anything is written and by convert, which fails those objects.
	out, _, _ := run(t, work, nil, mvpctl, "scan", "--kubernetes-version", "v1.36", "-R", "-f", "corpus")
	if n := strings.Count(out, "sideEffects: unset (v1beta1: Unknown) is not allowed by v1; decide with --set-webhook-side-effects=None|NoneOnDryRun"); n != undecidedWebhooks {
		t.Errorf("scan reported %d webhooks whose sideEffects needs a decision, want %d:\n%s", n, undecidedWebhooks, out)
	}
	_, errOut, _ := run(t, work, nil, mvpctl, "convert", "--kubernetes-version", "v1.36", "-R", "-f", "corpus", "--continue-on-error")
	if n := strings.Count(errOut, "decide with --set-webhook-side-effects=None|NoneOnDryRun"); n != undecidedWebhooks {
		t.Errorf("convert reported %d webhooks whose sideEffects needs a decision, want %d:\n%s", n, undecidedWebhooks, errOut)
	}
	// Decided, every object with a replacement converts; what is made valid
	// for v1.36 mechanically (CRD schemas, admissionReviewVersions) is a
	// warning per object and fix.
	converted, errOut, code := run(t, work, nil, mvpctl, "convert", "--kubernetes-version", "v1.36", "-R", "-f", "corpus", "--continue-on-error", "--set-webhook-side-effects=None")
	noReplacement, fixes := 0, 0
	for _, l := range strings.Split(strings.TrimSpace(errOut), "\n") {
		switch {
		case l == "":
		case strings.Contains(l, "Kubernetes names no replacement that this release serves"):
			noReplacement++
		case strings.HasPrefix(l, "warning: "):
			fixes++
		case strings.HasPrefix(l, "error: ") && strings.Contains(l, " documents failed to convert; written unchanged"):
		default:
			t.Errorf("convert: %s", l)
		}
	}
	if code != 0 && noReplacement == 0 {
		t.Fatalf("convert: exit %d\n%s", code, errOut)
	}
	t.Logf("convert: %d fixes for v1.36's validation, %d objects without replacement", fixes, noReplacement)

	cp := framework.Start(t, framework.Options{Versions: []string{serverVersion}})
	cs, err := kubernetes.NewForConfig(cp.Server(0).RESTConfig())
	if err != nil {
		t.Fatal(err)
	}
	served := servedVersions(t, cs)
	objs := decodeAll(t, converted)
	var batch []*unstructured.Unstructured
	skipped := map[string][]string{}
	namespaces := sets.New[string]()
	for _, o := range objs {
		reason := skipReason(o, served)
		if reason != "" {
			skipped[reason] = append(skipped[reason], o.GetAPIVersion()+" "+o.GetKind()+" "+o.GetName())
			continue
		}
		withoutServerFields(o)
		if ns := o.GetNamespace(); ns != "" {
			namespaces.Insert(ns)
		}
		batch = append(batch, o)
	}
	for _, ns := range sets.List(namespaces) {
		_, err := cs.CoreV1().Namespaces().Create(t.Context(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{})
		if err != nil && !apierrors.IsAlreadyExists(err) {
			t.Fatalf("namespace %s: %v", ns, err)
		}
	}
	applyDryRun(t, kubectl, cp.Server(0).Kubeconfig, work, batch)

	for reason, which := range skipped {
		t.Logf("skipped %d objects: %s: %s", len(which), reason, strings.Join(which, ", "))
	}
	if skippedVersions := len(skipped["Kubernetes names no replacement that v1.36 serves"]); skippedVersions != noReplacement {
		t.Errorf("convert named %d objects without replacement; %d were written unchanged", noReplacement, skippedVersions)
	}
	t.Logf("%d objects of %d old versions: %d applied, %d skipped; %s in all", len(objs), len(c.Versions), len(batch), len(objs)-len(batch), time.Since(start).Round(time.Millisecond))
}

// servedVersions lists the group/versions the server serves.
func servedVersions(t *testing.T, cs *kubernetes.Clientset) sets.Set[string] {
	t.Helper()
	groups, err := cs.Discovery().ServerGroups()
	if err != nil {
		t.Fatal(err)
	}
	out := sets.New[string]()
	for _, g := range groups.Groups {
		for _, v := range g.Versions {
			out.Insert(v.GroupVersion)
		}
	}
	return out
}

// skipReason says why an object cannot be applied to the server, "" if it
// can.
func skipReason(o *unstructured.Unstructured, served sets.Set[string]) string {
	switch gv := o.GetAPIVersion(); {
	case strings.HasSuffix(gv, "/v1beta1") && o.GetKind() == "PodSecurityPolicy":
		return "Kubernetes names no replacement that v1.36 serves"
	case !served.Has(gv):
		return "v1.36 does not serve " + gv + " by default"
	case gv == "certificates.k8s.io/v1" && o.GetKind() == "CertificateSigningRequest":
		if s, _, _ := unstructured.NestedString(o.Object, "spec", "signerName"); s == legacySigner {
			return "certificates.k8s.io/v1 refuses the signer " + legacySigner + " for new objects"
		}
	}
	return ""
}

// decodeAll decodes the YAML documents of convert's output.
func decodeAll(t *testing.T, out string) []*unstructured.Unstructured {
	t.Helper()
	var objs []*unstructured.Unstructured
	for i, doc := range strings.Split("\n"+out, "\n---\n") {
		if strings.TrimSpace(doc) == "" {
			continue
		}
		js, err := yaml.YAMLToJSON([]byte(doc))
		if err != nil {
			t.Fatalf("document %d: %v", i, err)
		}
		o := &unstructured.Unstructured{}
		if err := o.UnmarshalJSON(js); err != nil {
			t.Fatalf("document %d: %v\n%s", i, err, doc)
		}
		objs = append(objs, o)
	}
	return objs
}

// applyDryRun applies the objects in one kubectl run with server-side
// apply, --dry-run=server and strict field validation, and checks that the
// server accepted each. --force-conflicts: the corpus has flowcontrol
// objects named as the server's own, whose fields its config producer
// manages; what is checked is validation, not ownership.
func applyDryRun(t *testing.T, kubectl, kubeconfig, work string, objs []*unstructured.Unstructured) {
	t.Helper()
	var b bytes.Buffer
	for _, o := range objs {
		y, err := yaml.Marshal(o.Object)
		if err != nil {
			t.Fatal(err)
		}
		b.WriteString("---\n")
		b.Write(y)
	}
	file := filepath.Join(work, "converted.yaml")
	if err := os.WriteFile(file, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	out, errOut, _ := run(t, work, []string{"KUBECONFIG=" + kubeconfig}, kubectl, "apply", "--server-side", "--force-conflicts", "--dry-run=server", "--validate=strict", "-f", file, "-o", "name")
	refused, refusedObjects := map[string]bool{}, 0
	for _, l := range strings.Split(strings.TrimSpace(errOut), "\n") {
		if l == "" || strings.HasPrefix(l, "Warning: ") || strings.HasPrefix(l, " ") {
			continue
		}
		known := false
		for name, r := range refusals {
			if strings.Contains(l, name+" is invalid") && strings.Contains(l, r.says) {
				known, refused[name] = true, true
			}
		}
		if !known {
			t.Errorf("refused: %s", l)
		}
		refusedObjects++
	}
	for name, r := range refusals {
		if refused[name] {
			t.Logf("refused as expected: %s: %s", name, r.why)
		} else {
			t.Errorf("%s was not refused (%q): remove it from refusals", name, r.says)
		}
	}
	t.Logf("kubectl apply --server-side --dry-run=server --validate=strict: %d objects, %d accepted, %d refused", len(objs), len(strings.Fields(out)), refusedObjects)
	if n := len(strings.Fields(out)); n+refusedObjects != len(objs) {
		t.Errorf("kubectl apply --dry-run=server accepted %d objects and refused %d, of %d:\n%s", n, refusedObjects, len(objs), out)
	}
}

// withoutServerFields drops the metadata a server sets, which the corpus's
// objects (some as read from a server) carry and a manifest would not.
func withoutServerFields(o *unstructured.Unstructured) {
	for _, f := range []string{"resourceVersion", "uid", "creationTimestamp", "generation", "managedFields", "selfLink"} {
		unstructured.RemoveNestedField(o.Object, "metadata", f)
	}
}
