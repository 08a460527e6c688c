package proxy_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"

	"github.com/mvpctl/mvpctl/e2e/framework"
)

// A CRD whose served version (v1) lets spec.timeout be an integer or a
// string, and the v1alpha1 it no longer serves.
const gadgetCRD = `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: gadgets.failures.example.com}
spec:
  group: failures.example.com
  names: {plural: gadgets, singular: gadget, kind: Gadget}
  scope: Namespaced
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            properties:
              timeout: {x-kubernetes-int-or-string: true, anyOf: [{type: integer}, {type: string}]}
  - name: v1alpha1
    served: false
    storage: false
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            properties:
              legacyTimeout: {type: integer}
`

// Rules whose converting rename cannot give v1alpha1 clients a timeout
// that v1 holds as a string.
const gadgetRules = `apiVersion: mvp.k8s.io/v1
kind: TransformationRules
metadata: {name: gadgets}
spec:
  apiMigrationRules:
  - apiGroup: failures.example.com
    resource: gadgets
    fromVersion: v1alpha1
    toVersion: v1
    transformations:
    - {path: spec.legacyTimeout, action: rename, targetPath: spec.timeout, type: integer}
`

// TestProxy_EmulationConversionFailureNamesTheObject: one object of the
// served version that a rule step cannot convert fails an emulated LIST
// (kubectl shows a 500 Status) and WATCH (an ERROR event) with a message
// that names the object, the rule, the step and the path; the proxy counts
// it per emulated resource; mvpctl lint, given the CRD, flags the step.
func TestProxy_EmulationConversionFailureNamesTheObject(t *testing.T) {
	cp, dir := framework.Start(t, framework.Options{Versions: []string{newVersion}}), t.TempDir()
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	crdFile, rulesFile := filepath.Join(dir, "crd.yaml"), filepath.Join(dir, "rules.yaml")
	for name, data := range map[string]string{crdFile: gadgetCRD, rulesFile: gadgetRules} {
		if err := os.WriteFile(name, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}

	// Lint with the served schema flags the step before it is deployed.
	out, err := exec.CommandContext(ctx, mvpctl(t), "lint", rulesFile, "--from-schema", crdFile, "--to-schema", crdFile).CombinedOutput()
	if err != nil || !strings.Contains(string(out), "warning value-not-convertible: transformations[0] (rename spec.legacyTimeout -> spec.timeout, type integer) fails reverse on a value that failures.example.com/v1 Gadget allows at spec.timeout, an integer or a string (x-kubernetes-int-or-string)") {
		t.Errorf("mvpctl lint: %v\n%s", err, out)
	}

	direct := cp.Server(0).Kubeconfig
	if out, err := kubectl(t, ctx, direct, "apply", "-f", crdFile); err != nil {
		t.Fatalf("creating the CRD: %v\n%s", err, out)
	}
	if out, err := kubectl(t, ctx, direct, "wait", "--for=condition=Established", "crd/gadgets.failures.example.com", "--timeout=60s"); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	v1 := schema.GroupVersionResource{Group: "failures.example.com", Version: "v1", Resource: "gadgets"}
	v1alpha1 := v1.GroupResource().WithVersion("v1alpha1")
	server := dynamic.NewForConfigOrDie(cp.Server(0).RESTConfig()).Resource(v1).Namespace("default")
	for name, timeout := range map[string]any{"ok": int64(30), "bad": "soon"} {
		obj := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "failures.example.com/v1", "kind": "Gadget",
			"metadata": map[string]any{"name": name}, "spec": map[string]any{"timeout": timeout},
		}}
		if _, err := server.Create(ctx, obj, metav1.CreateOptions{}); err != nil {
			t.Fatalf("creating %s: %v", name, err)
		}
	}

	p := startProxy(t, cp, "--rules", rulesFile, "--refresh-interval", "2s")
	wants := []string{
		"converting Gadget default/bad (failures.example.com/v1) reverse by rule gadgets.failures.example.com/v1alpha1->v1",
		"transformations[0] (convert spec.timeout, renamed from spec.legacyTimeout, to integer) at spec.timeout",
		`cannot convert string "soon" to integer`,
	}
	// The proxy emulates v1alpha1 once its capability map has the CRD.
	var msg string
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(500 * time.Millisecond) {
		out, err := kubectl(t, ctx, p.Kubeconfig, "get", "gadgets.v1alpha1.failures.example.com", "-n", "default", "-o", "json")
		if err != nil && strings.Contains(out, "InternalError") {
			msg = out
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("kubectl get through the proxy never failed with the conversion: %v\n%s", err, out)
		}
	}
	t.Logf("kubectl get gadgets.v1alpha1: %s", msg)
	for _, want := range append([]string{"items[0]: "}, wants...) {
		if !strings.Contains(msg, want) {
			t.Errorf("kubectl's error lacks %q", want)
		}
	}

	w, err := dynamic.NewForConfigOrDie(p.tokenConfig(cp)).Resource(v1alpha1).Namespace("default").Watch(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	sawError := false
	for ev := range w.ResultChan() {
		if ev.Type != watch.Error {
			continue
		}
		sawError = true
		st := apierrors.FromObject(ev.Object)
		for _, want := range wants {
			if !strings.Contains(st.Error(), want) {
				t.Errorf("the watch's ERROR event lacks %q: %v", want, st)
			}
		}
		break
	}
	if !sawError {
		t.Errorf("the watch ended without an ERROR event")
	}

	m := regexp.MustCompile(`mvpctl_proxy_emulation_conversion_failures_total\{group="failures.example.com",resource="gadgets",version="v1alpha1"\} (\d+)`).FindStringSubmatch(p.metricsText(t))
	if m == nil {
		t.Errorf("no mvpctl_proxy_emulation_conversion_failures_total series for gadgets v1alpha1")
	} else if n, _ := strconv.Atoi(m[1]); n < 2 {
		t.Errorf("mvpctl_proxy_emulation_conversion_failures_total: %q, want at least 2 (the LIST and the WATCH)", m)
	}
}
