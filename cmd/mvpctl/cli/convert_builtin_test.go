package cli

import (
	"strings"
	"testing"
)

const pdbEmptySelector = `apiVersion: policy/v1beta1
kind: PodDisruptionBudget
metadata: {name: web, namespace: shop}
spec:
  minAvailable: 2
  selector: {}
`

// Without --rules, convert uses the built-in rules: a policy/v1beta1 PDB
// with an empty selector (which selects no pods) gets Kubernetes' marker
// that keeps that meaning in policy/v1.
func TestConvert_BuiltinRulesByDefault(t *testing.T) {
	code, out, errOut := run(t, pdbEmptySelector, "convert", "-f", "-", "--output-version", "policy/v1")
	if code != 0 {
		t.Fatalf("exit %d, stderr:\n%s", code, errOut)
	}
	if !strings.Contains(out, "apiVersion: policy/v1\n") || !strings.Contains(out, "pdb.kubernetes.io/deprecated-v1beta1-empty-selector-match") {
		t.Errorf("not converted by the built-in rule:\n%s", out)
	}
}

// --rules adds to the built-in rules, and a rule there for the same
// resource and versions replaces the built-in one: the seed's PDB rule
// only ensures minAvailable, so the empty selector stays as it is, while
// the built-in CronJob rule still converts in the same run.
func TestConvert_RulesReplaceTheBuiltinPair(t *testing.T) {
	code, out, errOut := run(t, pdbEmptySelector, "convert", "-f", "-", "--rules", seedRules, "--output-version", "policy/v1")
	if code != 0 {
		t.Fatalf("exit %d, stderr:\n%s", code, errOut)
	}
	if !strings.Contains(out, "apiVersion: policy/v1\n") || strings.Contains(out, "empty-selector-match") || !strings.Contains(out, "selector: {}") {
		t.Errorf("want the seed's rule, not the built-in one:\n%s", out)
	}
	code, out, errOut = run(t, cronJobV1beta1, "convert", "-f", "-", "--rules", seedRules, "--output-version", "batch/v1")
	if code != 0 || !strings.Contains(out, "apiVersion: batch/v1\n") {
		t.Errorf("the built-in CronJob rule is not used beside --rules: exit %d\n%s%s", code, out, errOut)
	}
}

// --builtin=false turns the built-in rules off: then --rules is required,
// and an object only a built-in rule converts fails.
func TestConvert_BuiltinFalse(t *testing.T) {
	code, out, errOut := run(t, pdbEmptySelector, "convert", "-f", "-", "--builtin=false", "--output-version", "policy/v1")
	if code != exitUsage || out != "" || !strings.Contains(errOut, "--builtin=false leaves no rules: give --rules") || strings.Count(errOut, "\n") != 1 {
		t.Errorf("exit %d, stdout %q, stderr %q: want exit 2 and one line asking for --rules", code, out, errOut)
	}
	code, out, errOut = run(t, cronJobV1beta1, "convert", "-f", "-", "--builtin=false", "--rules", seedRules, "--output-version", "batch/v1")
	if code != exitFailure || out != "" || !strings.Contains(errOut, "no rule converts cronjobs.batch from batch/v1beta1 to batch/v1") {
		t.Errorf("exit %d, stdout %q, stderr %q: want the CronJob unconverted", code, out, errOut)
	}
}

func TestConvert_StdinForBothIsRefused(t *testing.T) {
	code, _, errOut := run(t, pdbEmptySelector, "convert", "-f", "-", "--rules", "-", "--output-version", "policy/v1")
	if code != exitUsage || !strings.Contains(errOut, "both read standard input") {
		t.Errorf("exit %d, stderr %q", code, errOut)
	}
}

const cronJobV1beta1 = `apiVersion: batch/v1beta1
kind: CronJob
metadata: {name: nightly, namespace: shop}
spec:
  schedule: "0 3 * * *"
  jobTemplate:
    spec:
      template:
        spec:
          restartPolicy: OnFailure
          containers: [{name: backup, image: busybox}]
`
