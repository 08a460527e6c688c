package webhook

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsfake "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset/fake"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	kubefake "k8s.io/client-go/kubernetes/fake"
	"sigs.k8s.io/yaml"

	"github.com/mvpctl/mvpctl/engine"
	"github.com/mvpctl/mvpctl/engine/rulesource"
)

func readCRD(t *testing.T, path string) *apiextensionsv1.CustomResourceDefinition {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var crd apiextensionsv1.CustomResourceDefinition
	if err := yaml.UnmarshalStrict(data, &crd); err != nil {
		t.Fatal(err)
	}
	return &crd
}

// TestManage_WiresCoveredCRDAndRefusesUnreachable runs the manager against
// a fake CRD client (one unit; the e2e suite proves it on kube-apiserver)
// and the webhook's real HTTPS endpoint: the widgets CRD is wired after
// the self-test, one with a version no rule reaches is left as it was.
func TestManage_WiresCoveredCRDAndRefusesUnreachable(t *testing.T) {
	widgets := readCRD(t, "testdata/widgets-crd.yaml")
	gadgets := widgets.DeepCopy()
	gadgets.Name, gadgets.Spec.Names = "gadgets.example.com", apiextensionsv1.CustomResourceDefinitionNames{Plural: "gadgets", Kind: "Gadget"}
	gadgets.Spec.Versions = append(gadgets.Spec.Versions[:1:1], apiextensionsv1.CustomResourceDefinitionVersion{Name: "v2", Served: true, Storage: true})
	crds := apiextensionsfake.NewSimpleClientset(widgets, gadgets).ApiextensionsV1().CustomResourceDefinitions()
	events := kubefake.NewSimpleClientset().CoreV1()

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	src, err := rulesource.Start(ctx, rulesource.Options{Files: []string{widgetRules, rulesFile(t, gadgetRules)}, Converter: engine.Options{Strict: true}})
	if err != nil {
		t.Fatal(err)
	}
	d, err := OpenCertDir(CertDirOptions{Dir: t.TempDir(), ServiceName: "wh", ServiceNamespace: "sys"})
	if err != nil {
		t.Fatal(err)
	}
	srv := startServer(t, ServeOptions{CertDir: d, Convert: NewHandler(HandlerOptions{Converter: func() *engine.Converter { return src.Current().Converter }})})
	m := ManageOptions{ServiceName: "wh", ServiceNamespace: "sys", CABundle: d.CAPEM, CRDs: crds, Events: events}
	done := make(chan error, 1)
	go func() { done <- m.run(ctx, src, srv, testLogger(t)) }()

	err = wait.PollUntilContextTimeout(ctx, 20*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		evs, err := events.Events("default").List(ctx, metav1.ListOptions{})
		return err == nil && len(evs.Items) >= 2, nil
	})
	cancel()
	if runErr := <-done; runErr != nil {
		t.Errorf("run: %v", runErr)
	}
	if err != nil {
		t.Fatalf("no Events for both CRDs: %v", err)
	}
	got, _ := crds.Get(context.Background(), "widgets.example.com", metav1.GetOptions{})
	conv := got.Spec.Conversion
	if conv == nil || conv.Strategy != apiextensionsv1.WebhookConverter || conv.Webhook.ClientConfig.Service == nil ||
		conv.Webhook.ClientConfig.Service.Name != "wh" || *conv.Webhook.ClientConfig.Service.Path != "/convert" ||
		string(conv.Webhook.ClientConfig.CABundle) != string(d.CAPEM()) || strings.Join(conv.Webhook.ConversionReviewVersions, ",") != "v1,v1beta1" {
		t.Errorf("widgets spec.conversion: %+v", conv)
	}
	got, _ = crds.Get(context.Background(), "gadgets.example.com", metav1.GetOptions{})
	if got.Spec.Conversion != nil {
		t.Errorf("gadgets was changed: %+v", got.Spec.Conversion)
	}
	evs, _ := events.Events("default").List(context.Background(), metav1.ListOptions{})
	reasons := map[string]corev1.Event{}
	for _, e := range evs.Items {
		reasons[e.InvolvedObject.Name+" "+e.Reason] = e
	}
	if _, ok := reasons["widgets.example.com "+ReasonWired]; !ok {
		t.Errorf("no %s Event for widgets: %v", ReasonWired, evs.Items)
	}
	refused, ok := reasons["gadgets.example.com "+ReasonRefused]
	if !ok || !strings.Contains(refused.Message, "no rules lead v1alpha1 → v2") {
		t.Errorf("no %s Event naming no rules lead v1alpha1 → v2 for gadgets: %v", ReasonRefused, evs.Items)
	}
}

// gadgetRules cover gadgets v1alpha1 → v1beta1, not the CRD's v2.
const gadgetRules = `apiVersion: mvp.k8s.io/v1
kind: TransformationRules
metadata: {name: gadgets}
spec:
  apiMigrationRules:
  - apiGroup: example.com
    resource: gadgets
    kind: Gadget
    fromVersion: v1alpha1
    toVersion: v1beta1
    transformations:
    - {path: spec.a, action: rename, targetPath: spec.b}
`

func TestMergeCABundle_KeepsOurUnexpiredCAs(t *testing.T) {
	mk := func() []byte {
		d, err := OpenCertDir(CertDirOptions{Dir: t.TempDir(), SANs: []string{"x"}})
		if err != nil {
			t.Fatal(err)
		}
		return d.CAPEM()
	}
	a, b := mk(), mk()
	foreign := writeSelfSignedPEM(t)
	got := mergeCABundle(append(append([]byte{}, b...), foreign...), a, time.Now())
	if string(got) != string(a)+string(b) {
		t.Errorf("merge: want ours then the other replica's, without the foreign CA")
	}
	if got := mergeCABundle(got, a, time.Now()); string(got) != string(a)+string(b) {
		t.Error("merging again changes the bundle")
	}
	if got := mergeCABundle(b, a, time.Now().Add(100*DefaultCertValidity)); string(got) != string(a) {
		t.Error("an expired CA is kept")
	}
}
