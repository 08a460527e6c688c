package helmrelease

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"

	"sigs.k8s.io/yaml"

	"github.com/mvpctl/mvpctl/engine"
	"github.com/mvpctl/mvpctl/manifest"
	"github.com/mvpctl/mvpctl/rules"
)

// Description is what helm history shows for a revision written by a
// repair, as helm-mapkubeapis writes it: rolling back to an earlier
// revision brings the removed API versions back.
const Description = "Kubernetes deprecated API upgrade - DO NOT rollback from this version"

// ConvertOptions say how to convert a release's objects.
type ConvertOptions struct {
	// Plan says what each object converts to (its Release is the
	// Kubernetes release to upgrade for).
	Plan engine.Plan
	// Converter runs the rules (the built-in ones and the user's).
	Converter *engine.Converter
	// RemoveUnconvertible drops the objects that cannot be converted (no
	// replacement, as PodSecurityPolicy, or no rule) from the manifest
	// instead of failing on them: Helm then no longer manages them.
	RemoveUnconvertible bool
}

// Change is what a repair does with one object of a release.
type Change struct {
	// Source is the chart template (Helm's "# Source:" comment) or, for a
	// hook, its path; else "manifest:LINE".
	Source string `json:"source"`
	Kind   string `json:"kind"`
	// Namespace and Name are the object's, as written in the manifest.
	Namespace string `json:"namespace,omitempty"`
	Name      string `json:"name"`
	From      string `json:"from"`
	// To is the apiVersion it converts to; empty when it fails or is
	// removed.
	To string `json:"to,omitempty"`
	// Removed says the object is dropped from the manifest
	// (RemoveUnconvertible).
	Removed bool `json:"removed,omitempty"`
	// Err is why it failed; nil when converted or removed.
	Err error `json:"-"`
	// Unconvertible says Err is an object with no replacement or no rule,
	// which RemoveUnconvertible would remove.
	Unconvertible bool `json:"unconvertible,omitempty"`
}

// Conversion is a release's manifest and hooks with their objects
// converted.
type Conversion struct {
	Manifest string
	// Hooks are the hooks' manifests, in order.
	Hooks   []string
	Changes []Change
}

// Failed counts the changes that failed.
func (c *Conversion) Failed() int {
	n := 0
	for _, ch := range c.Changes {
		if ch.Err != nil {
			n++
		}
	}
	return n
}

// Convert converts the objects of a release's manifest and hooks that the
// plan says must change, leaving every other document byte for byte. An
// object that fails is left as it was and recorded with its error.
func Convert(ctx context.Context, r *Record, opts ConvertOptions) (*Conversion, error) {
	c := &Conversion{}
	var err error
	if c.Manifest, err = convertText(ctx, r.Manifest(), "", opts, &c.Changes); err != nil {
		return nil, err
	}
	for i, m := range r.HookManifests() {
		h, err := convertText(ctx, m, r.HookPath(i), opts, &c.Changes)
		if err != nil {
			return nil, err
		}
		c.Hooks = append(c.Hooks, h)
	}
	return c, nil
}

// Changed says whether the conversion changed anything of r.
func (c *Conversion) Changed(r *Record) bool {
	if c.Manifest != r.Manifest() {
		return true
	}
	for i, m := range r.HookManifests() {
		if c.Hooks[i] != m {
			return true
		}
	}
	return false
}

// Apply returns a copy of r with the converted manifest and hooks.
func (c *Conversion) Apply(r *Record) *Record {
	out := r.Clone()
	out.SetManifest(c.Manifest)
	for i, m := range r.HookManifests() {
		if c.Hooks[i] != m {
			out.SetHookManifest(i, c.Hooks[i])
		}
	}
	return out
}

const sourcePrefix = "# Source: "

// convertText converts the documents of a manifest. path names a hook's
// template (its manifest has no "# Source:" line).
func convertText(ctx context.Context, text, path string, opts ConvertOptions, changes *[]Change) (string, error) {
	docs, err := manifest.Split([]byte(text))
	if err != nil {
		return "", err
	}
	var b bytes.Buffer
	for _, d := range docs {
		source := path
		if s, ok := sourceOf(d.Head()); ok {
			source = s
		}
		if source == "" {
			source = fmt.Sprintf("manifest:%d", d.Line)
		}
		objs, err := engine.DecodeDocument(d.Text)
		if err != nil {
			// Helm applied it, so it decoded then; say where it does not now.
			return "", fmt.Errorf("%s: %w", source, err)
		}
		out, removed, changed := convertDoc(ctx, objs, source, opts, changes)
		switch {
		case removed:
			continue
		case !changed:
			b.Write(d.Separator)
			b.Write(d.Text)
			continue
		}
		b.Write(d.Separator)
		b.Write(d.Head())
		for i, o := range out {
			if i > 0 {
				b.WriteString("---\n")
			}
			y, err := toYAML(o)
			if err != nil {
				return "", fmt.Errorf("%s: %w", source, err)
			}
			b.Write(y)
		}
		if len(d.Text) > 0 && !bytes.HasSuffix(d.Text, []byte("\n")) {
			// Helm joins documents with "\n---\n"; keep the document's end.
			b.Truncate(b.Len() - 1)
		}
	}
	return b.String(), nil
}

// convertDoc converts a document's objects: removed says all of them were
// dropped, changed that some changed.
func convertDoc(ctx context.Context, objs []map[string]any, source string, opts ConvertOptions, changes *[]Change) (out []map[string]any, removed, changed bool) {
	for _, obj := range objs {
		orig := rules.DeepCopyJSON(obj).(map[string]any)
		ch := Change{Source: source, From: str(obj["apiVersion"]), Kind: str(obj["kind"])}
		ch.Namespace, ch.Name = namespaceName(obj)
		conv, err := opts.Plan.Convert(ctx, opts.Converter, obj)
		switch {
		case err != nil:
			ch.Err = err
			ch.Unconvertible = errors.As(err, new(*engine.NoReplacementError)) || errors.As(err, new(*engine.UnconvertedError))
			if ch.Unconvertible && opts.RemoveUnconvertible {
				ch.Err, ch.Removed = nil, true
				changed = true
				*changes = append(*changes, ch)
				continue
			}
			out = append(out, orig)
			*changes = append(*changes, ch)
			continue
		case reflect.DeepEqual(conv, orig):
			out = append(out, orig)
			continue
		}
		engine.StripConversionData(conv) // a one-way upgrade, as convert --kubernetes-version
		ch.To = str(conv["apiVersion"])
		*changes = append(*changes, ch)
		out = append(out, conv)
		changed = true
	}
	return out, len(out) == 0 && len(objs) > 0, changed
}

func sourceOf(head []byte) (string, bool) {
	for _, line := range strings.Split(string(head), "\n") {
		if s, ok := strings.CutPrefix(strings.TrimSpace(line), sourcePrefix); ok {
			return s, true
		}
	}
	return "", false
}

func toYAML(obj map[string]any) ([]byte, error) {
	js, err := json.Marshal(obj)
	if err != nil {
		return nil, err
	}
	return yaml.JSONToYAML(js)
}

func str(v any) string { s, _ := v.(string); return s }

func namespaceName(obj map[string]any) (string, string) {
	m, _ := obj["metadata"].(map[string]any)
	return str(m["namespace"]), str(m["name"])
}
