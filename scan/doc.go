// Package scan finds objects on API versions that Kubernetes deprecated or
// removed, as Pluto and kubent do, from the lifecycle table of package
// rules/builtin (generated from k8s.io/api, so a new release is one
// regeneration away rather than a hand-edited list).
//
// It reads manifests (files, directories, standard input; multi-document
// YAML, JSON, kind: List) one document at a time, and clusters: what was
// applied, from the kubectl.kubernetes.io/last-applied-configuration
// annotation of every object and from the deployed revision of every Helm 3
// release, because asking the apiserver for an object gives it back
// converted to a version the server still serves.
package scan
