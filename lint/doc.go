// Package lint checks TransformationRules files the way `mvpctl lint` runs
// them in CI: every problem is a [Finding] with a stable kebab-case ID (the
// [Checks] table holds the IDs, severities and messages), a position and a
// field path.
//
// # Checks
//
//   - Structure: the decoding and validation errors of the rules package,
//     each mapped to an ID (one source of truth: lint does not validate
//     again). Rules whose own fields have structure errors are left out of
//     the checks below; an error in one transformation leaves the others
//     checked, as far as their findings do not depend on it.
//   - Compile: the generated forward and reverse jq programs of every rule.
//   - Consistency: two writes to one field, rename chains, cycles and
//     second paths in the version graph, routing rules nothing serves.
//   - Schemas ([Options.From], [Options.To], loaded by schemadiff.Load):
//     paths and targets against the schema of the object at each step,
//     type hints and values against types and enums, required fields of
//     the target version, and steps run on a value of each shape the schema
//     of the version they read allows (value-not-convertible: a conversion
//     of an int-or-string field, a jq expression that assumes one type).
//   - Information loss: which fields lose data in which direction, and
//     that the conversion-data annotation carries it.
//   - Round trips ([Options.Samples], [Options.Examples]): reverse(forward(x))
//     == x and forward(reverse(y)) == y on generated and given objects, with
//     the native executor and the jq programs, shrunk to minimal examples.
//   - Review: TODO comments, such as those generate-rules writes.
//
// # Output
//
// [Write] renders a [Result] as text (file:line:col: severity ID: message
// with a caret line), JSON, GitHub workflow annotations or SARIF 2.1.0.
package lint
