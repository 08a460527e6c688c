// Package engine runs compiled TransformationRules: it converts objects,
// lists and watch events between API versions, chaining rules along the
// shortest path (v1alpha1 → v1beta1 → v1 and back).
//
// # Executors
//
// Every compiled program exists twice: as jq source (what `mvpctl compile`
// prints, run here with gojq) and as a list of steps that the native
// executor runs directly on Go maps. The native executor is the default
// because it costs a fraction of the interpreter; the golden tests run both
// and require identical output, so the jq source stays the specification.
package engine
