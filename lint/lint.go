package lint

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/mvpctl/mvpctl/rules"
	"github.com/mvpctl/mvpctl/schemadiff"
)

// Options select the checks beyond those that need nothing but the rules
// files. The zero value runs the structure, consistency, compile and
// information-loss checks.
type Options struct {
	// From and To are the schemas of the old and the new API versions, as
	// loaded by schemadiff.Load; nil skips the schema checks (either one
	// alone is used for the versions it serves).
	From, To *schemadiff.Spec
	// Samples is how many objects per rule and direction the round-trip
	// check generates from the schemas; zero generates none.
	Samples int
	// Seed makes the samples reproducible; the same seed gives the same
	// objects.
	Seed uint64
	// Examples are objects of either version of a rule to round-trip too.
	Examples []Example
	// Disable lists check IDs not to report.
	Disable []string
}

// Example is an object given to the round-trip check.
type Example struct {
	// Name says where the object came from, e.g. a file name.
	Name   string
	Object map[string]any
}

// Finding is one problem found in a rules file.
type Finding struct {
	// ID names the check; see [Checks].
	ID       string
	Severity Severity
	// Pos locates the finding; Field is the field path in the document.
	Pos   rules.Pos
	Field string
	// Message is the text of the finding, from the check's message table entry.
	Message string
	// Rule is the ID of the migration rule concerned, if any.
	Rule string
	// SourceLine is the text of the line at Pos, for a caret display.
	SourceLine string
	// Example is a minimal object that shows a round-trip failure.
	Example map[string]any
}

// Result is the outcome of linting a set of rules files.
type Result struct {
	// Findings are sorted by file, line and column.
	Findings []Finding
	// Files, Documents and MigrationRules count what was linted.
	Files, Documents, MigrationRules int
	// Samples counts the objects converted by the round-trip check.
	Samples int
}

// Count returns how many findings are at or above a severity.
func (r *Result) Count(min Severity) int {
	n := 0
	for _, f := range r.Findings {
		if f.Severity >= min {
			n++
		}
	}
	return n
}

// linter holds the state of one run.
type linter struct {
	ctx      context.Context
	opts     Options
	disabled map[string]bool
	sources  map[string][]string // file → lines
	rs       *rules.RuleSet
	findings []Finding
	// clean are the migration rules whose own fields have no structure
	// errors, which the deeper checks work on; errors inside some of their
	// transformations are in ruleInfo.broken.
	clean []ruleInfo
	todos []todo
	// samples counts the objects the round-trip check converted.
	samples int
}

// ruleInfo is one migration rule with where it is.
type ruleInfo struct {
	ref   rules.RuleRef
	index int // within its document
	field string
	// broken holds, per transformation with structure errors, the names of
	// its fields that have them ("" for the transformation as a whole).
	// The checks treat those fields as unknown, and report what does not
	// depend on them.
	broken map[int]map[string]bool
	// compiled is set when the rule compiled for the round-trip check.
	compiled *rules.Compiled
}

// intact reports whether the rule has no structure error at all.
func (r *ruleInfo) intact() bool { return len(r.broken) == 0 }

// stepKnown reports whether transformation i is free of structure errors
// in the fields named (in all its fields, when none are named).
func (r *ruleInfo) stepKnown(i int, fields ...string) bool {
	b := r.broken[i]
	switch {
	case b == nil:
		return true
	case b[""] || len(fields) == 0:
		return false
	}
	for _, f := range fields {
		if b[f] {
			return false
		}
	}
	return true
}

// Run lints rules files as one rule set (like mvpctl convert loads them):
// decoding and validation problems are findings, and everything that
// decoded is linted further. The error is for input that cannot be linted
// at all, such as a file without any TransformationRules document.
func Run(ctx context.Context, sources []rules.Source, opts Options) (*Result, error) {
	if ctx == nil {
		ctx = context.Background()
	}
	l := &linter{ctx: ctx, opts: opts, disabled: map[string]bool{}, sources: map[string][]string{}, rs: &rules.RuleSet{}}
	for _, id := range opts.Disable {
		if _, ok := Checks[id]; !ok {
			return nil, fmt.Errorf("unknown check %q", id)
		}
		l.disabled[id] = true
	}
	var decoding rules.ErrorList
	for _, src := range sources {
		l.sources[src.Name] = strings.Split(strings.ReplaceAll(string(src.Data), "\r\n", "\n"), "\n")
		docs, errs, err := parseFile(src)
		if err != nil {
			return nil, err
		}
		decoding = append(decoding, errs...)
		l.rs.Documents = append(l.rs.Documents, docs...)
		l.scanTODOs(src.Name)
	}
	if len(l.rs.Documents) == 0 && len(decoding) == 0 {
		names := make([]string, len(sources))
		for i, s := range sources {
			names[i] = s.Name
		}
		return nil, fmt.Errorf("%s: no TransformationRules documents", strings.Join(names, ", "))
	}
	errs := rules.MergeErrors(decoding, l.rs.Validate())
	for _, e := range errs {
		l.addError(e)
	}
	l.selectClean(errs)
	l.placeTODOs()
	// Compilation runs beside the checks that do not need programs.
	waitCompiled := l.checkCompile()
	l.checkConsistency()
	l.checkSchemas()
	l.checkLoss()
	waitCompiled()
	if err := l.checkRoundTrips(); err != nil {
		return nil, err
	}
	l.reportTODOs()
	l.applyIgnores()
	res := &Result{Files: len(sources), Documents: len(l.rs.Documents), Samples: l.samples}
	for _, d := range l.rs.Documents {
		res.MigrationRules += len(d.Rules.Spec.APIMigrationRules)
	}
	sortFindings(l.findings)
	res.Findings = l.findings
	return res, nil
}

// parseFile decodes one file. A YAML syntax error makes rules.Parse give
// up on the whole file; then each document (between "---" lines) is parsed
// on its own, with the other documents' lines blanked so that positions
// stay those of the file, and the documents without errors are linted.
func parseFile(src rules.Source) ([]*rules.Document, rules.ErrorList, error) {
	set, err := rules.Parse(src.Name, src.Data)
	var el rules.ErrorList
	if err != nil && !errors.As(err, &el) {
		return nil, nil, err
	}
	lines := strings.SplitAfter(string(src.Data), "\n")
	var starts []int // first line of each document
	for i, line := range lines {
		if i == 0 || strings.HasPrefix(line, "---") && strings.TrimSpace(strings.TrimPrefix(line, "---")) == "" {
			starts = append(starts, i)
		}
	}
	if set != nil || len(starts) < 2 {
		if set == nil {
			return nil, el, nil
		}
		return set.Documents, el, nil
	}
	var docs []*rules.Document
	var errs rules.ErrorList
	for n, start := range starts {
		end := len(lines)
		if n+1 < len(starts) {
			end = starts[n+1]
		}
		var b strings.Builder
		for i, line := range lines {
			if i >= start && i < end {
				b.WriteString(line)
			} else {
				b.WriteString("\n")
			}
		}
		part, err := rules.Parse(src.Name, []byte(b.String()))
		var pel rules.ErrorList
		if err != nil && !errors.As(err, &pel) {
			return nil, nil, err
		}
		errs = append(errs, pel...)
		if part != nil {
			for _, d := range part.Documents {
				d.Index = n
				docs = append(docs, d)
			}
		}
	}
	return docs, errs, nil
}

// within reports whether field path f is p or below it.
func within(f, p string) bool {
	return f == p || strings.HasPrefix(f, p+".") || strings.HasPrefix(f, p+"[")
}

func sortFindings(fs []Finding) {
	sort.SliceStable(fs, func(i, j int) bool {
		a, b := fs[i], fs[j]
		if a.Pos.File != b.Pos.File {
			return a.Pos.File < b.Pos.File
		}
		if a.Pos.Line != b.Pos.Line {
			return a.Pos.Line < b.Pos.Line
		}
		if a.Pos.Col != b.Pos.Col {
			return a.Pos.Col < b.Pos.Col
		}
		return a.ID < b.ID
	})
}

// add records a finding of check id at pos, formatting the check's message.
func (l *linter) add(id string, pos rules.Pos, fld, rule string, args ...any) *Finding {
	c := CheckFor(id)
	if l.disabled[id] {
		return nil
	}
	f := Finding{ID: id, Severity: c.Severity, Pos: pos, Field: fld, Rule: rule, Message: fmt.Sprintf(c.Message, args...)}
	if lines := l.sources[pos.File]; pos.Line >= 1 && pos.Line <= len(lines) {
		f.SourceLine = lines[pos.Line-1]
	}
	l.findings = append(l.findings, f)
	return &l.findings[len(l.findings)-1]
}

// addRule records a finding about a field of a migration rule.
func (l *linter) addRule(id string, r *ruleInfo, fld string, args ...any) *Finding {
	full := r.field
	if fld != "" {
		full += "." + fld
	}
	return l.add(id, r.ref.Doc.Pos(full), full, r.ref.Rule.ID(), args...)
}

// addRuleKey records a finding positioned at a field's key: values reached
// through YAML aliases share the anchor's position, keys do not.
func (l *linter) addRuleKey(id string, r *ruleInfo, fld string, args ...any) *Finding {
	full := r.field + "." + fld
	return l.add(id, r.ref.Doc.KeyPos(full), full, r.ref.Rule.ID(), args...)
}

// selectClean keeps the migration rules whose own fields no structure
// error touches, and notes the fields of their transformations that errors
// touch.
func (l *linter) selectClean(errs rules.ErrorList) {
	for _, d := range l.rs.Documents {
		start, end := l.docLines(d)
		for i := range d.Rules.Spec.APIMigrationRules {
			r := ruleInfo{
				ref:   rules.RuleRef{Rule: &d.Rules.Spec.APIMigrationRules[i], Doc: d},
				index: i,
				field: fmt.Sprintf("spec.apiMigrationRules[%d]", i),
			}
			ok := true
			for _, e := range errs {
				if e.Pos.File == d.File && e.Pos.Line >= start && (end == 0 || e.Pos.Line < end) && within(e.Field.Field, r.field) {
					ok = ok && r.noteBroken(e.Field.Field)
				}
			}
			if ok {
				l.clean = append(l.clean, r)
			}
		}
	}
}

// noteBroken records a structure error at field path f of the rule; it
// returns false when the error is about the rule itself rather than one of
// its transformations.
func (r *ruleInfo) noteBroken(f string) bool {
	rest, ok := strings.CutPrefix(f, r.field+".transformations[")
	if !ok {
		return false
	}
	num, rest, ok := strings.Cut(rest, "]")
	i, err := strconv.Atoi(num)
	if !ok || err != nil {
		return false
	}
	name := "" // the transformation as a whole
	if rest, ok := strings.CutPrefix(rest, "."); ok {
		name = rest // a field; valueMap[2].from is about valueMap
		if j := strings.IndexAny(rest, ".["); j >= 0 {
			name = rest[:j]
		}
	}
	if r.broken == nil {
		r.broken = map[int]map[string]bool{}
	}
	if r.broken[i] == nil {
		r.broken[i] = map[string]bool{}
	}
	r.broken[i][name] = true
	return true
}

// docLines is the line range [start, end) of a document in its file; end
// is 0 for the last document.
func (l *linter) docLines(d *rules.Document) (start, end int) {
	start = d.Pos("").Line
	for _, o := range l.rs.Documents {
		if o.File == d.File && o.Index == d.Index+1 {
			end = o.Pos("").Line
		}
	}
	return start, end
}

// ruleAtLine finds the clean migration rule whose text holds a line.
func (l *linter) ruleAtLine(file string, line int) *ruleInfo {
	var best *ruleInfo
	for i := range l.clean {
		r := &l.clean[i]
		if r.ref.Doc.File != file {
			continue
		}
		p := r.ref.Doc.Pos(r.field)
		start, end := l.docLines(r.ref.Doc)
		if p.Line <= line && line >= start && (end == 0 || line < end) && (best == nil || p.Line > best.ref.Doc.Pos(best.field).Line) {
			best = r
		}
	}
	return best
}
