package scan

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/mvpctl/mvpctl/rules/builtin"
)

func decode(t *testing.T, s string) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal([]byte(s), &m); err != nil {
		t.Fatal(err)
	}
	return m
}

func TestMeetTarget_CRD(t *testing.T) {
	for name, tc := range map[string]struct {
		in, want string
		fixes    int
	}{
		"no schema": {
			in:    `{"apiVersion":"apiextensions.k8s.io/v1","kind":"CustomResourceDefinition","spec":{"versions":[{"name":"v1"}]}}`,
			want:  `{"apiVersion":"apiextensions.k8s.io/v1","kind":"CustomResourceDefinition","spec":{"versions":[{"name":"v1","schema":{"openAPIV3Schema":{"type":"object","x-kubernetes-preserve-unknown-fields":true}}}]}}`,
			fixes: 1,
		},
		"preserveUnknownFields and missing types": {
			in: `{"apiVersion":"apiextensions.k8s.io/v1","kind":"CustomResourceDefinition","spec":{"preserveUnknownFields":true,"versions":[{"name":"v1","schema":{"openAPIV3Schema":
				{"properties":{"metadata":{"type":"object"},"spec":{"properties":{"ports":{"items":{"properties":{"port":{"type":"integer"}}}},"labels":{"type":"object","additionalProperties":{"type":"string"}}}}}}}}]}}`,
			want: `{"apiVersion":"apiextensions.k8s.io/v1","kind":"CustomResourceDefinition","spec":{"preserveUnknownFields":false,"versions":[{"name":"v1","schema":{"openAPIV3Schema":
				{"type":"object","x-kubernetes-preserve-unknown-fields":true,"properties":{"metadata":{"type":"object"},"spec":{"type":"object","x-kubernetes-preserve-unknown-fields":true,"properties":{
				"ports":{"type":"array","items":{"type":"object","x-kubernetes-preserve-unknown-fields":true,"properties":{"port":{"type":"integer"}}}},"labels":{"type":"object","additionalProperties":{"type":"string"}}}}}}}}]}}`,
			fixes: 2,
		},
		"structural already": {
			in:   `{"apiVersion":"apiextensions.k8s.io/v1","kind":"CustomResourceDefinition","spec":{"versions":[{"name":"v1","schema":{"openAPIV3Schema":{"type":"object","properties":{"spec":{"type":"object"}}}}}]}}`,
			want: `{"apiVersion":"apiextensions.k8s.io/v1","kind":"CustomResourceDefinition","spec":{"versions":[{"name":"v1","schema":{"openAPIV3Schema":{"type":"object","properties":{"spec":{"type":"object"}}}}}]}}`,
		},
	} {
		t.Run(name, func(t *testing.T) {
			obj := decode(t, tc.in)
			fixes, undecided := MeetTarget(obj, decode(t, tc.in), Decisions{})
			if diff := cmp.Diff(decode(t, tc.want), obj); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
			if len(fixes) != tc.fixes || len(undecided) != 0 {
				t.Errorf("fixes %v, undecided %v", fixes, undecided)
			}
		})
	}
}

func TestMeetTarget_Webhooks(t *testing.T) {
	orig := `{"apiVersion":"admissionregistration.k8s.io/v1beta1","kind":"ValidatingWebhookConfiguration","webhooks":[{"name":"a"},{"name":"b","sideEffects":"None","admissionReviewVersions":["v1"]}]}`
	converted := `{"apiVersion":"admissionregistration.k8s.io/v1","kind":"ValidatingWebhookConfiguration","webhooks":[{"name":"a","sideEffects":"Unknown","admissionReviewVersions":["v1beta1"]},{"name":"b","sideEffects":"None","admissionReviewVersions":["v1"]}]}`

	obj := decode(t, converted)
	fixes, undecided := MeetTarget(obj, decode(t, orig), Decisions{})
	if len(undecided) != 1 || undecided[0].Path != "webhooks[0].sideEffects" || undecided[0].Value != "Unknown" ||
		!strings.Contains(undecided[0].String(), "--set-webhook-side-effects=None|NoneOnDryRun") {
		t.Errorf("undecided: %v", undecided)
	}
	if len(fixes) != 1 || fixes[0].Path != "webhooks[0].admissionReviewVersions" {
		t.Errorf("fixes: %v", fixes)
	}

	obj = decode(t, converted)
	fixes, undecided = MeetTarget(obj, decode(t, orig), Decisions{WebhookSideEffects: "NoneOnDryRun"})
	if len(undecided) != 0 || len(fixes) != 2 {
		t.Errorf("decided: fixes %v, undecided %v", fixes, undecided)
	}
	if got := obj["webhooks"].([]any)[0].(map[string]any)["sideEffects"]; got != "NoneOnDryRun" {
		t.Errorf("sideEffects = %v", got)
	}

	if u := WebhookDecisions(decode(t, orig)); len(u) != 1 || u[0].Value != "unset (v1beta1: Unknown)" {
		t.Errorf("WebhookDecisions = %v", u)
	}
}

// scan reports, for a removed webhook configuration, the field the
// replacement refuses and the choices.
func TestRun_WebhookNeedsDecision(t *testing.T) {
	v136 := builtin.Release{Major: 1, Minor: 36}
	in := "apiVersion: admissionregistration.k8s.io/v1beta1\nkind: MutatingWebhookConfiguration\nmetadata: {name: inject}\nwebhooks:\n- name: a.example.com\n  sideEffects: Some\n"
	res := Run(t.Context(), []string{"-"}, Options{Stdin: strings.NewReader(in), Target: v136})
	if len(res.Findings) != 1 {
		t.Fatalf("findings: %+v, errors %v", res.Findings, res.Errors)
	}
	f := res.Findings[0]
	if len(f.NeedsDecision) != 1 || f.NeedsDecision[0].Value != "Some" || !strings.Contains(f.Message(v136), "webhooks[0].sideEffects: Some is not allowed by v1") {
		t.Errorf("finding: %+v\n%s", f, f.Message(v136))
	}
}
