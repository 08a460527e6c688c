package emulation

import (
	"fmt"
	"net/url"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/fields"

	"github.com/mvpctl/mvpctl/rules"
)

// labelsPath is where a labelSelector looks.
var labelsPath = rules.Path{{Kind: rules.StepKey, Key: "metadata"}, {Kind: rules.StepKey, Key: "labels"}}

// rewriteSelectors translates a fieldSelector on the requested version to
// the served one: a field a rule renames is renamed; a field another step may
// change (a changed value, a jq expression that may write it) cannot be
// translated and is rejected with a 400 naming the rule and the step. A
// labelSelector passes unless a step may change labels, judged the same way
// (rules.Transformation.MayChange). metadata.name and metadata.namespace are
// the same in every version.
func (em *emulation) rewriteSelectors(q url.Values) error {
	fs, ls := q.Get("fieldSelector"), q.Get("labelSelector")
	if fs == "" && ls == "" {
		return nil
	}
	progs, _, err := em.rules.conv.Path(em.t.requested.WithKind(em.t.kind), em.t.served)
	if err != nil {
		return err
	}
	if ls != "" {
		for _, p := range progs {
			for i, t := range p.Rule.Transformations {
				if why, may := t.MayChange(labelsPath); may {
					return fmt.Errorf("labelSelector cannot be used on the emulated version %s: rule %s, transformations[%d] may change labels: %s",
						em.t.requested, p.RuleID, i, why)
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

// renameField follows one program's steps, in the order it runs them, for a
// selector's field: a rename of exactly the field renames it; any other
// step that may change it makes the selector untranslatable.
func renameField(p *rules.Program, field string) (string, error) {
	path, err := rules.ParsePath(field)
	if err != nil {
		return "", fmt.Errorf("invalid fieldSelector field %q: %v", field, err)
	}
	order := make([]int, len(p.Rule.Transformations))
	for i := range order {
		order[i] = i
	}
	if p.Direction == rules.Reverse {
		slices.Reverse(order)
	}
	for _, i := range order {
		t := p.Rule.Transformations[i]
		if t.Action == rules.ActionRename {
			from, to := t.Path, t.TargetPath
			if p.Direction == rules.Reverse {
				from, to = to, from
			}
			if fp, err := rules.ParsePath(from); err == nil && fp.Concrete() && slices.Equal(fp, path) {
				if path, err = rules.ParsePath(to); err != nil || !path.Concrete() {
					return "", fmt.Errorf("fieldSelector on %s cannot be translated to %s: rule %s, transformations[%d] moves it to %s", field, p.To, p.RuleID, i, to)
				}
				field = to
				continue
			}
		}
		if why, may := t.MayChange(path); may {
			return "", fmt.Errorf("fieldSelector on %s cannot be translated to %s: rule %s, transformations[%d] may change it: %s", field, p.To, p.RuleID, i, why)
		}
	}
	return field, nil
}
