// Package helmrelease reads, repairs and writes Helm release records: the
// revisions Helm 3 and Helm 4 keep in Secrets (type helm.sh/release.v1) or
// ConfigMaps, whose "release" value is base64 text of gzipped JSON.
//
// # Encoding
//
// A [Record] keeps the JSON of the release as Helm wrote it, field by
// field, and changes only the values a repair sets (the manifest, a hook's
// manifest, the revision, the status, the description and the time of the
// deployment), so that fields this package does not know (those of a
// newer Helm, the chart, the values) come back byte for byte, and a record
// decoded and encoded unchanged is identical to what Helm stored. It is
// encoded as Helm's storage driver encodes (pkg/storage/driver/util.go):
// encoding/json strings, gzip at BestCompression, standard base64.
//
// # Repair
//
// After a cluster upgrade, `helm upgrade` builds the objects of the
// deployed revision's manifest to compare them with the chart's, and fails
// on any whose API version the cluster no longer serves ("unable to build
// kubernetes objects from current release manifest"). [Convert] converts
// those objects with the rules of package engine, as mvpctl convert
// --kubernetes-version converts files, and [Store.Apply] writes the result
// as helm-mapkubeapis does: the deployed revision becomes superseded, and a
// new revision holds the converted manifest, deployed, with the
// description [Description].
package helmrelease
