package main

// documented are removals of kinds that k8s.io/api dropped before the first
// release the Go module proxy has (v0.15; the kubernetes-1.x.y tags of
// earlier releases are no semantic versions and the proxy does not serve
// them), written down from Kubernetes' own documentation, with the source
// of each. Nothing here is guessed: a removal without such a source is left
// out.
var documented = []entry{
	// ThirdPartyResource was deprecated in 1.7 and removed in 1.8:
	// https://github.com/kubernetes/kubernetes/blob/master/CHANGELOG/CHANGELOG-1.8.md
	// ("The deprecated ThirdPartyResource (TPR) API has been removed. To
	// avoid losing your TPR data, you must migrate to
	// CustomResourceDefinition before upgrading.") and
	// https://v1-8.docs.kubernetes.io/docs/tasks/access-kubernetes-api/migrate-third-party-resource/.
	// Its objects define a resource, as a CustomResourceDefinition does; a
	// CRD is another kind, so this is a note, not a conversion.
	{Group: "extensions", Version: "v1beta1", Kind: "ThirdPartyResource", Deprecated: release{1, 7}, Removed: release{1, 8},
		Resource: "thirdpartyresources", Note: "none; use a CustomResourceDefinition (apiextensions.k8s.io/v1)",
		Source: "Kubernetes CHANGELOG-1.8.md"},
}
