package lint

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/mvpctl/mvpctl/rules"
)

// covered is what information-loss findings say about the round trip: the
// engine keeps what the other version cannot hold in the conversion-data
// annotation, so only clients of the other version see the loss.
const covered = "kept in the " + rules.ConversionDataAnnotation + " annotation for the round trip (64 KiB per object at most); clients of the other version do not see it"

// checkLoss reports, per transformation, which fields lose data in which
// direction.
func (l *linter) checkLoss() {
	for i := range l.clean {
		r := &l.clean[i]
		mr := r.ref.Rule
		for j, t := range mr.Transformations {
			if !r.stepKnown(j) {
				continue
			}
			switch t.Action {
			case rules.ActionRemove:
				l.addRule(IDFieldDropped, r, tfield(j, "path"), "forward ("+mr.ToVersion+" has no such field)", t.Path, "from "+mr.FromVersion+" objects", covered)
			case rules.ActionNewField:
				l.addRule(IDFieldDropped, r, tfield(j, "path"), "reverse ("+mr.FromVersion+" has no such field)", t.Path, "from "+mr.ToVersion+" objects", covered)
			case rules.ActionEnsureFieldExistence:
				l.addRule(IDDefaultAdded, r, tfield(j, "path"), "forward", t.Path, "= "+jsonText(t.DefaultValue.V)+" where it is absent", "the "+rules.ConversionDataAnnotation+" annotation records the absence for the round trip; an object created in "+mr.ToVersion+" keeps the value in reverse")
			case rules.ActionSet:
				l.addRule(IDDefaultAdded, r, tfield(j, "path"), "forward", t.Path, "= "+jsonText(t.Value.V)+" unconditionally", "reverse removes it; the "+rules.ConversionDataAnnotation+" annotation keeps a value the object had before")
			case rules.ActionModify:
				for _, msg := range modifyLoss(&t) {
					l.addRule(IDLossyModify, r, tfield(j, "path"), "modify", t.Path, msg)
				}
			case rules.ActionJQ:
				if l.opts.Samples == 0 && len(l.opts.Examples) == 0 {
					what := "jq on the whole object"
					if t.Path != "" {
						what = "jq on " + t.Path
					}
					l.addRuleKey(IDLossyJQ, r, tfield(j, "forward"), what, "what reverse cannot give back is kept in the "+rules.ConversionDataAnnotation+" annotation")
				}
			}
		}
	}
}

// modifyLoss explains why a modify is not injective in each direction:
// several values mapping to one, or a value that passes through unchanged
// while the other direction maps it.
func modifyLoss(t *rules.Transformation) []string {
	var pairs [][2]any
	if t.MatchValue != nil && t.ReplaceValue != nil {
		pairs = append(pairs, [2]any{t.MatchValue.V, t.ReplaceValue.V})
	}
	for _, p := range t.ValueMap {
		if p.From != nil && p.To != nil {
			pairs = append(pairs, [2]any{p.From.V, p.To.V})
		}
	}
	var out []string
	for dir, name := range []string{"forward", "reverse"} {
		src, dst := 0, 1
		if dir == 1 {
			src, dst = 1, 0
		}
		// Effective mapping: the first pair matching a value wins.
		var effective [][2]any
		for _, p := range pairs {
			dup := false
			for _, e := range effective {
				if rules.EqualJSON(e[0], p[src]) {
					dup = true
				}
			}
			if !dup {
				effective = append(effective, [2]any{p[src], p[dst]})
			}
		}
		for i, a := range effective {
			var same []string
			for _, b := range effective[:i] {
				if rules.EqualJSON(a[1], b[1]) {
					same = append(same, jsonText(b[0]))
				}
			}
			if len(same) > 0 {
				out = append(out, fmt.Sprintf("%s maps %s and %s to %s; %s", name, strings.Join(same, ", "), jsonText(a[0]), jsonText(a[1]), covered))
			}
		}
		for _, a := range effective {
			// a[1] is produced from a[0]; an input equal to a[1] that is not
			// itself a source passes unchanged, so two inputs give a[1].
			if !isSource(effective, a[1]) && !rules.EqualJSON(a[0], a[1]) {
				out = append(out, fmt.Sprintf("%s leaves %s unchanged and also maps %s to it; %s", name, jsonText(a[1]), jsonText(a[0]), covered))
			}
		}
	}
	return out
}

func isSource(pairs [][2]any, v any) bool {
	for _, p := range pairs {
		if rules.EqualJSON(p[0], v) {
			return true
		}
	}
	return false
}

// jsonText renders a rules value as JSON.
func jsonText(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}
