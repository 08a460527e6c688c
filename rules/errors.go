package rules

import (
	"errors"
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

// Origins name the check of decoding or validation that made an [Error]
// (its field.Error's Origin). Unlike messages, they do not change when a
// message is reworded: lint's check IDs, which users list in CI
// configurations, are looked up by them.
const (
	// OriginYAMLSyntax: the file is not YAML or JSON.
	OriginYAMLSyntax = "yamlSyntax"
	// OriginDocumentSize: a document has too many YAML nodes, or expands
	// too many through aliases.
	OriginDocumentSize = "documentSize"
	// OriginRecursiveAlias: a YAML alias refers to a node that contains it.
	OriginRecursiveAlias = "recursiveAlias"
	// OriginUnknownField: a field the TransformationRules schema does not have.
	OriginUnknownField = "unknownField"
	// OriginDuplicateKey: the same key twice in one mapping.
	OriginDuplicateKey = "duplicateKey"
	// OriginWrongType: a value of the wrong YAML type.
	OriginWrongType = "wrongType"
	// OriginDecode: a value the decoder cannot store (a bug, not bad input).
	OriginDecode = "decode"
	// OriginHeader: apiVersion, kind, metadata.name or spec is missing or wrong.
	OriginHeader = "header"
	// OriginRequired: a field that the rule or its action needs is missing.
	OriginRequired = "required"
	// OriginNotUsed: a field that the action does not use.
	OriginNotUsed = "notUsed"
	// OriginAction: an action mvpctl does not know.
	OriginAction = "action"
	// OriginTypeName: a type or fromType mvpctl does not know.
	OriginTypeName = "typeName"
	// OriginPath: path syntax, or a path the action cannot use.
	OriginPath = "path"
	// OriginName: an apiGroup, resource or kind that is not a valid name.
	OriginName = "name"
	// OriginAPIVersion: a fromVersion, toVersion or clientVersion that is
	// not an API version.
	OriginAPIVersion = "apiVersion"
	// OriginSameVersion: toVersion equals fromVersion in the same group.
	OriginSameVersion = "sameVersion"
	// OriginServerVersion: a preferApiServerVersion that is not a pattern.
	OriginServerVersion = "serverVersion"
	// OriginDuplicateRule: two migration rules for one resource and versions.
	OriginDuplicateRule = "duplicateRule"
	// OriginValueType: a defaultValue or value that does not have the type
	// the transformation gives.
	OriginValueType = "valueType"
	// OriginJQSyntax: a jq expression that does not parse.
	OriginJQSyntax = "jqSyntax"
	// OriginJQUndefined: a jq expression that refers to a function,
	// variable or label that does not exist (it parses, but does not compile).
	OriginJQUndefined = "jqUndefined"
)

// Origins lists every origin of decoding and validation errors.
var Origins = []string{
	OriginYAMLSyntax, OriginDocumentSize, OriginRecursiveAlias, OriginUnknownField, OriginDuplicateKey,
	OriginWrongType, OriginDecode, OriginHeader, OriginRequired, OriginNotUsed, OriginAction, OriginTypeName,
	OriginPath, OriginName, OriginAPIVersion, OriginSameVersion, OriginServerVersion, OriginDuplicateRule,
	OriginValueType, OriginJQSyntax, OriginJQUndefined,
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

// FormatError renders an error as mvpctl prints it: each [Error] of an
// [ErrorList] with its position, field path, message and caret line; any
// other error as its message.
func FormatError(err error) string {
	var el ErrorList
	if errors.As(err, &el) {
		lines := make([]string, len(el))
		for i, e := range el {
			lines[i] = e.Caret()
		}
		return strings.Join(lines, "\n")
	}
	return err.Error()
}
