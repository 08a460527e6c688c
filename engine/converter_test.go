package engine_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/mvpctl/mvpctl/engine"
)

// TestConverter_ConcurrentUse converts from many goroutines with one
// converter per executor; run under -race it proves the compiled programs
// and the converter share nothing mutable.
func TestConverter_ConcurrentUse(t *testing.T) {
	in := loadBench(t)
	want := string(in.new)
	for _, ex := range []engine.Executor{engine.Native, engine.JQ} {
		// Without a program deadline: one that a starved machine overruns
		// is not what this test is about.
		o := in.conv[ex].Options()
		o.ProgramTimeout = -1
		conv := in.conv[ex].WithOptions(o)
		var wg sync.WaitGroup
		errs := make(chan error, 16)
		for g := 0; g < 8; g++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := 0; i < 20; i++ {
					out, err := convertBytes(conv, in.old, benchTo)
					if err != nil {
						errs <- err
						return
					}
					if string(out) != want {
						errs <- errors.New("concurrent conversion gave a different result")
						return
					}
					back, err := convertBytes(conv, out, benchFrom)
					if err != nil {
						errs <- fmt.Errorf("concurrent round trip: %w", err)
						return
					}
					if !jsonEqual(t, back, in.old) {
						errs <- errors.New("concurrent round trip differs")
						return
					}
				}
			}()
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Errorf("executor %d: %v", ex, err)
		}
	}
}

func jsonEqual(t *testing.T, a, b []byte) bool {
	oa, err1 := engine.DecodeObject(a)
	ob, err2 := engine.DecodeObject(b)
	if err1 != nil || err2 != nil {
		return false
	}
	x, _ := engine.EncodeObject(oa)
	y, _ := engine.EncodeObject(ob)
	return string(x) == string(y)
}

func TestConverter_ContextCancelled(t *testing.T) {
	in := loadBench(t)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	for _, ex := range []engine.Executor{engine.Native, engine.JQ} {
		obj, _ := engine.DecodeObject(in.old)
		if _, err := in.conv[ex].Convert(ctx, obj, benchTo); !errors.Is(err, context.Canceled) {
			t.Errorf("executor %d: got %v, want context.Canceled", ex, err)
		}
	}
}

func TestConverter_NoRuleWarnsAndPassesThrough(t *testing.T) {
	var warnings []string
	c, err := engine.Load(engine.Options{Warn: func(m string) { warnings = append(warnings, m) }}, "../testdata/examples/seed/mvp-rules.yaml")
	if err != nil {
		t.Fatal(err)
	}
	obj := map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": "cfg", "namespace": "shop"}, "data": map[string]any{"a": "b"}}
	out, err := c.Convert(context.Background(), obj, schema.GroupVersion{Group: "myapps.example.com", Version: "v1beta1"})
	if err != nil {
		t.Fatal(err)
	}
	if out["apiVersion"] != "v1" {
		t.Errorf("object changed: %v", out)
	}
	if len(warnings) != 1 || !strings.Contains(warnings[0], "ConfigMap shop/cfg") || !strings.Contains(warnings[0], `"configmaps"`) {
		t.Errorf("warnings = %q", warnings)
	}
}

func TestConverter_NoPath(t *testing.T) {
	c, err := engine.Load(engine.Options{}, "../testdata/examples/seed/mvp-rules.yaml")
	if err != nil {
		t.Fatal(err)
	}
	obj := map[string]any{"apiVersion": "myapps.example.com/v1alpha1", "kind": "CustomResource", "metadata": map[string]any{"name": "x"}}
	_, err = c.Convert(context.Background(), obj, schema.GroupVersion{Group: "myapps.example.com", Version: "v2"})
	var np *engine.NoPathError
	if !errors.As(err, &np) || err.Error() != "no rules convert customresources from myapps.example.com/v1alpha1 to myapps.example.com/v2" {
		t.Errorf("got %v", err)
	}
}

// Path's not-found is a *NoPathError, whether no rule mentions the
// resource or none leads to the version.
func TestConverter_Path_NotFound(t *testing.T) {
	c, err := engine.Load(engine.Options{}, "../testdata/examples/seed/mvp-rules.yaml")
	if err != nil {
		t.Fatal(err)
	}
	alpha := schema.GroupVersion{Group: "myapps.example.com", Version: "v1alpha1"}
	beta := schema.GroupVersion{Group: "myapps.example.com", Version: "v1beta1"}
	progs, resource, err := c.Path(alpha.WithKind("CustomResource"), beta)
	if err != nil || resource != "customresources" || len(progs) != 1 {
		t.Errorf("a path: %d programs, %q, %v", len(progs), resource, err)
	}
	for _, tc := range []struct {
		name    string
		gvk     schema.GroupVersionKind
		to      schema.GroupVersion
		noRules bool
	}{
		{"no rule reaches the version", alpha.WithKind("CustomResource"), schema.GroupVersion{Group: "myapps.example.com", Version: "v2"}, false},
		{"no rule mentions the resource", alpha.WithKind("Other"), beta, true},
		{"no rule mentions the resource, same version", alpha.WithKind("Other"), alpha, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, _, err := c.Path(tc.gvk, tc.to)
			var np *engine.NoPathError
			if !errors.As(err, &np) || np.NoRules != tc.noRules || np.From != tc.gvk.GroupVersion() || np.To != tc.to {
				t.Errorf("got %#v", err)
			}
		})
	}
}

// Path is asked once per object of a list or watch: its answers are kept,
// so that asking again costs no allocation, and give the same programs.
func TestConverter_Path_IsCached(t *testing.T) {
	c, err := engine.Load(engine.Options{}, "../testdata/examples/seed/mvp-rules.yaml")
	if err != nil {
		t.Fatal(err)
	}
	alpha := schema.GroupVersion{Group: "myapps.example.com", Version: "v1alpha1"}
	beta := schema.GroupVersion{Group: "myapps.example.com", Version: "v1beta1"}
	first, _, err := c.Path(beta.WithKind("CustomResource"), alpha)
	if err != nil || len(first) != 1 {
		t.Fatalf("%d programs, %v", len(first), err)
	}
	allocs := testing.AllocsPerRun(100, func() {
		progs, resource, err := c.Path(beta.WithKind("CustomResource"), alpha)
		if err != nil || resource != "customresources" || len(progs) != 1 || progs[0] != first[0] {
			t.Fatalf("%d programs, %q, %v", len(progs), resource, err)
		}
	})
	if allocs != 0 {
		t.Errorf("Path allocates %.0f times for an answer it gave before", allocs)
	}
}

// Past its bound the cache keeps nothing more, and Path still answers.
func TestConverter_Path_CacheIsBounded(t *testing.T) {
	c, err := engine.Load(engine.Options{}, "../testdata/examples/seed/mvp-rules.yaml")
	if err != nil {
		t.Fatal(err)
	}
	beta := schema.GroupVersion{Group: "myapps.example.com", Version: "v1beta1"}
	for i := range 3000 {
		from := schema.GroupVersion{Group: "myapps.example.com", Version: fmt.Sprintf("v%d", i)}
		_, _, err := c.Path(from.WithKind("CustomResource"), beta)
		var np *engine.NoPathError
		if !errors.As(err, &np) || np.From != from {
			t.Fatalf("%s: %v", from, err)
		}
	}
	if n := engine.CachedPaths(c); n != 1024 {
		t.Errorf("%d answers kept", n)
	}
	progs, _, err := c.Path(schema.GroupVersion{Group: "myapps.example.com", Version: "v1alpha1"}.WithKind("CustomResource"), beta)
	if err != nil || len(progs) != 1 {
		t.Errorf("past the bound: %d programs, %v", len(progs), err)
	}
}

func TestDecodeObject_ExactNumbers(t *testing.T) {
	obj, err := engine.DecodeObject([]byte(`{"a":9223372036854775807,"b":123456789012345678901234567890,"c":1.50,"d":-0}`))
	if err != nil {
		t.Fatal(err)
	}
	out, err := engine.EncodeObject(obj)
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"a":9223372036854775807,"b":123456789012345678901234567890,"c":1.50,"d":-0}`; string(out) != want {
		t.Errorf("got %s, want %s", out, want)
	}
	for _, bad := range []string{`[1]`, `null`, `{"a":1} {}`, `{"a":`} {
		if _, err := engine.DecodeObject([]byte(bad)); err == nil {
			t.Errorf("DecodeObject(%s) succeeded", bad)
		}
	}
}

// ObjectEncoder's output is EncodeObject's, byte for byte, for every JSON
// object under testdata and for the strings JSON encoders disagree on.
func TestObjectEncoder_IsEncodeObject(t *testing.T) {
	var files []string
	err := filepath.WalkDir("../testdata", func(path string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasSuffix(path, ".json") {
			files = append(files, path)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	var objs []map[string]any
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if obj, err := engine.DecodeObject(data); err == nil {
			objs = append(objs, obj)
		}
	}
	if len(objs) < 100 {
		t.Fatalf("only %d objects under testdata", len(objs))
	}
	objs = append(objs, map[string]any{
		"html": "<a href='x'>&amp;</a>", "invalid": "a\xffb", "separators": "\u2028\u2029", "control": "\x00\x1f\t\n",
		"number": json.Number("9223372036854775807"), "float": 1.5, "nil": nil, "list": []any{map[string]any{"b": 1, "a": []any{}}},
	})
	enc := engine.NewObjectEncoder()
	for i, obj := range objs {
		want, err := engine.EncodeObject(obj)
		if err != nil {
			t.Fatal(err)
		}
		got, err := enc.Encode(obj)
		if err != nil || !bytes.Equal(got, want) {
			t.Fatalf("object %d: got %s (%v), want %s", i, got, err, want)
		}
	}
}
