// Package oracle produces expected conversion outputs from Kubernetes' own
// conversion code (k8s.io/kubernetes, see go.mod for the exact version), so
// mvpctl's TransformationRules can be checked against what a kube-apiserver
// really does rather than against our own expectations.
//
// For every pair directory under testdata/oracle/ it reads the committed
// inputs in/<name>.<label>.json, converts each one external → internal →
// external with the real scheme (generated and hand-written conversion
// functions registered by the pkg/apis/<group>/install packages), and writes:
//
//	out/<name>.<other-label>.json             the conversion to the other version
//	out/<name>.roundtrip.<label>.json         that result converted back again
//	served/<name>.<other-label>.json          same, but with the source version's
//	served/<name>.roundtrip.<label>.json      defaulting applied to the input first
//	                                          (only where defaulting changes the input)
//	ROUNDTRIP.md                              per input, what the round trip changed
//
// No defaulting is applied in out/. served/ models what a kube-apiserver does
// with a request body: its decoder applies the request version's defaulters
// before converting to the internal version.
package oracle

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"

	autoscalinginstall "k8s.io/kubernetes/pkg/apis/autoscaling/install"
	batchinstall "k8s.io/kubernetes/pkg/apis/batch/install"
	coordinationinstall "k8s.io/kubernetes/pkg/apis/coordination/install"
	extensionsinstall "k8s.io/kubernetes/pkg/apis/extensions/install"
	networkinginstall "k8s.io/kubernetes/pkg/apis/networking/install"
	policyinstall "k8s.io/kubernetes/pkg/apis/policy/install"
)

// KubernetesVersion is the k8s.io/kubernetes module version the fixtures come
// from; it must match go.mod.
const KubernetesVersion = "v1.35.4"

// Side is one API version of a pair. Label is how the version is spelled in
// file names inside the pair directory (unique within the pair).
type Side struct {
	Label string
	GVK   schema.GroupVersionKind
}

// Pair is two API versions of one kind whose conversions are recorded.
type Pair struct {
	Name  string // directory name under testdata/oracle
	Sides [2]Side
	// Fuzzed maps a side label to the k8s.io/api testdata/HEAD fixture that
	// in/fuzzed.<label>.json is copied from.
	Fuzzed map[string]string
}

func gvk(group, version, kind string) schema.GroupVersionKind {
	return schema.GroupVersionKind{Group: group, Version: version, Kind: kind}
}

// Pairs lists every pair the oracle covers.
var Pairs = []Pair{
	{
		Name: "hpa-autoscaling-v1-v2",
		Sides: [2]Side{
			{"v1", gvk("autoscaling", "v1", "HorizontalPodAutoscaler")},
			{"v2", gvk("autoscaling", "v2", "HorizontalPodAutoscaler")},
		},
		Fuzzed: map[string]string{
			"v1": "autoscaling.v1.HorizontalPodAutoscaler.json",
			"v2": "autoscaling.v2.HorizontalPodAutoscaler.json",
		},
	},
	{
		Name: "hpa-autoscaling-v2beta2-v2",
		Sides: [2]Side{
			{"v2beta2", gvk("autoscaling", "v2beta2", "HorizontalPodAutoscaler")},
			{"v2", gvk("autoscaling", "v2", "HorizontalPodAutoscaler")},
		},
		Fuzzed: map[string]string{
			"v2beta2": "autoscaling.v2beta2.HorizontalPodAutoscaler.json",
			"v2":      "autoscaling.v2.HorizontalPodAutoscaler.json",
		},
	},
	{
		Name: "pdb-policy-v1beta1-v1",
		Sides: [2]Side{
			{"v1beta1", gvk("policy", "v1beta1", "PodDisruptionBudget")},
			{"v1", gvk("policy", "v1", "PodDisruptionBudget")},
		},
		Fuzzed: map[string]string{
			"v1beta1": "policy.v1beta1.PodDisruptionBudget.json",
			"v1":      "policy.v1.PodDisruptionBudget.json",
		},
	},
	{
		Name: "ingress-networking-v1beta1-v1",
		Sides: [2]Side{
			{"v1beta1", gvk("networking.k8s.io", "v1beta1", "Ingress")},
			{"v1", gvk("networking.k8s.io", "v1", "Ingress")},
		},
		Fuzzed: map[string]string{
			"v1beta1": "networking.k8s.io.v1beta1.Ingress.json",
			"v1":      "networking.k8s.io.v1.Ingress.json",
		},
	},
	{
		Name: "ingress-extensions-v1beta1-networking-v1",
		Sides: [2]Side{
			{"v1beta1", gvk("extensions", "v1beta1", "Ingress")},
			{"v1", gvk("networking.k8s.io", "v1", "Ingress")},
		},
		Fuzzed: map[string]string{
			"v1beta1": "extensions.v1beta1.Ingress.json",
			"v1":      "networking.k8s.io.v1.Ingress.json",
		},
	},
	{
		Name: "cronjob-batch-v1beta1-v1",
		Sides: [2]Side{
			{"v1beta1", gvk("batch", "v1beta1", "CronJob")},
			{"v1", gvk("batch", "v1", "CronJob")},
		},
		Fuzzed: map[string]string{
			"v1beta1": "batch.v1beta1.CronJob.json",
			"v1":      "batch.v1.CronJob.json",
		},
	},
	{
		Name: "lease-coordination-v1beta1-v1",
		Sides: [2]Side{
			{"v1beta1", gvk("coordination.k8s.io", "v1beta1", "Lease")},
			{"v1", gvk("coordination.k8s.io", "v1", "Lease")},
		},
		Fuzzed: map[string]string{
			"v1beta1": "coordination.k8s.io.v1beta1.Lease.json",
			"v1":      "coordination.k8s.io.v1.Lease.json",
		},
	},
}

// NewScheme returns a fresh scheme with the internal and external types,
// conversion functions and defaulters of the groups the pairs use.
func NewScheme() *runtime.Scheme {
	s := runtime.NewScheme()
	autoscalinginstall.Install(s)
	batchinstall.Install(s)
	coordinationinstall.Install(s)
	extensionsinstall.Install(s)
	networkinginstall.Install(s)
	policyinstall.Install(s)
	return s
}

// Converter runs conversions with one scheme.
type Converter struct {
	Scheme  *runtime.Scheme
	decoder runtime.Decoder
}

// NewConverter returns a Converter on NewScheme().
func NewConverter() *Converter {
	s := NewScheme()
	cf := serializer.NewCodecFactory(s, serializer.EnableStrict)
	return &Converter{Scheme: s, decoder: cf.UniversalDeserializer()}
}

// Decode decodes a JSON object into its typed external version, without
// defaulting and without conversion; unknown or duplicate fields are errors.
func (c *Converter) Decode(data []byte) (runtime.Object, error) {
	obj, _, err := c.decoder.Decode(data, nil, nil)
	if err != nil {
		return nil, err
	}
	return obj, nil
}

// Convert converts an external object to the external version target through
// the internal version of its group: external → internal → external. The
// input is not modified (some hand-written conversions mutate their input's
// nested pointers, so every step works on a deep copy).
func (c *Converter) Convert(in runtime.Object, target schema.GroupVersionKind) (runtime.Object, error) {
	src := in.GetObjectKind().GroupVersionKind()
	internal, err := c.Scheme.New(schema.GroupVersionKind{Group: src.Group, Version: runtime.APIVersionInternal, Kind: src.Kind})
	if err != nil {
		return nil, fmt.Errorf("internal type of %v: %w", src, err)
	}
	if err := c.Scheme.Convert(in.DeepCopyObject(), internal, nil); err != nil {
		return nil, fmt.Errorf("convert %v to internal: %w", src, err)
	}
	out, err := c.Scheme.New(target)
	if err != nil {
		return nil, fmt.Errorf("type of %v: %w", target, err)
	}
	if err := c.Scheme.Convert(internal.DeepCopyObject(), out, nil); err != nil {
		return nil, fmt.Errorf("convert internal to %v: %w", target, err)
	}
	out.GetObjectKind().SetGroupVersionKind(target)
	return out, nil
}

// Default returns a copy of obj with its version's registered defaulters
// applied, as a kube-apiserver's decoder does to a request body.
func (c *Converter) Default(obj runtime.Object) runtime.Object {
	d := obj.DeepCopyObject()
	c.Scheme.Default(d)
	d.GetObjectKind().SetGroupVersionKind(obj.GetObjectKind().GroupVersionKind())
	return d
}

// Encode marshals an object with encoding/json, 2-space indentation and a
// trailing newline.
func Encode(obj any) ([]byte, error) {
	b, err := json.MarshalIndent(obj, "", "  ")
	if err != nil {
		return nil, err
	}
	return append(b, '\n'), nil
}

// Input is one committed input file.
type Input struct {
	Name string // file name stem before the label
	Side int    // index into Pair.Sides
	Path string
}

// Inputs lists the inputs of a pair directory, sorted by file name.
func (p Pair) Inputs(pairDir string) ([]Input, error) {
	entries, err := os.ReadDir(filepath.Join(pairDir, "in"))
	if err != nil {
		return nil, err
	}
	var ins []Input
	for _, e := range entries {
		fn := e.Name()
		if e.IsDir() || !strings.HasSuffix(fn, ".json") {
			continue
		}
		stem := strings.TrimSuffix(fn, ".json")
		dot := strings.LastIndex(stem, ".")
		if dot <= 0 {
			return nil, fmt.Errorf("%s: input file name must be <name>.<version>.json", fn)
		}
		name, label := stem[:dot], stem[dot+1:]
		side := -1
		for i, s := range p.Sides {
			if s.Label == label {
				side = i
			}
		}
		if side < 0 {
			return nil, fmt.Errorf("%s: version %q is neither %q nor %q", fn, label, p.Sides[0].Label, p.Sides[1].Label)
		}
		ins = append(ins, Input{Name: name, Side: side, Path: filepath.Join(pairDir, "in", fn)})
	}
	sort.Slice(ins, func(i, j int) bool { return ins[i].Path < ins[j].Path })
	return ins, nil
}

// Generate computes every generated file of every pair under oracleDir
// (testdata/oracle), keyed by path relative to oracleDir.
func Generate(oracleDir string) (map[string][]byte, error) {
	c := NewConverter()
	files := map[string][]byte{}
	for _, p := range Pairs {
		if err := c.generatePair(p, oracleDir, files); err != nil {
			return nil, fmt.Errorf("%s: %w", p.Name, err)
		}
	}
	return files, nil
}

func (c *Converter) generatePair(p Pair, oracleDir string, files map[string][]byte) error {
	pairDir := filepath.Join(oracleDir, p.Name)
	ins, err := p.Inputs(pairDir)
	if err != nil {
		return err
	}
	var report bytes.Buffer
	fmt.Fprintf(&report, "# Round trips of %s (generated)\n\n", p.Name)
	fmt.Fprintf(&report, "Generated by `go run ./e2e/oracle/cmd/gen-oracle` from k8s.io/kubernetes %s; do not edit.\n\n", KubernetesVersion)
	fmt.Fprintf(&report, "For each input, the JSON paths where `out/<name>.roundtrip.<version>.json` differs from the\n")
	fmt.Fprintf(&report, "input as Kubernetes decodes it (typed, re-encoded with encoding/json; null and [] count as absent, {} does not).\n")
	fmt.Fprintf(&report, "`-` lost, `+` added, `~` changed.\n")

	for _, in := range ins {
		data, err := os.ReadFile(in.Path)
		if err != nil {
			return err
		}
		obj, err := c.Decode(data)
		if err != nil {
			return fmt.Errorf("%s: %w", in.Path, err)
		}
		from, to := p.Sides[in.Side], p.Sides[1-in.Side]
		if got := obj.GetObjectKind().GroupVersionKind(); got != from.GVK {
			return fmt.Errorf("%s: object is %v, file name says %v", in.Path, got, from.GVK)
		}
		fwd, back, err := c.roundTrip(obj, from, to)
		if err != nil {
			return fmt.Errorf("%s: %w", in.Path, err)
		}
		if err := addPair(files, p.Name, "out", in.Name, from, to, fwd, back); err != nil {
			return err
		}

		fmt.Fprintf(&report, "\n## %s.%s → %s → %s\n\n", in.Name, from.Label, to.Label, from.Label)
		diffs, err := jsonDiff(obj, back)
		if err != nil {
			return err
		}
		writeDiffs(&report, diffs)

		defaulted := c.Default(obj)
		if equality.Semantic.DeepEqual(defaulted, obj) {
			continue
		}
		sfwd, sback, err := c.roundTrip(defaulted, from, to)
		if err != nil {
			return fmt.Errorf("%s (defaulted): %w", in.Path, err)
		}
		if err := addPair(files, p.Name, "served", in.Name, from, to, sfwd, sback); err != nil {
			return err
		}
		fmt.Fprintf(&report, "\nWith %s defaulting applied to the input first (served/), the defaults add:\n\n", from.Label)
		ddiffs, err := jsonDiff(obj, defaulted)
		if err != nil {
			return err
		}
		writeDiffs(&report, ddiffs)
	}
	files[filepath.Join(p.Name, "ROUNDTRIP.md")] = report.Bytes()
	return nil
}

func (c *Converter) roundTrip(obj runtime.Object, from, to Side) (fwd, back runtime.Object, err error) {
	fwd, err = c.Convert(obj, to.GVK)
	if err != nil {
		return nil, nil, err
	}
	back, err = c.Convert(fwd, from.GVK)
	if err != nil {
		return nil, nil, fmt.Errorf("back: %w", err)
	}
	return fwd, back, nil
}

func addPair(files map[string][]byte, pair, dir, name string, from, to Side, fwd, back runtime.Object) error {
	fb, err := Encode(fwd)
	if err != nil {
		return err
	}
	bb, err := Encode(back)
	if err != nil {
		return err
	}
	files[filepath.Join(pair, dir, name+"."+to.Label+".json")] = fb
	files[filepath.Join(pair, dir, name+".roundtrip."+from.Label+".json")] = bb
	return nil
}

// GeneratedDirs are the per-pair directories whose every file the generator
// owns: a file there that Generate does not produce is stale.
var GeneratedDirs = []string{"out", "served"}

// Diff compares generated files with the tree under oracleDir. It returns
// human-readable problems: files that differ, are missing, or are stale.
func Diff(oracleDir string, files map[string][]byte) ([]string, error) {
	var problems []string
	for _, rel := range slices.Sorted(maps.Keys(files)) {
		have, err := os.ReadFile(filepath.Join(oracleDir, rel))
		switch {
		case os.IsNotExist(err):
			problems = append(problems, "missing: "+rel)
		case err != nil:
			return nil, err
		case !bytes.Equal(have, files[rel]):
			problems = append(problems, "differs: "+rel)
		}
	}
	stale, err := staleFiles(oracleDir, files)
	if err != nil {
		return nil, err
	}
	for _, rel := range stale {
		problems = append(problems, "stale: "+rel)
	}
	return problems, nil
}

// Write writes the generated files under oracleDir and removes stale ones.
// It returns what it did, one "wrote <path>" or "removed <path>" per file.
func Write(oracleDir string, files map[string][]byte) ([]string, error) {
	var changed []string
	for _, rel := range slices.Sorted(maps.Keys(files)) {
		path := filepath.Join(oracleDir, rel)
		if have, err := os.ReadFile(path); err == nil && bytes.Equal(have, files[rel]) {
			continue
		}
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			return nil, err
		}
		if err := os.WriteFile(path, files[rel], 0o644); err != nil {
			return nil, err
		}
		changed = append(changed, "wrote "+rel)
	}
	stale, err := staleFiles(oracleDir, files)
	if err != nil {
		return nil, err
	}
	for _, rel := range stale {
		if err := os.Remove(filepath.Join(oracleDir, rel)); err != nil {
			return nil, err
		}
		changed = append(changed, "removed "+rel)
	}
	return changed, nil
}

func staleFiles(oracleDir string, files map[string][]byte) ([]string, error) {
	var stale []string
	for _, p := range Pairs {
		for _, d := range GeneratedDirs {
			entries, err := os.ReadDir(filepath.Join(oracleDir, p.Name, d))
			if os.IsNotExist(err) {
				continue
			}
			if err != nil {
				return nil, err
			}
			for _, e := range entries {
				rel := filepath.Join(p.Name, d, e.Name())
				if _, ok := files[rel]; !ok {
					stale = append(stale, rel)
				}
			}
		}
	}
	return stale, nil
}
