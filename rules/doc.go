// Package rules is the mvp.k8s.io/v1 TransformationRules API: its types,
// decoding with source positions, validation, the path language, and the
// compiler that turns each migration rule into a forward and a reverse jq
// program. It imports nothing else of mvpctl's: engine, schemadiff and lint
// build on it, and each concept of the rules (paths, actions and what they
// read and write, server version patterns, the origins of errors) is
// defined here once.
//
// # Directions
//
// Forward converts an object from a rule's fromVersion to its toVersion;
// reverse converts it back. Forward runs the transformations top to bottom,
// reverse runs each one's inverse bottom to top.
//
// # Round trips
//
// What one version cannot hold travels in the [ConversionDataAnnotation] of
// the converted object and is restored on the way back, so that
// reverse(forward(x)) == x and forward(reverse(y)) == y.
package rules
