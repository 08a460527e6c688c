package lint

import (
	"strings"

	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/mvpctl/mvpctl/rules"
)

// addError turns a decoding or validation error of the rules package into
// a finding: the rules package is the one source of truth for structure,
// lint gives each kind of error a stable ID.
func (l *linter) addError(e *rules.Error) {
	id := classify(e.Field)
	if l.disabled[id] {
		return
	}
	c := CheckFor(id)
	f := Finding{ID: id, Severity: c.Severity, Pos: e.Pos, Field: e.Field.Field, Message: oneLine(e.Field.Error()), SourceLine: e.SourceLine}
	if f.SourceLine == "" {
		if lines := l.sources[e.Pos.File]; e.Pos.Line >= 1 && e.Pos.Line <= len(lines) {
			f.SourceLine = lines[e.Pos.Line-1]
		}
	}
	l.findings = append(l.findings, f)
}

// structureIDs gives the check ID of each origin of a rules error: the
// rules package names where an error was made, lint names the check.
var structureIDs = map[string]string{
	rules.OriginYAMLSyntax:     IDYAMLSyntax,
	rules.OriginDocumentSize:   IDInvalidField,
	rules.OriginRecursiveAlias: IDInvalidField,
	rules.OriginUnknownField:   IDUnknownField,
	rules.OriginDuplicateKey:   IDDuplicateKey,
	rules.OriginWrongType:      IDWrongType,
	rules.OriginDecode:         IDInvalidField,
	rules.OriginHeader:         IDInvalidHeader,
	rules.OriginRequired:       IDMissingField,
	rules.OriginNotUsed:        IDFieldNotAllowed,
	rules.OriginAction:         IDUnsupportedAction,
	rules.OriginTypeName:       IDUnsupportedType,
	rules.OriginPath:           IDInvalidPath,
	rules.OriginName:           IDInvalidName,
	rules.OriginAPIVersion:     IDInvalidVersion,
	rules.OriginSameVersion:    IDSameVersion,
	rules.OriginServerVersion:  IDInvalidServerVersion,
	rules.OriginDuplicateRule:  IDDuplicateRule,
	rules.OriginValueType:      IDValueType,
	rules.OriginJQSyntax:       IDJQSyntax,
	rules.OriginJQUndefined:    IDJQUndefined,
}

// classify maps a field error of the rules package to a check ID by its
// origin; an error without a known origin is an invalid field.
func classify(fe *field.Error) string {
	if id, ok := structureIDs[fe.Origin]; ok {
		return id
	}
	return IDInvalidField
}

// oneLine keeps a message on one line for the file:line:col format.
func oneLine(s string) string {
	return strings.ReplaceAll(strings.ReplaceAll(s, "\r", `\r`), "\n", `\n`)
}
