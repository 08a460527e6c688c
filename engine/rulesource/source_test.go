package rulesource

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/mvpctl/mvpctl/rules"
)

// rulesYAML renames spec.config.legacyTimeout to spec.config.<target> for
// myapps.example.com customresources v1alpha1 -> v1beta1.
func rulesYAML(name, target string) string {
	return fmt.Sprintf(`apiVersion: mvp.k8s.io/v1
kind: TransformationRules
metadata: {name: %s}
spec:
  apiMigrationRules:
  - apiGroup: myapps.example.com
    resource: customresources
    kind: CustomResource
    fromVersion: v1alpha1
    toVersion: v1beta1
    transformations:
    - {path: spec.config.legacyTimeout, action: rename, targetPath: spec.config.%s}
  apiRoutingRules:
  - {apiGroup: apps, resource: deployments, preferApiServerVersion: v1.36.y}
`, name, target)
}

// brokenYAML validates nowhere: a jq syntax error.
const brokenYAML = `apiVersion: mvp.k8s.io/v1
kind: TransformationRules
metadata: {name: broken}
spec:
  apiMigrationRules:
  - apiGroup: myapps.example.com
    resource: customresources
    fromVersion: v1alpha1
    toVersion: v1beta1
    transformations:
    - {action: jq, forward: ".spec |", reverse: "."}
`

var toV1beta1 = schema.GroupVersion{Group: "myapps.example.com", Version: "v1beta1"}

// convertedField converts a v1alpha1 object with set and returns the name
// legacyTimeout was renamed to.
func convertedField(t testing.TB, set *Set) string {
	t.Helper()
	obj := map[string]any{
		"apiVersion": "myapps.example.com/v1alpha1", "kind": "CustomResource",
		"metadata": map[string]any{"name": "x"},
		"spec":     map[string]any{"config": map[string]any{"legacyTimeout": 30}},
	}
	out, err := set.Converter.Convert(context.Background(), obj, toV1beta1)
	if err != nil {
		t.Fatalf("convert: %v", err)
	}
	cfg := out["spec"].(map[string]any)["config"].(map[string]any)
	for k := range cfg {
		return k
	}
	return ""
}

func writeAtomic(t testing.TB, path, data string) {
	t.Helper()
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
}

func waitFor(t testing.TB, what string, timeout time.Duration, cond func() bool) time.Duration {
	t.Helper()
	start := time.Now()
	err := wait.PollUntilContextTimeout(context.Background(), 5*time.Millisecond, timeout, true, func(context.Context) (bool, error) {
		return cond(), nil
	})
	if err != nil {
		t.Fatalf("timed out after %s waiting for %s", timeout, what)
	}
	return time.Since(start)
}

// countingHandler is a log handler that counts the records of one message.
type countingHandler struct {
	msg string
	n   atomic.Int64
}

func (h *countingHandler) Enabled(context.Context, slog.Level) bool { return true }

func (h *countingHandler) Handle(_ context.Context, r slog.Record) error {
	if r.Message == h.msg {
		h.n.Add(1)
	}
	return nil
}

func (h *countingHandler) WithAttrs([]slog.Attr) slog.Handler { return h }
func (h *countingHandler) WithGroup(string) slog.Handler      { return h }

func TestStart_BadFiles(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.yaml")
	if err := os.WriteFile(bad, []byte(brokenYAML), 0o644); err != nil {
		t.Fatal(err)
	}
	unreadable := filepath.Join(dir, "nope.yaml")
	empty := t.TempDir()
	for _, tc := range []struct {
		name  string
		paths []string
		check func(error) bool
	}{
		{"missing file", []string{unreadable}, func(err error) bool { return errors.Is(err, os.ErrNotExist) }},
		{"invalid rules", []string{bad}, func(err error) bool {
			var el rules.ErrorList
			return errors.As(err, &el) && strings.Contains(el[0].Field.Field, "transformations[0].forward")
		}},
		{"empty directory", []string{empty}, func(err error) bool { return strings.Contains(fmt.Sprint(err), "no *.yaml") }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := Start(t.Context(), Options{Files: tc.paths})
			if err == nil || s != nil || !tc.check(err) {
				t.Fatalf("Start = %v, %v", s, err)
			}
		})
	}
	if _, err := Start(t.Context(), Options{}); err == nil {
		t.Fatal("Start without sources succeeded")
	}
}

func TestSource_FileReload(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "rules.yaml")
	writeAtomic(t, path, rulesYAML("r", "first"))
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	s, err := Start(ctx, Options{Files: []string{dir}, PollInterval: -1})
	if err != nil {
		t.Fatal(err)
	}
	var notified atomic.Int64
	s.Subscribe(func(set *Set) { notified.Store(int64(set.Revision)) })
	first := s.Current()
	if got := convertedField(t, first); got != "first" {
		t.Fatalf("converted to %q", got)
	}
	if len(first.RoutingRules) != 1 || first.RoutingRules[0].Resource != "deployments" {
		t.Fatalf("routing rules %+v", first.RoutingRules)
	}

	// An editor's atomic save reloads.
	writeAtomic(t, path, rulesYAML("r", "second"))
	d := waitFor(t, "reload after a rename", 30*time.Second, func() bool { return convertedField(t, s.Current()) == "second" })
	t.Logf("file change picked up after %s", d)
	if notified.Load() != int64(s.Current().Revision) {
		t.Errorf("subscriber saw revision %d, current is %d", notified.Load(), s.Current().Revision)
	}
	if convertedField(t, first) != "first" {
		t.Error("a reload changed a set already handed out")
	}

	// A broken edit keeps the previous rules and reports why.
	rev := s.Current().Revision
	writeAtomic(t, path, brokenYAML)
	waitFor(t, "the broken file's rejection", 30*time.Second, func() bool { return s.LastError() != nil })
	var el rules.ErrorList
	if !errors.As(s.LastError(), &el) || !strings.Contains(el.Error(), "spec.apiMigrationRules[0].transformations[0].forward") {
		t.Fatalf("LastError = %v", s.LastError())
	}
	if s.Current().Revision != rev || convertedField(t, s.Current()) != "second" {
		t.Fatal("a broken file replaced the active rules")
	}
	// An in-place write of a fix (no rename) is seen too.
	if err := os.WriteFile(path, []byte(rulesYAML("r", "third")), 0o644); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "reload after an in-place write", 30*time.Second, func() bool { return convertedField(t, s.Current()) == "third" })
	if s.LastError() != nil {
		t.Errorf("LastError after a good reload: %v", s.LastError())
	}
	cancel()
	select {
	case <-s.Done():
	case <-time.After(2 * time.Second):
		t.Fatal("Source did not stop")
	}
}

// A ConfigMap volume: files are symlinks through ..data to a timestamped
// directory, and an update swaps ..data.
func TestSource_ConfigMapVolume(t *testing.T) {
	dir := t.TempDir()
	version := func(name, target string) {
		ts := filepath.Join(dir, name)
		if err := os.Mkdir(ts, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(ts, "rules.yaml"), []byte(rulesYAML("r", target)), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(name, filepath.Join(dir, "..data_tmp")); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(filepath.Join(dir, "..data_tmp"), filepath.Join(dir, "..data")); err != nil {
			t.Fatal(err)
		}
	}
	version("..2026_11_29_18_00_00.1", "first")
	if err := os.Symlink("..data/rules.yaml", filepath.Join(dir, "rules.yaml")); err != nil {
		t.Fatal(err)
	}
	s, err := Start(t.Context(), Options{Files: []string{dir}, PollInterval: -1})
	if err != nil {
		t.Fatalf("Start on a ConfigMap volume: %v", err)
	}
	if len(s.Current().Rules.Documents) != 1 {
		t.Fatalf("%d documents, want 1", len(s.Current().Rules.Documents))
	}
	version("..2026_11_29_18_05_00.2", "second")
	waitFor(t, "reload after the ..data swap", 30*time.Second, func() bool { return convertedField(t, s.Current()) == "second" })
}

func TestSource_Polling(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "rules.yaml")
	writeAtomic(t, path, rulesYAML("r", "first"))
	polls := &countingHandler{msg: msgFilesUnchanged}
	s, err := Start(t.Context(), Options{Files: []string{path}, PollInterval: 20 * time.Millisecond, Logger: slog.New(polls)})
	if err != nil {
		t.Fatal(err)
	}
	// Stop notifications: only polling can see the change.
	s.files.watcher.Close()
	writeAtomic(t, path, rulesYAML("r", "polled"))
	waitFor(t, "a polled reload", 30*time.Second, func() bool { return convertedField(t, s.Current()) == "polled" })
	rev := s.Current().Revision
	// The reload that activated rev has ended: the polls counted from here
	// on read the files unchanged.
	seen := polls.n.Load()
	waitFor(t, "three polls of the unchanged files", 30*time.Second, func() bool { return polls.n.Load() >= seen+3 })
	if s.Current().Revision != rev {
		t.Error("polling unchanged files activated a new set")
	}
}

// Conversions running while the rules reload never fail and always see one
// whole set.
func TestSource_ReloadUnderLoad(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "rules.yaml")
	writeAtomic(t, path, rulesYAML("r", "v0"))
	s, err := Start(t.Context(), Options{Files: []string{path}, PollInterval: -1, Debounce: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	var conversions, failures atomic.Int64
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				set := s.Current()
				obj := map[string]any{"apiVersion": "myapps.example.com/v1alpha1", "kind": "CustomResource",
					"spec": map[string]any{"config": map[string]any{"legacyTimeout": 1}}}
				out, err := set.Converter.Convert(context.Background(), obj, toV1beta1)
				conversions.Add(1)
				if err != nil || len(out["spec"].(map[string]any)["config"].(map[string]any)) != 1 {
					failures.Add(1)
				}
			}
		}()
	}
	for i := 1; i <= 20; i++ {
		content := rulesYAML("r", fmt.Sprintf("v%d", i))
		if i%5 == 0 {
			content = brokenYAML
		}
		writeAtomic(t, path, content)
		time.Sleep(10 * time.Millisecond)
	}
	writeAtomic(t, path, rulesYAML("r", "last"))
	waitFor(t, "the last reload", 30*time.Second, func() bool { return convertedField(t, s.Current()) == "last" })
	close(stop)
	wg.Wait()
	if failures.Load() > 0 || conversions.Load() == 0 {
		t.Fatalf("%d of %d conversions failed", failures.Load(), conversions.Load())
	}
	t.Logf("%d conversions over %d reloads, none failed", conversions.Load(), s.Current().Revision-1)
}
