// Package precommit_test runs mvpctl's pre-commit hooks
// (.pre-commit-hooks.yaml) with the real pre-commit on a temporary git
// repository: pre-commit builds mvpctl from this checkout with its golang
// language, as it does for users who pin a release.
package precommit_test

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"
)

// root is the mvpctl checkout.
func root(t *testing.T) string {
	_, here, _, ok := runtime.Caller(0)
	if !ok {
		t.Fatal("cannot locate the checkout")
	}
	return filepath.Join(filepath.Dir(here), "..", "..")
}

type result struct {
	out  string
	code int
}

func command(t *testing.T, timeout time.Duration, dir string, env []string, name string, args ...string) result {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir, cmd.Env = dir, append(os.Environ(), env...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	if ctx.Err() != nil {
		t.Fatalf("%s %v: timed out after %s\n%s", name, args, timeout, out.String())
	}
	code := 0
	if exit, ok := err.(*exec.ExitError); ok {
		code = exit.ExitCode()
	} else if err != nil {
		t.Fatalf("%s %v: %v", name, args, err)
	}
	return result{out.String(), code}
}

const cronJob = `# The nightly report.
apiVersion: batch/v1beta1
kind: CronJob
metadata:
  name: report
spec:
  schedule: "0 3 * * *"
  jobTemplate:
    spec:
      template:
        spec:
          restartPolicy: OnFailure
          containers:
          - {name: report, image: busybox:1.37}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: settings}
data: {mode: fast}
`

const rulesFile = `apiVersion: mvp.k8s.io/v1
kind: TransformationRules
metadata: {name: widgets}
spec:
  apiMigrationRules:
  - apiGroup: example.com
    resource: widgets
    fromVersion: v1alpha1
    toVersion: v1
    transformations:
    - {path: spec.size, action: rename, targetPath: spec.replicas}
`

func TestPreCommit_Hooks(t *testing.T) {
	if _, err := exec.LookPath("pre-commit"); err != nil {
		t.Skip("pre-commit is not installed (apt-get install pre-commit; .ci/run installs it)")
	}
	start := time.Now()
	src := root(t)
	// pre-commit clones the hooks' repository at a commit: this checkout's.
	rev := command(t, time.Minute, src, nil, "git", "rev-parse", "HEAD")
	if rev.code != 0 {
		t.Skipf("the checkout is not a git repository: %s", rev.out)
	}
	if r := command(t, time.Minute, src, nil, "git", "cat-file", "-e", "HEAD:.pre-commit-hooks.yaml"); r.code != 0 {
		t.Fatalf("HEAD has no .pre-commit-hooks.yaml")
	}
	gomodcache := command(t, time.Minute, src, nil, "go", "env", "GOMODCACHE")

	repo := t.TempDir()
	env := []string{
		"PRE_COMMIT_HOME=" + filepath.Join(t.TempDir(), "pre-commit"),
		// pre-commit's golang language sets GOPATH to its environment; keep
		// the module cache so the build downloads nothing new.
		"GOMODCACHE=" + strings.TrimSpace(gomodcache.out),
		"GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@example.com", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@example.com",
	}
	config := "repos:\n- repo: " + src + "\n  rev: " + strings.TrimSpace(rev.out) + `
  hooks:
  - {id: mvpctl-scan, args: [--kubernetes-version, v1.36], exclude: ^rules/}
  - {id: mvpctl-convert, args: [--kubernetes-version, v1.36], exclude: ^rules/}
  - {id: mvpctl-lint, args: [rules/], files: ^rules/}
`
	for name, data := range map[string]string{".pre-commit-config.yaml": config, "manifests/cronjob.yaml": cronJob, "rules/widgets.yaml": rulesFile} {
		path := filepath.Join(repo, name)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	git := func(args ...string) {
		t.Helper()
		if r := command(t, time.Minute, repo, env, "git", args...); r.code != 0 {
			t.Fatalf("git %v: %s", args, r.out)
		}
	}
	git("init", "-q")
	git("add", "-A")
	preCommit := func(hook string) result {
		t.Helper()
		// The first run clones the checkout and builds mvpctl.
		return command(t, 10*time.Minute, repo, env, "pre-commit", "run", hook, "--all-files")
	}

	r := preCommit("mvpctl-scan")
	if r.code != 1 || !strings.Contains(r.out, "CronJob") || !strings.Contains(r.out, "batch/v1beta1") || !strings.Contains(r.out, "1 removed") {
		t.Fatalf("scan hook on a removed API: exit %d, want 1\n%s", r.code, r.out)
	}
	t.Logf("pre-commit installed the hooks and ran the scan in %s", time.Since(start).Round(time.Second))

	// A fixer: pre-commit fails the hook because it changed a file.
	r = preCommit("mvpctl-convert")
	if r.code != 1 || !strings.Contains(r.out, "files were modified by this hook") {
		t.Fatalf("convert hook: exit %d, want 1 (files modified)\n%s", r.code, r.out)
	}
	data, err := os.ReadFile(filepath.Join(repo, "manifests/cronjob.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(string(data), "# The nightly report.\napiVersion: batch/v1\nkind: CronJob\n") ||
		!strings.HasSuffix(string(data), "---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: settings}\ndata: {mode: fast}\n") {
		t.Errorf("converted file:\n%s", data)
	}
	git("add", "-A")
	if r = preCommit("mvpctl-scan"); r.code != 0 {
		t.Errorf("scan hook after the conversion: exit %d, want 0\n%s", r.code, r.out)
	}
	if r = preCommit("mvpctl-convert"); r.code != 0 {
		t.Errorf("convert hook with nothing to convert: exit %d, want 0\n%s", r.code, r.out)
	}
	if r = preCommit("mvpctl-lint"); r.code != 0 {
		t.Errorf("lint hook: exit %d, want 0\n%s", r.code, r.out)
	}
	// A rule that moves a field onto itself is an error of lint's.
	if err := os.WriteFile(filepath.Join(repo, "rules/widgets.yaml"), []byte(strings.Replace(rulesFile, "targetPath: spec.replicas", "targetPath: spec.size", 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	git("add", "-A")
	if r = preCommit("mvpctl-lint"); r.code != 1 {
		t.Errorf("lint hook on a broken rule: exit %d, want 1\n%s", r.code, r.out)
	}
	t.Logf("TestPreCommit_Hooks took %s", time.Since(start).Round(time.Second))
}
