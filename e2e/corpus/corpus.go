// Package corpus gathers realistic manifests of every old API version that
// mvpctl's built-in rules convert, for benchmarks and comparisons that run
// the mvpctl binary: which versions exist comes from the binary under test
// (`mvpctl rules builtin -o json`), the manifests from the hand-written
// inputs of the conversion oracle (testdata/oracle/*/in, the fuzzed ones
// left out). Nothing here is a fixed list, so rules added to rules/builtin
// and inputs added to the oracle are picked up by the next run.
package corpus

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/yaml"
	yamlv3 "sigs.k8s.io/yaml/goyaml.v3"
)

// Rule is one built-in migration rule as `mvpctl rules builtin -o json`
// lists it.
type Rule struct {
	Kind           string `json:"kind"`
	FromAPIVersion string `json:"fromApiVersion"`
	ToAPIVersion   string `json:"toApiVersion"`
	DeprecatedIn   string `json:"deprecatedIn"`
	RemovedIn      string `json:"removedIn"`
	File           string `json:"file"`
}

// OldVersion is a kind on a version that some built-in rule converts from.
type OldVersion struct {
	schema.GroupVersionKind
	// Target is where a chain of built-in rules leads from it: the rule's
	// toVersion, or further when that is itself some rule's fromVersion
	// (flowcontrol v1beta1 → v1beta3 → v1).
	Target schema.GroupVersion
	// DeprecatedIn and RemovedIn are the releases the rule names ("" for
	// none).
	DeprecatedIn, RemovedIn string
	// Manifests are the corpus's objects of this kind and version.
	Manifests []Manifest
}

// Manifest is one object of the corpus.
type Manifest struct {
	// Source is where it comes from, relative to the repository.
	Source string
	// Name is a file name unique within its OldVersion.
	Name string
	// JSON is the object as written in Source.
	JSON []byte
}

// Corpus is every old version of the built-in rules with its manifests.
type Corpus struct {
	Versions []*OldVersion
}

// Options bounds what Load reads.
type Options struct {
	// Mvpctl is the mvpctl binary whose built-in rules decide the versions.
	Mvpctl string
	// Repo is the root of the mvpctl checkout holding testdata/oracle.
	Repo string
	// MaxManifests bounds the corpus; zero means 5,000.
	MaxManifests int
}

// maxFileSize bounds one oracle input.
const maxFileSize = 1 << 20

// Load lists the built-in rules of opts.Mvpctl and reads the oracle's
// hand-written inputs of their old versions, identical ones once.
func Load(ctx context.Context, opts Options) (*Corpus, error) {
	if opts.MaxManifests == 0 {
		opts.MaxManifests = 5000
	}
	rules, err := BuiltinRules(ctx, opts.Mvpctl)
	if err != nil {
		return nil, err
	}
	c, err := versionsOf(rules)
	if err != nil {
		return nil, err
	}
	if err := c.readOracle(filepath.Join(opts.Repo, "testdata", "oracle"), opts); err != nil {
		return nil, err
	}
	return c, nil
}

// BuiltinRules runs `mvpctl rules builtin -o json`.
func BuiltinRules(ctx context.Context, mvpctl string) ([]Rule, error) {
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	var stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, mvpctl, "rules", "builtin", "-o", "json")
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("%s rules builtin -o json: %v: %s", mvpctl, err, strings.TrimSpace(stderr.String()))
	}
	var rules []Rule
	if err := json.Unmarshal(out, &rules); err != nil {
		return nil, fmt.Errorf("%s rules builtin -o json: %w", mvpctl, err)
	}
	if len(rules) == 0 {
		return nil, fmt.Errorf("%s rules builtin -o json lists no rules", mvpctl)
	}
	return rules, nil
}

// versionsOf makes one OldVersion per rule's fromVersion and kind, sorted by
// group, version and kind.
func versionsOf(rules []Rule) (*Corpus, error) {
	next := map[schema.GroupVersionKind]schema.GroupVersion{}
	for _, r := range rules {
		from, err := schema.ParseGroupVersion(r.FromAPIVersion)
		if err != nil {
			return nil, err
		}
		to, err := schema.ParseGroupVersion(r.ToAPIVersion)
		if err != nil {
			return nil, err
		}
		next[from.WithKind(r.Kind)] = to
	}
	c := &Corpus{}
	for _, r := range rules {
		from, _ := schema.ParseGroupVersion(r.FromAPIVersion) // parsed above
		gvk := from.WithKind(r.Kind)
		if c.Version(gvk) != nil {
			continue
		}
		target := next[gvk]
		for range len(rules) { // bounded: follow the chain to its end
			n, ok := next[target.WithKind(r.Kind)]
			if !ok {
				break
			}
			target = n
		}
		c.Versions = append(c.Versions, &OldVersion{GroupVersionKind: gvk, Target: target,
			DeprecatedIn: r.DeprecatedIn, RemovedIn: r.RemovedIn})
	}
	slices.SortFunc(c.Versions, func(a, b *OldVersion) int {
		return strings.Compare(a.Group+"/"+a.Version+"/"+a.Kind, b.Group+"/"+b.Version+"/"+b.Kind)
	})
	return c, nil
}

// Version returns the OldVersion of gvk, nil if no rule converts from it.
func (c *Corpus) Version(gvk schema.GroupVersionKind) *OldVersion {
	for _, v := range c.Versions {
		if v.GroupVersionKind == gvk {
			return v
		}
	}
	return nil
}

// Count is the number of manifests.
func (c *Corpus) Count() int {
	n := 0
	for _, v := range c.Versions {
		n += len(v.Manifests)
	}
	return n
}

// readOracle adds every input file under an `in` directory of the oracle
// tree whose object is on an old version, except the fuzzed round-trip
// fixtures: they are valid objects but no one's manifests.
func (c *Corpus) readOracle(root string, opts Options) error {
	seen := map[string]bool{}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || filepath.Base(filepath.Dir(p)) != "in" {
			return err
		}
		name := d.Name()
		ext := filepath.Ext(name)
		if strings.HasPrefix(name, "fuzzed.") || (ext != ".json" && ext != ".yaml" && ext != ".yml") {
			return nil
		}
		js, gvk, err := readObject(p)
		if err != nil {
			return err
		}
		v := c.Version(gvk)
		if v == nil {
			return nil
		}
		var canon bytes.Buffer
		if err := json.Compact(&canon, js); err != nil {
			return fmt.Errorf("%s: %w", p, err)
		}
		if seen[canon.String()] {
			return nil
		}
		seen[canon.String()] = true
		if c.Count() >= opts.MaxManifests {
			return fmt.Errorf("more than %d manifests under %s", opts.MaxManifests, root)
		}
		rel, _ := filepath.Rel(opts.Repo, p)
		pair := filepath.Base(filepath.Dir(filepath.Dir(p)))
		v.Manifests = append(v.Manifests, Manifest{Source: filepath.ToSlash(rel),
			Name: pair + "--" + strings.TrimSuffix(name, ext) + ".yaml", JSON: js})
		return nil
	})
	if errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("no oracle inputs: %w", err)
	}
	return err
}

// readObject reads one object (JSON or YAML) and its apiVersion and kind.
func readObject(p string) ([]byte, schema.GroupVersionKind, error) {
	info, err := os.Stat(p)
	if err != nil {
		return nil, schema.GroupVersionKind{}, err
	}
	if info.Size() > maxFileSize {
		return nil, schema.GroupVersionKind{}, fmt.Errorf("%s: larger than %d bytes", p, maxFileSize)
	}
	data, err := os.ReadFile(p)
	if err != nil {
		return nil, schema.GroupVersionKind{}, err
	}
	js, err := yaml.YAMLToJSON(data)
	if err != nil {
		return nil, schema.GroupVersionKind{}, fmt.Errorf("%s: %w", p, err)
	}
	if !json.Valid(data) {
		data = js // key order is kept only for JSON inputs
	}
	var tm struct{ APIVersion, Kind string }
	if err := json.Unmarshal(js, &tm); err != nil {
		return nil, schema.GroupVersionKind{}, fmt.Errorf("%s: %w", p, err)
	}
	gv, err := schema.ParseGroupVersion(tm.APIVersion)
	if err != nil {
		return nil, schema.GroupVersionKind{}, fmt.Errorf("%s: %w", p, err)
	}
	return data, gv.WithKind(tm.Kind), nil
}

// Dir is the directory of an old version's manifests inside a corpus
// directory: GROUP_VERSION_KIND (core for the core group).
func (v *OldVersion) Dir() string {
	g := v.Group
	if g == "" {
		g = "core"
	}
	return g + "_" + v.Version + "_" + v.Kind
}

// Write writes every manifest as block YAML into dir/<Dir>/<Name>, keys in
// the order of the source, and returns the files in corpus order.
func (c *Corpus) Write(dir string) ([]string, error) {
	var files []string
	for _, v := range c.Versions {
		sub := filepath.Join(dir, v.Dir())
		if err := os.MkdirAll(sub, 0o755); err != nil {
			return nil, err
		}
		for _, m := range v.Manifests {
			y, err := BlockYAML(m.JSON)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", m.Source, err)
			}
			p := filepath.Join(sub, m.Name)
			if err := os.WriteFile(p, y, 0o644); err != nil {
				return nil, err
			}
			files = append(files, p)
		}
	}
	return files, nil
}

// BlockYAML re-writes a JSON (or flow YAML) document as block YAML, as
// manifests are written by hand, keeping the order of keys. Strings are
// plain unless YAML 1.1, which kubectl and mvpctl read, would take them for
// something else (yes, on, 0755): yaml.v3 quotes only for YAML 1.2.
func BlockYAML(data []byte) ([]byte, error) {
	var doc yamlv3.Node
	if err := yamlv3.Unmarshal(data, &doc); err != nil {
		return nil, err
	}
	var plain func(n *yamlv3.Node)
	plain = func(n *yamlv3.Node) {
		n.Style = 0 // quoted only where a plain scalar would read as another type
		if n.Kind == yamlv3.ScalarNode && n.Tag == "!!str" && !readsAsString(n.Value) {
			n.Style = yamlv3.DoubleQuotedStyle
		}
		for _, c := range n.Content {
			plain(c)
		}
	}
	plain(&doc)
	var out bytes.Buffer
	enc := yamlv3.NewEncoder(&out)
	enc.SetIndent(2)
	if err := enc.Encode(&doc); err != nil {
		return nil, err
	}
	if err := enc.Close(); err != nil {
		return nil, err
	}
	return out.Bytes(), nil
}

// readsAsString says whether s, written as a plain scalar, reads back as the
// string s through sigs.k8s.io/yaml.
func readsAsString(s string) bool {
	js, err := yaml.YAMLToJSON([]byte("v: " + s))
	if err != nil {
		return false
	}
	var v map[string]any
	if err := json.Unmarshal(js, &v); err != nil {
		return false
	}
	got, ok := v["v"].(string)
	return ok && got == s
}
