package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestScanConvert_FileArguments runs scan and convert as pre-commit runs
// them: the files as arguments after the flags.
func TestScanConvert_FileArguments(t *testing.T) {
	dir := t.TempDir()
	cronjob := filepath.Join(dir, "cronjob.yaml")
	other := filepath.Join(dir, "values.yaml")
	os.WriteFile(cronjob, []byte("apiVersion: batch/v1beta1\nkind: CronJob\nmetadata: {name: report}\nspec:\n  schedule: '0 3 * * *'\n  jobTemplate: {spec: {template: {spec: {containers: [{name: c, image: busybox}], restartPolicy: OnFailure}}}}\n"), 0o644)
	os.WriteFile(other, []byte("replicas: 2\n"), 0o644)

	code, out, errOut := run(t, "", "scan", "--kubernetes-version", "v1.36", cronjob, other)
	if code != 1 || !strings.Contains(out, "CronJob") || !strings.Contains(out, "in 2 documents of 2 files") {
		t.Fatalf("scan: exit %d\n%s%s", code, out, errOut)
	}
	code, out, errOut = run(t, "", "convert", "--in-place", "--kubernetes-version", "v1.36", cronjob, other)
	if code != 0 {
		t.Fatalf("convert: exit %d\n%s%s", code, out, errOut)
	}
	if data, _ := os.ReadFile(cronjob); !strings.Contains(string(data), "apiVersion: batch/v1\n") {
		t.Errorf("converted file:\n%s", data)
	}
	if data, _ := os.ReadFile(other); string(data) != "replicas: 2\n" {
		t.Errorf("values.yaml changed:\n%s", data)
	}
	if code, out, errOut = run(t, "", "scan", "--kubernetes-version", "v1.36", cronjob, other); code != 0 {
		t.Errorf("scan after convert: exit %d\n%s%s", code, out, errOut)
	}
}

func TestHelmRepair_UsageErrors(t *testing.T) {
	kubeconfig := writeFile(t, "kubeconfig", "apiVersion: v1\nkind: Config\nclusters: [{name: c, cluster: {server: 'https://127.0.0.1:1'}}]\ncontexts: [{name: c, context: {cluster: c, user: u}}]\ncurrent-context: c\nusers: [{name: u, user: {token: x}}]\n")
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"helm", "repair"}, "give a RELEASE, or --all-namespaces"},
		{[]string{"helm", "repair", "shop", "-A"}, "not both"},
		{[]string{"helm", "repair", "shop", "--backup-dir", "x"}, "give --apply too"},
		{[]string{"helm", "repair", "shop", "--builtin=false"}, "leaves no rules"},
		{[]string{"helm", "repair", "shop", "--kubernetes-version", "1"}, "--kubernetes-version"},
		{[]string{"helm", "repair", "shop", "--kubernetes-version", "v1.36", "--kubeconfig", kubeconfig}, "connection to the server 127.0.0.1:1 was refused"},
	} {
		code, _, errOut := run(t, "", c.args...)
		if code != 2 || !strings.Contains(errOut, c.want) || strings.Count(strings.TrimSpace(errOut), "\n") > 0 {
			t.Errorf("%v: exit %d, stderr %q; want exit 2 and %q", c.args, code, errOut, c.want)
		}
	}
}
