package lint

import "fmt"

// Severity orders findings; --fail-on picks the threshold.
type Severity int

// The severities, lowest first.
const (
	// Info is worth knowing and needs no change: data the round-trip
	// annotation carries, for example.
	Info Severity = iota
	// Warning is probably a mistake, or work left to do (a TODO).
	Warning
	// Error makes the rules wrong: they do not load, do not compile, or
	// break the round trip.
	Error
)

func (s Severity) String() string {
	switch s {
	case Error:
		return "error"
	case Warning:
		return "warning"
	}
	return "info"
}

// ParseSeverity reads error, warning or info.
func ParseSeverity(s string) (Severity, error) {
	switch s {
	case "error":
		return Error, nil
	case "warning":
		return Warning, nil
	case "info":
		return Info, nil
	}
	return 0, fmt.Errorf("unknown severity %q: use error, warning or info", s)
}

// Category groups checks as docs/lint.md does.
type Category string

// The check categories.
const (
	CategoryStructure   Category = "structure"
	CategoryConsistency Category = "consistency"
	CategoryCompile     Category = "compile"
	CategorySchema      Category = "schema"
	CategoryLoss        Category = "information-loss"
	CategoryRoundTrip   Category = "round-trip"
	CategoryReview      Category = "review"
)

// Check describes one kind of finding. Its ID is stable: CI configurations
// and docs/lint.md refer to it.
type Check struct {
	ID       string
	Severity Severity
	Category Category
	// Summary is one line for SARIF's shortDescription and docs/lint.md.
	Summary string
	// Message is the finding's text, a fmt format filled by the check.
	Message string
}

// Checks is every check, keyed by ID: the one table of messages.
var Checks = map[string]*Check{}

// CheckIDs lists the IDs in documentation order.
var CheckIDs []string

func def(id string, sev Severity, cat Category, summary, message string) string {
	if _, dup := Checks[id]; dup {
		panic("duplicate check " + id)
	}
	Checks[id] = &Check{ID: id, Severity: sev, Category: cat, Summary: summary, Message: message}
	CheckIDs = append(CheckIDs, id)
	return id
}

// The check IDs. Structure checks come from rules.Parse and
// RuleSet.Validate (one source of truth); lint only names them.
var (
	IDYAMLSyntax           = def("yaml-syntax", Error, CategoryStructure, "The file is not valid YAML or JSON.", "%s")
	IDUnknownField         = def("unknown-field", Error, CategoryStructure, "A field the TransformationRules schema does not have (often a misspelling).", "%s")
	IDDuplicateKey         = def("duplicate-key", Error, CategoryStructure, "The same key twice in one YAML mapping.", "%s")
	IDWrongType            = def("wrong-type", Error, CategoryStructure, "A field holds a value of the wrong YAML type (a list where a string belongs).", "%s")
	IDInvalidHeader        = def("invalid-header", Error, CategoryStructure, "apiVersion, kind or metadata.name is missing or wrong.", "%s")
	IDMissingField         = def("missing-field", Error, CategoryStructure, "A field the action requires is missing.", "%s")
	IDFieldNotAllowed      = def("field-not-allowed", Error, CategoryStructure, "A field the action does not use.", "%s")
	IDUnsupportedAction    = def("unsupported-action", Error, CategoryStructure, "An action mvpctl does not know.", "%s")
	IDUnsupportedType      = def("unsupported-type", Error, CategoryStructure, "A type or fromType mvpctl does not know.", "%s")
	IDInvalidPath          = def("invalid-path", Error, CategoryStructure, "A path or targetPath that is not valid path syntax, or that the action cannot use.", "%s")
	IDInvalidName          = def("invalid-name", Error, CategoryStructure, "An apiGroup, resource or kind that is not a valid Kubernetes name.", "%s")
	IDInvalidVersion       = def("invalid-version", Error, CategoryStructure, "A fromVersion, toVersion or clientVersion that is not an API version.", "%s")
	IDInvalidServerVersion = def("invalid-server-version", Error, CategoryStructure, "A preferApiServerVersion that is not a server version pattern (v1.32.y, >=1.32).", "%s")
	IDSameVersion          = def("same-version", Error, CategoryStructure, "fromVersion equals toVersion in the same group.", "%s")
	IDDuplicateRule        = def("duplicate-rule", Error, CategoryStructure, "Two migration rules for the same resource and versions.", "%s")
	IDValueType            = def("value-type", Error, CategoryStructure, "A defaultValue or value that does not have the transformation's type.", "%s")
	IDInvalidField         = def("invalid-field", Error, CategoryStructure, "Any other invalid field.", "%s")

	IDJQSyntax       = def("jq-syntax", Error, CategoryCompile, "A jq expression (forward, reverse, when) does not parse; the position points into the YAML scalar.", "%s")
	IDJQUndefined    = def("jq-undefined", Error, CategoryCompile, "A jq expression calls a function or variable that does not exist.", "%s")
	IDProgramCompile = def("program-compile", Error, CategoryCompile, "The generated forward or reverse jq program of a rule does not compile.", "rule %s: %v")

	IDDuplicateTarget   = def("duplicate-target", Warning, CategoryConsistency, "Two transformations of a rule write the same field.", "transformations[%d] writes %s, which transformations[%d] already writes")
	IDRenameChain       = def("rename-chain", Warning, CategoryConsistency, "A rename whose target a later transformation renames again.", "%s is renamed to %s, which transformations[%d] renames again to %s: rename %s to %s directly")
	IDVersionCycle      = def("version-cycle", Error, CategoryConsistency, "Migration rules of a resource form a cycle of versions.", "rules for %s form a cycle: %s")
	IDAmbiguousPath     = def("ambiguous-path", Warning, CategoryConsistency, "Two different chains of rules lead between the same versions of a resource.", "%s: %s and %s are already connected through %s; this rule adds a second path between them")
	IDRoutingUnservable = def("routing-unservable", Warning, CategoryConsistency, "A routing rule names a group, resource or version that no migration rule or known server serves.", "no migration rule or server serves %s%s")

	IDKindNotInSchema     = def("kind-not-in-schema", Warning, CategorySchema, "The rule's resource and version are not in the schema given.", "%s is not in %s; schema checks skipped for this rule")
	IDPathNotInSchema     = def("path-not-in-schema", Error, CategorySchema, "A path that the object does not have at this step, given the fromVersion schema and the transformations before it.", "%s is not a field of %s%s")
	IDTargetNotInSchema   = def("target-not-in-schema", Error, CategorySchema, "A field the transformation writes that the toVersion schema does not have.", "%s is not a field of %s%s")
	IDSchemaType          = def("schema-type", Error, CategorySchema, "A type hint that disagrees with the schema's type of the field.", "%s is %s in %s, but %s says %s")
	IDSchemaValue         = def("schema-value", Error, CategorySchema, "A matchValue, replaceValue, valueMap, defaultValue or value that the schema's type or enum does not allow.", "%s %s is not a valid %s in %s: %s")
	IDLeftOver            = def("left-over-field", Warning, CategorySchema, "A fromVersion field that toVersion does not have, which no transformation removes or moves: forward leaves it in the object, where the server prunes or rejects it, and the annotation does not keep it.", "%s has %s, which %s does not: forward leaves it in the object, where the server prunes or rejects it; remove it (the annotation then keeps it) or move it")
	IDValueNotConvertible = def("value-not-convertible", Warning, CategorySchema, "A step that fails on a value the schema of the version it reads allows (a type conversion of an int-or-string, untyped or x-kubernetes-preserve-unknown-fields field, a jq expression that assumes one type, a write below a field that may not be an object): one such object fails every emulated GET, LIST and WATCH that meets it.", "transformations[%d] (%s) fails %s on a value that %s allows at %s, %s: on %s: %v")
	IDRequiredUnset       = def("required-unset", Warning, CategorySchema, "A field the toVersion schema requires that forward does not always set.", "%s requires %s, which forward %s")

	IDLossyModify  = def("lossy-modify", Info, CategoryLoss, "A modify that maps several values to one, or one value that another pair gives back.", "%s %s: %s")
	IDFieldDropped = def("field-dropped", Info, CategoryLoss, "A field one version cannot hold (remove forward, newField reverse).", "%s drops %s %s; %s")
	IDDefaultAdded = def("default-added", Info, CategoryLoss, "ensureFieldExistence or set writes a value the source object did not have.", "%s writes %s %s; %s")
	IDLossyJQ      = def("lossy-jq", Info, CategoryLoss, "A jq transformation whose inverse the linter cannot prove; the round-trip check tests it on samples.", "%s: forward and reverse are not checked to be inverses without --samples or --examples; %s")

	IDRoundTripForward = def("round-trip-forward", Error, CategoryRoundTrip, "reverse(forward(x)) differs from x for a sample object of fromVersion.", "reverse(forward(x)) != x for %s: first difference at %s (%s); minimal example: %s")
	IDRoundTripReverse = def("round-trip-reverse", Error, CategoryRoundTrip, "forward(reverse(y)) differs from y for a sample object of toVersion.", "forward(reverse(y)) != y for %s: first difference at %s (%s); minimal example: %s")
	IDConversionError  = def("conversion-error", Error, CategoryRoundTrip, "Converting a sample object failed.", "%s of %s failed: %v; minimal example: %s")
	IDSamplesSkipped   = def("samples-skipped", Info, CategoryRoundTrip, "--samples was given but no schema serves this version of the rule, so no objects were generated for it.", "no schema given serves %s: --samples generated no objects of it%s")
	IDExecutorMismatch = def("executor-mismatch", Error, CategoryRoundTrip, "The native executor and the jq programs give different results for a sample.", "%s of %s: the native executor and jq differ at %s (%s); minimal example: %s")

	IDTODO = def("todo", Warning, CategoryReview, "A TODO comment left by generate-rules or a person.", "%s")
)

// CheckFor returns the check of an ID; it panics on an unknown ID, which is
// a programming error.
func CheckFor(id string) *Check {
	c, ok := Checks[id]
	if !ok {
		panic("unknown check " + id)
	}
	return c
}
