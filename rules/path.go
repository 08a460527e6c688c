package rules

import (
	"fmt"
	"strconv"
	"strings"
)

// StepKind says what one step of a [Path] selects.
type StepKind uint8

const (
	// StepKey selects an object member.
	StepKey StepKind = iota
	// StepIndex selects an array element.
	StepIndex
	// StepWildcard selects every element of an array or member of an object.
	StepWildcard
)

// Step is one element of a [Path].
type Step struct {
	Kind  StepKind
	Key   string // for StepKey
	Index int    // for StepIndex
}

// Path is a parsed field path such as spec.rules[*].http.paths[0].backend or
// metadata.annotations["kubernetes.io/ingress.class"].
type Path []Step

// PathError is a syntax error in a path; Offset is the byte offset of the
// problem within the path text.
type PathError struct {
	Path   string
	Offset int
	Msg    string
}

func (e *PathError) Error() string {
	return fmt.Sprintf("%s at column %d", e.Msg, e.Offset+1)
}

// ParsePath parses the path language: dot-separated keys, [N] indexes, [*]
// wildcards and quoted keys ["a.b/c"] or ['a.b/c'] for keys that contain
// dots, slashes or brackets.
func ParsePath(s string) (Path, error) {
	p := &pathParser{s: s}
	return p.parse()
}

type pathParser struct {
	s   string
	pos int
}

func (p *pathParser) errorf(off int, format string, args ...any) error {
	return &PathError{Path: p.s, Offset: off, Msg: fmt.Sprintf(format, args...)}
}

func (p *pathParser) parse() (Path, error) {
	if strings.TrimSpace(p.s) == "" {
		return nil, p.errorf(0, "empty path")
	}
	var path Path
	expectKey := true // at the start and after a dot
	for p.pos < len(p.s) {
		c := p.s[p.pos]
		switch {
		case c == '[':
			if expectKey && len(path) > 0 {
				return nil, p.errorf(p.pos, "expected a key after '.'")
			}
			st, err := p.bracket()
			if err != nil {
				return nil, err
			}
			path = append(path, st)
			expectKey = false
		case c == '.':
			if expectKey {
				return nil, p.errorf(p.pos, "expected a key, found '.'")
			}
			p.pos++
			expectKey = true
			if p.pos == len(p.s) {
				return nil, p.errorf(p.pos, "expected a key after '.'")
			}
		default:
			if !expectKey {
				return nil, p.errorf(p.pos, "expected '.' or '[', found %q", c)
			}
			start := p.pos
			for p.pos < len(p.s) && !strings.ContainsRune(".[]\"' \t", rune(p.s[p.pos])) {
				p.pos++
			}
			if p.pos == start {
				return nil, p.errorf(p.pos, "unexpected %q", p.s[p.pos])
			}
			path = append(path, Step{Kind: StepKey, Key: p.s[start:p.pos]})
			expectKey = false
		}
	}
	return path, nil
}

func (p *pathParser) bracket() (Step, error) {
	open := p.pos
	p.pos++ // '['
	if p.pos >= len(p.s) {
		return Step{}, p.errorf(open, "unclosed '['")
	}
	var st Step
	switch c := p.s[p.pos]; {
	case c == '*':
		p.pos++
		st = Step{Kind: StepWildcard}
	case c == '"' || c == '\'':
		key, err := p.quoted(c)
		if err != nil {
			return Step{}, err
		}
		st = Step{Kind: StepKey, Key: key}
	case c >= '0' && c <= '9':
		start := p.pos
		for p.pos < len(p.s) && p.s[p.pos] >= '0' && p.s[p.pos] <= '9' {
			p.pos++
		}
		n, err := strconv.Atoi(p.s[start:p.pos])
		if err != nil {
			return Step{}, p.errorf(start, "index out of range")
		}
		st = Step{Kind: StepIndex, Index: n}
	case c == '-':
		return Step{}, p.errorf(p.pos, "negative indexes are not supported")
	default:
		return Step{}, p.errorf(p.pos, "expected an index, '*' or a quoted key after '['")
	}
	if p.pos >= len(p.s) || p.s[p.pos] != ']' {
		return Step{}, p.errorf(p.pos, "expected ']'")
	}
	p.pos++
	return st, nil
}

func (p *pathParser) quoted(q byte) (string, error) {
	start := p.pos
	p.pos++
	var b strings.Builder
	for p.pos < len(p.s) {
		c := p.s[p.pos]
		switch c {
		case q:
			p.pos++
			if b.Len() == 0 {
				return "", p.errorf(start, "empty quoted key")
			}
			return b.String(), nil
		case '\\':
			if p.pos+1 >= len(p.s) {
				return "", p.errorf(p.pos, "unterminated escape")
			}
			b.WriteByte(p.s[p.pos+1])
			p.pos += 2
		default:
			b.WriteByte(c)
			p.pos++
		}
	}
	return "", p.errorf(start, "unterminated quoted key")
}

// String renders the path in the path language, quoting keys only where needed.
func (p Path) String() string {
	var b strings.Builder
	for i, st := range p {
		switch st.Kind {
		case StepKey:
			if isPlainKey(st.Key) {
				if i > 0 {
					b.WriteByte('.')
				}
				b.WriteString(st.Key)
			} else {
				b.WriteString(`["`)
				b.WriteString(strings.NewReplacer(`\`, `\\`, `"`, `\"`).Replace(st.Key))
				b.WriteString(`"]`)
			}
		case StepIndex:
			b.WriteByte('[')
			b.WriteString(strconv.Itoa(st.Index))
			b.WriteByte(']')
		case StepWildcard:
			b.WriteString("[*]")
		}
	}
	return b.String()
}

// isPlainKey reports whether a key can be written without quotes.
func isPlainKey(k string) bool {
	if k == "" {
		return false
	}
	return !strings.ContainsAny(k, ".[]\"' \t\\")
}

// Elems renders the path as jq path elements: keys as strings, indexes as
// ints, wildcards as nil. Executors keep it to avoid boxing keys per match.
func (p Path) Elems() []any {
	out := make([]any, len(p))
	for i, st := range p {
		switch st.Kind {
		case StepKey:
			out[i] = st.Key
		case StepIndex:
			out[i] = st.Index
		}
	}
	return out
}

// Wildcards counts the wildcard steps.
func (p Path) Wildcards() int {
	n := 0
	for _, st := range p {
		if st.Kind == StepWildcard {
			n++
		}
	}
	return n
}

// Parent is the path without its last step.
func (p Path) Parent() Path { return p[:len(p)-1] }

// Last is the last step.
func (p Path) Last() Step { return p[len(p)-1] }

// Concrete reports whether the path has no wildcards.
func (p Path) Concrete() bool { return p.Wildcards() == 0 }

// jqSteps renders the path as a jq array literal, the form the generated
// programs take: keys are strings, indexes numbers, wildcards null.
func (p Path) jqSteps() string {
	var b strings.Builder
	b.WriteByte('[')
	for i, st := range p {
		if i > 0 {
			b.WriteByte(',')
		}
		switch st.Kind {
		case StepKey:
			b.WriteString(jqString(st.Key))
		case StepIndex:
			b.WriteString(strconv.Itoa(st.Index))
		case StepWildcard:
			b.WriteString("null")
		}
	}
	b.WriteByte(']')
	return b.String()
}

// ConcretePathString renders a concrete path given as jq path elements
// (strings and ints) in the path language. It is the key under which
// round-trip data is stored, so both executors must render alike.
func ConcretePathString(elems []any) string {
	var b strings.Builder
	for i, e := range elems {
		switch e := e.(type) {
		case string:
			if isPlainKey(e) {
				if i > 0 {
					b.WriteByte('.')
				}
				b.WriteString(e)
			} else {
				b.WriteString(`["`)
				b.WriteString(strings.NewReplacer(`\`, `\\`, `"`, `\"`).Replace(e))
				b.WriteString(`"]`)
			}
		case int:
			b.WriteByte('[')
			b.WriteString(strconv.Itoa(e))
			b.WriteByte(']')
		default:
			fmt.Fprintf(&b, "[%v]", e)
		}
	}
	return b.String()
}
