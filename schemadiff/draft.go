package schemadiff

import (
	"fmt"
	"regexp"
	"sort"
	"strings"

	"github.com/mvpctl/mvpctl/rules"
)

// TODOKind classifies what a drafted rule could not infer safely. The values
// are stable kebab-case IDs.
type TODOKind string

// The kinds of TODO a [Draft] can hold.
const (
	TODOTypeSplit       TODOKind = "type-split"         // int-or-string became {number, name}
	TODOUncertainMove   TODOKind = "uncertain-move"     // a rename below ConfidentMove
	TODONestingChanged  TODOKind = "nesting-changed"    // a move across a different number of lists
	TODORemovedRequired TODOKind = "removed-required"   // a required field only the old version has
	TODONewRequired     TODOKind = "new-required"       // a field the target version requires without a default
	TODOTypeChanged     TODOKind = "type-changed"       // a kept field's value type changed
	TODOEnumRemoved     TODOKind = "enum-value-removed" // old values the target version rejects
	TODODefaultChanged  TODOKind = "default-changed"    // the server default differs
	TODOMapValue        TODOKind = "map-value"          // a change below a map value, which paths cannot address
	TODOUnmatched       TODOKind = "unmatched-fields"   // fields removed and added in one object, no move found
)

// TODO is a change the draft leaves for a person, at the place it belongs.
type TODO struct {
	// Rule is the index of the migration rule in Spec.APIMigrationRules.
	Rule int `json:"rule"`
	// Before is the index of the transformation the TODO precedes; the
	// length of the list means at the end.
	Before int `json:"before"`
	// Kind is the stable ID of the problem.
	Kind TODOKind `json:"kind"`
	// Path is the field concerned (in the old version's naming).
	Path string `json:"path"`
	// Message says what to decide.
	Message string `json:"message"`
	// Suggestion is a proposed edit, written commented out in the rules
	// file; empty when there is nothing sensible to propose.
	Suggestion []rules.Transformation `json:"suggestion,omitempty"`
}

// Note is a change that needs no rule but is worth knowing.
type Note struct {
	Rule    int    `json:"rule"`
	Path    string `json:"path"`
	Message string `json:"message"`
}

// Draft is generated TransformationRules with what is left to review.
type Draft struct {
	// Rules hold one migration rule per kind and version pair, sorted.
	Rules *rules.TransformationRules `json:"rules"`
	// TODOs are the changes that could not be inferred safely.
	TODOs []TODO `json:"todos,omitempty"`
	// Notes are changes that need no transformation.
	Notes []Note `json:"notes,omitempty"`
	// Header is written as a comment at the top of the rules file.
	Header []string `json:"-"`
}

// DraftOptions tune [DraftRules].
type DraftOptions struct {
	// Name is metadata.name; empty derives it from the dumps' versions.
	Name string
}

// DraftRules turns a report into TransformationRules: one apiMigrationRules
// entry per migration, a transformation per confident change, and a TODO for
// each change that cannot be inferred safely.
func DraftRules(r *Report, opts DraftOptions) *Draft {
	name := opts.Name
	if name == "" {
		name = ruleName(r)
	}
	d := &Draft{Rules: &rules.TransformationRules{
		APIVersion: rules.APIVersion,
		Kind:       rules.KindTransformationRules,
		Metadata:   rules.ObjectMeta{Name: name},
	}}
	d.Header = []string{
		"Drafted by mvpctl generate-rules from two OpenAPI dumps:",
		fmt.Sprintf("  from: %s%s", r.Old.Source, versionSuffix(r.Old.Version)),
		fmt.Sprintf("  to:   %s%s", r.New.Source, versionSuffix(r.New.Version)),
		"Review every TODO; a suggestion below one is commented out until you accept it.",
	}
	migs := append([]*Migration(nil), r.Migrations...)
	sort.SliceStable(migs, func(i, j int) bool {
		a, b := migs[i], migs[j]
		if a.From.Group != b.From.Group {
			return a.From.Group < b.From.Group
		}
		if a.FromResource != b.FromResource {
			return a.FromResource < b.FromResource
		}
		return a.From.Version < b.From.Version
	})
	for _, m := range migs {
		d.addMigration(m)
	}
	return d
}

func versionSuffix(v string) string {
	if v == "" {
		return ""
	}
	return " (" + v + ")"
}

var nameCleanRE = regexp.MustCompile(`[^a-z0-9.-]+`)

func ruleName(r *Report) string {
	from, to := r.Old.Version, r.New.Version
	if from == "" || to == "" || from == to {
		return "generated-migration-rules"
	}
	n := nameCleanRE.ReplaceAllString(strings.ToLower("upgrade-"+from+"-to-"+to), "-")
	return strings.Trim(n, "-.")
}

func (d *Draft) addMigration(m *Migration) {
	mr := rules.MigrationRule{
		APIGroup:    m.From.Group,
		Resource:    m.FromResource,
		Kind:        m.From.Kind,
		FromVersion: m.From.Version,
		ToVersion:   m.To.Version,
	}
	if m.To.Group != m.From.Group {
		mr.ToAPIGroup = m.To.Group
	}
	idx := len(d.Rules.Spec.APIMigrationRules)
	b := &ruleBuilder{d: d, idx: idx, mr: &mr, held: map[*Move]int{}}
	if m.ToResource != m.FromResource {
		b.note("", fmt.Sprintf("the resource is %s in %s", m.ToResource, m.To.GroupVersion()))
	}
	for _, sh := range m.Schema.Shared {
		b.note(sh.Path, "shared definition "+sh.Summary()+": a release change, not a version change; no rule drafted")
	}
	for _, s := range m.Schema.steps {
		b.step(s)
	}
	b.unmatched(m.Schema.steps)
	d.Rules.Spec.APIMigrationRules = append(d.Rules.Spec.APIMigrationRules, mr)
}

type ruleBuilder struct {
	d   *Draft
	idx int
	mr  *rules.MigrationRule
	// held maps a move left to review to the TODO holding it: the steps of
	// its scope assume it ran, so they join its suggestion.
	held map[*Move]int
	cur  step // the step being drafted
}

func (b *ruleBuilder) add(t rules.Transformation) {
	if i, ok := b.held[b.cur.dep]; ok {
		b.d.TODOs[i].Suggestion = append(b.d.TODOs[i].Suggestion, t)
		if b.cur.move != nil {
			b.held[b.cur.move] = i
		}
		return
	}
	b.mr.Transformations = append(b.mr.Transformations, t)
}

func (b *ruleBuilder) todo(kind TODOKind, path, msg string, suggestion ...rules.Transformation) {
	b.d.TODOs = append(b.d.TODOs, TODO{Rule: b.idx, Before: len(b.mr.Transformations), Kind: kind, Path: path, Message: msg, Suggestion: suggestion})
}

// hold records that the current move is left to review in the last TODO.
func (b *ruleBuilder) hold() {
	if b.cur.move == nil {
		return
	}
	if i, ok := b.held[b.cur.dep]; ok {
		// Nested in a held move: the outer TODO carries everything.
		b.d.TODOs[i].Suggestion = append(b.d.TODOs[i].Suggestion, b.d.TODOs[len(b.d.TODOs)-1].Suggestion...)
		b.d.TODOs[len(b.d.TODOs)-1].Suggestion = nil
		b.held[b.cur.move] = i
		return
	}
	b.held[b.cur.move] = len(b.d.TODOs) - 1
}

func (b *ruleBuilder) note(path, msg string) {
	b.d.Notes = append(b.d.Notes, Note{Rule: b.idx, Path: path, Message: msg})
}

func (b *ruleBuilder) step(s step) {
	b.cur = s
	switch {
	case s.move != nil:
		b.moveStep(s.move)
	case s.deleted != nil:
		f := s.deleted
		if strings.Contains(s.work, "{*}") {
			b.todo(TODOMapValue, f.Path, "field only the old version has, inside a map value: rules cannot address it")
			return
		}
		b.add(rules.Transformation{Path: s.work, Action: rules.ActionRemove, Description: "only " + b.mr.FromVersion + " has this field"})
		if f.Required {
			b.todo(TODORemovedRequired, f.Path, fmt.Sprintf("%s requires %s, which %s does not have: objects created in %s come back without it; decide what reverse should write", b.mr.FromVersion, f.Path, b.mr.ToVersion, b.mr.ToVersion))
		}
	case s.added != nil:
		f := s.added
		if strings.Contains(f.Path, "{*}") {
			b.todo(TODOMapValue, f.Path, "field only the new version has, inside a map value: rules cannot address it")
			return
		}
		b.add(rules.Transformation{Path: f.Path, Action: rules.ActionNewField, Description: "only " + b.mr.ToVersion + " has this field"})
		if f.Required && f.Default == "" {
			msg := fmt.Sprintf("%s requires %s and has no default: forward must write a value", b.mr.ToVersion, f.Path)
			if def, ok := defaultFromDescription(f.Description); ok {
				b.todo(TODONewRequired, f.Path, msg+" (the description names a default)", ensure(f.Path, def))
			} else {
				b.todo(TODONewRequired, f.Path, msg)
			}
		}
	case s.mod != nil:
		b.modStep(s.mod, s.work)
	}
}

// unmatched flags objects that lost some fields and gained others with no
// move between them: HPA v1's targetCPUUtilizationPercentage and v2's
// metrics are one setting in two shapes, which only a person can map.
func (b *ruleBuilder) unmatched(steps []step) {
	gone := map[string][]string{}
	var parents []string
	for _, s := range steps {
		if s.deleted != nil && !strings.Contains(s.work, "{*}") {
			p := parentOf(s.work)
			if _, ok := gone[p]; !ok {
				parents = append(parents, p)
			}
			gone[p] = append(gone[p], s.work)
		}
	}
	came := map[string][]string{}
	for _, s := range steps {
		if s.added != nil {
			p := parentOf(s.added.Path)
			came[p] = append(came[p], s.added.Path)
		}
	}
	for _, p := range parents {
		if len(came[p]) == 0 {
			continue
		}
		where := p
		if where == "" {
			where = "the object"
		}
		b.todo(TODOUnmatched, gone[p][0], fmt.Sprintf("in %s, %s only has %s and %s only has %s: if they hold the same setting, replace the remove/newField pair with a jq transformation",
			where, b.mr.FromVersion, strings.Join(gone[p], ", "), b.mr.ToVersion, strings.Join(came[p], ", ")))
	}
}

func (b *ruleBuilder) moveStep(m *Move) {
	desc := fmt.Sprintf("%s → %s (confidence %.2f)", m.From.Path, m.To.Path, m.Confidence)
	rename := rules.Transformation{Path: m.work, Action: rules.ActionRename, TargetPath: m.To.Path, Description: desc}
	if m.From.Type != m.To.Type && scalar(m.To.Type) && !m.Split {
		rename.Type = rules.ValueType(m.To.Type)
	}
	if strings.Contains(m.work, "{*}") || strings.Contains(m.To.Path, "{*}") {
		b.todo(TODOMapValue, m.From.Path, "moved inside a map value: "+desc)
		b.hold()
		return
	}
	if strings.Count(m.work, "[*]") != strings.Count(m.To.Path, "[*]") {
		b.todo(TODONestingChanged, m.From.Path, fmt.Sprintf("%s: the value crosses a different number of lists; write a jq transformation", desc))
		b.hold()
		return
	}
	if m.Split {
		num, name := splitChildren(m)
		jq := rules.Transformation{
			Path:        m.To.Path,
			Action:      rules.ActionJQ,
			Forward:     fmt.Sprintf(`if type == "number" then {%s: .} else {%s: .} end`, num, name),
			Reverse:     fmt.Sprintf(`if (.%s // "") != "" then .%s else .%s end`, name, name, num),
			Description: fmt.Sprintf("int-or-string → {%s (integer), %s (string)}", num, name),
		}
		b.todo(TODOTypeSplit, m.From.Path, fmt.Sprintf("%s: an int-or-string became an object of %s (integer) and %s (string); check how strings of digits must map", desc, num, name), rename, jq)
		b.hold()
		return
	}
	if m.From.Type != m.To.Type && scalar(m.From.Type) && scalar(m.To.Type) {
		b.todo(TODOTypeChanged, m.From.Path, fmt.Sprintf("%s, type %s → %s: check that every value converts", desc, m.From.Type, m.To.Type), rename)
		b.hold()
		return
	}
	if m.Confidence < ConfidentMove {
		b.todo(TODOUncertainMove, m.From.Path, fmt.Sprintf("%s; evidence: %s", desc, strings.Join(m.Evidence, ", ")), rename)
		b.hold()
		return
	}
	b.add(rename)
}

func splitChildren(m *Move) (num, name string) {
	num, name = "number", "name"
	for _, c := range m.toNode.children {
		switch c.Type {
		case TypeInteger:
			num = c.name
		case TypeString:
			name = c.name
		}
	}
	return num, name
}

func (b *ruleBuilder) modStep(fd *FieldDiff, work string) {
	path := fd.Path
	if strings.Contains(work, "{*}") {
		if !fd.Empty() && (fd.Type != nil || (fd.Enum != nil && len(fd.Enum.Deleted) > 0)) {
			b.todo(TODOMapValue, path, "a map value's schema changed: rules cannot address it")
		}
		return
	}
	if t := fd.Type; t != nil {
		from, to := t.From.(string), t.To.(string)
		switch {
		case fd.OldPath != "" && scalar(from) && scalar(to):
			// The rename converts the value (its type hint).
		case to == TypeIntOrString && (from == TypeInteger || from == TypeString):
			b.note(path, fmt.Sprintf("%s widened to int-or-string: nothing to convert forward; reverse keeps %s values", from, to))
		case scalar(from) && scalar(to):
			b.todo(TODOTypeChanged, path, fmt.Sprintf("type %s → %s", from, to),
				rules.Transformation{Path: work, Action: rules.ActionConvertType, Type: rules.ValueType(to), FromType: rules.ValueType(from)})
		default:
			b.todo(TODOTypeChanged, path, fmt.Sprintf("type %s → %s: the value changed shape; write a jq transformation", from, to))
		}
	}
	if r := fd.Required; r != nil && r.To == true && fd.OldPath != "" {
		b.note(path, fmt.Sprintf("%s requires %s inside its moved parent", b.mr.ToVersion, path))
	} else if r != nil && r.To == true && fd.new.Default == "" {
		msg := fmt.Sprintf("%s requires %s, %s does not", b.mr.ToVersion, path, b.mr.FromVersion)
		switch def, ok := defaultFromDescription(fd.old.Description); {
		case fd.old.Default != "":
			b.todo(TODONewRequired, path, msg+"; the old version's default is "+fd.old.Default, ensure(work, rawJSON(fd.old.Default).value()))
		case ok:
			b.todo(TODONewRequired, path, msg+"; the old description names the default", ensure(work, def))
		default:
			b.todo(TODONewRequired, path, msg+"; forward must write a value")
		}
	}
	if dd := fd.Default; dd != nil && fd.old.Default != "" {
		b.todo(TODODefaultChanged, path, fmt.Sprintf("the default changed from %s to %s: an object without the field behaves differently on the new server", fd.old.Default, orNone(fd.new.Default)),
			ensure(work, rawJSON(fd.old.Default).value()))
	}
	if e := fd.Enum; e != nil {
		if len(e.Deleted) > 0 {
			var sug []rules.Transformation
			if len(e.Deleted) == 1 && len(e.Added) == 1 {
				sug = append(sug, rules.Transformation{Path: work, Action: rules.ActionModify,
					MatchValue: &rules.Value{V: rawJSON(e.Deleted[0]).value()}, ReplaceValue: &rules.Value{V: rawJSON(e.Added[0]).value()}})
			}
			b.todo(TODOEnumRemoved, path, fmt.Sprintf("%s no longer allows %s", b.mr.ToVersion, strings.Join(e.Deleted, ", ")), sug...)
		}
		if len(e.Added) > 0 {
			b.note(path, fmt.Sprintf("%s adds enum values %s, which %s clients may not know", b.mr.ToVersion, strings.Join(e.Added, ", "), b.mr.FromVersion))
		}
	}
	if fd.Preserve != nil && fd.Preserve.From == true {
		b.note(path, "the target version prunes unknown fields here")
	}
	for _, x := range []struct {
		what string
		d    *ValueDiff
	}{{"format", fd.Format}, {"x-kubernetes-list-type", fd.ListType}, {"x-kubernetes-map-type", fd.MapType}, {"x-kubernetes-list-map-keys", fd.ListMapKeys}, {"nullable", fd.Nullable}, {"x-kubernetes-embedded-resource", fd.Embedded}} {
		if x.d != nil {
			b.note(path, fmt.Sprintf("%s %v → %v", x.what, orNoneAny(x.d.From), orNoneAny(x.d.To)))
		}
	}
	if r := fd.Required; r != nil && r.To == false {
		b.note(path, "no longer required")
	}
}

func ensure(path string, v any) rules.Transformation {
	return rules.Transformation{Path: path, Action: rules.ActionEnsureFieldExistence, DefaultValue: &rules.Value{V: v}}
}

func orNone(s string) string {
	if s == "" {
		return "none"
	}
	return s
}

func orNoneAny(v any) any {
	if v == nil || v == "" {
		return "none"
	}
	return v
}

var defaultRE = regexp.MustCompile(`(?i)\bdefaults? (?:to|is) (?:"([^"]+)"|'([^']+)'|([A-Za-z0-9_.-]+))`)

// defaultFromDescription finds "Defaults to X" in Kubernetes field docs.
func defaultFromDescription(desc string) (any, bool) {
	m := defaultRE.FindStringSubmatch(desc)
	if m == nil {
		return nil, false
	}
	v := m[1] + m[2] + m[3]
	v = strings.TrimRight(v, ".")
	switch strings.ToLower(v) {
	case "", "the", "a", "an", "empty", "nil", "null", "none", "unset":
		return nil, false
	case "true":
		return true, true
	case "false":
		return false, true
	}
	return v, true
}

// WithSuggestions returns the rules with every TODO's suggestion applied at
// its place: the edits a reviewer accepting all suggestions would make.
func (d *Draft) WithSuggestions() *rules.TransformationRules {
	out := *d.Rules
	out.Spec.APIMigrationRules = make([]rules.MigrationRule, len(d.Rules.Spec.APIMigrationRules))
	for i, mr := range d.Rules.Spec.APIMigrationRules {
		var ts []rules.Transformation
		for j := 0; j <= len(mr.Transformations); j++ {
			for _, t := range d.TODOs {
				if t.Rule == i && t.Before == j {
					ts = append(ts, t.Suggestion...)
				}
			}
			if j < len(mr.Transformations) {
				ts = append(ts, mr.Transformations[j])
			}
		}
		mr.Transformations = ts
		out.Spec.APIMigrationRules[i] = mr
	}
	return &out
}
