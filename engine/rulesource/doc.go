// Package rulesource keeps the TransformationRules that `mvpctl proxy`
// serves: from files and directories (watched), from TransformationRules
// objects in a cluster (an informer), or both.
//
// # Sets
//
// Everything loaded is one [Set]: the parsed rules, the compiled
// [engine.Converter] and the routing rules. A Set is immutable. The active
// one sits behind an atomic pointer; a request takes [Source.Current] once
// and uses that Set to the end, so a reload never changes the programs under
// a request that is already running, and no request waits for a reload.
//
// # Reloading
//
// A change (a file written, renamed or replaced through a ConfigMap's
// symlink swap; an object created, edited or deleted) builds the candidate
// set, validates it as `mvpctl lint` would, and compiles it. Only a set that
// passes replaces the active one; otherwise the active set stays.
//
// Cluster objects are accepted one at a time, each against the files and
// the other objects' accepted generations: an object that does not parse,
// validate or compile (or whose rules duplicate another's) is rejected on
// its own and its last good generation keeps serving. Files are one unit: a
// bad edit of any file keeps the previous files' rules.
//
// # Status
//
// Each object's status says what became of its current generation:
// observedGeneration, the number of rules, and a Ready condition, True when
// it is served and False with the field path of every problem in its message
// when it was rejected. An Event (Loaded or Rejected) goes with each
// transition. Several replicas write the same status, so they agree rather
// than fight: a write happens only when the status differs.
package rulesource
