// Package oracle produces expected conversion outputs from Kubernetes' own
// conversion code (k8s.io/kubernetes, see go.mod for the exact version), so
// mvpctl's TransformationRules can be checked against what a kube-apiserver
// really does rather than against our own expectations.
//
// For every pair directory under testdata/oracle/ it reads the committed
// inputs in/<name>.<label>.json, converts each one external → internal →
// external with the real scheme (generated and hand-written conversion
// functions registered by the pkg/apis/<group>/install packages), and writes:
//
//	out/<name>.<other-label>.json             the conversion to the other version
//	out/<name>.roundtrip.<label>.json         that result converted back again
//	served/<name>.<other-label>.json          same, but with the source version's
//	served/<name>.roundtrip.<label>.json      defaulting applied to the input first
//	                                          (only where defaulting changes the input)
//	ROUNDTRIP.md                              per input, what the round trip changed
//
// No defaulting is applied in out/. served/ models what a kube-apiserver does
// with a request body: its decoder applies the request version's defaulters
// before converting to the internal version.
package oracle

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"

	autoscalinginstall "k8s.io/kubernetes/pkg/apis/autoscaling/install"
	batchinstall "k8s.io/kubernetes/pkg/apis/batch/install"
	coordinationinstall "k8s.io/kubernetes/pkg/apis/coordination/install"
	extensionsinstall "k8s.io/kubernetes/pkg/apis/extensions/install"
	networkinginstall "k8s.io/kubernetes/pkg/apis/networking/install"
	policyinstall "k8s.io/kubernetes/pkg/apis/policy/install"

	admissionregistrationinstall "k8s.io/kubernetes/pkg/apis/admissionregistration/install"
	flowcontrolinstall "k8s.io/kubernetes/pkg/apis/flowcontrol/install"
	resourceinstall "k8s.io/kubernetes/pkg/apis/resource/install"
	storageinstall "k8s.io/kubernetes/pkg/apis/storage/install"

	apiextensionsinstall "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/install"

	apiregistrationinstall "k8s.io/kube-aggregator/pkg/apis/apiregistration/install"

	appsinstall "k8s.io/kubernetes/pkg/apis/apps/install"
	certificatesinstall "k8s.io/kubernetes/pkg/apis/certificates/install"
	discoveryinstall "k8s.io/kubernetes/pkg/apis/discovery/install"
	eventsinstall "k8s.io/kubernetes/pkg/apis/events/install"
	nodeinstall "k8s.io/kubernetes/pkg/apis/node/install"
	rbacinstall "k8s.io/kubernetes/pkg/apis/rbac/install"
	schedulinginstall "k8s.io/kubernetes/pkg/apis/scheduling/install"
)

// KubernetesVersion is the k8s.io/kubernetes module version the fixtures come
// from; it must match go.mod.
const KubernetesVersion = "v1.35.4"

// Side is one API version of a pair. Label is how the version is spelled in
// file names inside the pair directory (unique within the pair).
type Side struct {
	Label string
	GVK   schema.GroupVersionKind
}

// Pair is two API versions of one kind whose conversions are recorded.
type Pair struct {
	Name  string // directory name under testdata/oracle
	Sides [2]Side
	// Fuzzed maps a side label to the testdata/HEAD fixture that
	// in/fuzzed.<label>.json is copied from.
	Fuzzed map[string]string
	// FuzzedModule is the module whose round-trip fixtures Fuzzed names;
	// empty means k8s.io/api (see FixtureDirs).
	FuzzedModule string
}

// FixtureDirs maps a module to the directory, inside it, of its generated
// round-trip fixtures (testdata/HEAD/<group>.<version>.<Kind>.json).
var FixtureDirs = map[string]string{
	"k8s.io/api":                     "testdata/HEAD",
	"k8s.io/apiextensions-apiserver": "pkg/apis/testdata/HEAD",
}

// FixtureModule is the module of the pair's fuzzed fixtures.
func (p Pair) FixtureModule() string {
	if p.FuzzedModule == "" {
		return "k8s.io/api"
	}
	return p.FuzzedModule
}

func gvk(group, version, kind string) schema.GroupVersionKind {
	return schema.GroupVersionKind{Group: group, Version: version, Kind: kind}
}

// Pairs lists every pair the oracle covers.
var Pairs = []Pair{
	{
		Name: "hpa-autoscaling-v1-v2",
		Sides: [2]Side{
			{"v1", gvk("autoscaling", "v1", "HorizontalPodAutoscaler")},
			{"v2", gvk("autoscaling", "v2", "HorizontalPodAutoscaler")},
		},
		Fuzzed: map[string]string{
			"v1": "autoscaling.v1.HorizontalPodAutoscaler.json",
			"v2": "autoscaling.v2.HorizontalPodAutoscaler.json",
		},
	},
	{
		Name: "hpa-autoscaling-v2beta2-v2",
		Sides: [2]Side{
			{"v2beta2", gvk("autoscaling", "v2beta2", "HorizontalPodAutoscaler")},
			{"v2", gvk("autoscaling", "v2", "HorizontalPodAutoscaler")},
		},
		Fuzzed: map[string]string{
			"v2beta2": "autoscaling.v2beta2.HorizontalPodAutoscaler.json",
			"v2":      "autoscaling.v2.HorizontalPodAutoscaler.json",
		},
	},
	{
		Name: "pdb-policy-v1beta1-v1",
		Sides: [2]Side{
			{"v1beta1", gvk("policy", "v1beta1", "PodDisruptionBudget")},
			{"v1", gvk("policy", "v1", "PodDisruptionBudget")},
		},
		Fuzzed: map[string]string{
			"v1beta1": "policy.v1beta1.PodDisruptionBudget.json",
			"v1":      "policy.v1.PodDisruptionBudget.json",
		},
	},
	{
		Name: "ingress-networking-v1beta1-v1",
		Sides: [2]Side{
			{"v1beta1", gvk("networking.k8s.io", "v1beta1", "Ingress")},
			{"v1", gvk("networking.k8s.io", "v1", "Ingress")},
		},
		Fuzzed: map[string]string{
			"v1beta1": "networking.k8s.io.v1beta1.Ingress.json",
			"v1":      "networking.k8s.io.v1.Ingress.json",
		},
	},
	{
		Name: "ingress-extensions-v1beta1-networking-v1",
		Sides: [2]Side{
			{"v1beta1", gvk("extensions", "v1beta1", "Ingress")},
			{"v1", gvk("networking.k8s.io", "v1", "Ingress")},
		},
		Fuzzed: map[string]string{
			"v1beta1": "extensions.v1beta1.Ingress.json",
			"v1":      "networking.k8s.io.v1.Ingress.json",
		},
	},
	{
		Name: "cronjob-batch-v1beta1-v1",
		Sides: [2]Side{
			{"v1beta1", gvk("batch", "v1beta1", "CronJob")},
			{"v1", gvk("batch", "v1", "CronJob")},
		},
		Fuzzed: map[string]string{
			"v1beta1": "batch.v1beta1.CronJob.json",
			"v1":      "batch.v1.CronJob.json",
		},
	},
	{
		Name: "lease-coordination-v1beta1-v1",
		Sides: [2]Side{
			{"v1beta1", gvk("coordination.k8s.io", "v1beta1", "Lease")},
			{"v1", gvk("coordination.k8s.io", "v1", "Lease")},
		},
		Fuzzed: map[string]string{
			"v1beta1": "coordination.k8s.io.v1beta1.Lease.json",
			"v1":      "coordination.k8s.io.v1.Lease.json",
		},
	},
	// flowcontrol.apiserver.k8s.io: every beta version against v1, the hub.
	{
		Name: "flowschema-flowcontrol-v1beta1-v1",
		Sides: [2]Side{
			{"v1beta1", gvk("flowcontrol.apiserver.k8s.io", "v1beta1", "FlowSchema")},
			{"v1", gvk("flowcontrol.apiserver.k8s.io", "v1", "FlowSchema")},
		},
		Fuzzed: map[string]string{
			"v1beta1": "flowcontrol.apiserver.k8s.io.v1beta1.FlowSchema.json",
			"v1":      "flowcontrol.apiserver.k8s.io.v1.FlowSchema.json",
		},
	},
	{
		Name: "flowschema-flowcontrol-v1beta2-v1",
		Sides: [2]Side{
			{"v1beta2", gvk("flowcontrol.apiserver.k8s.io", "v1beta2", "FlowSchema")},
			{"v1", gvk("flowcontrol.apiserver.k8s.io", "v1", "FlowSchema")},
		},
		Fuzzed: map[string]string{
			"v1beta2": "flowcontrol.apiserver.k8s.io.v1beta2.FlowSchema.json",
			"v1":      "flowcontrol.apiserver.k8s.io.v1.FlowSchema.json",
		},
	},
	{
		Name: "flowschema-flowcontrol-v1beta3-v1",
		Sides: [2]Side{
			{"v1beta3", gvk("flowcontrol.apiserver.k8s.io", "v1beta3", "FlowSchema")},
			{"v1", gvk("flowcontrol.apiserver.k8s.io", "v1", "FlowSchema")},
		},
		Fuzzed: map[string]string{
			"v1beta3": "flowcontrol.apiserver.k8s.io.v1beta3.FlowSchema.json",
			"v1":      "flowcontrol.apiserver.k8s.io.v1.FlowSchema.json",
		},
	},
	{
		Name: "prioritylevel-flowcontrol-v1beta1-v1",
		Sides: [2]Side{
			{"v1beta1", gvk("flowcontrol.apiserver.k8s.io", "v1beta1", "PriorityLevelConfiguration")},
			{"v1", gvk("flowcontrol.apiserver.k8s.io", "v1", "PriorityLevelConfiguration")},
		},
		Fuzzed: map[string]string{
			"v1beta1": "flowcontrol.apiserver.k8s.io.v1beta1.PriorityLevelConfiguration.json",
			"v1":      "flowcontrol.apiserver.k8s.io.v1.PriorityLevelConfiguration.json",
		},
	},
	{
		Name: "prioritylevel-flowcontrol-v1beta2-v1",
		Sides: [2]Side{
			{"v1beta2", gvk("flowcontrol.apiserver.k8s.io", "v1beta2", "PriorityLevelConfiguration")},
			{"v1", gvk("flowcontrol.apiserver.k8s.io", "v1", "PriorityLevelConfiguration")},
		},
		Fuzzed: map[string]string{
			"v1beta2": "flowcontrol.apiserver.k8s.io.v1beta2.PriorityLevelConfiguration.json",
			"v1":      "flowcontrol.apiserver.k8s.io.v1.PriorityLevelConfiguration.json",
		},
	},
	{
		Name: "prioritylevel-flowcontrol-v1beta3-v1",
		Sides: [2]Side{
			{"v1beta3", gvk("flowcontrol.apiserver.k8s.io", "v1beta3", "PriorityLevelConfiguration")},
			{"v1", gvk("flowcontrol.apiserver.k8s.io", "v1", "PriorityLevelConfiguration")},
		},
		Fuzzed: map[string]string{
			"v1beta3": "flowcontrol.apiserver.k8s.io.v1beta3.PriorityLevelConfiguration.json",
			"v1":      "flowcontrol.apiserver.k8s.io.v1.PriorityLevelConfiguration.json",
		},
	},
	// flowcontrol.apiserver.k8s.io: the hops v1beta1 and v1beta2 -> v1beta3.
	{
		Name: "flowschema-flowcontrol-v1beta1-v1beta3",
		Sides: [2]Side{
			{"v1beta1", gvk("flowcontrol.apiserver.k8s.io", "v1beta1", "FlowSchema")},
			{"v1beta3", gvk("flowcontrol.apiserver.k8s.io", "v1beta3", "FlowSchema")},
		},
		Fuzzed: map[string]string{
			"v1beta1": "flowcontrol.apiserver.k8s.io.v1beta1.FlowSchema.json",
			"v1beta3": "flowcontrol.apiserver.k8s.io.v1beta3.FlowSchema.json",
		},
	},
	{
		Name: "flowschema-flowcontrol-v1beta2-v1beta3",
		Sides: [2]Side{
			{"v1beta2", gvk("flowcontrol.apiserver.k8s.io", "v1beta2", "FlowSchema")},
			{"v1beta3", gvk("flowcontrol.apiserver.k8s.io", "v1beta3", "FlowSchema")},
		},
		Fuzzed: map[string]string{
			"v1beta2": "flowcontrol.apiserver.k8s.io.v1beta2.FlowSchema.json",
			"v1beta3": "flowcontrol.apiserver.k8s.io.v1beta3.FlowSchema.json",
		},
	},
	{
		Name: "prioritylevel-flowcontrol-v1beta1-v1beta3",
		Sides: [2]Side{
			{"v1beta1", gvk("flowcontrol.apiserver.k8s.io", "v1beta1", "PriorityLevelConfiguration")},
			{"v1beta3", gvk("flowcontrol.apiserver.k8s.io", "v1beta3", "PriorityLevelConfiguration")},
		},
		Fuzzed: map[string]string{
			"v1beta1": "flowcontrol.apiserver.k8s.io.v1beta1.PriorityLevelConfiguration.json",
			"v1beta3": "flowcontrol.apiserver.k8s.io.v1beta3.PriorityLevelConfiguration.json",
		},
	},
	{
		Name: "prioritylevel-flowcontrol-v1beta2-v1beta3",
		Sides: [2]Side{
			{"v1beta2", gvk("flowcontrol.apiserver.k8s.io", "v1beta2", "PriorityLevelConfiguration")},
			{"v1beta3", gvk("flowcontrol.apiserver.k8s.io", "v1beta3", "PriorityLevelConfiguration")},
		},
		Fuzzed: map[string]string{
			"v1beta2": "flowcontrol.apiserver.k8s.io.v1beta2.PriorityLevelConfiguration.json",
			"v1beta3": "flowcontrol.apiserver.k8s.io.v1beta3.PriorityLevelConfiguration.json",
		},
	},
	// networking.k8s.io ServiceCIDR, IPAddress, IngressClass.
	{
		Name: "servicecidr-networking-v1beta1-v1",
		Sides: [2]Side{
			{"v1beta1", gvk("networking.k8s.io", "v1beta1", "ServiceCIDR")},
			{"v1", gvk("networking.k8s.io", "v1", "ServiceCIDR")},
		},
		Fuzzed: map[string]string{
			"v1beta1": "networking.k8s.io.v1beta1.ServiceCIDR.json",
			"v1":      "networking.k8s.io.v1.ServiceCIDR.json",
		},
	},
	{
		Name: "ipaddress-networking-v1beta1-v1",
		Sides: [2]Side{
			{"v1beta1", gvk("networking.k8s.io", "v1beta1", "IPAddress")},
			{"v1", gvk("networking.k8s.io", "v1", "IPAddress")},
		},
		Fuzzed: map[string]string{
			"v1beta1": "networking.k8s.io.v1beta1.IPAddress.json",
			"v1":      "networking.k8s.io.v1.IPAddress.json",
		},
	},
	{
		Name: "ingressclass-networking-v1beta1-v1",
		Sides: [2]Side{
			{"v1beta1", gvk("networking.k8s.io", "v1beta1", "IngressClass")},
			{"v1", gvk("networking.k8s.io", "v1", "IngressClass")},
		},
		Fuzzed: map[string]string{
			"v1beta1": "networking.k8s.io.v1beta1.IngressClass.json",
			"v1":      "networking.k8s.io.v1.IngressClass.json",
		},
	},
	// storage.k8s.io VolumeAttributesClass.
	{
		Name: "volumeattributesclass-storage-v1alpha1-v1",
		Sides: [2]Side{
			{"v1alpha1", gvk("storage.k8s.io", "v1alpha1", "VolumeAttributesClass")},
			{"v1", gvk("storage.k8s.io", "v1", "VolumeAttributesClass")},
		},
		Fuzzed: map[string]string{
			"v1alpha1": "storage.k8s.io.v1alpha1.VolumeAttributesClass.json",
			"v1":       "storage.k8s.io.v1.VolumeAttributesClass.json",
		},
	},
	{
		Name: "volumeattributesclass-storage-v1beta1-v1",
		Sides: [2]Side{
			{"v1beta1", gvk("storage.k8s.io", "v1beta1", "VolumeAttributesClass")},
			{"v1", gvk("storage.k8s.io", "v1", "VolumeAttributesClass")},
		},
		Fuzzed: map[string]string{
			"v1beta1": "storage.k8s.io.v1beta1.VolumeAttributesClass.json",
			"v1":      "storage.k8s.io.v1.VolumeAttributesClass.json",
		},
	},
	// coordination.k8s.io LeaseCandidate: v1beta1 is the newest version in v1.35.
	{
		Name: "leasecandidate-coordination-v1alpha2-v1beta1",
		Sides: [2]Side{
			{"v1alpha2", gvk("coordination.k8s.io", "v1alpha2", "LeaseCandidate")},
			{"v1beta1", gvk("coordination.k8s.io", "v1beta1", "LeaseCandidate")},
		},
		Fuzzed: map[string]string{
			"v1alpha2": "coordination.k8s.io.v1alpha2.LeaseCandidate.json",
			"v1beta1":  "coordination.k8s.io.v1beta1.LeaseCandidate.json",
		},
	},
	// resource.k8s.io: v1beta1 and v1beta2 against v1, the hub.
	{
		Name: "deviceclass-resource-v1beta1-v1",
		Sides: [2]Side{
			{"v1beta1", gvk("resource.k8s.io", "v1beta1", "DeviceClass")},
			{"v1", gvk("resource.k8s.io", "v1", "DeviceClass")},
		},
		Fuzzed: map[string]string{
			"v1beta1": "resource.k8s.io.v1beta1.DeviceClass.json",
			"v1":      "resource.k8s.io.v1.DeviceClass.json",
		},
	},
	{
		Name: "resourceclaim-resource-v1beta1-v1",
		Sides: [2]Side{
			{"v1beta1", gvk("resource.k8s.io", "v1beta1", "ResourceClaim")},
			{"v1", gvk("resource.k8s.io", "v1", "ResourceClaim")},
		},
		Fuzzed: map[string]string{
			"v1beta1": "resource.k8s.io.v1beta1.ResourceClaim.json",
			"v1":      "resource.k8s.io.v1.ResourceClaim.json",
		},
	},
	{
		Name: "resourceclaimtemplate-resource-v1beta1-v1",
		Sides: [2]Side{
			{"v1beta1", gvk("resource.k8s.io", "v1beta1", "ResourceClaimTemplate")},
			{"v1", gvk("resource.k8s.io", "v1", "ResourceClaimTemplate")},
		},
		Fuzzed: map[string]string{
			"v1beta1": "resource.k8s.io.v1beta1.ResourceClaimTemplate.json",
			"v1":      "resource.k8s.io.v1.ResourceClaimTemplate.json",
		},
	},
	{
		Name: "resourceslice-resource-v1beta1-v1",
		Sides: [2]Side{
			{"v1beta1", gvk("resource.k8s.io", "v1beta1", "ResourceSlice")},
			{"v1", gvk("resource.k8s.io", "v1", "ResourceSlice")},
		},
		Fuzzed: map[string]string{
			"v1beta1": "resource.k8s.io.v1beta1.ResourceSlice.json",
			"v1":      "resource.k8s.io.v1.ResourceSlice.json",
		},
	},
	{
		Name: "deviceclass-resource-v1beta2-v1",
		Sides: [2]Side{
			{"v1beta2", gvk("resource.k8s.io", "v1beta2", "DeviceClass")},
			{"v1", gvk("resource.k8s.io", "v1", "DeviceClass")},
		},
		Fuzzed: map[string]string{
			"v1beta2": "resource.k8s.io.v1beta2.DeviceClass.json",
			"v1":      "resource.k8s.io.v1.DeviceClass.json",
		},
	},
	{
		Name: "resourceclaim-resource-v1beta2-v1",
		Sides: [2]Side{
			{"v1beta2", gvk("resource.k8s.io", "v1beta2", "ResourceClaim")},
			{"v1", gvk("resource.k8s.io", "v1", "ResourceClaim")},
		},
		Fuzzed: map[string]string{
			"v1beta2": "resource.k8s.io.v1beta2.ResourceClaim.json",
			"v1":      "resource.k8s.io.v1.ResourceClaim.json",
		},
	},
	{
		Name: "resourceclaimtemplate-resource-v1beta2-v1",
		Sides: [2]Side{
			{"v1beta2", gvk("resource.k8s.io", "v1beta2", "ResourceClaimTemplate")},
			{"v1", gvk("resource.k8s.io", "v1", "ResourceClaimTemplate")},
		},
		Fuzzed: map[string]string{
			"v1beta2": "resource.k8s.io.v1beta2.ResourceClaimTemplate.json",
			"v1":      "resource.k8s.io.v1.ResourceClaimTemplate.json",
		},
	},
	{
		Name: "resourceslice-resource-v1beta2-v1",
		Sides: [2]Side{
			{"v1beta2", gvk("resource.k8s.io", "v1beta2", "ResourceSlice")},
			{"v1", gvk("resource.k8s.io", "v1", "ResourceSlice")},
		},
		Fuzzed: map[string]string{
			"v1beta2": "resource.k8s.io.v1beta2.ResourceSlice.json",
			"v1":      "resource.k8s.io.v1.ResourceSlice.json",
		},
	},
	// admissionregistration.k8s.io
	{
		Name: "validatingwebhookconfiguration-admissionregistration-v1beta1-v1",
		Sides: [2]Side{
			{"v1beta1", gvk("admissionregistration.k8s.io", "v1beta1", "ValidatingWebhookConfiguration")},
			{"v1", gvk("admissionregistration.k8s.io", "v1", "ValidatingWebhookConfiguration")},
		},
		Fuzzed: map[string]string{
			"v1beta1": "admissionregistration.k8s.io.v1beta1.ValidatingWebhookConfiguration.json",
			"v1":      "admissionregistration.k8s.io.v1.ValidatingWebhookConfiguration.json",
		},
	},
	{
		Name: "mutatingwebhookconfiguration-admissionregistration-v1beta1-v1",
		Sides: [2]Side{
			{"v1beta1", gvk("admissionregistration.k8s.io", "v1beta1", "MutatingWebhookConfiguration")},
			{"v1", gvk("admissionregistration.k8s.io", "v1", "MutatingWebhookConfiguration")},
		},
		Fuzzed: map[string]string{
			"v1beta1": "admissionregistration.k8s.io.v1beta1.MutatingWebhookConfiguration.json",
			"v1":      "admissionregistration.k8s.io.v1.MutatingWebhookConfiguration.json",
		},
	},
	{
		Name: "validatingadmissionpolicy-admissionregistration-v1beta1-v1",
		Sides: [2]Side{
			{"v1beta1", gvk("admissionregistration.k8s.io", "v1beta1", "ValidatingAdmissionPolicy")},
			{"v1", gvk("admissionregistration.k8s.io", "v1", "ValidatingAdmissionPolicy")},
		},
		Fuzzed: map[string]string{
			"v1beta1": "admissionregistration.k8s.io.v1beta1.ValidatingAdmissionPolicy.json",
			"v1":      "admissionregistration.k8s.io.v1.ValidatingAdmissionPolicy.json",
		},
	},
	{
		Name: "validatingadmissionpolicy-admissionregistration-v1alpha1-v1",
		Sides: [2]Side{
			{"v1alpha1", gvk("admissionregistration.k8s.io", "v1alpha1", "ValidatingAdmissionPolicy")},
			{"v1", gvk("admissionregistration.k8s.io", "v1", "ValidatingAdmissionPolicy")},
		},
		Fuzzed: map[string]string{
			"v1alpha1": "admissionregistration.k8s.io.v1alpha1.ValidatingAdmissionPolicy.json",
			"v1":       "admissionregistration.k8s.io.v1.ValidatingAdmissionPolicy.json",
		},
	},
	{
		Name: "validatingadmissionpolicybinding-admissionregistration-v1beta1-v1",
		Sides: [2]Side{
			{"v1beta1", gvk("admissionregistration.k8s.io", "v1beta1", "ValidatingAdmissionPolicyBinding")},
			{"v1", gvk("admissionregistration.k8s.io", "v1", "ValidatingAdmissionPolicyBinding")},
		},
		Fuzzed: map[string]string{
			"v1beta1": "admissionregistration.k8s.io.v1beta1.ValidatingAdmissionPolicyBinding.json",
			"v1":      "admissionregistration.k8s.io.v1.ValidatingAdmissionPolicyBinding.json",
		},
	},
	{
		Name: "validatingadmissionpolicybinding-admissionregistration-v1alpha1-v1",
		Sides: [2]Side{
			{"v1alpha1", gvk("admissionregistration.k8s.io", "v1alpha1", "ValidatingAdmissionPolicyBinding")},
			{"v1", gvk("admissionregistration.k8s.io", "v1", "ValidatingAdmissionPolicyBinding")},
		},
		Fuzzed: map[string]string{
			"v1alpha1": "admissionregistration.k8s.io.v1alpha1.ValidatingAdmissionPolicyBinding.json",
			"v1":       "admissionregistration.k8s.io.v1.ValidatingAdmissionPolicyBinding.json",
		},
	},
	{
		Name: "mutatingadmissionpolicy-admissionregistration-v1alpha1-v1beta1",
		Sides: [2]Side{
			{"v1alpha1", gvk("admissionregistration.k8s.io", "v1alpha1", "MutatingAdmissionPolicy")},
			{"v1beta1", gvk("admissionregistration.k8s.io", "v1beta1", "MutatingAdmissionPolicy")},
		},
		Fuzzed: map[string]string{
			"v1alpha1": "admissionregistration.k8s.io.v1alpha1.MutatingAdmissionPolicy.json",
			"v1beta1":  "admissionregistration.k8s.io.v1beta1.MutatingAdmissionPolicy.json",
		},
	},
	{
		Name: "mutatingadmissionpolicybinding-admissionregistration-v1alpha1-v1beta1",
		Sides: [2]Side{
			{"v1alpha1", gvk("admissionregistration.k8s.io", "v1alpha1", "MutatingAdmissionPolicyBinding")},
			{"v1beta1", gvk("admissionregistration.k8s.io", "v1beta1", "MutatingAdmissionPolicyBinding")},
		},
		Fuzzed: map[string]string{
			"v1alpha1": "admissionregistration.k8s.io.v1alpha1.MutatingAdmissionPolicyBinding.json",
			"v1beta1":  "admissionregistration.k8s.io.v1beta1.MutatingAdmissionPolicyBinding.json",
		},
	},
	// apiextensions.k8s.io
	{
		Name: "customresourcedefinition-apiextensions-v1beta1-v1",
		Sides: [2]Side{
			{"v1beta1", gvk("apiextensions.k8s.io", "v1beta1", "CustomResourceDefinition")},
			{"v1", gvk("apiextensions.k8s.io", "v1", "CustomResourceDefinition")},
		},
		Fuzzed: map[string]string{
			"v1beta1": "apiextensions.k8s.io.v1beta1.CustomResourceDefinition.json",
			"v1":      "apiextensions.k8s.io.v1.CustomResourceDefinition.json",
		},
		FuzzedModule: "k8s.io/apiextensions-apiserver",
	},
	// apiregistration.k8s.io (k8s.io/kube-aggregator has no round-trip fixtures)
	{
		Name: "apiservice-apiregistration-v1beta1-v1",
		Sides: [2]Side{
			{"v1beta1", gvk("apiregistration.k8s.io", "v1beta1", "APIService")},
			{"v1", gvk("apiregistration.k8s.io", "v1", "APIService")},
		},
	},
	// certificates.k8s.io
	{
		Name: "certificatesigningrequest-certificates-v1beta1-v1",
		Sides: [2]Side{
			{"v1beta1", gvk("certificates.k8s.io", "v1beta1", "CertificateSigningRequest")},
			{"v1", gvk("certificates.k8s.io", "v1", "CertificateSigningRequest")},
		},
		Fuzzed: map[string]string{
			"v1beta1": "certificates.k8s.io.v1beta1.CertificateSigningRequest.json",
			"v1":      "certificates.k8s.io.v1.CertificateSigningRequest.json",
		},
	},
	{
		Name: "clustertrustbundle-certificates-v1alpha1-v1beta1",
		Sides: [2]Side{
			{"v1alpha1", gvk("certificates.k8s.io", "v1alpha1", "ClusterTrustBundle")},
			{"v1beta1", gvk("certificates.k8s.io", "v1beta1", "ClusterTrustBundle")},
		},
		Fuzzed: map[string]string{
			"v1alpha1": "certificates.k8s.io.v1alpha1.ClusterTrustBundle.json",
			"v1beta1":  "certificates.k8s.io.v1beta1.ClusterTrustBundle.json",
		},
	},
	// apps/v1beta1, apps/v1beta2 and extensions/v1beta1 workloads
	{
		Name: "deployment-apps-v1beta1-v1",
		Sides: [2]Side{
			{"v1beta1", gvk("apps", "v1beta1", "Deployment")},
			{"v1", gvk("apps", "v1", "Deployment")},
		},
		Fuzzed: map[string]string{
			"v1beta1": "apps.v1beta1.Deployment.json",
			"v1":      "apps.v1.Deployment.json",
		},
	},
	{
		Name: "deployment-apps-v1beta2-v1",
		Sides: [2]Side{
			{"v1beta2", gvk("apps", "v1beta2", "Deployment")},
			{"v1", gvk("apps", "v1", "Deployment")},
		},
		Fuzzed: map[string]string{
			"v1beta2": "apps.v1beta2.Deployment.json",
			"v1":      "apps.v1.Deployment.json",
		},
	},
	{
		Name: "statefulset-apps-v1beta1-v1",
		Sides: [2]Side{
			{"v1beta1", gvk("apps", "v1beta1", "StatefulSet")},
			{"v1", gvk("apps", "v1", "StatefulSet")},
		},
		Fuzzed: map[string]string{
			"v1beta1": "apps.v1beta1.StatefulSet.json",
			"v1":      "apps.v1.StatefulSet.json",
		},
	},
	{
		Name: "statefulset-apps-v1beta2-v1",
		Sides: [2]Side{
			{"v1beta2", gvk("apps", "v1beta2", "StatefulSet")},
			{"v1", gvk("apps", "v1", "StatefulSet")},
		},
		Fuzzed: map[string]string{
			"v1beta2": "apps.v1beta2.StatefulSet.json",
			"v1":      "apps.v1.StatefulSet.json",
		},
	},
	{
		Name: "daemonset-apps-v1beta2-v1",
		Sides: [2]Side{
			{"v1beta2", gvk("apps", "v1beta2", "DaemonSet")},
			{"v1", gvk("apps", "v1", "DaemonSet")},
		},
		Fuzzed: map[string]string{
			"v1beta2": "apps.v1beta2.DaemonSet.json",
			"v1":      "apps.v1.DaemonSet.json",
		},
	},
	{
		Name: "replicaset-apps-v1beta2-v1",
		Sides: [2]Side{
			{"v1beta2", gvk("apps", "v1beta2", "ReplicaSet")},
			{"v1", gvk("apps", "v1", "ReplicaSet")},
		},
		Fuzzed: map[string]string{
			"v1beta2": "apps.v1beta2.ReplicaSet.json",
			"v1":      "apps.v1.ReplicaSet.json",
		},
	},
	{
		Name: "controllerrevision-apps-v1beta1-v1",
		Sides: [2]Side{
			{"v1beta1", gvk("apps", "v1beta1", "ControllerRevision")},
			{"v1", gvk("apps", "v1", "ControllerRevision")},
		},
		Fuzzed: map[string]string{
			"v1beta1": "apps.v1beta1.ControllerRevision.json",
			"v1":      "apps.v1.ControllerRevision.json",
		},
	},
	{
		Name: "controllerrevision-apps-v1beta2-v1",
		Sides: [2]Side{
			{"v1beta2", gvk("apps", "v1beta2", "ControllerRevision")},
			{"v1", gvk("apps", "v1", "ControllerRevision")},
		},
		Fuzzed: map[string]string{
			"v1beta2": "apps.v1beta2.ControllerRevision.json",
			"v1":      "apps.v1.ControllerRevision.json",
		},
	},
	{
		Name: "deployment-extensions-v1beta1-apps-v1",
		Sides: [2]Side{
			{"v1beta1", gvk("extensions", "v1beta1", "Deployment")},
			{"v1", gvk("apps", "v1", "Deployment")},
		},
		Fuzzed: map[string]string{
			"v1beta1": "extensions.v1beta1.Deployment.json",
			"v1":      "apps.v1.Deployment.json",
		},
	},
	{
		Name: "daemonset-extensions-v1beta1-apps-v1",
		Sides: [2]Side{
			{"v1beta1", gvk("extensions", "v1beta1", "DaemonSet")},
			{"v1", gvk("apps", "v1", "DaemonSet")},
		},
		Fuzzed: map[string]string{
			"v1beta1": "extensions.v1beta1.DaemonSet.json",
			"v1":      "apps.v1.DaemonSet.json",
		},
	},
	{
		Name: "replicaset-extensions-v1beta1-apps-v1",
		Sides: [2]Side{
			{"v1beta1", gvk("extensions", "v1beta1", "ReplicaSet")},
			{"v1", gvk("apps", "v1", "ReplicaSet")},
		},
		Fuzzed: map[string]string{
			"v1beta1": "extensions.v1beta1.ReplicaSet.json",
			"v1":      "apps.v1.ReplicaSet.json",
		},
	},
	// extensions/v1beta1 NetworkPolicy
	{
		Name: "networkpolicy-extensions-v1beta1-networking-v1",
		Sides: [2]Side{
			{"v1beta1", gvk("extensions", "v1beta1", "NetworkPolicy")},
			{"v1", gvk("networking.k8s.io", "v1", "NetworkPolicy")},
		},
		Fuzzed: map[string]string{
			"v1beta1": "extensions.v1beta1.NetworkPolicy.json",
			"v1":      "networking.k8s.io.v1.NetworkPolicy.json",
		},
	},
	// rbac.authorization.k8s.io/v1beta1 and v1alpha1
	{
		Name: "role-rbac-v1beta1-v1",
		Sides: [2]Side{
			{"v1beta1", gvk("rbac.authorization.k8s.io", "v1beta1", "Role")},
			{"v1", gvk("rbac.authorization.k8s.io", "v1", "Role")},
		},
		Fuzzed: map[string]string{
			"v1beta1": "rbac.authorization.k8s.io.v1beta1.Role.json",
			"v1":      "rbac.authorization.k8s.io.v1.Role.json",
		},
	},
	{
		Name: "clusterrole-rbac-v1beta1-v1",
		Sides: [2]Side{
			{"v1beta1", gvk("rbac.authorization.k8s.io", "v1beta1", "ClusterRole")},
			{"v1", gvk("rbac.authorization.k8s.io", "v1", "ClusterRole")},
		},
		Fuzzed: map[string]string{
			"v1beta1": "rbac.authorization.k8s.io.v1beta1.ClusterRole.json",
			"v1":      "rbac.authorization.k8s.io.v1.ClusterRole.json",
		},
	},
	{
		Name: "rolebinding-rbac-v1beta1-v1",
		Sides: [2]Side{
			{"v1beta1", gvk("rbac.authorization.k8s.io", "v1beta1", "RoleBinding")},
			{"v1", gvk("rbac.authorization.k8s.io", "v1", "RoleBinding")},
		},
		Fuzzed: map[string]string{
			"v1beta1": "rbac.authorization.k8s.io.v1beta1.RoleBinding.json",
			"v1":      "rbac.authorization.k8s.io.v1.RoleBinding.json",
		},
	},
	{
		Name: "clusterrolebinding-rbac-v1beta1-v1",
		Sides: [2]Side{
			{"v1beta1", gvk("rbac.authorization.k8s.io", "v1beta1", "ClusterRoleBinding")},
			{"v1", gvk("rbac.authorization.k8s.io", "v1", "ClusterRoleBinding")},
		},
		Fuzzed: map[string]string{
			"v1beta1": "rbac.authorization.k8s.io.v1beta1.ClusterRoleBinding.json",
			"v1":      "rbac.authorization.k8s.io.v1.ClusterRoleBinding.json",
		},
	},
	{
		Name: "role-rbac-v1alpha1-v1",
		Sides: [2]Side{
			{"v1alpha1", gvk("rbac.authorization.k8s.io", "v1alpha1", "Role")},
			{"v1", gvk("rbac.authorization.k8s.io", "v1", "Role")},
		},
		Fuzzed: map[string]string{
			"v1alpha1": "rbac.authorization.k8s.io.v1alpha1.Role.json",
			"v1":       "rbac.authorization.k8s.io.v1.Role.json",
		},
	},
	{
		Name: "clusterrole-rbac-v1alpha1-v1",
		Sides: [2]Side{
			{"v1alpha1", gvk("rbac.authorization.k8s.io", "v1alpha1", "ClusterRole")},
			{"v1", gvk("rbac.authorization.k8s.io", "v1", "ClusterRole")},
		},
		Fuzzed: map[string]string{
			"v1alpha1": "rbac.authorization.k8s.io.v1alpha1.ClusterRole.json",
			"v1":       "rbac.authorization.k8s.io.v1.ClusterRole.json",
		},
	},
	{
		Name: "rolebinding-rbac-v1alpha1-v1",
		Sides: [2]Side{
			{"v1alpha1", gvk("rbac.authorization.k8s.io", "v1alpha1", "RoleBinding")},
			{"v1", gvk("rbac.authorization.k8s.io", "v1", "RoleBinding")},
		},
		Fuzzed: map[string]string{
			"v1alpha1": "rbac.authorization.k8s.io.v1alpha1.RoleBinding.json",
			"v1":       "rbac.authorization.k8s.io.v1.RoleBinding.json",
		},
	},
	{
		Name: "clusterrolebinding-rbac-v1alpha1-v1",
		Sides: [2]Side{
			{"v1alpha1", gvk("rbac.authorization.k8s.io", "v1alpha1", "ClusterRoleBinding")},
			{"v1", gvk("rbac.authorization.k8s.io", "v1", "ClusterRoleBinding")},
		},
		Fuzzed: map[string]string{
			"v1alpha1": "rbac.authorization.k8s.io.v1alpha1.ClusterRoleBinding.json",
			"v1":       "rbac.authorization.k8s.io.v1.ClusterRoleBinding.json",
		},
	},
	// scheduling.k8s.io/v1beta1 and v1alpha1
	{
		Name: "priorityclass-scheduling-v1beta1-v1",
		Sides: [2]Side{
			{"v1beta1", gvk("scheduling.k8s.io", "v1beta1", "PriorityClass")},
			{"v1", gvk("scheduling.k8s.io", "v1", "PriorityClass")},
		},
		Fuzzed: map[string]string{
			"v1beta1": "scheduling.k8s.io.v1beta1.PriorityClass.json",
			"v1":      "scheduling.k8s.io.v1.PriorityClass.json",
		},
	},
	{
		Name: "priorityclass-scheduling-v1alpha1-v1",
		Sides: [2]Side{
			{"v1alpha1", gvk("scheduling.k8s.io", "v1alpha1", "PriorityClass")},
			{"v1", gvk("scheduling.k8s.io", "v1", "PriorityClass")},
		},
		Fuzzed: map[string]string{
			"v1alpha1": "scheduling.k8s.io.v1alpha1.PriorityClass.json",
			"v1":       "scheduling.k8s.io.v1.PriorityClass.json",
		},
	},
	// storage.k8s.io/v1beta1 and v1alpha1
	{
		Name: "storageclass-storage-v1beta1-v1",
		Sides: [2]Side{
			{"v1beta1", gvk("storage.k8s.io", "v1beta1", "StorageClass")},
			{"v1", gvk("storage.k8s.io", "v1", "StorageClass")},
		},
		Fuzzed: map[string]string{
			"v1beta1": "storage.k8s.io.v1beta1.StorageClass.json",
			"v1":      "storage.k8s.io.v1.StorageClass.json",
		},
	},
	{
		Name: "volumeattachment-storage-v1beta1-v1",
		Sides: [2]Side{
			{"v1beta1", gvk("storage.k8s.io", "v1beta1", "VolumeAttachment")},
			{"v1", gvk("storage.k8s.io", "v1", "VolumeAttachment")},
		},
		Fuzzed: map[string]string{
			"v1beta1": "storage.k8s.io.v1beta1.VolumeAttachment.json",
			"v1":      "storage.k8s.io.v1.VolumeAttachment.json",
		},
	},
	{
		Name: "csidriver-storage-v1beta1-v1",
		Sides: [2]Side{
			{"v1beta1", gvk("storage.k8s.io", "v1beta1", "CSIDriver")},
			{"v1", gvk("storage.k8s.io", "v1", "CSIDriver")},
		},
		Fuzzed: map[string]string{
			"v1beta1": "storage.k8s.io.v1beta1.CSIDriver.json",
			"v1":      "storage.k8s.io.v1.CSIDriver.json",
		},
	},
	{
		Name: "csinode-storage-v1beta1-v1",
		Sides: [2]Side{
			{"v1beta1", gvk("storage.k8s.io", "v1beta1", "CSINode")},
			{"v1", gvk("storage.k8s.io", "v1", "CSINode")},
		},
		Fuzzed: map[string]string{
			"v1beta1": "storage.k8s.io.v1beta1.CSINode.json",
			"v1":      "storage.k8s.io.v1.CSINode.json",
		},
	},
	{
		Name: "csistoragecapacity-storage-v1beta1-v1",
		Sides: [2]Side{
			{"v1beta1", gvk("storage.k8s.io", "v1beta1", "CSIStorageCapacity")},
			{"v1", gvk("storage.k8s.io", "v1", "CSIStorageCapacity")},
		},
		Fuzzed: map[string]string{
			"v1beta1": "storage.k8s.io.v1beta1.CSIStorageCapacity.json",
			"v1":      "storage.k8s.io.v1.CSIStorageCapacity.json",
		},
	},
	{
		Name: "volumeattachment-storage-v1alpha1-v1",
		Sides: [2]Side{
			{"v1alpha1", gvk("storage.k8s.io", "v1alpha1", "VolumeAttachment")},
			{"v1", gvk("storage.k8s.io", "v1", "VolumeAttachment")},
		},
		Fuzzed: map[string]string{
			"v1alpha1": "storage.k8s.io.v1alpha1.VolumeAttachment.json",
			"v1":       "storage.k8s.io.v1.VolumeAttachment.json",
		},
	},
	{
		Name: "csistoragecapacity-storage-v1alpha1-v1beta1",
		Sides: [2]Side{
			{"v1alpha1", gvk("storage.k8s.io", "v1alpha1", "CSIStorageCapacity")},
			{"v1beta1", gvk("storage.k8s.io", "v1beta1", "CSIStorageCapacity")},
		},
		Fuzzed: map[string]string{
			"v1alpha1": "storage.k8s.io.v1alpha1.CSIStorageCapacity.json",
			"v1beta1":  "storage.k8s.io.v1beta1.CSIStorageCapacity.json",
		},
	},
	// node.k8s.io/v1beta1 and v1alpha1
	{
		Name: "runtimeclass-node-v1beta1-v1",
		Sides: [2]Side{
			{"v1beta1", gvk("node.k8s.io", "v1beta1", "RuntimeClass")},
			{"v1", gvk("node.k8s.io", "v1", "RuntimeClass")},
		},
		Fuzzed: map[string]string{
			"v1beta1": "node.k8s.io.v1beta1.RuntimeClass.json",
			"v1":      "node.k8s.io.v1.RuntimeClass.json",
		},
	},
	{
		Name: "runtimeclass-node-v1alpha1-v1",
		Sides: [2]Side{
			{"v1alpha1", gvk("node.k8s.io", "v1alpha1", "RuntimeClass")},
			{"v1", gvk("node.k8s.io", "v1", "RuntimeClass")},
		},
		Fuzzed: map[string]string{
			"v1alpha1": "node.k8s.io.v1alpha1.RuntimeClass.json",
			"v1":       "node.k8s.io.v1.RuntimeClass.json",
		},
	},
	// events.k8s.io/v1beta1
	{
		Name: "event-events-v1beta1-v1",
		Sides: [2]Side{
			{"v1beta1", gvk("events.k8s.io", "v1beta1", "Event")},
			{"v1", gvk("events.k8s.io", "v1", "Event")},
		},
		Fuzzed: map[string]string{
			"v1beta1": "events.k8s.io.v1beta1.Event.json",
			"v1":      "events.k8s.io.v1.Event.json",
		},
	},
	// discovery.k8s.io/v1beta1
	{
		Name: "endpointslice-discovery-v1beta1-v1",
		Sides: [2]Side{
			{"v1beta1", gvk("discovery.k8s.io", "v1beta1", "EndpointSlice")},
			{"v1", gvk("discovery.k8s.io", "v1", "EndpointSlice")},
		},
		Fuzzed: map[string]string{
			"v1beta1": "discovery.k8s.io.v1beta1.EndpointSlice.json",
			"v1":      "discovery.k8s.io.v1.EndpointSlice.json",
		},
	},
	// autoscaling/v2beta1
	{
		Name: "hpa-autoscaling-v2beta1-v2",
		Sides: [2]Side{
			{"v2beta1", gvk("autoscaling", "v2beta1", "HorizontalPodAutoscaler")},
			{"v2", gvk("autoscaling", "v2", "HorizontalPodAutoscaler")},
		},
		Fuzzed: map[string]string{
			"v2beta1": "autoscaling.v2beta1.HorizontalPodAutoscaler.json",
			"v2":      "autoscaling.v2.HorizontalPodAutoscaler.json",
		},
	},
}

// NewScheme returns a fresh scheme with the internal and external types,
// conversion functions and defaulters of the groups the pairs use.
func NewScheme() *runtime.Scheme {
	s := runtime.NewScheme()
	autoscalinginstall.Install(s)
	batchinstall.Install(s)
	coordinationinstall.Install(s)
	extensionsinstall.Install(s)
	networkinginstall.Install(s)
	policyinstall.Install(s)
	// flowcontrol.apiserver.k8s.io, resource.k8s.io, networking.k8s.io
	// ServiceCIDR/IPAddress/IngressClass, storage.k8s.io
	// VolumeAttributesClass, coordination.k8s.io LeaseCandidate.
	flowcontrolinstall.Install(s)
	resourceinstall.Install(s)
	storageinstall.Install(s)
	admissionregistrationinstall.Install(s)
	apiextensionsinstall.Install(s)
	apiregistrationinstall.Install(s)
	certificatesinstall.Install(s)
	appsinstall.Install(s)
	discoveryinstall.Install(s)
	eventsinstall.Install(s)
	nodeinstall.Install(s)
	rbacinstall.Install(s)
	schedulinginstall.Install(s)
	return s
}

// Converter runs conversions with one scheme.
type Converter struct {
	Scheme  *runtime.Scheme
	decoder runtime.Decoder
}

// NewConverter returns a Converter on NewScheme().
func NewConverter() *Converter {
	s := NewScheme()
	cf := serializer.NewCodecFactory(s, serializer.EnableStrict)
	return &Converter{Scheme: s, decoder: cf.UniversalDeserializer()}
}

// Decode decodes a JSON object into its typed external version, without
// defaulting and without conversion; unknown or duplicate fields are errors.
func (c *Converter) Decode(data []byte) (runtime.Object, error) {
	obj, _, err := c.decoder.Decode(data, nil, nil)
	if err != nil {
		return nil, err
	}
	return obj, nil
}

// Convert converts an external object to the external version target through
// the internal version of its group: external → internal → external. The
// input is not modified (some hand-written conversions mutate their input's
// nested pointers, so every step works on a deep copy).
func (c *Converter) Convert(in runtime.Object, target schema.GroupVersionKind) (runtime.Object, error) {
	src := in.GetObjectKind().GroupVersionKind()
	internal, err := c.Scheme.New(schema.GroupVersionKind{Group: src.Group, Version: runtime.APIVersionInternal, Kind: src.Kind})
	if err != nil {
		return nil, fmt.Errorf("internal type of %v: %w", src, err)
	}
	if err := c.Scheme.Convert(in.DeepCopyObject(), internal, nil); err != nil {
		return nil, fmt.Errorf("convert %v to internal: %w", src, err)
	}
	out, err := c.Scheme.New(target)
	if err != nil {
		return nil, fmt.Errorf("type of %v: %w", target, err)
	}
	if err := c.Scheme.Convert(internal.DeepCopyObject(), out, nil); err != nil {
		return nil, fmt.Errorf("convert internal to %v: %w", target, err)
	}
	out.GetObjectKind().SetGroupVersionKind(target)
	return out, nil
}

// Default returns a copy of obj with its version's registered defaulters
// applied, as a kube-apiserver's decoder does to a request body.
func (c *Converter) Default(obj runtime.Object) runtime.Object {
	d := obj.DeepCopyObject()
	c.Scheme.Default(d)
	d.GetObjectKind().SetGroupVersionKind(obj.GetObjectKind().GroupVersionKind())
	return d
}

// Encode marshals an object with encoding/json, 2-space indentation and a
// trailing newline.
func Encode(obj any) ([]byte, error) {
	b, err := json.MarshalIndent(obj, "", "  ")
	if err != nil {
		return nil, err
	}
	return append(b, '\n'), nil
}

// Input is one committed input file.
type Input struct {
	Name string // file name stem before the label
	Side int    // index into Pair.Sides
	Path string
}

// Inputs lists the inputs of a pair directory, sorted by file name.
func (p Pair) Inputs(pairDir string) ([]Input, error) {
	entries, err := os.ReadDir(filepath.Join(pairDir, "in"))
	if err != nil {
		return nil, err
	}
	var ins []Input
	for _, e := range entries {
		fn := e.Name()
		if e.IsDir() || !strings.HasSuffix(fn, ".json") {
			continue
		}
		stem := strings.TrimSuffix(fn, ".json")
		dot := strings.LastIndex(stem, ".")
		if dot <= 0 {
			return nil, fmt.Errorf("%s: input file name must be <name>.<version>.json", fn)
		}
		name, label := stem[:dot], stem[dot+1:]
		side := -1
		for i, s := range p.Sides {
			if s.Label == label {
				side = i
			}
		}
		if side < 0 {
			return nil, fmt.Errorf("%s: version %q is neither %q nor %q", fn, label, p.Sides[0].Label, p.Sides[1].Label)
		}
		ins = append(ins, Input{Name: name, Side: side, Path: filepath.Join(pairDir, "in", fn)})
	}
	sort.Slice(ins, func(i, j int) bool { return ins[i].Path < ins[j].Path })
	return ins, nil
}

// Generate computes every generated file of every pair under oracleDir
// (testdata/oracle), keyed by path relative to oracleDir.
func Generate(oracleDir string) (map[string][]byte, error) {
	c := NewConverter()
	files := map[string][]byte{}
	for _, p := range Pairs {
		if err := c.generatePair(p, oracleDir, files); err != nil {
			return nil, fmt.Errorf("%s: %w", p.Name, err)
		}
	}
	return files, nil
}

func (c *Converter) generatePair(p Pair, oracleDir string, files map[string][]byte) error {
	pairDir := filepath.Join(oracleDir, p.Name)
	ins, err := p.Inputs(pairDir)
	if err != nil {
		return err
	}
	var report bytes.Buffer
	fmt.Fprintf(&report, "# Round trips of %s (generated)\n\n", p.Name)
	fmt.Fprintf(&report, "Generated by `go run ./e2e/oracle/cmd/gen-oracle` from k8s.io/kubernetes %s; do not edit.\n\n", KubernetesVersion)
	fmt.Fprintf(&report, "For each input, the JSON paths where `out/<name>.roundtrip.<version>.json` differs from the\n")
	fmt.Fprintf(&report, "input as Kubernetes decodes it (typed, re-encoded with encoding/json; null and [] count as absent, {} does not).\n")
	fmt.Fprintf(&report, "`-` lost, `+` added, `~` changed.\n")

	for _, in := range ins {
		data, err := os.ReadFile(in.Path)
		if err != nil {
			return err
		}
		obj, err := c.Decode(data)
		if err != nil {
			return fmt.Errorf("%s: %w", in.Path, err)
		}
		from, to := p.Sides[in.Side], p.Sides[1-in.Side]
		if got := obj.GetObjectKind().GroupVersionKind(); got != from.GVK {
			return fmt.Errorf("%s: object is %v, file name says %v", in.Path, got, from.GVK)
		}
		fwd, back, err := c.roundTrip(obj, from, to)
		if err != nil {
			return fmt.Errorf("%s: %w", in.Path, err)
		}
		if err := addPair(files, p.Name, "out", in.Name, from, to, fwd, back); err != nil {
			return err
		}

		fmt.Fprintf(&report, "\n## %s.%s → %s → %s\n\n", in.Name, from.Label, to.Label, from.Label)
		diffs, err := jsonDiff(obj, back)
		if err != nil {
			return err
		}
		writeDiffs(&report, diffs)

		defaulted := c.Default(obj)
		if equality.Semantic.DeepEqual(defaulted, obj) {
			continue
		}
		sfwd, sback, err := c.roundTrip(defaulted, from, to)
		if err != nil {
			return fmt.Errorf("%s (defaulted): %w", in.Path, err)
		}
		if err := addPair(files, p.Name, "served", in.Name, from, to, sfwd, sback); err != nil {
			return err
		}
		fmt.Fprintf(&report, "\nWith %s defaulting applied to the input first (served/), the defaults add:\n\n", from.Label)
		ddiffs, err := jsonDiff(obj, defaulted)
		if err != nil {
			return err
		}
		writeDiffs(&report, ddiffs)
	}
	files[filepath.Join(p.Name, "ROUNDTRIP.md")] = report.Bytes()
	return nil
}

func (c *Converter) roundTrip(obj runtime.Object, from, to Side) (fwd, back runtime.Object, err error) {
	fwd, err = c.Convert(obj, to.GVK)
	if err != nil {
		return nil, nil, err
	}
	back, err = c.Convert(fwd, from.GVK)
	if err != nil {
		return nil, nil, fmt.Errorf("back: %w", err)
	}
	return fwd, back, nil
}

func addPair(files map[string][]byte, pair, dir, name string, from, to Side, fwd, back runtime.Object) error {
	fb, err := Encode(fwd)
	if err != nil {
		return err
	}
	bb, err := Encode(back)
	if err != nil {
		return err
	}
	files[filepath.Join(pair, dir, name+"."+to.Label+".json")] = fb
	files[filepath.Join(pair, dir, name+".roundtrip."+from.Label+".json")] = bb
	return nil
}

// GeneratedDirs are the per-pair directories whose every file the generator
// owns: a file there that Generate does not produce is stale.
var GeneratedDirs = []string{"out", "served"}

// Diff compares generated files with the tree under oracleDir. It returns
// human-readable problems: files that differ, are missing, or are stale.
func Diff(oracleDir string, files map[string][]byte) ([]string, error) {
	var problems []string
	for _, rel := range slices.Sorted(maps.Keys(files)) {
		have, err := os.ReadFile(filepath.Join(oracleDir, rel))
		switch {
		case os.IsNotExist(err):
			problems = append(problems, "missing: "+rel)
		case err != nil:
			return nil, err
		case !bytes.Equal(have, files[rel]):
			problems = append(problems, "differs: "+rel)
		}
	}
	stale, err := staleFiles(oracleDir, files)
	if err != nil {
		return nil, err
	}
	for _, rel := range stale {
		problems = append(problems, "stale: "+rel)
	}
	return problems, nil
}

// Write writes the generated files under oracleDir and removes stale ones.
// It returns what it did, one "wrote <path>" or "removed <path>" per file.
func Write(oracleDir string, files map[string][]byte) ([]string, error) {
	var changed []string
	for _, rel := range slices.Sorted(maps.Keys(files)) {
		path := filepath.Join(oracleDir, rel)
		if have, err := os.ReadFile(path); err == nil && bytes.Equal(have, files[rel]) {
			continue
		}
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			return nil, err
		}
		if err := os.WriteFile(path, files[rel], 0o644); err != nil {
			return nil, err
		}
		changed = append(changed, "wrote "+rel)
	}
	stale, err := staleFiles(oracleDir, files)
	if err != nil {
		return nil, err
	}
	for _, rel := range stale {
		if err := os.Remove(filepath.Join(oracleDir, rel)); err != nil {
			return nil, err
		}
		changed = append(changed, "removed "+rel)
	}
	return changed, nil
}

func staleFiles(oracleDir string, files map[string][]byte) ([]string, error) {
	var stale []string
	for _, p := range Pairs {
		for _, d := range GeneratedDirs {
			entries, err := os.ReadDir(filepath.Join(oracleDir, p.Name, d))
			if os.IsNotExist(err) {
				continue
			}
			if err != nil {
				return nil, err
			}
			for _, e := range entries {
				rel := filepath.Join(p.Name, d, e.Name())
				if _, ok := files[rel]; !ok {
					stale = append(stale, rel)
				}
			}
		}
	}
	return stale, nil
}
