package proxy

import (
	"fmt"
	"net/url"
	"strings"

	"k8s.io/apimachinery/pkg/fields"

	"github.com/mvpctl/mvpctl/rules"
)

// rewriteSelectors translates a fieldSelector on the requested version to
// the served one: a field a rule renames is renamed; a field another step
// touches (a changed value, a jq expression) cannot be translated and is
// rejected with a 400 naming the rule. A labelSelector passes unless a rule
// changes labels. metadata.name and metadata.namespace are the same in
// every version.
func (em *emulation) rewriteSelectors(q url.Values) error {
	fs, ls := q.Get("fieldSelector"), q.Get("labelSelector")
	if fs == "" && ls == "" {
		return nil
	}
	progs, _, _, err := em.e.conv.Path(em.t.requested.WithKind(em.t.kind), em.t.served)
	if err != nil {
		return err
	}
	if ls != "" {
		for _, p := range progs {
			for _, t := range p.Rule.Transformations {
				if pathTouches(t.Path, "metadata.labels") || pathTouches(t.TargetPath, "metadata.labels") {
					return fmt.Errorf("labelSelector cannot be used on the emulated version %s: rule %s changes labels (%s)", em.t.requested, p.RuleID, t.Path)
				}
			}
		}
	}
	if fs == "" {
		return nil
	}
	sel, err := fields.ParseSelector(fs)
	if err != nil {
		return fmt.Errorf("invalid fieldSelector %q: %v", fs, err)
	}
	var terms []string
	for _, req := range sel.Requirements() {
		field := req.Field
		if field != "metadata.name" && field != "metadata.namespace" {
			for _, p := range progs {
				if field, err = renameField(p, field); err != nil {
					return err
				}
			}
		}
		terms = append(terms, field+string(req.Operator)+fields.EscapeValue(req.Value))
	}
	q.Set("fieldSelector", strings.Join(terms, ","))
	return nil
}

// renameField follows one forward program's steps for a selector's field.
func renameField(p *rules.Program, field string) (string, error) {
	for _, t := range p.Rule.Transformations {
		switch {
		case t.Action == rules.ActionRename && t.Path == field:
			field = t.TargetPath
		case t.Path == "" || pathTouches(t.Path, field) || pathTouches(t.TargetPath, field):
			what := t.Path
			if what == "" {
				what = "the whole object"
			}
			return "", fmt.Errorf("fieldSelector on %s cannot be translated to %s: rule %s converts %s (%s)", field, p.To, p.RuleID, what, t.Action)
		}
	}
	return field, nil
}

// pathTouches reports whether two field paths overlap: equal, or one inside
// the other.
func pathTouches(a, b string) bool {
	if a == "" || b == "" {
		return false
	}
	a, b = strings.ReplaceAll(a, "[*]", ""), strings.ReplaceAll(b, "[*]", "")
	return a == b || strings.HasPrefix(a, b+".") || strings.HasPrefix(b, a+".") ||
		strings.HasPrefix(a, b+"[") || strings.HasPrefix(b, a+"[")
}

// encodeQuery encodes the inner request's query (sorted by key; the
// apiserver does not depend on the order).
func encodeQuery(q url.Values) string { return q.Encode() }
