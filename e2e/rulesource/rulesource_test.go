// Package rulesource_test proves TransformationRules in a real cluster: the
// generated CRD applied to a real kube-apiserver, objects created with
// kubectl picked up by watchers that load rules as `mvpctl proxy` does (two
// side by side, as two replicas), status and Events written back, and the
// deploy/ manifests accepted by the server (dry run, then for real with the
// proxy's ServiceAccount doing its work under the shipped RBAC).
package rulesource_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/mvpctl/mvpctl/e2e/bins"
	"github.com/mvpctl/mvpctl/e2e/framework"
)

func TestMain(m *testing.M) { framework.Main(m) }

const serverVersion = "v1.36.3"

// mvpctl is the mvpctl binary of this checkout, built once.
func mvpctl(t *testing.T) string { return framework.Mvpctl(t) }

func kubectlPath(t *testing.T) string {
	t.Helper()
	if p := os.Getenv("KUBECTL"); p != "" {
		return p
	}
	p, err := bins.Find(bins.Kubectl, serverVersion)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// run runs a command with stdin and a time bound; it returns stdout and an
// error that includes stderr.
func run(t *testing.T, stdin, bin string, args ...string) (string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Stdin = strings.NewReader(stdin)
	cmd.Env = append(os.Environ(), "KUBECACHEDIR="+t.TempDir())
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return stdout.String(), fmt.Errorf("%s %s: %w: %s%s", filepath.Base(bin), strings.Join(args, " "), err, stderr.String(), stdout.String())
	}
	return stdout.String(), nil
}

func kubectl(t *testing.T, kubeconfig, stdin string, args ...string) (string, error) {
	t.Helper()
	return run(t, stdin, kubectlPath(t), append([]string{"--kubeconfig", kubeconfig}, args...)...)
}

func mustKubectl(t *testing.T, kubeconfig, stdin string, args ...string) string {
	t.Helper()
	out, err := kubectl(t, kubeconfig, stdin, args...)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// watchLine is one line of `mvpctl rules watch`, with when it was read.
type watchLine struct {
	Revision       uint64    `json:"revision"`
	Time           time.Time `json:"time"`
	Documents      []string  `json:"documents"`
	MigrationRules []string  `json:"migrationRules"`
	RoutingRules   int       `json:"routingRules"`
	read           time.Time
}

// watcher is a running `mvpctl rules watch --rules-from-cluster`: it loads
// rules exactly as a proxy replica with --rules-from-cluster does.
type watcher struct {
	name  string
	cmd   *exec.Cmd
	mu    sync.Mutex
	lines []watchLine
	log   string
}

func startWatcher(t *testing.T, name, kubeconfig string) *watcher {
	t.Helper()
	w := &watcher{name: name, log: filepath.Join(t.TempDir(), name+".log")}
	logf, err := os.Create(w.log)
	if err != nil {
		t.Fatal(err)
	}
	w.cmd = exec.Command(mvpctl(t), "rules", "watch", "--rules-from-cluster", "--kubeconfig", kubeconfig, "--host", name)
	w.cmd.Stderr = logf
	w.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	out, err := w.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := w.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			var l watchLine
			if json.Unmarshal(sc.Bytes(), &l) == nil {
				l.read = time.Now()
				w.mu.Lock()
				w.lines = append(w.lines, l)
				w.mu.Unlock()
			}
		}
	}()
	t.Cleanup(func() {
		w.cmd.Process.Signal(syscall.SIGTERM)
		w.cmd.Wait()
		logf.Close()
		if t.Failed() {
			data, _ := os.ReadFile(w.log)
			t.Logf("%s log:\n%s", name, data)
		}
	})
	return w
}

func (w *watcher) last() (watchLine, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.lines) == 0 {
		return watchLine{}, false
	}
	return w.lines[len(w.lines)-1], true
}

// waitFor waits for a line that satisfies ok and returns it.
func (w *watcher) waitFor(t *testing.T, what string, timeout time.Duration, ok func(watchLine) bool) watchLine {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		w.mu.Lock()
		for _, l := range w.lines {
			if ok(l) {
				w.mu.Unlock()
				return l
			}
		}
		w.mu.Unlock()
		if time.Now().After(deadline) {
			l, _ := w.last()
			t.Fatalf("%s: no rule set with %s within %s; last: %+v", w.name, what, timeout, l)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

const (
	ruleCR  = "customresources.myapps.example.com/v1alpha1->v1beta1"
	rulePDB = "poddisruptionbudgets.policy/v1beta1->v1"
)

// upgradeRules is a TransformationRules object; with pdb it has a second rule.
func upgradeRules(pdb bool, forward string) string {
	s := `apiVersion: mvp.k8s.io/v1
kind: TransformationRules
metadata:
  name: upgrade
spec:
  apiMigrationRules:
  - apiGroup: myapps.example.com
    resource: customresources
    fromVersion: v1alpha1
    toVersion: v1beta1
    transformations:
    - {path: spec.config.legacyTimeout, action: rename, targetPath: spec.config.requestTimeoutSeconds, type: integer}
    - {path: spec.stateManagement, action: modify, matchValue: ephemeral, replaceValue: stateless}
`
	if forward != "" {
		s += fmt.Sprintf("    - {action: jq, forward: %q, reverse: \".\"}\n", forward)
	}
	if pdb {
		s += `  - apiGroup: policy
    resource: poddisruptionbudgets
    fromVersion: v1beta1
    toVersion: v1
    transformations:
    - {path: spec.minAvailable, action: ensureFieldExistence, defaultValue: 1}
`
	}
	s += `  apiRoutingRules:
  - {apiGroup: apps, resource: deployments, preferApiServerVersion: ">=1.36"}
`
	return s
}

func TestTransformationRules_InCluster(t *testing.T) {
	cp := framework.Start(t, framework.Options{Versions: []string{serverVersion}})
	kc := cp.Server(0).Kubeconfig
	crdFile := "../../deploy/crd/transformationrules.mvp.k8s.io.yaml"

	mustKubectl(t, kc, "", "apply", "-f", crdFile)
	mustKubectl(t, kc, "", "wait", "--for", "condition=Established", "crd/transformationrules.mvp.k8s.io", "--timeout", "60s")

	t.Run("schema rejects what lint rejects", func(t *testing.T) {
		misspelled := strings.Replace(upgradeRules(false, ""), "targetPath:", "targetpath:", 1)
		_, err := kubectl(t, kc, misspelled, "apply", "-f", "-")
		if err == nil || !strings.Contains(err.Error(), `unknown field "spec.apiMigrationRules[0].transformations[0].targetpath"`) {
			t.Errorf("misspelled field: %v", err)
		}
		badAction := strings.Replace(upgradeRules(false, ""), "action: modify", "action: modfy", 1)
		if _, err := kubectl(t, kc, badAction, "apply", "-f", "-"); err == nil || !strings.Contains(err.Error(), `spec.apiMigrationRules[0].transformations[1].action: Unsupported value: "modfy"`) {
			t.Errorf("unknown action: %v", err)
		}
		huge := upgradeRules(false, strings.Repeat(" ", 9000)+".")
		if _, err := kubectl(t, kc, huge, "apply", "-f", "-"); err == nil || !strings.Contains(err.Error(), "spec.apiMigrationRules[0].transformations[2].forward: Too long") {
			t.Errorf("oversized expression: %v", err)
		}
		empty := "apiVersion: mvp.k8s.io/v1\nkind: TransformationRules\nmetadata: {name: empty}\nspec: {}\n"
		if _, err := kubectl(t, kc, empty, "apply", "-f", "-"); err == nil || !strings.Contains(err.Error(), "must have apiMigrationRules or apiRoutingRules") {
			t.Errorf("empty spec: %v", err)
		}
		// The repository's own rules files apply as they lint: clean.
		for _, f := range []string{"../../testdata/examples/seed/mvp-rules.yaml", "../../rules/builtin/networking.k8s.io.yaml"} {
			if _, err := kubectl(t, kc, "", "apply", "--dry-run=server", "-f", f); err != nil {
				t.Errorf("a file that lints clean: %v", err)
			}
		}
	})

	// Two replicas side by side.
	a := startWatcher(t, "replica-a", kc)
	b := startWatcher(t, "replica-b", kc)
	for _, w := range []*watcher{a, b} {
		w.waitFor(t, "the initial empty set", 30*time.Second, func(l watchLine) bool { return l.Revision >= 1 })
	}

	has := func(ids ...string) func(watchLine) bool {
		return func(l watchLine) bool {
			for _, id := range ids {
				if !slices.Contains(l.MigrationRules, id) {
					return false
				}
			}
			return len(l.MigrationRules) == len(ids)
		}
	}
	// pickup applies rules with kubectl and measures how long each replica
	// takes to activate them, from kubectl's return.
	pickup := func(t *testing.T, doc string, ids ...string) {
		t.Helper()
		mustKubectl(t, kc, doc, "apply", "-f", "-")
		applied := time.Now()
		for _, w := range []*watcher{a, b} {
			l := w.waitFor(t, strings.Join(ids, ", "), 30*time.Second, has(ids...))
			lat := max(l.read.Sub(applied), 0)
			t.Logf("%s: revision %d active %s after kubectl apply returned", w.name, l.Revision, lat.Round(time.Millisecond))
		}
	}
	status := func(t *testing.T, args ...string) (string, error) {
		return run(t, "", mvpctl(t), append([]string{"rules", "status", "--kubeconfig", kc}, args...)...)
	}

	t.Run("create is picked up", func(t *testing.T) {
		pickup(t, upgradeRules(false, ""), ruleCR)
		out, err := status(t, "upgrade", "--wait", "10s")
		if err != nil || !strings.Contains(out, "upgrade: Ready") {
			t.Fatalf("rules status: %v\n%s", err, out)
		}
		cols := mustKubectl(t, kc, "", "get", "transformationrules")
		if !strings.Contains(cols, "RULES") || !strings.Contains(cols, "READY") || !regexpLine(cols, `upgrade\s+1\s+1\s+True\s+`) {
			t.Errorf("kubectl get printer columns:\n%s", cols)
		}
	})

	t.Run("edit is picked up", func(t *testing.T) {
		pickup(t, upgradeRules(true, ""), ruleCR, rulePDB)
		out, err := status(t, "upgrade", "--wait", "10s")
		if err != nil || !strings.Contains(out, "upgrade: Ready") {
			t.Fatalf("rules status: %v\n%s", err, out)
		}
	})

	t.Run("broken generation is rejected and the previous one serves", func(t *testing.T) {
		before, _ := a.last()
		mustKubectl(t, kc, upgradeRules(false, ".spec |"), "apply", "-f", "-")
		deadline := time.Now().Add(10 * time.Second)
		var out string
		var err error
		for time.Now().Before(deadline) {
			out, err = status(t, "upgrade")
			if strings.Contains(out, "NotReady") {
				break
			}
			time.Sleep(100 * time.Millisecond)
		}
		if err == nil || !strings.Contains(out, "upgrade: NotReady: Invalid") ||
			!strings.Contains(out, "generation 3 rejected, generation 2 stays in use") ||
			!strings.Contains(out, "spec.apiMigrationRules[0].transformations[2].forward") {
			t.Fatalf("rules status after a broken edit (err %v):\n%s", err, out)
		}
		for _, w := range []*watcher{a, b} {
			l, _ := w.last()
			if !has(ruleCR, rulePDB)(l) {
				t.Errorf("%s: the broken generation replaced the rules: %+v", w.name, l)
			}
		}
		if l, _ := a.last(); l.Revision != before.Revision {
			t.Errorf("a rejected generation activated revision %d", l.Revision)
		}
		events := mustKubectl(t, kc, "", "get", "events", "-n", "default", "--field-selector", "involvedObject.name=upgrade,reason=Rejected", "-o", "jsonpath={.items[*].message}")
		if !strings.Contains(events, "transformations[2].forward") {
			t.Errorf("no Rejected event with the field path: %q", events)
		}
		ready := mustKubectl(t, kc, "", "get", "transformationrules", "upgrade", "-o", `jsonpath={.status.conditions[?(@.type=="Ready")].status} {.status.observedGeneration}`)
		if ready != "False 3" {
			t.Errorf("Ready, observedGeneration = %q, want False 3", ready)
		}
	})

	t.Run("replicas agree and do not fight over status", func(t *testing.T) {
		la, _ := a.last()
		lb, _ := b.last()
		if !slices.Equal(la.MigrationRules, lb.MigrationRules) || !slices.Equal(la.Documents, lb.Documents) || la.RoutingRules != lb.RoutingRules {
			t.Errorf("replicas serve different sets:\n%+v\n%+v", la, lb)
		}
		rv := func() string {
			return mustKubectl(t, kc, "", "get", "transformationrules", "upgrade", "-o", "jsonpath={.metadata.resourceVersion}")
		}
		first := rv()
		// A replica goes through the objects by name: once both have taken
		// zz-probe, both have been through upgrade since first was read.
		const probe = "apiVersion: mvp.k8s.io/v1\nkind: TransformationRules\nmetadata: {name: zz-probe}\nspec:\n  apiRoutingRules:\n  - {apiGroup: batch, resource: jobs, preferApiServerVersion: \">=1.36\"}\n"
		mustKubectl(t, kc, probe, "apply", "-f", "-")
		withProbe := map[*watcher]uint64{}
		for _, w := range []*watcher{a, b} {
			l := w.waitFor(t, "zz-probe", 30*time.Second, func(l watchLine) bool { return slices.Contains(l.Documents, "transformationrules/zz-probe") })
			withProbe[w] = l.Revision
		}
		if second := rv(); second != first {
			t.Errorf("status keeps changing with two writers: resourceVersion %s then %s", first, second)
		}
		mustKubectl(t, kc, "", "delete", "transformationrules", "zz-probe")
		for _, w := range []*watcher{a, b} {
			w.waitFor(t, "zz-probe gone", 30*time.Second, func(l watchLine) bool {
				return l.Revision > withProbe[w] && slices.Equal(l.Documents, la.Documents)
			})
		}
	})

	t.Run("mvpctl rules apply and get", func(t *testing.T) {
		out, err := run(t, "", mvpctl(t), "rules", "apply", "--kubeconfig", kc, "-f", "../../rules/builtin/policy.yaml", "--dry-run", "server")
		if err != nil || !strings.Contains(out, "applied (server dry run)") {
			t.Fatalf("rules apply --dry-run=server: %v\n%s", err, out)
		}
		// The file's rule duplicates upgrade's: rejected as a conflict.
		if _, err := run(t, "", mvpctl(t), "rules", "apply", "--kubeconfig", kc, "-f", "../../rules/builtin/policy.yaml"); err != nil {
			t.Fatal(err)
		}
		for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
			if out, err = status(t, "policy-v1beta1-to-v1"); strings.Contains(out, "NotReady") {
				break
			}
		}
		if err == nil || !strings.Contains(out, "NotReady: Conflict") || !strings.Contains(out, "Duplicate value") {
			t.Errorf("a rule duplicating another object's: %v\n%s", err, out)
		}
		out, err = run(t, "", mvpctl(t), "rules", "get", "--kubeconfig", kc)
		if err != nil || !strings.Contains(out, "NAME") || !strings.Contains(out, "upgrade") {
			t.Fatalf("rules get: %v\n%s", err, out)
		}
		t.Logf("mvpctl rules get:\n%s", out)
	})

	t.Run("deploy manifests", func(t *testing.T) {
		testDeploy(t, cp, kc)
	})
}

func regexpLine(text, re string) bool {
	for _, l := range strings.Split(text, "\n") {
		if ok, _ := regexp.MatchString(re, l); ok {
			return true
		}
	}
	return false
}
