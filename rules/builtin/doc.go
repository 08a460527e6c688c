// Package builtin is mvpctl's library of Kubernetes' own API changes: the
// lifecycle of every built-in API version (when Kubernetes introduced,
// deprecated and removed it, and what replaces it), generated from
// k8s.io/api's APILifecycle* methods by gen/, and the TransformationRules
// that convert between versions, embedded from this directory's YAML files.
//
// It imports nothing of mvpctl's but package rules.
package builtin
