// Package schemadiff compares two dumps of Kubernetes APIs and drafts the
// TransformationRules that carry objects from the old API versions to the
// new ones.
//
// # Inputs
//
// [Load] detects what it is given: a /openapi/v2 swagger.json, an
// /openapi/v3 group-version document or a directory (flat, as kubectl
// names them, or a saved /openapi/v3 tree), CRD manifests (every served
// version's openAPIV3Schema; apiextensions v1 and v1beta1; YAML streams and
// Lists), or cluster:CONTEXT, which reads /openapi/v3 through that
// kubeconfig context with client-go. Files may be gzip-compressed. Schemas
// are parsed and their $refs resolved by kin-openapi; allOf members are
// merged, and the Kubernetes extensions (group-version-kind, int-or-string,
// preserve-unknown-fields, embedded-resource, list and map types) are kept.
// Errors are [*LoadError]s naming the file and, where the parser gives one,
// the line and column.
//
// # Matching kinds
//
// Kubernetes definition names embed the version, so kinds are matched by
// group and kind. [Diff] pairs every old group/version/kind the new dump no
// longer serves (or no longer prefers) with the new dump's preferred version
// of the same kind, looking in other groups when the kind moved
// (extensions → networking.k8s.io Ingress).
//
// # The diff model
//
// As in oasdiff, each element has its own type with Added, Deleted and
// Modified parts and an Empty method: [Report] → [KindsDiff] and
// [Migration] → [SchemaDiff] → [FieldDiff], [EnumDiff], [ValueDiff]. Fields
// are flattened to the rules' path language (spec.rules[*].http.paths[*]).
// Definitions both versions share by name (PodSpec) are compared once and
// reported as [SharedDiff]: a release change, not a version change.
//
// # Moves
//
// Fields only the old schema has are matched with fields only the new one
// has by evidence, each adding to a confidence between 0 and 1: the same
// structure (Jaccard index of the subtrees' paths), the same definition
// name without its package, the same leaf name, an old name that is the new
// parent's name plus the new leaf (serviceName → service.name), a shared
// camelCase prefix or suffix (backend → defaultBackend), the same or a
// deeper parent, and similar descriptions. Objects and lists are matched
// before leaves, shallow before deep, best first; a moved object's children
// are compared in turn. An int-or-string that became an object of one
// integer and one string field is a split (servicePort →
// service.port.number|name).
//
// # Drafting
//
// [DraftRules] writes one migration rule per kind and version pair: rename
// for moves from [ConfidentMove] on, remove and newField for fields one side
// lacks. What cannot be inferred safely becomes a [TODO] with a stable
// [TODOKind] and, where there is one, a suggested edit that
// [Draft.YAML] writes commented out in place and [Draft.WithSuggestions]
// applies. Output is sorted: the same dumps give the same bytes.
package schemadiff
