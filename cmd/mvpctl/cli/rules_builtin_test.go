package cli

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/mvpctl/mvpctl/rules/builtin"
)

func TestRulesBuiltin_Text(t *testing.T) {
	code, out, errOut := run(t, "", "rules", "builtin")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	lines := map[string]bool{}
	for _, l := range strings.Split(out, "\n") {
		lines[strings.Join(strings.Fields(l), " ")] = true
	}
	for _, want := range []string{
		"KIND FROM TO DEPRECATED REMOVED FILE",
		"PodDisruptionBudget policy/v1beta1 policy/v1 v1.21 v1.25 builtin/policy.yaml",
		"Ingress extensions/v1beta1 networking.k8s.io/v1 v1.14 v1.22 builtin/networking.k8s.io.yaml",
		"Ingress networking.k8s.io/v1beta1 networking.k8s.io/v1 v1.19 v1.22 builtin/networking.k8s.io.yaml",
		"CronJob batch/v1beta1 batch/v1 v1.21 v1.25 builtin/batch.yaml",
		"Lease coordination.k8s.io/v1beta1 coordination.k8s.io/v1 v1.19 v1.22 builtin/coordination.k8s.io.yaml",
		"HorizontalPodAutoscaler autoscaling/v2beta2 autoscaling/v2 v1.23 v1.26 builtin/autoscaling.yaml",
		"HorizontalPodAutoscaler autoscaling/v1 autoscaling/v2 - - builtin/autoscaling.yaml",
		"PodSecurityPolicy extensions/v1beta1 policy/v1beta1 v1.11 v1.16 builtin/policy.yaml",
		"MutatingAdmissionPolicy admissionregistration.k8s.io/v1beta1 admissionregistration.k8s.io/v1 v1.37 v1.40 builtin/admissionregistration.k8s.io.yaml",
		"MutatingAdmissionPolicyBinding admissionregistration.k8s.io/v1alpha1 admissionregistration.k8s.io/v1 v1.35 v1.38 builtin/admissionregistration.k8s.io.yaml",
	} {
		if !lines[want] {
			t.Errorf("output lacks the line %q:\n%s", want, out)
		}
	}
	if n, want := strings.Count(out, "\n"), 1+len(builtinRules(t)); n != want {
		t.Errorf("%d lines, want a header and one line per built-in rule (%d):\n%s", n, want, out)
	}
}

func TestRulesBuiltin_JSON(t *testing.T) {
	code, out, errOut := run(t, "", "rules", "builtin", "-o", "json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var list []builtinRuleJSON
	if err := json.Unmarshal([]byte(out), &list); err != nil {
		t.Fatal(err)
	}
	byID := map[string]builtinRuleJSON{}
	for _, r := range list {
		byID[r.ID] = r
	}
	pdb := byID["poddisruptionbudgets.policy/v1beta1->v1"]
	if pdb.From != "policy/v1beta1" || pdb.To != "policy/v1" || pdb.DeprecatedIn != "v1.21" || pdb.RemovedIn != "v1.25" || pdb.File != "builtin/policy.yaml" || pdb.Kind != "PodDisruptionBudget" {
		t.Errorf("PodDisruptionBudget: %+v", pdb)
	}
	if hpa := byID["horizontalpodautoscalers.autoscaling/v1->v2"]; hpa.Name == "" || hpa.DeprecatedIn != "" || hpa.RemovedIn != "" {
		t.Errorf("autoscaling/v1 is not deprecated: %+v", hpa)
	}
	if want := len(builtinRules(t)); len(list) != want {
		t.Errorf("%d rules, want %d", len(list), want)
	}
}

// builtinRules are the rules the embedded files hold, which the command
// must list one for one.
func builtinRules(t *testing.T) []builtin.Rule {
	t.Helper()
	rs, err := builtin.Rules()
	if err != nil {
		t.Fatal(err)
	}
	if len(rs) < 7 {
		t.Fatalf("%d built-in rules", len(rs))
	}
	return rs
}

func TestRulesBuiltin_BadOutput(t *testing.T) {
	if code, _, errOut := run(t, "", "rules", "builtin", "-o", "yaml"); code != exitUsage || !strings.Contains(errOut, "yaml") {
		t.Errorf("exit %d: %s", code, errOut)
	}
}
