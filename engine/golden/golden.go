// Package golden runs conversion test cases stored as txtar archives: rules,
// input objects and the expected outputs of both directions. `mvpctl test`
// and the project's own tests use it.
//
// # Case format
//
//	# What the case is about (the archive comment).
//	-- rules.yaml --          one or more rules files: every section named rules*.yaml
//	-- in.yaml --             objects in the old version(s) (YAML or JSON, several documents)
//	-- target --              optional: group/version to convert in.yaml to
//	-- new.yaml --            optional: objects in the new version
//	-- reverse-target --      optional: group/version to convert new.yaml to
//	-- out/forward.json --    expected: in.yaml converted to target
//	-- out/reverse.json --    expected: new.yaml converted to reverse-target
//	-- out/errors --          expected: rule errors or conversion errors, if any
//
// Without target, a case with one migration rule converts to its toVersion
// (and back to its fromVersion). Every case also checks the round trips:
// reverse(forward(in)) == in and forward(reverse(new)) == new, and that the
// native executor and the jq programs give identical results.
package golden

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"
	"golang.org/x/tools/txtar"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/mvpctl/mvpctl/engine"
	"github.com/mvpctl/mvpctl/manifest"
	"github.com/mvpctl/mvpctl/rules"
)

// Result is the outcome of one case.
type Result struct {
	Name string
	// Failures lists what did not match, each with a diff.
	Failures []string
	// Updated is true when -update rewrote the case.
	Updated bool
}

// OK reports whether the case passed.
func (r *Result) OK() bool { return len(r.Failures) == 0 }

// Files lists the *.txtar cases under dir, in lexical order, hidden
// entries left out (manifest.Walk, as every command reads directories).
func Files(dir string) ([]string, error) {
	var files []string
	_, err := manifest.Walk(dir, manifest.WalkOptions{Recursive: true, Match: isCase, What: "*.txtar cases"}, func(p string, err error) error {
		if err == nil {
			files = append(files, p)
		}
		return err
	})
	if errors.As(err, new(*manifest.NoFilesError)) {
		return nil, nil
	}
	return files, err
}

func isCase(name string) bool { return strings.HasSuffix(name, ".txtar") }

// RunFile runs one case; with update, mismatching out/ sections are
// rewritten in place (round-trip and executor checks still fail).
func RunFile(ctx context.Context, file string, update bool) (*Result, error) {
	ar, err := txtar.ParseFile(file)
	if err != nil {
		return nil, err
	}
	if err := checkCase(ar); err != nil {
		return nil, err
	}
	res := &Result{Name: strings.TrimSuffix(filepath.Base(file), ".txtar")}
	got, checks := Run(ctx, ar)
	res.Failures = append(res.Failures, checks...)
	want := map[string]string{}
	for _, f := range ar.Files {
		if strings.HasPrefix(f.Name, "out/") {
			want[f.Name] = string(f.Data)
		}
	}
	// The sections either side has, each once, in order.
	names := slices.AppendSeq(slices.Collect(maps.Keys(got)), maps.Keys(want))
	slices.Sort(names)
	names = slices.Compact(names)
	changed := false
	for _, name := range names {
		g, w := got[name], want[name]
		if g == w {
			continue
		}
		if update {
			setSection(ar, name, g)
			changed = true
			continue
		}
		res.Failures = append(res.Failures, fmt.Sprintf("%s (-want +got):\n%s", name, cmp.Diff(w, g)))
	}
	if changed {
		if err := os.WriteFile(file, txtar.Format(ar), 0o666); err != nil {
			return nil, err
		}
		res.Updated = true
	}
	return res, nil
}

// checkCase rejects a file that is not a case (any file parses as a txtar
// archive): it would fail with a diff, or be rewritten by update.
func checkCase(ar *txtar.Archive) error {
	if bytes.IndexByte(ar.Comment, 0) >= 0 || !utf8.Valid(ar.Comment) {
		return errors.New("not a conversion case: binary data, not a txtar archive")
	}
	for _, f := range ar.Files {
		if strings.HasPrefix(f.Name, "rules") && strings.HasSuffix(f.Name, ".yaml") {
			return nil
		}
	}
	return errors.New("not a conversion case: no -- rules.yaml -- section")
}

func setSection(ar *txtar.Archive, name, data string) {
	for i := range ar.Files {
		if ar.Files[i].Name == name {
			if data == "" {
				ar.Files = append(ar.Files[:i], ar.Files[i+1:]...)
			} else {
				ar.Files[i].Data = []byte(data)
			}
			return
		}
	}
	if data != "" {
		ar.Files = append(ar.Files, txtar.File{Name: name, Data: []byte(data)})
	}
}

func section(ar *txtar.Archive, name string) ([]byte, bool) {
	for _, f := range ar.Files {
		if f.Name == name {
			return f.Data, true
		}
	}
	return nil, false
}

// Run computes a case's out/ sections and the failures of its built-in
// checks (round trips, executor agreement).
func Run(ctx context.Context, ar *txtar.Archive) (outputs map[string]string, failures []string) {
	outputs = map[string]string{}
	var errLines []string
	defer func() {
		if len(errLines) > 0 {
			outputs["out/errors"] = strings.Join(errLines, "\n") + "\n"
		}
	}()
	convs, compiled, err := loadRules(ar)
	if err != nil {
		errLines = append(errLines, rules.FormatError(err))
		return outputs, nil
	}
	fwdTarget, revTarget, err := targets(ar, compiled)
	if err != nil {
		return outputs, []string{err.Error()}
	}
	for _, dir := range []struct {
		in, out string
		to      *schema.GroupVersion
		name    string
	}{{"in.yaml", "out/forward.json", fwdTarget, "forward"}, {"new.yaml", "out/reverse.json", revTarget, "reverse"}} {
		data, ok := section(ar, dir.in)
		if !ok {
			continue
		}
		if dir.to == nil {
			failures = append(failures, fmt.Sprintf("%s: no target version: add a %q section", dir.in, map[string]string{"in.yaml": "target", "new.yaml": "reverse-target"}[dir.in]))
			continue
		}
		docs, err := engine.ReadDocuments(dir.in, bytes.NewReader(data))
		if err != nil {
			errLines = append(errLines, err.Error())
			continue
		}
		var outs []string
		for _, d := range docs {
			orig := rules.DeepCopyJSON(d.Object).(map[string]any)
			got, err := convertBoth(ctx, convs, d.Object, *dir.to)
			if err != nil {
				errLines = append(errLines, fmt.Sprintf("%s: %v", d.Source, err))
				continue
			}
			outs = append(outs, encode(got))
			// The round trip back to where the object came from.
			from, err := sourceVersion(orig)
			if err != nil {
				failures = append(failures, fmt.Sprintf("%s: %v", d.Source, err))
				continue
			}
			back, err := convertBoth(ctx, convs, rules.DeepCopyJSON(got).(map[string]any), from)
			if err != nil {
				failures = append(failures, fmt.Sprintf("%s: round trip back to %s: %v", d.Source, from, err))
				continue
			}
			if diff := cmp.Diff(encode(orig), encode(back)); diff != "" {
				failures = append(failures, fmt.Sprintf("%s: round trip %s then back to %s changed the object (-in +round trip):\n%s", d.Source, dir.name, from, diff))
			}
		}
		if len(outs) > 0 {
			outputs[dir.out] = strings.Join(outs, "")
		}
	}
	return outputs, failures
}

// convertBoth converts with the native executor and with the jq programs and
// requires the same result.
func convertBoth(ctx context.Context, convs [2]*engine.Converter, obj map[string]any, to schema.GroupVersion) (map[string]any, error) {
	jqIn := rules.DeepCopyJSON(obj).(map[string]any)
	native, nerr := convs[0].Convert(ctx, obj, to)
	viaJQ, jerr := convs[1].Convert(ctx, jqIn, to)
	switch {
	case nerr != nil && jerr != nil:
		if nerr.Error() != jerr.Error() {
			return nil, fmt.Errorf("executors disagree on the error:\n  native: %v\n  jq:     %v", nerr, jerr)
		}
		return nil, nerr
	case nerr != nil:
		return nil, fmt.Errorf("only the native executor failed: %v", nerr)
	case jerr != nil:
		return nil, fmt.Errorf("only the jq program failed: %v", jerr)
	}
	if a, b := encode(native), encode(viaJQ); a != b {
		return nil, fmt.Errorf("executors disagree (-native +jq):\n%s", cmp.Diff(a, b))
	}
	return native, nil
}

func loadRules(ar *txtar.Archive) ([2]*engine.Converter, []*rules.Compiled, error) {
	var convs [2]*engine.Converter
	var sources []rules.Source
	for _, f := range ar.Files {
		if strings.HasPrefix(f.Name, "rules") && strings.HasSuffix(f.Name, ".yaml") {
			sources = append(sources, rules.Source{Name: f.Name, Data: f.Data})
		}
	}
	if len(sources) == 0 {
		return convs, nil, fmt.Errorf("no rules*.yaml section")
	}
	set, err := rules.ParseAll(sources...)
	if err != nil {
		return convs, nil, err
	}
	compiled, err := rules.Compile(set, rules.CompileOptions{})
	if err != nil {
		return convs, nil, err
	}
	convs[0] = engine.NewConverter(compiled, engine.Options{Executor: engine.Native})
	convs[1] = engine.NewConverter(compiled, engine.Options{Executor: engine.JQ})
	return convs, compiled, nil
}

func targets(ar *txtar.Archive, compiled []*rules.Compiled) (fwd, rev *schema.GroupVersion, err error) {
	parse := func(name string) (*schema.GroupVersion, error) {
		data, ok := section(ar, name)
		if !ok {
			return nil, nil
		}
		gv, err := schema.ParseGroupVersion(strings.TrimSpace(string(data)))
		if err != nil {
			return nil, fmt.Errorf("%s: %v", name, err)
		}
		return &gv, nil
	}
	if fwd, err = parse("target"); err != nil {
		return nil, nil, err
	}
	if rev, err = parse("reverse-target"); err != nil {
		return nil, nil, err
	}
	if len(compiled) == 1 {
		if fwd == nil {
			fwd = &compiled[0].Forward.To
		}
		if rev == nil {
			rev = &compiled[0].Forward.From
		}
	}
	return fwd, rev, nil
}

// sourceVersion is where an object (or a list's or event's items) came from.
func sourceVersion(obj map[string]any) (schema.GroupVersion, error) {
	if inner, ok := obj["object"].(map[string]any); ok && len(obj) == 2 {
		obj = inner
	}
	if items, ok := obj["items"].([]any); ok && len(items) > 0 {
		if first, ok := items[0].(map[string]any); ok {
			obj = first
		}
	}
	av, _ := obj["apiVersion"].(string)
	return schema.ParseGroupVersion(av)
}

// encode renders an object as the golden files hold it: indented JSON with
// sorted keys and exact numbers.
func encode(v any) string {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		return fmt.Sprintf("<unencodable: %v>\n", err)
	}
	return buf.String()
}
