package webhook

import (
	"errors"
	"fmt"
	"reflect"
	"slices"
	"sort"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/mvpctl/mvpctl/engine"
	"github.com/mvpctl/mvpctl/rules"
)

// metadataBefore is what the contract compares a converted object's
// metadata with: the names of the fields it had (labels and annotations
// aside) and copies of those that the conversion may touch. Fields no rule
// reaches (engine.Converter.Untouched) are not copied: nothing can change
// them, and copying managedFields for every object of a LIST would cost
// more than converting it.
type metadataBefore struct {
	keys   []string
	copies map[string]any
}

// mayChange are the metadata fields a conversion webhook may change
// (kube-apiserver drops changes of any other).
var mayChange = map[string]bool{"labels": true, "annotations": true}

// snapshotMetadata records obj's metadata before its conversion to desired.
func snapshotMetadata(conv *engine.Converter, obj map[string]any, gvk schema.GroupVersionKind, desired schema.GroupVersion) (metadataBefore, error) {
	var b metadataBefore
	raw, has := obj["metadata"]
	if !has {
		return b, errors.New("the object has no metadata")
	}
	meta, ok := raw.(map[string]any)
	if !ok {
		return b, fmt.Errorf("metadata is %s, want an object", rules.TypeName(raw))
	}
	for k, v := range meta {
		if mayChange[k] {
			continue
		}
		b.keys = append(b.keys, k)
		if !conv.Untouched(gvk, desired, "metadata", k) {
			if b.copies == nil {
				b.copies = map[string]any{}
			}
			b.copies[k] = rules.DeepCopyJSON(v)
		}
	}
	sort.Strings(b.keys)
	return b, nil
}

// checkContract checks a converted object against what kube-apiserver
// accepts from a conversion webhook: the desired apiVersion, the same kind,
// and metadata that differs only in labels and annotations (string maps).
func checkContract(obj map[string]any, gvk schema.GroupVersionKind, desired schema.GroupVersion, before metadataBefore) error {
	if av, _ := obj["apiVersion"].(string); av != desired.String() {
		return fmt.Errorf("apiVersion is %q after the conversion, want %q", av, desired)
	}
	if kind, _ := obj["kind"].(string); kind != gvk.Kind {
		return fmt.Errorf("kind changed from %q to %q: a conversion keeps the kind", gvk.Kind, kind)
	}
	meta, ok := obj["metadata"].(map[string]any)
	if !ok {
		return errors.New("metadata is gone or not an object after the conversion")
	}
	var after []string
	for k := range meta {
		if !mayChange[k] {
			after = append(after, k)
		}
	}
	sort.Strings(after)
	if !slices.Equal(after, before.keys) {
		return fmt.Errorf("metadata fields changed from %v to %v: only labels and annotations may change", before.keys, after)
	}
	for k, v := range before.copies {
		if !reflect.DeepEqual(meta[k], v) {
			return fmt.Errorf("metadata.%s changed: only labels and annotations may change", k)
		}
	}
	for k := range mayChange {
		if err := checkStringMap(meta[k]); err != nil {
			return fmt.Errorf("metadata.%s: %w", k, err)
		}
	}
	return nil
}

// checkStringMap checks labels or annotations: absent, or strings by key.
func checkStringMap(v any) error {
	if v == nil {
		return nil
	}
	m, ok := v.(map[string]any)
	if !ok {
		return fmt.Errorf("is %s, want an object of strings", rules.TypeName(v))
	}
	for k, s := range m {
		if _, ok := s.(string); !ok {
			return fmt.Errorf("%q is %s, want a string", k, rules.TypeName(s))
		}
	}
	return nil
}
