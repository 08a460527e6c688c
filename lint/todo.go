package lint

import (
	"regexp"
	"strings"

	"github.com/mvpctl/mvpctl/rules"
)

// todo is a TODO comment in a rules file.
type todo struct {
	pos  rules.Pos
	text string
	// path is the field a generate-rules TODO names ("TODO(kind): path: ..."), if any.
	path string
	// context is the text and the comment lines that follow it.
	context string
	// rule is the clean migration rule whose text holds the comment, if any.
	rule *ruleInfo
}

// todoRE finds TODO and FIXME in a YAML comment: a # at the start of the
// line or after a blank.
var todoRE = regexp.MustCompile(`(?:^|[ \t])#[ \t]*((?:TODO|FIXME)\b.*)$`)

// generatedTODORE reads the field of a generate-rules TODO.
var generatedTODORE = regexp.MustCompile(`^TODO\([a-z-]+\): ([^ ]+): `)

func (l *linter) scanTODOs(file string) {
	for i, line := range l.sources[file] {
		if !strings.Contains(line, "TODO") && !strings.Contains(line, "FIXME") {
			continue
		}
		m := todoRE.FindStringSubmatchIndex(line)
		if m == nil {
			continue
		}
		text := strings.TrimSpace(line[m[2]:m[3]])
		t := todo{pos: rules.Pos{File: file, Line: i + 1, Col: m[2] + 1}, text: text}
		if g := generatedTODORE.FindStringSubmatch(text); g != nil {
			t.path = g[1]
		}
		// The suggestion generate-rules writes below a TODO, commented out,
		// belongs to it.
		t.context = text
		for _, next := range l.sources[file][i+1:] {
			c, ok := strings.CutPrefix(strings.TrimSpace(next), "#")
			if !ok || todoRE.MatchString(next) {
				break
			}
			t.context += "\n" + c
		}
		l.todos = append(l.todos, t)
	}
}

// placeTODOs finds the rule of each TODO once; schema checks ask often.
func (l *linter) placeTODOs() {
	for i := range l.todos {
		l.todos[i].rule = l.ruleAtLine(l.todos[i].pos.File, l.todos[i].pos.Line)
	}
}

func (l *linter) reportTODOs() {
	for _, t := range l.todos {
		rule := ""
		if t.rule != nil {
			rule = t.rule.ref.Rule.ID()
		}
		l.add(IDTODO, t.pos, "", rule, t.text)
	}
}

// coveredByTODO reports whether a TODO comment inside a rule already names
// a field, so that schema checks do not repeat what generate-rules said.
func (l *linter) coveredByTODO(r *ruleInfo, path string) bool {
	for _, t := range l.todos {
		if t.path == "" || t.rule == nil || t.rule.ref.Rule != r.ref.Rule {
			continue
		}
		if t.path == path || strings.HasPrefix(path, t.path+".") || strings.HasPrefix(path, t.path+"[") || mentions(t.context, path) {
			return true
		}
	}
	return false
}

// mentions reports whether text names a field path as a whole word.
func mentions(text, path string) bool {
	for i := 0; ; {
		j := strings.Index(text[i:], path)
		if j < 0 {
			return false
		}
		end := i + j + len(path)
		if end == len(text) || !isPathChar(text[end]) {
			return true
		}
		i = end
	}
}

func isPathChar(c byte) bool {
	return c == '_' || c == '-' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
}
