// Package manifest finds and reads Kubernetes manifests as kubectl's -f
// does: files, directories and standard input, multi-document YAML and
// JSON. It keeps the exact text and first line of every document, so that
// a command can name file:line and write back what it does not change byte
// for byte.
//
// It imports nothing of mvpctl's: scan and the CLI share it.
package manifest
