// Package oracle produces expected conversion outputs from Kubernetes' own
// conversion code, so mvpctl's TransformationRules can be checked against
// what a kube-apiserver really does rather than against our own expectations.
//
// This module is the release-independent harness. Each pair is checked
// against the conversion code of the release that last served its older
// version; releases/v1.<minor>/ is one Go module per Kubernetes release
// (k8s.io/kubernetes and its staging modules pinned to that release) whose
// main calls Main with a NewScheme of that release's install packages, and
// generates the pairs of Pairs whose Release is its own.
//
// For every such pair directory under testdata/oracle/ it reads the committed
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
//	MANIFEST                                  the release, and the sha256 of every
//	                                          input and generated file
//
// No defaulting is applied in out/. served/ models what a kube-apiserver does
// with a request body: its decoder applies the request version's defaulters
// before converting to the internal version.
package oracle

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	kjson "k8s.io/apimachinery/pkg/runtime/serializer/json"
)

// Side is one API version of a pair. Label is how the version is spelled in
// file names inside the pair directory (unique within the pair).
type Side struct {
	Label string
	GVK   schema.GroupVersionKind
}

// Pair is two API versions of one kind whose conversions are recorded.
type Pair struct {
	Name string // directory name under testdata/oracle
	// Release is the Kubernetes minor release ("v1.21") whose conversion
	// code decides: the last one that served the older side, or the newest
	// release module that registers both sides when both are still served.
	Release string
	Sides   [2]Side
	// Fuzzed maps a side label to the k8s.io/api testdata/HEAD fixture that
	// in/fuzzed.<label>.json is copied from.
	Fuzzed map[string]string
}

func gvk(group, version, kind string) schema.GroupVersionKind {
	return schema.GroupVersionKind{Group: group, Version: version, Kind: kind}
}

// Converter runs conversions with one scheme.
type Converter struct {
	Scheme  *runtime.Scheme
	decoder runtime.Decoder
}

// NewConverter returns a Converter on a scheme with the install packages of
// the pairs' groups. The decoder is strict (json.SerializerOptions exists in
// every release the oracle builds, serializer.EnableStrict does not).
func NewConverter(s *runtime.Scheme) *Converter {
	d := kjson.NewSerializerWithOptions(kjson.DefaultMetaFactory, s, s, kjson.SerializerOptions{Strict: true})
	return &Converter{Scheme: s, decoder: d}
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
// nested pointers, so every step works on a deep copy). A conversion that
// panics (older releases' code dereferences fields their defaulting always
// set, e.g. v1.15's StatefulSet rollingUpdate.partition) is an error.
func (c *Converter) Convert(in runtime.Object, target schema.GroupVersionKind) (out runtime.Object, err error) {
	defer func() {
		if r := recover(); r != nil {
			out, err = nil, fmt.Errorf("conversion to %v panicked: %v", target, r)
		}
	}()
	src := in.GetObjectKind().GroupVersionKind()
	internal, err := c.Scheme.New(schema.GroupVersionKind{Group: src.Group, Version: runtime.APIVersionInternal, Kind: src.Kind})
	if err != nil {
		return nil, fmt.Errorf("internal type of %v: %w", src, err)
	}
	if err := c.Scheme.Convert(in.DeepCopyObject(), internal, nil); err != nil {
		return nil, fmt.Errorf("convert %v to internal: %w", src, err)
	}
	out, err = c.Scheme.New(target)
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
