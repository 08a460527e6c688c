package rules

import (
	"errors"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"

	"github.com/itchyny/gojq"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

var (
	// versionRE matches Kubernetes API versions: v1, v1beta2, v2alpha1.
	versionRE = regexp.MustCompile(`^v[1-9][0-9]*((alpha|beta)[1-9][0-9]*)?$`)
	// kindRE matches a CamelCase kind.
	kindRE = regexp.MustCompile(`^[A-Z][A-Za-z0-9]*$`)
)

// Validate checks every document of the set and the set as a whole
// (duplicate rules across documents), collecting all problems.
func (rs *RuleSet) Validate() ErrorList { return rs.validate(true) }

// validate is Validate; without checkJQ the jq expressions are left to
// compile on first use (see [ParseOptions]).
func (rs *RuleSet) validate(checkJQ bool) ErrorList {
	var errs ErrorList
	seen := map[string]string{}
	for _, d := range rs.Documents {
		for _, fe := range validateDocument(d, checkJQ) {
			errs = append(errs, fe)
		}
		for i, r := range d.Rules.Spec.APIMigrationRules {
			fld := field.NewPath("spec", "apiMigrationRules").Index(i)
			id := r.ID()
			if prev, ok := seen[id]; ok {
				errs = append(errs, d.errorAt(d.Pos(fld.Child("toVersion").String()), field.Duplicate(fld, fmt.Sprintf("%s (also at %s)", id, prev)).WithOrigin(OriginDuplicateRule)))
				continue
			}
			seen[id] = d.Pos(fld.String()).String()
		}
	}
	errs.Sort()
	return errs
}

// ID names a migration rule: resource.group/from->to. It keys the rule's
// round-trip data in the conversion-data annotation.
func (r *MigrationRule) ID() string {
	res := r.Resource
	if r.APIGroup != "" {
		res += "." + r.APIGroup
	}
	to := r.ToVersion
	if r.ToAPIGroup != "" && r.ToAPIGroup != r.APIGroup {
		to = r.ToAPIGroup + "/" + to
	}
	return res + "/" + r.FromVersion + "->" + to
}

// TargetGroup is the API group of ToVersion.
func (r *MigrationRule) TargetGroup() string {
	if r.ToAPIGroup != "" {
		return r.ToAPIGroup
	}
	return r.APIGroup
}

func validateDocument(d *Document, checkJQ bool) ErrorList {
	var errs ErrorList
	add := func(fe *field.Error) { errs = append(errs, d.wrap(fe)) }
	header := func(fe *field.Error) { add(fe.WithOrigin(OriginHeader)) }
	r := d.Rules
	if r.APIVersion == "" {
		header(field.Required(field.NewPath("apiVersion"), "must be "+APIVersion))
	} else if r.APIVersion != APIVersion {
		header(field.NotSupported(field.NewPath("apiVersion"), r.APIVersion, []string{APIVersion}))
	}
	if r.Kind == "" {
		header(field.Required(field.NewPath("kind"), "must be "+KindTransformationRules))
	} else if r.Kind != KindTransformationRules {
		header(field.NotSupported(field.NewPath("kind"), r.Kind, []string{KindTransformationRules}))
	}
	meta := field.NewPath("metadata")
	if r.Metadata.Name == "" {
		header(field.Required(meta.Child("name"), ""))
	} else {
		for _, msg := range validation.IsDNS1123Subdomain(r.Metadata.Name) {
			header(field.Invalid(meta.Child("name"), r.Metadata.Name, msg))
		}
	}
	spec := field.NewPath("spec")
	if len(r.Spec.APIMigrationRules) == 0 && len(r.Spec.APIRoutingRules) == 0 {
		header(field.Required(spec, "must have apiMigrationRules or apiRoutingRules"))
	}
	for i := range r.Spec.APIMigrationRules {
		errs = append(errs, validateMigrationRule(d, &r.Spec.APIMigrationRules[i], spec.Child("apiMigrationRules").Index(i), checkJQ)...)
	}
	for i := range r.Spec.APIRoutingRules {
		for _, fe := range validateRoutingRule(&r.Spec.APIRoutingRules[i], spec.Child("apiRoutingRules").Index(i)) {
			add(fe)
		}
	}
	return errs
}

func validateGroup(g string, fld *field.Path) field.ErrorList {
	if g == "" {
		return nil
	}
	var errs field.ErrorList
	for _, msg := range validation.IsDNS1123Subdomain(g) {
		errs = append(errs, field.Invalid(fld, g, msg).WithOrigin(OriginName))
	}
	return errs
}

func validateResource(res string, fld *field.Path, allowWildcard bool) field.ErrorList {
	if res == "" {
		return field.ErrorList{field.Required(fld, "the lower-case plural resource name, e.g. ingresses").WithOrigin(OriginRequired)}
	}
	if allowWildcard && res == "*" {
		return nil
	}
	var errs field.ErrorList
	for _, msg := range validation.IsDNS1123Label(res) {
		errs = append(errs, field.Invalid(fld, res, msg).WithOrigin(OriginName))
	}
	return errs
}

func validateVersion(v string, fld *field.Path) field.ErrorList {
	if v == "" {
		return field.ErrorList{field.Required(fld, "an API version such as v1beta1").WithOrigin(OriginRequired)}
	}
	if !versionRE.MatchString(v) {
		return field.ErrorList{field.Invalid(fld, v, "must be an API version such as v1, v1beta1 or v2alpha1").WithOrigin(OriginAPIVersion)}
	}
	return nil
}

func validateMigrationRule(d *Document, r *MigrationRule, fld *field.Path, checkJQ bool) ErrorList {
	var fes field.ErrorList
	fes = append(fes, validateGroup(r.APIGroup, fld.Child("apiGroup"))...)
	fes = append(fes, validateGroup(r.ToAPIGroup, fld.Child("toApiGroup"))...)
	fes = append(fes, validateResource(r.Resource, fld.Child("resource"), false)...)
	if r.Kind != "" && !kindRE.MatchString(r.Kind) {
		fes = append(fes, field.Invalid(fld.Child("kind"), r.Kind, "must be a CamelCase kind such as Ingress").WithOrigin(OriginName))
	}
	fes = append(fes, validateVersion(r.FromVersion, fld.Child("fromVersion"))...)
	fes = append(fes, validateVersion(r.ToVersion, fld.Child("toVersion"))...)
	if r.FromVersion != "" && r.FromVersion == r.ToVersion && r.TargetGroup() == r.APIGroup {
		fes = append(fes, field.Invalid(fld.Child("toVersion"), r.ToVersion, "must differ from fromVersion").WithOrigin(OriginSameVersion))
	}
	var errs ErrorList
	for _, fe := range fes {
		errs = append(errs, d.wrap(fe))
	}
	for i := range r.Transformations {
		errs = append(errs, validateTransformation(d, &r.Transformations[i], fld.Child("transformations").Index(i), checkJQ)...)
	}
	return errs
}

func validateTransformation(d *Document, t *Transformation, fld *field.Path, checkJQ bool) ErrorList {
	var errs ErrorList
	add := func(fes ...*field.Error) {
		for _, fe := range fes {
			errs = append(errs, d.wrap(fe))
		}
	}
	facts, known, fes := validateAction(t, fld)
	add(fes...)
	if !known {
		return errs
	}
	path, target, pathErrs := parsePaths(d, t, fld)
	errs = append(errs, pathErrs...)
	add(validatePaths(t, facts, path, target, fld)...)
	add(validateTypes(t, fld)...)
	if t.Action == ActionModify {
		add(validateModify(t, fld)...)
	}
	add(validateValueTypes(t, fld)...)
	for _, e := range []struct{ name, src string }{{"forward", t.Forward}, {"reverse", t.Reverse}, {"when", t.When}} {
		if e.src != "" && checkJQ {
			if origin, err := compileCheck(e.src); err != nil {
				errs = append(errs, jqError(d, fld.Child(e.name), e.src, origin, err))
			}
		}
	}
	return errs
}

// validateAction checks the action and that exactly the fields it uses are
// set. With an unknown or missing action nothing else can be checked.
func validateAction(t *Transformation, fld *field.Path) (facts ActionFacts, known bool, errs field.ErrorList) {
	if t.Action == "" {
		return facts, false, field.ErrorList{field.Required(fld.Child("action"), "one of "+strings.Join(actionNames(), ", ")).WithOrigin(OriginRequired)}
	}
	facts, known = t.Action.Facts()
	if !known {
		return facts, false, field.ErrorList{field.NotSupported(fld.Child("action"), t.Action, actionNames()).WithOrigin(OriginAction)}
	}
	set := t.setFields()
	allowed := map[string]bool{"action": true, "when": true, "description": true}
	for _, f := range facts.Required {
		allowed[f] = true
		if !set[f] {
			errs = append(errs, field.Required(fld.Child(f), fmt.Sprintf("required for action %q", t.Action)).WithOrigin(OriginRequired))
		}
	}
	for _, f := range facts.Optional {
		allowed[f] = true
	}
	for _, f := range slices.Sorted(maps.Keys(set)) {
		if !allowed[f] {
			errs = append(errs, field.Forbidden(fld.Child(f), fmt.Sprintf("not used by action %q", t.Action)).WithOrigin(OriginNotUsed))
		}
	}
	return facts, true, errs
}

// parsePaths parses path and targetPath; a path that does not parse is
// reported (and returned as nil).
func parsePaths(d *Document, t *Transformation, fld *field.Path) (path, target Path, errs ErrorList) {
	parse := func(name, text string) Path {
		if text == "" {
			return nil
		}
		p, err := ParsePath(text)
		if err != nil {
			errs = append(errs, pathError(d, fld.Child(name), text, err))
		}
		return p
	}
	return parse("path", t.Path), parse("targetPath", t.TargetPath), errs
}

// validatePaths checks what the action needs of path and targetPath.
func validatePaths(t *Transformation, facts ActionFacts, path, target Path, fld *field.Path) field.ErrorList {
	var errs field.ErrorList
	if facts.PathEndsInKey && len(path) > 0 && path.Last().Kind != StepKey {
		errs = append(errs, field.Invalid(fld.Child("path"), t.Path, fmt.Sprintf("action %q needs a path that ends in a key", t.Action)))
	}
	if path != nil && target != nil {
		if path.Wildcards() != target.Wildcards() {
			errs = append(errs, field.Invalid(fld.Child("targetPath"), t.TargetPath, fmt.Sprintf("must have as many [*] wildcards as path (%d)", path.Wildcards())))
		}
		if target.Last().Kind != StepKey {
			errs = append(errs, field.Invalid(fld.Child("targetPath"), t.TargetPath, "must end in a key"))
		}
		if path.String() == target.String() {
			errs = append(errs, field.Invalid(fld.Child("targetPath"), t.TargetPath, "must differ from path"))
		} else if isPrefix(path, target) || isPrefix(target, path) {
			errs = append(errs, field.Invalid(fld.Child("targetPath"), t.TargetPath, "must not be inside path or contain it"))
		}
	}
	if len(path) == 1 && path[0].Kind == StepKey && (path[0].Key == "apiVersion" || path[0].Key == "kind") {
		errs = append(errs, field.Invalid(fld.Child("path"), t.Path, "apiVersion and kind are set by the conversion itself"))
	}
	return errs.WithOrigin(OriginPath)
}

// validateTypes checks that the type hints name types.
func validateTypes(t *Transformation, fld *field.Path) field.ErrorList {
	var errs field.ErrorList
	if t.Type != "" && !validType(t.Type) {
		errs = append(errs, field.NotSupported(fld.Child("type"), t.Type, typeNames()))
	}
	if t.FromType != "" && !validType(t.FromType) {
		errs = append(errs, field.NotSupported(fld.Child("fromType"), t.FromType, typeNames()))
	}
	return errs.WithOrigin(OriginTypeName)
}

// validateValueTypes checks that the values written have the type that the
// type hint says.
func validateValueTypes(t *Transformation, fld *field.Path) field.ErrorList {
	var errs field.ErrorList
	for _, v := range []struct {
		name string
		val  *Value
	}{{"defaultValue", t.DefaultValue}, {"value", t.Value}} {
		if v.val != nil && t.Type != "" && validType(t.Type) && !valueHasType(v.val.V, t.Type) {
			errs = append(errs, field.Invalid(fld.Child(v.name), v.val.V, fmt.Sprintf("is not of type %q", t.Type)))
		}
	}
	return errs.WithOrigin(OriginValueType)
}

// validateModify checks that a modify has one pair or a complete valueMap.
func validateModify(t *Transformation, fld *field.Path) field.ErrorList {
	var errs field.ErrorList
	hasPair := t.MatchValue != nil || t.ReplaceValue != nil
	switch {
	case hasPair && len(t.ValueMap) > 0:
		errs = append(errs, field.Forbidden(fld.Child("valueMap"), "use either matchValue/replaceValue or valueMap").WithOrigin(OriginNotUsed))
	case !hasPair && len(t.ValueMap) == 0:
		errs = append(errs, field.Required(fld.Child("matchValue"), "modify needs matchValue and replaceValue, or valueMap").WithOrigin(OriginRequired))
	case hasPair && t.MatchValue == nil:
		errs = append(errs, field.Required(fld.Child("matchValue"), "required with replaceValue").WithOrigin(OriginRequired))
	case hasPair && t.ReplaceValue == nil:
		errs = append(errs, field.Required(fld.Child("replaceValue"), "required with matchValue").WithOrigin(OriginRequired))
	}
	for i, p := range t.ValueMap {
		if p.From == nil {
			errs = append(errs, field.Required(fld.Child("valueMap").Index(i).Child("from"), "").WithOrigin(OriginRequired))
		}
		if p.To == nil {
			errs = append(errs, field.Required(fld.Child("valueMap").Index(i).Child("to"), "").WithOrigin(OriginRequired))
		}
	}
	return errs
}

func isPrefix(a, b Path) bool {
	if len(a) > len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// setFields reports which optional fields of a transformation are present.
func (t *Transformation) setFields() map[string]bool {
	m := map[string]bool{}
	mark := func(name string, ok bool) {
		if ok {
			m[name] = true
		}
	}
	mark("path", t.Path != "")
	mark("targetPath", t.TargetPath != "")
	mark("type", t.Type != "")
	mark("fromType", t.FromType != "")
	mark("matchValue", t.MatchValue != nil)
	mark("replaceValue", t.ReplaceValue != nil)
	mark("valueMap", len(t.ValueMap) > 0)
	mark("defaultValue", t.DefaultValue != nil)
	mark("value", t.Value != nil)
	mark("forward", t.Forward != "")
	mark("reverse", t.Reverse != "")
	return m
}

func validateRoutingRule(r *RoutingRule, fld *field.Path) field.ErrorList {
	var errs field.ErrorList
	errs = append(errs, validateGroup(r.APIGroup, fld.Child("apiGroup"))...)
	errs = append(errs, validateResource(r.Resource, fld.Child("resource"), true)...)
	if r.ClientVersion != "" {
		errs = append(errs, validateVersion(r.ClientVersion, fld.Child("clientVersion"))...)
	}
	switch {
	case r.PreferAPIServerVersion == "":
		errs = append(errs, field.Required(fld.Child("preferApiServerVersion"), "a server version pattern such as v1.32.y or >=1.32").WithOrigin(OriginRequired))
	case len(r.PreferAPIServerVersion) > MaxServerVersionPatternLength:
		errs = append(errs, field.TooLong(fld.Child("preferApiServerVersion"), r.PreferAPIServerVersion, MaxServerVersionPatternLength).WithOrigin(OriginServerVersion))
	default:
		if _, err := ParseServerVersionPattern(r.PreferAPIServerVersion); err != nil {
			errs = append(errs, field.Invalid(fld.Child("preferApiServerVersion"), r.PreferAPIServerVersion, "must be a server version pattern: "+serverVersionSyntax).WithOrigin(OriginServerVersion))
		}
	}
	return errs
}

func pathError(d *Document, fld *field.Path, text string, err error) *Error {
	var pe *PathError
	fe := field.Invalid(fld, text, err.Error()).WithOrigin(OriginPath)
	if errors.As(err, &pe) {
		fe = field.Invalid(fld, text, pe.Msg).WithOrigin(OriginPath)
		return d.errorAt(d.scalarPos(fld.String(), text, pe.Offset), fe)
	}
	return d.wrap(fe)
}

// compileCheck parses and compiles a jq expression the way the compiler embeds
// it, so that unknown functions are reported here too. The origin says
// which of the two failed.
func compileCheck(src string) (origin string, err error) {
	q, err := gojq.Parse(src)
	if err != nil {
		return OriginJQSyntax, err
	}
	if _, err := gojq.Compile(q); err != nil {
		return OriginJQUndefined, err
	}
	return "", nil
}

func jqError(d *Document, fld *field.Path, src, origin string, err error) *Error {
	fe := field.Invalid(fld, src, err.Error()).WithOrigin(origin)
	var pe *gojq.ParseError
	if errors.As(err, &pe) {
		// gojq reports the offset after the offending token; point at its start.
		off := pe.Offset - len(pe.Token)
		if off < 0 {
			off = pe.Offset
		}
		return d.errorAt(d.scalarPos(fld.String(), src, off), fe)
	}
	return d.wrap(fe)
}

func validType(t ValueType) bool {
	for _, v := range ValueTypes {
		if v == t {
			return true
		}
	}
	return false
}

func actionNames() []string {
	s := make([]string, len(Actions))
	for i, a := range Actions {
		s[i] = string(a)
	}
	return s
}

func typeNames() []string {
	s := make([]string, len(ValueTypes))
	for i, t := range ValueTypes {
		s[i] = string(t)
	}
	return s
}
