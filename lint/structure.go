package lint

import (
	"regexp"
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

var ruleFieldRE = regexp.MustCompile(`^spec\.apiMigrationRules\[[0-9]+\]$`)

// classify maps a field error of the rules package to a check ID by its
// type, the field it is about and, where the type is too coarse, its detail.
func classify(fe *field.Error) string {
	f, detail := fe.Field, fe.Detail
	last := lastKey(f)
	switch {
	case strings.HasPrefix(detail, "YAML syntax error"):
		return IDYAMLSyntax
	case fe.Type == field.ErrorTypeForbidden && strings.HasPrefix(detail, "unknown field"):
		return IDUnknownField
	case fe.Type == field.ErrorTypeDuplicate && ruleFieldRE.MatchString(f):
		return IDDuplicateRule
	case fe.Type == field.ErrorTypeDuplicate:
		return IDDuplicateKey
	case fe.Type == field.ErrorTypeInvalid && (strings.HasPrefix(detail, "must be a string") || strings.HasPrefix(detail, "must be an object") || strings.HasPrefix(detail, "must be a list") || strings.HasPrefix(detail, "invalid integer")):
		return IDWrongType
	case f == "apiVersion" || f == "kind" || f == "metadata" || f == "metadata.name" || f == "spec" && fe.Type == field.ErrorTypeRequired:
		return IDInvalidHeader
	case last == "action" && fe.Type == field.ErrorTypeNotSupported:
		return IDUnsupportedAction
	case (last == "type" || last == "fromType") && fe.Type == field.ErrorTypeNotSupported:
		return IDUnsupportedType
	case fe.Type == field.ErrorTypeRequired:
		return IDMissingField
	case fe.Type == field.ErrorTypeForbidden:
		return IDFieldNotAllowed
	case last == "forward" || last == "reverse" || last == "when":
		if strings.Contains(detail, "not defined") {
			return IDJQUndefined
		}
		return IDJQSyntax
	case last == "path" || last == "targetPath":
		return IDInvalidPath
	case last == "toVersion" && strings.Contains(detail, "must differ from fromVersion"):
		return IDSameVersion
	case last == "fromVersion" || last == "toVersion" || last == "clientVersion":
		return IDInvalidVersion
	case last == "apiGroup" || last == "toApiGroup" || last == "resource" || last == "kind":
		return IDInvalidName
	case last == "preferApiServerVersion":
		return IDInvalidServerVersion
	case (last == "defaultValue" || last == "value") && strings.Contains(detail, "is not of type"):
		return IDValueType
	}
	return IDInvalidField
}

// lastKey is the last member name of a field path: spec.rules[0].path → path.
func lastKey(f string) string {
	for strings.HasSuffix(f, "]") {
		i := strings.LastIndexByte(f, '[')
		if i < 0 {
			break
		}
		f = f[:i]
	}
	return f[strings.LastIndexByte(f, '.')+1:]
}

// oneLine keeps a message on one line for the file:line:col format.
func oneLine(s string) string {
	return strings.ReplaceAll(strings.ReplaceAll(s, "\r", `\r`), "\n", `\n`)
}
