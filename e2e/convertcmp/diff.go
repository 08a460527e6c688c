// Package convertcmp compares what `mvpctl convert` and kubectl-convert
// write for the same manifest, and explains each difference.
//
// kubectl-convert decodes a manifest into Kubernetes' internal type with
// the source version's defaulting, converts it and encodes the target
// version's Go type; mvpctl converts the object as written. So
// kubectl-convert's output has defaults and zero values that mvpctl's lacks
// (status: {}, creationTimestamp: null), and canonical spellings
// (quantities). Comparison therefore runs in stages, each explaining what
// it removes:
//
//  1. text: the two outputs are byte for byte the same;
//  2. values: the same values (keys in another order or other spellings of
//     the same YAML);
//  3. the round-trip annotation mvpctl writes (mvp.k8s.io/conversion-data)
//     when the target version cannot hold a field: kubectl-convert drops it;
//  4. target: both outputs put through kubectl-convert to their own
//     version, which decodes them with the target version's defaulting and
//     encodes them again, as a server of that version would store them;
//  5. source: the input first defaulted by kubectl-convert in its own
//     version (what an apiserver does to a request body before converting),
//     then converted by mvpctl, then put through stage 4.
//
// What is left is a real disagreement, and so is a field mvpctl writes that
// the target type does not have (stage 4 drops it).
package convertcmp

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"sigs.k8s.io/yaml"
	yamlv3 "sigs.k8s.io/yaml/goyaml.v3"
)

// AnnotationKey is the annotation in which mvpctl keeps what the target
// version cannot hold.
const AnnotationKey = "mvp.k8s.io/conversion-data"

// Decode reads one YAML or JSON object into generic values, numbers kept
// as written (json.Number).
func Decode(data []byte) (map[string]any, error) {
	js, err := yaml.YAMLToJSON(data)
	if err != nil {
		return nil, err
	}
	dec := json.NewDecoder(bytes.NewReader(js))
	dec.UseNumber()
	var obj map[string]any
	if err := dec.Decode(&obj); err != nil {
		return nil, err
	}
	if obj == nil {
		return nil, fmt.Errorf("not an object")
	}
	return obj, nil
}

// Change is one path where two objects differ.
type Change struct {
	// Path names the field: spec.rules[0].host,
	// metadata.annotations["kubernetes.io/ingress.class"].
	Path string
	// A and B are the values on each side; InA and InB say whether the
	// field is there at all.
	A, B     any
	InA, InB bool
}

// Diff lists the paths where a and b differ, sorted. Lists of the same
// length are compared item by item; of different lengths, as a whole.
func Diff(a, b any) []Change {
	var out []Change
	diff("", a, b, true, true, &out)
	slices.SortFunc(out, func(x, y Change) int { return strings.Compare(x.Path, y.Path) })
	return out
}

func diff(path string, a, b any, inA, inB bool, out *[]Change) {
	if inA && inB {
		am, aok := a.(map[string]any)
		bm, bok := b.(map[string]any)
		if aok && bok {
			for _, k := range sortedUnion(am, bm) {
				av, ina := am[k]
				bv, inb := bm[k]
				diff(child(path, k), av, bv, ina, inb, out)
			}
			return
		}
		al, aok := a.([]any)
		bl, bok := b.([]any)
		if aok && bok && len(al) == len(bl) {
			for i := range al {
				diff(path+"["+strconv.Itoa(i)+"]", al[i], bl[i], true, true, out)
			}
			return
		}
		if reflect.DeepEqual(a, b) {
			return
		}
	}
	*out = append(*out, Change{Path: path, A: a, B: b, InA: inA, InB: inB})
}

func sortedUnion(a, b map[string]any) []string {
	keys := slices.Collect(maps.Keys(a))
	for k := range b {
		if _, ok := a[k]; !ok {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	return keys
}

var plainKey = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_-]*$`)

// child is path's field k, quoted when k is not a plain name.
func child(path, k string) string {
	if !plainKey.MatchString(k) {
		return path + "[" + strconv.Quote(k) + "]"
	}
	if path == "" {
		return k
	}
	return path + "." + k
}

// segment matches a quoted key or a list index of a path.
var segment = regexp.MustCompile(`\["(?:[^"\\]|\\.)*"\]|\[[0-9]+\]`)

// Generalise replaces list indices by [*], so that the same field of
// several items or manifests reads as one path.
func Generalise(path string) string {
	return segment.ReplaceAllStringFunc(path, func(s string) string {
		if strings.HasPrefix(s, `["`) {
			return s
		}
		return "[*]"
	})
}

// related says whether p and q name the same field or one holds the other.
func related(p, q string) bool {
	return p == q || within(p, q) || within(q, p)
}

// within says whether p is inside q.
func within(p, q string) bool {
	if q == "" {
		return p != ""
	}
	return len(p) > len(q) && strings.HasPrefix(p, q) && (p[len(q)] == '.' || p[len(q)] == '[')
}

// isEmpty says whether v is a value a typed encoder leaves out (omitempty)
// or writes for a zero struct: null, "", {}, [] or false.
func isEmpty(v any) bool {
	switch v := v.(type) {
	case nil:
		return true
	case string:
		return v == ""
	case bool:
		return !v
	case map[string]any:
		return len(v) == 0
	case []any:
		return len(v) == 0
	}
	return false
}

// withoutAnnotation returns a copy of obj without mvpctl's round-trip
// annotation (and without annotations when that was the only one), and
// whether it had one.
func withoutAnnotation(obj map[string]any) (map[string]any, bool) {
	meta, _ := obj["metadata"].(map[string]any)
	ann, _ := meta["annotations"].(map[string]any)
	if _, ok := ann[AnnotationKey]; !ok {
		return obj, false
	}
	ann = maps.Clone(ann)
	delete(ann, AnnotationKey)
	meta = maps.Clone(meta)
	if len(ann) == 0 {
		delete(meta, "annotations")
	} else {
		meta["annotations"] = ann
	}
	out := maps.Clone(obj)
	out["metadata"] = meta
	return out, true
}

// KeyOrder lists, for every mapping of a YAML document, its keys in order.
func KeyOrder(data []byte) (map[string][]string, error) {
	var doc yamlv3.Node
	if err := yamlv3.Unmarshal(data, &doc); err != nil {
		return nil, err
	}
	out := map[string][]string{}
	var walk func(path string, n *yamlv3.Node)
	walk = func(path string, n *yamlv3.Node) {
		switch n.Kind {
		case yamlv3.DocumentNode:
			for _, c := range n.Content {
				walk(path, c)
			}
		case yamlv3.MappingNode:
			var keys []string
			for i := 0; i+1 < len(n.Content); i += 2 {
				k := n.Content[i].Value
				keys = append(keys, k)
				walk(child(path, k), n.Content[i+1])
			}
			out[path] = keys
		case yamlv3.SequenceNode:
			for i, c := range n.Content {
				walk(path+"["+strconv.Itoa(i)+"]", c)
			}
		}
	}
	walk("", &doc)
	return out, nil
}

// OrderDiffers lists the mappings (by path, sorted) whose keys present on
// both sides come in another order.
func OrderDiffers(a, b map[string][]string) []string {
	var out []string
	for path, ak := range a {
		bk, ok := b[path]
		if !ok {
			continue
		}
		if !slices.Equal(common(ak, bk), common(bk, ak)) {
			out = append(out, path)
		}
	}
	slices.Sort(out)
	return out
}

// common keeps the keys of a that b has too, in a's order.
func common(a, b []string) []string {
	var out []string
	for _, k := range a {
		if slices.Contains(b, k) {
			out = append(out, k)
		}
	}
	return out
}
