package rules

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math/big"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"sync"

	yaml "go.yaml.in/yaml/v3"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// Document is one decoded TransformationRules document with the source
// positions of its fields.
type Document struct {
	// Rules is the decoded document.
	Rules *TransformationRules
	// File is the name the document was read from.
	File string
	// Index is the position of the document within a multi-document file.
	Index int

	source []string       // the file's lines
	values map[string]pos // field path → position of its value
	keys   map[string]pos // field path → position of its key
	styles map[string]yaml.Style
}

type pos struct{ line, col int }

// RuleSet is every rules document loaded together: a multi-document file or
// a directory of rule files act as one set.
type RuleSet struct {
	Documents []*Document
}

// MigrationRules lists every migration rule of the set with its field path
// and document, in load order.
func (rs *RuleSet) MigrationRules() []RuleRef {
	var refs []RuleRef
	for _, d := range rs.Documents {
		for i := range d.Rules.Spec.APIMigrationRules {
			refs = append(refs, RuleRef{Rule: &d.Rules.Spec.APIMigrationRules[i], Doc: d, Field: field.NewPath("spec", "apiMigrationRules").Index(i)})
		}
	}
	return refs
}

// RoutingRules lists every routing rule of the set, in load order.
func (rs *RuleSet) RoutingRules() []RoutingRule {
	var out []RoutingRule
	for _, d := range rs.Documents {
		out = append(out, d.Rules.Spec.APIRoutingRules...)
	}
	return out
}

// RuleRef points at one migration rule within its document.
type RuleRef struct {
	Rule  *MigrationRule
	Doc   *Document
	Field *field.Path
}

// Pos returns the best known position of a field path: the field's value if
// it is present, otherwise its nearest present ancestor.
func (d *Document) Pos(fld string) Pos {
	for p := fld; ; {
		if v, ok := d.values[p]; ok {
			return Pos{File: d.File, Line: v.line, Col: v.col}
		}
		i := strings.LastIndexAny(p, ".[")
		if i <= 0 {
			return Pos{File: d.File, Line: 1, Col: 1}
		}
		p = p[:i]
	}
}

// KeyPos returns the position of a field's key, or of the value when the
// key is unknown.
func (d *Document) KeyPos(fld string) Pos {
	if k, ok := d.keys[fld]; ok {
		return Pos{File: d.File, Line: k.line, Col: k.col}
	}
	return d.Pos(fld)
}

// errorAt turns a field error into a positioned error.
func (d *Document) errorAt(p Pos, fe *field.Error) *Error {
	e := &Error{Pos: p, Field: fe}
	if p.Line >= 1 && p.Line <= len(d.source) {
		e.SourceLine = d.source[p.Line-1]
	}
	return e
}

// wrap positions a field error at the field's value.
func (d *Document) wrap(fe *field.Error) *Error { return d.errorAt(d.Pos(fe.Field), fe) }

// scalarPos positions a byte offset inside the scalar value of a field, for
// errors within a path or a jq expression.
func (d *Document) scalarPos(fld string, text string, offset int) Pos {
	p := d.Pos(fld)
	v, ok := d.values[fld]
	if !ok {
		return p
	}
	// An error at the end (unexpected EOF) belongs after the last character,
	// not on the line after a block scalar's final newline.
	if trimmed := strings.TrimRight(text, "\n"); offset > len(trimmed) {
		offset = len(trimmed)
	}
	before := text[:offset]
	nl := strings.Count(before, "\n")
	lastLine := before[strings.LastIndexByte(before, '\n')+1:]
	switch d.styles[fld] {
	case yaml.LiteralStyle, yaml.FoldedStyle:
		// Content starts on the line after the indicator, indented.
		line := v.line + 1 + nl
		if line > len(d.source) {
			return p
		}
		src := d.source[line-1]
		indent := len(src) - len(strings.TrimLeft(src, " \t"))
		return Pos{File: d.File, Line: line, Col: indent + 1 + len(lastLine)}
	case yaml.DoubleQuotedStyle, yaml.SingleQuotedStyle:
		if nl == 0 {
			return Pos{File: d.File, Line: v.line, Col: v.col + 1 + offset}
		}
	default:
		if nl == 0 {
			return Pos{File: d.File, Line: v.line, Col: v.col + offset}
		}
	}
	return p
}

// Load reads rules files and directories (every *.yaml, *.yml and *.json
// file in them, sorted by name) into one rule set. Decoding problems of all
// files are reported together as an [ErrorList]; an unreadable file is an
// ordinary error.
func Load(paths ...string) (*RuleSet, error) {
	sources, err := ReadSources(os.Stdin, paths...)
	if err != nil {
		return nil, err
	}
	return ParseAll(sources...)
}

// ReadSources reads rules files and directories (see [DataFiles]); "-" is
// stdin, named <stdin>.
func ReadSources(stdin io.Reader, paths ...string) ([]Source, error) {
	var files []string
	for _, p := range paths {
		if p == "-" {
			files = append(files, p)
			continue
		}
		info, err := os.Stat(p)
		if err != nil {
			return nil, err
		}
		if !info.IsDir() {
			files = append(files, p)
			continue
		}
		found, err := DataFiles(p)
		if err != nil {
			return nil, err
		}
		if len(found) == 0 {
			return nil, fmt.Errorf("%s: no *.yaml, *.yml or *.json files", p)
		}
		files = append(files, found...)
	}
	var sources []Source
	for _, f := range files {
		var data []byte
		var err error
		if f == "-" {
			data, err = io.ReadAll(stdin)
			f = "<stdin>"
		} else {
			data, err = os.ReadFile(f)
		}
		if err != nil {
			return nil, err
		}
		sources = append(sources, Source{Name: f, Data: data})
	}
	return sources, nil
}

// DataFiles lists the *.yaml, *.yml and *.json files under dir, sorted.
// Hidden entries are skipped: a ConfigMap volume holds every file twice,
// once in a ..<timestamp> directory behind the symlinks.
func DataFiles(dir string) ([]string, error) {
	var found []string
	err := walkData(dir, func(path string, isDir bool) {
		if !isDir && isRulesFileName(path) {
			found = append(found, path)
		}
	})
	sort.Strings(found)
	return found, err
}

// DataDirs lists dir and the directories below it that [DataFiles] looks
// in, sorted: what a watcher of dir's rules files watches.
func DataDirs(dir string) ([]string, error) {
	var found []string
	err := walkData(dir, func(path string, isDir bool) {
		if isDir {
			found = append(found, path)
		}
	})
	sort.Strings(found)
	return found, err
}

// walkData visits dir and every entry below it that is not hidden.
func walkData(dir string, visit func(path string, isDir bool)) error {
	return filepath.WalkDir(dir, func(path string, de fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if path != dir && strings.HasPrefix(de.Name(), ".") {
			if de.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		visit(path, de.IsDir())
		return nil
	})
}

// Source is the content of one rules file.
type Source struct {
	Name string
	Data []byte
}

// ParseAll decodes and validates several rules files as one rule set,
// reporting the problems of all of them together as an [ErrorList].
func ParseAll(sources ...Source) (*RuleSet, error) {
	return ParseOptions{}.ParseAll(sources...)
}

// ParseOptions tune [ParseOptions.ParseAll]; the zero value checks everything.
type ParseOptions struct {
	// SkipJQCompile leaves the jq expressions (a jq step's forward and
	// reverse, a when condition) to compile on their first use instead of
	// compiling each to check it: only for sources whose every expression a
	// test has compiled, such as the embedded built-in library, where
	// checking them all costs more than a one-manifest conversion.
	SkipJQCompile bool
}

// ParseAll is [ParseAll] with these options.
func (o ParseOptions) ParseAll(sources ...Source) (*RuleSet, error) {
	rs := &RuleSet{}
	var errs ErrorList
	for _, src := range sources {
		set, err := Parse(src.Name, src.Data)
		var el ErrorList
		if errors.As(err, &el) {
			errs = append(errs, el...)
		} else if err != nil {
			return nil, err
		}
		if set != nil {
			rs.Documents = append(rs.Documents, set.Documents...)
		}
	}
	if len(rs.Documents) == 0 && len(errs) == 0 {
		names := make([]string, len(sources))
		for i, s := range sources {
			names[i] = s.Name
		}
		return nil, fmt.Errorf("%s: no TransformationRules documents", strings.Join(names, ", "))
	}
	errs = MergeErrors(errs, rs.validate(!o.SkipJQCompile))
	if len(errs) > 0 {
		return nil, errs
	}
	return rs, nil
}

// MergeErrors adds validation errors to decoding errors, leaving out those
// about a field whose decoding already failed (validation sees the zero
// value there, and would only repeat the problem), and sorts the result.
func MergeErrors(decoding, validation ErrorList) ErrorList {
	out := append(ErrorList(nil), decoding...)
	for _, v := range validation {
		dup := false
		for _, d := range decoding {
			if d.Pos.File == v.Pos.File && (v.Field.Field == d.Field.Field || strings.HasPrefix(v.Field.Field, d.Field.Field+".") || strings.HasPrefix(v.Field.Field, d.Field.Field+"[")) {
				dup = true
				break
			}
		}
		if !dup {
			out = append(out, v)
		}
	}
	out.Sort()
	return out
}

func isRulesFileName(p string) bool {
	switch strings.ToLower(filepath.Ext(p)) {
	case ".yaml", ".yml", ".json":
		return true
	}
	return false
}

// Parse decodes every YAML or JSON document in data strictly: unknown,
// misspelled or duplicated fields and values of the wrong type are errors
// that carry the file position and field path. It does not validate; see
// [RuleSet.Validate] (which [Load] runs). With decoding errors it still
// returns what it decoded, so that validation can report more problems.
func Parse(file string, data []byte) (*RuleSet, error) {
	lines := strings.Split(strings.ReplaceAll(string(data), "\r\n", "\n"), "\n")
	dec := yaml.NewDecoder(bytes.NewReader(data))
	rs := &RuleSet{}
	var errs ErrorList
	for i := 0; ; i++ {
		var n yaml.Node
		err := dec.Decode(&n)
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, syntaxError(file, lines, err)
		}
		root := &n
		if root.Kind == yaml.DocumentNode {
			if len(root.Content) == 0 {
				continue
			}
			root = root.Content[0]
		}
		if root.Kind == yaml.ScalarNode && root.Tag == "!!null" {
			continue // an empty document, e.g. after a trailing ---
		}
		d := &Document{File: file, Index: i, source: lines, values: map[string]pos{}, keys: map[string]pos{}, styles: map[string]yaml.Style{}}
		d.Rules = &TransformationRules{}
		dc := &decoder{doc: d, budget: maxNodes, aliasBudget: maxAliasNodes, expanding: map[*yaml.Node]bool{}}
		dc.decode(root, reflect.ValueOf(d.Rules).Elem(), nil, "")
		errs = append(errs, dc.errs...)
		rs.Documents = append(rs.Documents, d)
	}
	if len(errs) > 0 {
		errs.Sort()
		return rs, errs
	}
	return rs, nil
}

// syntaxError positions a YAML syntax error; yaml.v3 reports "yaml: line N: msg".
func syntaxError(file string, lines []string, err error) error {
	msg := err.Error()
	line := 0
	if rest, ok := strings.CutPrefix(msg, "yaml: line "); ok {
		if i := strings.IndexByte(rest, ':'); i > 0 {
			if n, convErr := strconv.Atoi(rest[:i]); convErr == nil {
				line, msg = n, strings.TrimSpace(rest[i+1:])
			}
		}
	} else {
		msg = strings.TrimPrefix(msg, "yaml: ")
	}
	e := &Error{Pos: Pos{File: file, Line: line}, Field: &field.Error{Type: field.ErrorTypeInvalid, Field: "<document>", BadValue: field.OmitValueType{}, Detail: "YAML syntax error: " + msg, Origin: OriginYAMLSyntax}}
	if line >= 1 && line <= len(lines) {
		e.SourceLine = lines[line-1]
		e.Pos.Col = 1
	}
	return ErrorList{e}
}

// maxNodes bounds the YAML nodes of one document, and maxAliasNodes the
// nodes reached through aliases, so that an alias bomb is an error rather
// than a hang.
const (
	maxNodes      = 1 << 20
	maxAliasNodes = 10000
)

type decoder struct {
	doc  *Document
	errs ErrorList
	// budget counts down the nodes still allowed; expanding holds the
	// anchors being expanded, to reject recursive aliases.
	budget    int
	expanding map[*yaml.Node]bool
	exhausted bool
	// aliasBudget counts down the nodes allowed inside alias expansions.
	aliasBudget int
}

// enter resolves an alias and charges the node to the budget; ok is false
// (after recording an error) for a recursive alias or an exhausted budget.
// leave must be called when ok.
func (dc *decoder) enter(n *yaml.Node, fld *field.Path) (resolved *yaml.Node, leave func(), ok bool) {
	dc.budget--
	if len(dc.expanding) > 0 {
		dc.aliasBudget--
	}
	if dc.budget < 0 || dc.aliasBudget < 0 {
		if !dc.exhausted {
			dc.exhausted = true
			dc.fail(n, field.Invalid(fldOrRoot(fld), field.OmitValueType{}, fmt.Sprintf("document too large: more than %d YAML nodes, or more than %d through aliases", maxNodes, maxAliasNodes)).WithOrigin(OriginDocumentSize))
		}
		return nil, nil, false
	}
	if n.Kind != yaml.AliasNode {
		return n, func() {}, true
	}
	target := n.Alias
	if dc.expanding[target] {
		dc.fail(n, field.Invalid(fldOrRoot(fld), "*"+n.Value, "recursive YAML alias").WithOrigin(OriginRecursiveAlias))
		return nil, nil, false
	}
	dc.expanding[target] = true
	return target, func() { delete(dc.expanding, target) }, true
}

func (dc *decoder) fail(n *yaml.Node, fe *field.Error) {
	dc.errs = append(dc.errs, dc.doc.errorAt(Pos{File: dc.doc.File, Line: n.Line, Col: n.Column}, fe))
}

var valueType = reflect.TypeOf(Value{})

// errAlreadyReported stops a conversion whose error the decoder recorded.
var errAlreadyReported = errors.New("already reported")

// decode fills v from n, recording positions and collecting errors. key is
// fld rendered as field.Path.String() does, built incrementally because
// rendering every node's path from the root dominates decoding time.
func (dc *decoder) decode(n *yaml.Node, v reflect.Value, fld *field.Path, key string) {
	n, leave, ok := dc.enter(n, fld)
	if !ok {
		return
	}
	defer leave()
	dc.doc.values[key] = pos{n.Line, n.Column}
	if n.Kind == yaml.ScalarNode {
		dc.doc.styles[key] = n.Style
	}
	if v.Kind() == reflect.Pointer {
		if isNull(n) {
			return
		}
		v.Set(reflect.New(v.Type().Elem()))
		v = v.Elem()
	}
	if v.Type() == valueType {
		dc.decodeValue(n, v, fld)
		return
	}
	switch v.Kind() {
	case reflect.Struct:
		dc.decodeStruct(n, v, fld, key)
	case reflect.Slice:
		dc.decodeSlice(n, v, fld, key)
	case reflect.Map:
		dc.decodeMap(n, v, fld, key)
	case reflect.String:
		dc.decodeString(n, v, fld)
	default:
		dc.fail(n, field.InternalError(fld, fmt.Errorf("cannot decode into %s", v.Type())).WithOrigin(OriginDecode))
	}
}

// decodeValue fills a Value with any JSON value, numbers kept exact.
func (dc *decoder) decodeValue(n *yaml.Node, v reflect.Value, fld *field.Path) {
	val, err := dc.nodeValue(n, fld)
	if err == errAlreadyReported {
		return
	}
	if err != nil {
		dc.fail(n, field.Invalid(fld, n.Value, err.Error()).WithOrigin(OriginWrongType))
		return
	}
	v.Set(reflect.ValueOf(Value{V: val}))
}

// decodeStruct fills a struct from a mapping, field by field, refusing
// duplicate and unknown keys.
func (dc *decoder) decodeStruct(n *yaml.Node, v reflect.Value, fld *field.Path, key string) {
	if isNull(n) {
		return
	}
	if n.Kind != yaml.MappingNode {
		dc.fail(n, field.Invalid(fldOrRoot(fld), describe(n), "must be an object").WithOrigin(OriginWrongType))
		return
	}
	fields := jsonFields(v.Type())
	prefix := key + "."
	if key == "" {
		prefix = ""
	}
	seen := map[string]bool{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, val := n.Content[i], n.Content[i+1]
		name := k.Value
		child := fld.Child(name)
		if fld == nil {
			child = field.NewPath(name)
		}
		if seen[name] {
			dc.fail(k, field.Duplicate(child, name).WithOrigin(OriginDuplicateKey))
			continue
		}
		seen[name] = true
		idx, ok := fields[name]
		if !ok {
			detail := "unknown field"
			if s := suggest(name, fields); s != "" {
				detail += fmt.Sprintf(" (did you mean %q?)", s)
			}
			dc.fail(k, field.Forbidden(child, detail).WithOrigin(OriginUnknownField))
			continue
		}
		childKey := prefix + name
		dc.doc.keys[childKey] = pos{k.Line, k.Column}
		dc.decode(val, v.Field(idx), child, childKey)
	}
}

// decodeSlice fills a slice from a sequence.
func (dc *decoder) decodeSlice(n *yaml.Node, v reflect.Value, fld *field.Path, key string) {
	if isNull(n) {
		return
	}
	if n.Kind == yaml.MappingNode && v.Type() == valuePairsType {
		dc.decodeValueMap(n, v, fld, key)
		return
	}
	if n.Kind != yaml.SequenceNode {
		dc.fail(n, field.Invalid(fld, describe(n), "must be a list").WithOrigin(OriginWrongType))
		return
	}
	s := reflect.MakeSlice(v.Type(), len(n.Content), len(n.Content))
	for i, e := range n.Content {
		dc.decode(e, s.Index(i), fld.Index(i), key+"["+strconv.Itoa(i)+"]")
	}
	v.Set(s)
}

// decodeMap fills a map with string keys from a mapping, refusing
// duplicate keys.
func (dc *decoder) decodeMap(n *yaml.Node, v reflect.Value, fld *field.Path, key string) {
	if isNull(n) {
		return
	}
	if n.Kind != yaml.MappingNode {
		dc.fail(n, field.Invalid(fld, describe(n), "must be an object").WithOrigin(OriginWrongType))
		return
	}
	m := reflect.MakeMap(v.Type())
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, val := n.Content[i], n.Content[i+1]
		child := fld.Key(k.Value)
		if m.MapIndex(reflect.ValueOf(k.Value)).IsValid() {
			dc.fail(k, field.Duplicate(child, k.Value).WithOrigin(OriginDuplicateKey))
			continue
		}
		e := reflect.New(v.Type().Elem()).Elem()
		dc.decode(val, e, child, key+"["+k.Value+"]")
		m.SetMapIndex(reflect.ValueOf(k.Value), e)
	}
	v.Set(m)
}

// decodeString sets a string from a string scalar; null leaves it empty.
func (dc *decoder) decodeString(n *yaml.Node, v reflect.Value, fld *field.Path) {
	if n.Kind != yaml.ScalarNode || n.Tag != "!!str" {
		if isNull(n) {
			return
		}
		dc.fail(n, field.Invalid(fld, describe(n), "must be a string").WithOrigin(OriginWrongType))
		return
	}
	v.SetString(n.Value)
}

var valuePairsType = reflect.TypeOf([]ValuePair(nil))

// decodeValueMap reads a valueMap written as a mapping ({S: small, M:
// medium}), the form people write first, as the list of {from, to} pairs it
// stands for, in order. Its keys are string from-values; other from-values
// need the list form.
func (dc *decoder) decodeValueMap(n *yaml.Node, v reflect.Value, fld *field.Path, key string) {
	pairs := make([]ValuePair, 0, len(n.Content)/2)
	seen := map[string]bool{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, val := n.Content[i], n.Content[i+1]
		idx := len(pairs)
		child, childKey := fld.Index(idx), key+"["+strconv.Itoa(idx)+"]"
		if k.Kind != yaml.ScalarNode || k.Tag != "!!str" {
			dc.fail(k, field.Invalid(child.Child("from"), describe(k), "a key of a valueMap mapping is a string; write other values as a list of {from, to}").WithOrigin(OriginWrongType))
			continue
		}
		if seen[k.Value] {
			dc.fail(k, field.Duplicate(fld.Key(k.Value), k.Value).WithOrigin(OriginDuplicateKey))
			continue
		}
		seen[k.Value] = true
		at := pos{k.Line, k.Column}
		dc.doc.values[childKey], dc.doc.values[childKey+".from"] = at, at
		dc.doc.keys[childKey+".from"], dc.doc.keys[childKey+".to"] = at, at
		dc.doc.styles[childKey+".from"] = k.Style
		pair := ValuePair{From: &Value{V: k.Value}}
		dc.decode(val, reflect.ValueOf(&pair.To).Elem(), child.Child("to"), childKey+".to")
		pairs = append(pairs, pair)
	}
	v.Set(reflect.ValueOf(pairs))
}

func fldOrRoot(f *field.Path) *field.Path {
	if f == nil {
		return field.NewPath("<document>")
	}
	return f
}

func isNull(n *yaml.Node) bool { return n.Kind == yaml.ScalarNode && n.Tag == "!!null" }

// describe renders a node for an error message.
func describe(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "<object>"
	case yaml.SequenceNode:
		return "<list>"
	}
	return n.Value
}

var jsonFieldsCache sync.Map // reflect.Type → map[string]int

// jsonFields maps JSON field names to struct field indexes.
func jsonFields(t reflect.Type) map[string]int {
	if m, ok := jsonFieldsCache.Load(t); ok {
		return m.(map[string]int)
	}
	m := map[string]int{}
	defer jsonFieldsCache.Store(t, m)
	for i := 0; i < t.NumField(); i++ {
		tag := t.Field(i).Tag.Get("json")
		name, _, _ := strings.Cut(tag, ",")
		if name != "" && name != "-" {
			m[name] = i
		}
	}
	return m
}

// suggest finds a known field name close to a misspelled one.
func suggest(name string, fields map[string]int) string {
	best, bestD := "", 3
	for f := range fields {
		if strings.EqualFold(f, name) {
			return f
		}
		if d := editDistance(strings.ToLower(name), strings.ToLower(f)); d < bestD || d == bestD && f < best {
			best, bestD = f, d
		}
	}
	return best
}

func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			c := 1
			if a[i-1] == b[j-1] {
				c = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+c)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

// nodeValue converts a YAML node to a JSON value, keeping numbers exact as
// json.Number.
func (dc *decoder) nodeValue(n *yaml.Node, fld *field.Path) (any, error) {
	n, leave, ok := dc.enter(n, fld)
	if !ok {
		return nil, errAlreadyReported
	}
	defer leave()
	switch n.Kind {
	case yaml.ScalarNode:
		switch n.Tag {
		case "!!null":
			return nil, nil
		case "!!bool":
			var b bool
			if err := n.Decode(&b); err != nil {
				return nil, err
			}
			return b, nil
		case "!!int":
			s := strings.ReplaceAll(n.Value, "_", "")
			i, ok := new(big.Int).SetString(s, 0)
			if !ok {
				return nil, fmt.Errorf("invalid integer %q", n.Value)
			}
			return json.Number(i.String()), nil
		case "!!float":
			if json.Valid([]byte(n.Value)) {
				return json.Number(n.Value), nil
			}
			var f float64
			if err := n.Decode(&f); err != nil {
				return nil, err
			}
			return json.Number(strconv.FormatFloat(f, 'g', -1, 64)), nil
		case "!!str", "!!timestamp", "!!binary":
			return n.Value, nil
		}
		return n.Value, nil
	case yaml.SequenceNode:
		s := make([]any, len(n.Content))
		for i, e := range n.Content {
			v, err := dc.nodeValue(e, fld)
			if err != nil {
				return nil, err
			}
			s[i] = v
		}
		return s, nil
	case yaml.MappingNode:
		m := make(map[string]any, len(n.Content)/2)
		for i := 0; i+1 < len(n.Content); i += 2 {
			v, err := dc.nodeValue(n.Content[i+1], fld)
			if err != nil {
				return nil, err
			}
			m[n.Content[i].Value] = v
		}
		return m, nil
	}
	return nil, fmt.Errorf("unsupported YAML node")
}
