// Package webhook serves CRD conversion from TransformationRules: the
// apiextensions.k8s.io ConversionReview (v1 and v1beta1) that
// kube-apiserver sends to a CRD's conversion webhook, answered by the same
// [engine.Converter] and rule sources as `mvpctl proxy`.
//
// # The contract
//
// A response has exactly the request's objects, in order, under the
// request's uid; each object has the desired apiVersion and its own kind,
// and its metadata differs only in labels and annotations. Any object that
// would break it fails the whole review with a Failure result that names
// the object (index, namespace/name), the rule, the step and the path:
// never a 500, a panic or a half-converted list.
//
// # Bounds
//
// The request body, the objects per review, each program run (the
// engine's deadline), the whole review, the reviews converted at once and
// the open connections are bounded, as kube-apiserver bounds its own
// requests.
//
// # Certificates
//
// The serving certificate comes from files, read again when they change, or
// from a directory where the webhook keeps its own CA and issues itself a
// serving certificate for the Service's DNS names, renewed well before it
// expires; the TLS handshake takes the current one, so a rotation fails no
// request.
package webhook
