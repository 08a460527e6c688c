package main

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// The committed table must be what go.mod's k8s.io modules (read from the
// module cache, as the build does) and zz_history.go give: bump k8s.io/api
// and this fails until `go generate ./rules/builtin` (and, for kinds the new
// release dropped, `go run ./rules/builtin/gen -history`) is run.
func TestTable_IsCurrent(t *testing.T) {
	live, err := liveEntries()
	if err != nil {
		t.Fatal(err)
	}
	newest, err := newestRelease()
	if err != nil {
		t.Fatal(err)
	}
	want, err := render(merge(live, history), newest)
	if err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(filepath.Join("..", "zz_generated.lifecycle.go"))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("rules/builtin/zz_generated.lifecycle.go is stale: run go generate ./rules/builtin (-committed +generated):\n%s", cmp.Diff(string(got), string(want)))
	}
}

// Every kind the history keeps must be one the live modules no longer have,
// or zz_history.go was not rewritten after go.mod moved.
func TestHistory_OnlyKindsGoneFromLiveModules(t *testing.T) {
	live, err := liveEntries()
	if err != nil {
		t.Fatal(err)
	}
	inLive := map[string]bool{}
	for _, e := range live {
		inLive[key(e)] = true
	}
	for _, e := range history {
		if inLive[key(e)] {
			t.Errorf("%s is in zz_history.go (from %s) and in go.mod's modules: run go run ./rules/builtin/gen -history", key(e), e.Source)
		}
	}
}

const testRegister = `package v1beta1

const GroupName = "example.k8s.io"
`

const testTypes = `package v1beta1

// +genclient
// +genclient:nonNamespaced
// +k8s:prerelease-lifecycle-gen:introduced=1.10

// Widget is a cluster-scoped resource.
type Widget struct{}

// WidgetList is a list.
type WidgetList struct{}

// +genclient
// +genclient:noVerbs

// Poke is a subresource.
type Poke struct{}

// Options has no client.
type Options struct{}
`

const testLifecycle = `package v1beta1

import schema "k8s.io/apimachinery/pkg/runtime/schema"

func (in *Widget) APILifecycleIntroduced() (major, minor int) { return 1, 10 }
func (in *Widget) APILifecycleDeprecated() (major, minor int) { return 1, 13 }
func (in *Widget) APILifecycleReplacement() schema.GroupVersionKind {
	return schema.GroupVersionKind{Group: "example.k8s.io", Version: "v1", Kind: "Widget"}
}
func (in *Widget) APILifecycleRemoved() (major, minor int) { return 1, 16 }
func (in *WidgetList) APILifecycleIntroduced() (major, minor int) { return 1, 10 }
func (in *Poke) APILifecycleIntroduced() (major, minor int) { return 1, 11 }
func (in *Options) APILifecycleIntroduced() (major, minor int) { return 1, 12 }
`

func writePackage(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "example", "v1beta1")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for name, src := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func TestReadPackage(t *testing.T) {
	// core/v1 writes some methods by hand (lifecycle.go deprecates Endpoints).
	handWritten := "package v1beta1\n\nfunc (in *Options) APILifecycleDeprecated() (major, minor int) { return 1, 19 }\n"
	dir := writePackage(t, map[string]string{"register.go": testRegister, "types.go": testTypes, lifecycleFile: testLifecycle, "lifecycle.go": handWritten})
	got, err := readPackage(dir, "example@v0.1.0")
	if err != nil {
		t.Fatal(err)
	}
	want := []entry{
		{Group: "example.k8s.io", Version: "v1beta1", Kind: "Options", Introduced: release{1, 12}, Deprecated: release{1, 19}, Source: "example@v0.1.0"},
		{Group: "example.k8s.io", Version: "v1beta1", Kind: "Widget", Introduced: release{1, 10}, Deprecated: release{1, 13}, Removed: release{1, 16},
			Replacement: &kindRef{"example.k8s.io", "v1", "Widget"}, Resource: "widgets", Source: "example@v0.1.0"},
		{Group: "example.k8s.io", Version: "v1beta1", Kind: "Poke", Introduced: release{1, 11}, Source: "example@v0.1.0"},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

func TestReadPackage_Errors(t *testing.T) {
	for name, files := range map[string]map[string]string{
		"no GroupName":          {"types.go": testTypes, lifecycleFile: testLifecycle},
		"computed release":      {"register.go": testRegister, lifecycleFile: "package v1beta1\nfunc (in *W) APILifecycleIntroduced() (int, int) { return 1, x }\n"},
		"two statements":        {"register.go": testRegister, lifecycleFile: "package v1beta1\nfunc (in *W) APILifecycleIntroduced() (int, int) { println(); return 1, 2 }\n"},
		"unknown method":        {"register.go": testRegister, lifecycleFile: "package v1beta1\nfunc (in *W) APILifecycleSomething() (int, int) { return 1, 2 }\n"},
		"replacement not a GVK": {"register.go": testRegister, lifecycleFile: "package v1beta1\nfunc (in *W) APILifecycleReplacement() any { return nil }\n"},
	} {
		t.Run(name, func(t *testing.T) {
			if _, err := readPackage(writePackage(t, files), "x"); err == nil {
				t.Error("no error")
			}
		})
	}
}

func TestComplete(t *testing.T) {
	entries := []entry{
		// networking.k8s.io/v1beta1 IngressClass names IngressClassList upstream.
		{Group: "n", Version: "v1beta1", Kind: "IngressClass", Deprecated: release{1, 19}, Replacement: &kindRef{"n", "v1", "IngressClassList"}},
		{Group: "n", Version: "v1", Kind: "IngressClass"},
		// events.k8s.io/v1beta1 Event names no replacement; v1 is the one current version.
		{Group: "e", Version: "v1beta1", Kind: "Event", Deprecated: release{1, 22}},
		{Group: "e", Version: "v1", Kind: "Event"},
		// Two current versions: no guess.
		{Group: "a", Version: "v1alpha1", Kind: "X", Deprecated: release{1, 30}},
		{Group: "a", Version: "v1", Kind: "X"},
		{Group: "a", Version: "v2", Kind: "X"},
		// No current version at all.
		{Group: "p", Version: "v1beta1", Kind: "PodSecurityPolicy", Deprecated: release{1, 21}},
	}
	inferred := complete(entries)
	if got := entries[0].Replacement.Kind; got != "IngressClass" {
		t.Errorf("IngressClass replacement kind = %s", got)
	}
	if r := entries[2].Replacement; r == nil || *r != (kindRef{"e", "v1", "Event"}) || !inferred["e/v1beta1/Event"] {
		t.Errorf("Event replacement = %v, inferred %v", r, inferred)
	}
	if entries[4].Replacement != nil || entries[7].Replacement != nil {
		t.Errorf("replacements guessed: %v, %v", entries[4].Replacement, entries[7].Replacement)
	}
}

func TestMerge_LiveWins(t *testing.T) {
	live := []entry{{Group: "g", Version: "v1beta1", Kind: "K", Removed: release{1, 25}, Source: "live"}}
	history := []entry{
		{Group: "g", Version: "v1beta1", Kind: "K", Removed: release{1, 22}, Source: "old"},
		{Group: "a", Version: "v1beta1", Kind: "K", Source: "old"},
	}
	var got []entry
	for _, e := range merge(live, history) {
		if e.Group == "a" || e.Group == "g" { // documented entries left out
			got = append(got, e)
		}
	}
	if len(got) != 2 || got[0].Group != "a" || got[1].Source != "live" {
		t.Errorf("merge = %+v", got)
	}
}

// The table covers kinds that k8s.io/api dropped before it had lifecycle
// methods (v0.19): derived from the first release without the kind, or
// documented (ThirdPartyResource, older than the module proxy's releases).
func TestTable_CoversPreLifecycleRemovals(t *testing.T) {
	live, err := liveEntries()
	if err != nil {
		t.Fatal(err)
	}
	byKey := map[string]entry{}
	for _, e := range merge(live, history) {
		byKey[key(e)] = e
	}
	for _, tc := range []struct {
		key         string
		removed     release
		replacement *kindRef
		note        string
	}{
		{"extensions/v1beta1/ThirdPartyResource", release{1, 8}, nil, "none; use a CustomResourceDefinition (apiextensions.k8s.io/v1)"},
		{"extensions/v1beta1/ReplicationControllerDummy", release{1, 18}, nil, ""},
		{"auditregistration.k8s.io/v1alpha1/AuditSink", release{1, 19}, nil, ""},
		{"settings.k8s.io/v1alpha1/PodPreset", release{1, 20}, nil, ""},
		{"batch/v2alpha1/CronJob", release{1, 21}, &kindRef{"batch", "v1", "CronJob"}, ""},
		{"discovery.k8s.io/v1alpha1/EndpointSlice", release{1, 21}, &kindRef{"discovery.k8s.io", "v1", "EndpointSlice"}, ""},
	} {
		e, ok := byKey[tc.key]
		if !ok {
			t.Errorf("%s: not in the table", tc.key)
			continue
		}
		if e.Removed != tc.removed || e.Note != tc.note || !cmp.Equal(e.Replacement, tc.replacement) {
			t.Errorf("%s: removed %v, replacement %v, note %q", tc.key, e.Removed, e.Replacement, e.Note)
		}
	}
}

func TestDeriveRemovals(t *testing.T) {
	a := entry{Group: "g", Version: "v1alpha1", Kind: "A", Source: "k8s.io/api@v0.15.1"}
	b := entry{Group: "g", Version: "v1alpha1", Kind: "B", Source: "k8s.io/api@v0.16.1"}
	c := entry{Group: "g", Version: "v1", Kind: "C"}
	got := deriveRemovals([]kinds{
		{release{1, 15}, []entry{a, c}},
		{release{1, 16}, []entry{a, b, c}},
		{release{1, 17}, []entry{b, c}},
		{release{1, 18}, []entry{c}},
	}, nil)
	want := []entry{
		{Group: "g", Version: "v1alpha1", Kind: "A", Removed: release{1, 17}, Source: "k8s.io/api@v0.15.1"},
		{Group: "g", Version: "v1alpha1", Kind: "B", Introduced: release{1, 16}, Removed: release{1, 18}, Source: "k8s.io/api@v0.16.1"},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	// A kind a lifecycle method describes is left to it.
	if got := deriveRemovals([]kinds{{release{1, 15}, []entry{a}}, {release{1, 16}, nil}}, []entry{a}); len(got) != 0 {
		t.Errorf("described kind derived: %+v", got)
	}
}

func TestKnownTypes(t *testing.T) {
	src := `package v1beta1
func addKnownTypes(scheme *runtime.Scheme) error {
	scheme.AddKnownTypes(SchemeGroupVersion, &ThirdPartyResource{}, &ThirdPartyResourceList{}, &Deployment{})
	return nil
}`
	got, err := knownTypes("register.go", []byte(src))
	if err != nil || !cmp.Equal(got, []string{"ThirdPartyResource", "Deployment"}) {
		t.Errorf("knownTypes = %v, %v", got, err)
	}
}
