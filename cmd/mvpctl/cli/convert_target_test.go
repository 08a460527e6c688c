package cli

import (
	"strings"
	"testing"
)

const v1beta1Webhook = `apiVersion: admissionregistration.k8s.io/v1beta1
kind: ValidatingWebhookConfiguration
metadata: {name: deny-privileged}
webhooks:
- name: deny.example.com
  clientConfig: {url: "https://deny.example.com/validate"}
`

const v1beta1CRD = `apiVersion: apiextensions.k8s.io/v1beta1
kind: CustomResourceDefinition
metadata: {name: widgets.example.com}
spec:
  group: example.com
  version: v1
  names: {kind: Widget, plural: widgets}
  scope: Namespaced
`

// A webhook whose sideEffects v1 refuses fails with the field and the
// choices, and nothing is written; the flag decides it, with a warning.
// scan reports the same before anything is converted.
func TestConvert_KubernetesVersionWebhookSideEffects(t *testing.T) {
	code, out, errOut := run(t, v1beta1Webhook, "convert", "-f", "-", "--kubernetes-version", "v1.36")
	if code != 1 || out != "" || !strings.Contains(errOut, "ValidatingWebhookConfiguration deny-privileged: Kubernetes v1.36 refuses webhooks[0].sideEffects: Unknown is not allowed by v1; decide with --set-webhook-side-effects=None|NoneOnDryRun") {
		t.Errorf("undecided: exit %d, stdout %q, stderr:\n%s", code, out, errOut)
	}
	code, out, errOut = run(t, v1beta1Webhook, "convert", "-f", "-", "--kubernetes-version", "v1.36", "--set-webhook-side-effects=NoneOnDryRun")
	if code != 0 || !strings.Contains(out, "sideEffects: NoneOnDryRun") || !strings.Contains(out, "- v1beta1") ||
		strings.Count(errOut, "warning: ") != 2 || !strings.Contains(errOut, "webhooks[0].admissionReviewVersions: unset; set to [v1beta1]") {
		t.Errorf("decided: exit %d, stderr:\n%s\nstdout:\n%s", code, errOut, out)
	}
	code, _, errOut = run(t, v1beta1Webhook, "convert", "-f", "-", "--kubernetes-version", "v1.36", "--set-webhook-side-effects=Some")
	if code != 2 || !strings.Contains(errOut, `--set-webhook-side-effects "Some": want None or NoneOnDryRun`) {
		t.Errorf("bad value: exit %d, stderr:\n%s", code, errOut)
	}
	code, out, _ = run(t, v1beta1Webhook, "scan", "-f", "-", "--kubernetes-version", "v1.36")
	if code != 1 || !strings.Contains(out, "ValidatingWebhookConfiguration deny-privileged: webhooks[0].sideEffects: unset (v1beta1: Unknown) is not allowed by v1; decide with --set-webhook-side-effects=None|NoneOnDryRun") {
		t.Errorf("scan: exit %d:\n%s", code, out)
	}
}

// A v1beta1 CRD without a schema (preserveUnknownFields defaulted to true)
// becomes a v1 CRD the v1 validation accepts, with a warning per fix.
func TestConvert_KubernetesVersionCRDSchema(t *testing.T) {
	code, out, errOut := run(t, v1beta1CRD, "convert", "-f", "-", "--kubernetes-version", "v1.36")
	if code != 0 || strings.Count(errOut, "warning: ") != 2 || !strings.Contains(errOut, "spec.preserveUnknownFields: true, which v1 does not allow") ||
		!strings.Contains(errOut, "spec.versions[0].schema.openAPIV3Schema: unset, which v1 does not allow") {
		t.Fatalf("exit %d, stderr:\n%s", code, errOut)
	}
	for _, want := range []string{"preserveUnknownFields: false", "openAPIV3Schema:\n", "type: object", "x-kubernetes-preserve-unknown-fields: true"} {
		if !strings.Contains(out, want) {
			t.Errorf("no %q in\n%s", want, out)
		}
	}
	if code, _, errOut := run(t, v1beta1CRD, "convert", "-f", "-", "--kubernetes-version", "v1.36", "-q"); code != 0 || errOut != "" {
		t.Errorf("-q: exit %d, stderr:\n%s", code, errOut)
	}
}
