package rules

import (
	"fmt"
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation/field"
)

// Pos is a position in a rules file; Line and Col count from 1.
type Pos struct {
	File string
	Line int
	Col  int
}

func (p Pos) String() string {
	switch {
	case p.Line == 0:
		return p.File
	case p.Col == 0:
		return fmt.Sprintf("%s:%d", p.File, p.Line)
	}
	return fmt.Sprintf("%s:%d:%d", p.File, p.Line, p.Col)
}

// Error is a problem found in a rules file: where it is, which field, and
// what is wrong.
type Error struct {
	// Pos locates the problem; for an error inside a scalar (a path or a jq
	// expression) it points at the offending character.
	Pos Pos
	// Field is the apimachinery field error: field path, type and detail.
	Field *field.Error
	// SourceLine is the text of the line at Pos, for a caret display.
	SourceLine string
}

func (e *Error) Error() string {
	return e.Pos.String() + ": " + e.Field.Error()
}

// ErrorList is every problem found in a rule set, sorted by position.
type ErrorList []*Error

func (l ErrorList) Error() string {
	msgs := make([]string, len(l))
	for i, e := range l {
		msgs[i] = e.Error()
	}
	return strings.Join(msgs, "\n")
}

// Sort orders the errors by file, line and column.
func (l ErrorList) Sort() {
	sort.SliceStable(l, func(i, j int) bool {
		a, b := l[i].Pos, l[j].Pos
		if a.File != b.File {
			return a.File < b.File
		}
		if a.Line != b.Line {
			return a.Line < b.Line
		}
		return a.Col < b.Col
	})
}

// Caret renders the error with its source line and a caret under the column,
// as compilers do:
//
//	rules.yaml:14:11: spec...: Invalid value: ".spec |": unexpected EOF
//	    14 |       forward: .spec |
//	                                ^
func (e *Error) Caret() string {
	if e.SourceLine == "" || e.Pos.Line == 0 {
		return e.Error()
	}
	prefix := fmt.Sprintf("%6d | ", e.Pos.Line)
	col := e.Pos.Col
	if col < 1 {
		col = 1
	}
	// Keep tabs so the caret lines up under them.
	pad := []rune{}
	for i, r := range []rune(e.SourceLine) {
		if i >= col-1 {
			break
		}
		if r == '\t' {
			pad = append(pad, '\t')
		} else {
			pad = append(pad, ' ')
		}
	}
	return fmt.Sprintf("%s\n%s%s\n%s%s^", e.Error(), prefix, e.SourceLine, strings.Repeat(" ", len(prefix)), string(pad))
}
