package oracle

// Pairs lists every pair the oracle covers, in one list for all releases:
// each entry names the Kubernetes minor release whose conversion code it is
// checked against, and releases/<Release> generates it. Release is the last
// release that served the older side; where that release's code lacks the
// newer side (flowcontrol v1beta1 and v1beta2 against v1beta3 and v1), it is
// the oldest release module whose code has both. A *-newer-fields pair holds
// the inputs with fields added after its base pair's release, checked
// against the newest release module that still registers the older side.
var Pairs = []Pair{
	{
		// v1.35, not v1.36: v1.36 converts a v1 Object metric with an
		// averageValue and a zero targetValue without its value "0"
		// (object-average-value.v1); the built-in rule keeps it, as every
		// release before v1.36 does.
		Name:    "hpa-autoscaling-v1-v2",
		Release: "v1.35",
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
		Name:    "hpa-autoscaling-v2beta2-v2",
		Release: "v1.25",
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
		// Inputs that v1.25 cannot decode, or converts otherwise than newer
		// releases (behavior tolerance and scale-*-tolerance annotations,
		// v1.33), against the newest conversion code that registers
		// autoscaling/v2beta2: v1.35 (v1.36 dropped it from its scheme).
		Name:    "hpa-autoscaling-v2beta2-v2-newer-fields",
		Release: "v1.35",
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
		Name:    "pdb-policy-v1beta1-v1",
		Release: "v1.24",
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
		// Inputs that v1.24 cannot decode (unhealthyPodEvictionPolicy, v1.26),
		// against the newest conversion code.
		Name:    "pdb-policy-v1beta1-v1-newer-fields",
		Release: "v1.36",
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
		Name:    "ingress-networking-v1beta1-v1",
		Release: "v1.21",
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
		Name:    "ingress-extensions-v1beta1-networking-v1",
		Release: "v1.21",
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
		Name:    "cronjob-batch-v1beta1-v1",
		Release: "v1.24",
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
		Name:    "lease-coordination-v1beta1-v1",
		Release: "v1.21",
		Sides: [2]Side{
			{"v1beta1", gvk("coordination.k8s.io", "v1beta1", "Lease")},
			{"v1", gvk("coordination.k8s.io", "v1", "Lease")},
		},
		Fuzzed: map[string]string{
			"v1beta1": "coordination.k8s.io.v1beta1.Lease.json",
			"v1":      "coordination.k8s.io.v1.Lease.json",
		},
	},
	{
		// Inputs that v1.21 cannot decode (strategy, preferredHolder, v1.31),
		// against the newest conversion code.
		Name:    "lease-coordination-v1beta1-v1-newer-fields",
		Release: "v1.36",
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
		Name:    "flowschema-flowcontrol-v1beta1-v1",
		Release: "v1.31",
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
		Name:    "flowschema-flowcontrol-v1beta2-v1",
		Release: "v1.31",
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
		Name:    "flowschema-flowcontrol-v1beta3-v1",
		Release: "v1.31",
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
		Name:    "prioritylevel-flowcontrol-v1beta1-v1",
		Release: "v1.31",
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
		Name:    "prioritylevel-flowcontrol-v1beta2-v1",
		Release: "v1.31",
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
		Name:    "prioritylevel-flowcontrol-v1beta3-v1",
		Release: "v1.31",
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
		Name:    "flowschema-flowcontrol-v1beta1-v1beta3",
		Release: "v1.26",
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
		Name:    "flowschema-flowcontrol-v1beta2-v1beta3",
		Release: "v1.28",
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
		Name:    "prioritylevel-flowcontrol-v1beta1-v1beta3",
		Release: "v1.26",
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
		// Inputs that v1.26 cannot decode, or converts otherwise than newer
		// releases (exempt, v1.28; preserve-zero-concurrency-shares annotation,
		// v1.29), against the newest conversion code.
		Name:    "prioritylevel-flowcontrol-v1beta1-v1beta3-newer-fields",
		Release: "v1.36",
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
		Name:    "prioritylevel-flowcontrol-v1beta2-v1beta3",
		Release: "v1.28",
		Sides: [2]Side{
			{"v1beta2", gvk("flowcontrol.apiserver.k8s.io", "v1beta2", "PriorityLevelConfiguration")},
			{"v1beta3", gvk("flowcontrol.apiserver.k8s.io", "v1beta3", "PriorityLevelConfiguration")},
		},
		Fuzzed: map[string]string{
			"v1beta2": "flowcontrol.apiserver.k8s.io.v1beta2.PriorityLevelConfiguration.json",
			"v1beta3": "flowcontrol.apiserver.k8s.io.v1beta3.PriorityLevelConfiguration.json",
		},
	},
	{
		// Inputs that v1.28 cannot decode, or converts otherwise than newer
		// releases (preserve-zero-concurrency-shares annotation, v1.29), against
		// the newest conversion code.
		Name:    "prioritylevel-flowcontrol-v1beta2-v1beta3-newer-fields",
		Release: "v1.36",
		Sides: [2]Side{
			{"v1beta2", gvk("flowcontrol.apiserver.k8s.io", "v1beta2", "PriorityLevelConfiguration")},
			{"v1beta3", gvk("flowcontrol.apiserver.k8s.io", "v1beta3", "PriorityLevelConfiguration")},
		},
	},
	// networking.k8s.io ServiceCIDR, IPAddress, IngressClass.
	{
		Name:    "servicecidr-networking-v1beta1-v1",
		Release: "v1.36",
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
		Name:    "ipaddress-networking-v1beta1-v1",
		Release: "v1.36",
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
		Name:    "ingressclass-networking-v1beta1-v1",
		Release: "v1.21",
		Sides: [2]Side{
			{"v1beta1", gvk("networking.k8s.io", "v1beta1", "IngressClass")},
			{"v1", gvk("networking.k8s.io", "v1", "IngressClass")},
		},
		Fuzzed: map[string]string{
			"v1beta1": "networking.k8s.io.v1beta1.IngressClass.json",
			"v1":      "networking.k8s.io.v1.IngressClass.json",
		},
	},
	{
		// Inputs that v1.21 cannot decode (managedFields subresource, v1.22),
		// against the newest conversion code.
		Name:    "ingressclass-networking-v1beta1-v1-newer-fields",
		Release: "v1.36",
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
		Name:    "volumeattributesclass-storage-v1alpha1-v1",
		Release: "v1.34",
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
		Name:    "volumeattributesclass-storage-v1beta1-v1",
		Release: "v1.36",
		Sides: [2]Side{
			{"v1beta1", gvk("storage.k8s.io", "v1beta1", "VolumeAttributesClass")},
			{"v1", gvk("storage.k8s.io", "v1", "VolumeAttributesClass")},
		},
		Fuzzed: map[string]string{
			"v1beta1": "storage.k8s.io.v1beta1.VolumeAttributesClass.json",
			"v1":      "storage.k8s.io.v1.VolumeAttributesClass.json",
		},
	},
	// coordination.k8s.io LeaseCandidate: v1beta1 is the newest version in v1.36.
	{
		Name:    "leasecandidate-coordination-v1alpha2-v1beta1",
		Release: "v1.36",
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
		Name:    "deviceclass-resource-v1beta1-v1",
		Release: "v1.36",
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
		Name:    "resourceclaim-resource-v1beta1-v1",
		Release: "v1.36",
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
		Name:    "resourceclaimtemplate-resource-v1beta1-v1",
		Release: "v1.36",
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
		Name:    "resourceslice-resource-v1beta1-v1",
		Release: "v1.36",
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
		Name:    "deviceclass-resource-v1beta2-v1",
		Release: "v1.36",
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
		Name:    "resourceclaim-resource-v1beta2-v1",
		Release: "v1.36",
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
		Name:    "resourceclaimtemplate-resource-v1beta2-v1",
		Release: "v1.36",
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
		Name:    "resourceslice-resource-v1beta2-v1",
		Release: "v1.36",
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
		Name:    "validatingwebhookconfiguration-admissionregistration-v1beta1-v1",
		Release: "v1.21",
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
		// Inputs that v1.21 cannot decode (matchConditions, v1.27; managedFields
		// subresource, v1.22), against the newest conversion code.
		Name:    "validatingwebhookconfiguration-admissionregistration-v1beta1-v1-newer-fields",
		Release: "v1.36",
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
		Name:    "mutatingwebhookconfiguration-admissionregistration-v1beta1-v1",
		Release: "v1.21",
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
		// Inputs that v1.21 cannot decode (matchConditions, v1.27; managedFields
		// subresource, v1.22), against the newest conversion code.
		Name:    "mutatingwebhookconfiguration-admissionregistration-v1beta1-v1-newer-fields",
		Release: "v1.36",
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
		Name:    "validatingadmissionpolicy-admissionregistration-v1beta1-v1",
		Release: "v1.33",
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
		Name:    "validatingadmissionpolicy-admissionregistration-v1alpha1-v1",
		Release: "v1.31",
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
		Name:    "validatingadmissionpolicybinding-admissionregistration-v1beta1-v1",
		Release: "v1.33",
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
		Name:    "validatingadmissionpolicybinding-admissionregistration-v1alpha1-v1",
		Release: "v1.31",
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
		Name:    "mutatingadmissionpolicy-admissionregistration-v1alpha1-v1beta1",
		Release: "v1.36",
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
		Name:    "mutatingadmissionpolicybinding-admissionregistration-v1alpha1-v1beta1",
		Release: "v1.36",
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
		Name:    "customresourcedefinition-apiextensions-v1beta1-v1",
		Release: "v1.21",
		Sides: [2]Side{
			{"v1beta1", gvk("apiextensions.k8s.io", "v1beta1", "CustomResourceDefinition")},
			{"v1", gvk("apiextensions.k8s.io", "v1", "CustomResourceDefinition")},
		},
	},
	{
		// Inputs that v1.21 cannot decode (x-kubernetes-validations, v1.23;
		// selectableFields, v1.30; managedFields subresource, v1.22), against
		// the newest conversion code.
		Name:    "customresourcedefinition-apiextensions-v1beta1-v1-newer-fields",
		Release: "v1.36",
		Sides: [2]Side{
			{"v1beta1", gvk("apiextensions.k8s.io", "v1beta1", "CustomResourceDefinition")},
			{"v1", gvk("apiextensions.k8s.io", "v1", "CustomResourceDefinition")},
		},
		Fuzzed: map[string]string{
			"v1beta1": "apiextensions.k8s.io.v1beta1.CustomResourceDefinition.json",
			"v1":      "apiextensions.k8s.io.v1.CustomResourceDefinition.json",
		},
	},
	// apiregistration.k8s.io (k8s.io/kube-aggregator has no round-trip fixtures)
	{
		Name:    "apiservice-apiregistration-v1beta1-v1",
		Release: "v1.21",
		Sides: [2]Side{
			{"v1beta1", gvk("apiregistration.k8s.io", "v1beta1", "APIService")},
			{"v1", gvk("apiregistration.k8s.io", "v1", "APIService")},
		},
	},
	// certificates.k8s.io
	{
		Name:    "certificatesigningrequest-certificates-v1beta1-v1",
		Release: "v1.21",
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
		// Inputs that v1.21 cannot decode (expirationSeconds, v1.22;
		// managedFields subresource, v1.22), against the newest conversion code.
		Name:    "certificatesigningrequest-certificates-v1beta1-v1-newer-fields",
		Release: "v1.36",
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
		Name:    "clustertrustbundle-certificates-v1alpha1-v1beta1",
		Release: "v1.36",
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
		Name:    "deployment-apps-v1beta1-v1",
		Release: "v1.15",
		Sides: [2]Side{
			{"v1beta1", gvk("apps", "v1beta1", "Deployment")},
			{"v1", gvk("apps", "v1", "Deployment")},
		},
	},
	{
		// Inputs that v1.15 cannot decode (pod template and metadata fields),
		// against the newest conversion code.
		Name:    "deployment-apps-v1beta1-v1-newer-fields",
		Release: "v1.36",
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
		Name:    "deployment-apps-v1beta2-v1",
		Release: "v1.15",
		Sides: [2]Side{
			{"v1beta2", gvk("apps", "v1beta2", "Deployment")},
			{"v1", gvk("apps", "v1", "Deployment")},
		},
	},
	{
		// Inputs that v1.15 cannot decode (pod template and metadata fields),
		// against the newest conversion code.
		Name:    "deployment-apps-v1beta2-v1-newer-fields",
		Release: "v1.36",
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
		Name:    "statefulset-apps-v1beta1-v1",
		Release: "v1.15",
		Sides: [2]Side{
			{"v1beta1", gvk("apps", "v1beta1", "StatefulSet")},
			{"v1", gvk("apps", "v1", "StatefulSet")},
		},
	},
	{
		// Inputs that v1.15 cannot decode, or converts otherwise than newer
		// releases (minReadySeconds, v1.22; pod template and metadata fields;
		// claim template apiVersion and kind, set by newer releases), against
		// the newest conversion code.
		Name:    "statefulset-apps-v1beta1-v1-newer-fields",
		Release: "v1.36",
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
		Name:    "statefulset-apps-v1beta2-v1",
		Release: "v1.15",
		Sides: [2]Side{
			{"v1beta2", gvk("apps", "v1beta2", "StatefulSet")},
			{"v1", gvk("apps", "v1", "StatefulSet")},
		},
	},
	{
		// Inputs that v1.15 cannot decode, or convert without the defaulting its
		// apiserver applied first (minReadySeconds and availableReplicas, v1.22;
		// pod template and metadata fields), against the newest conversion code.
		Name:    "statefulset-apps-v1beta2-v1-newer-fields",
		Release: "v1.36",
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
		Name:    "daemonset-apps-v1beta2-v1",
		Release: "v1.15",
		Sides: [2]Side{
			{"v1beta2", gvk("apps", "v1beta2", "DaemonSet")},
			{"v1", gvk("apps", "v1", "DaemonSet")},
		},
	},
	{
		// Inputs that v1.15 cannot decode (pod template and metadata fields),
		// against the newest conversion code.
		Name:    "daemonset-apps-v1beta2-v1-newer-fields",
		Release: "v1.36",
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
		Name:    "replicaset-apps-v1beta2-v1",
		Release: "v1.15",
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
		// Inputs that v1.15 cannot decode (pod template and metadata fields),
		// against the newest conversion code.
		Name:    "replicaset-apps-v1beta2-v1-newer-fields",
		Release: "v1.36",
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
		Name:    "controllerrevision-apps-v1beta1-v1",
		Release: "v1.15",
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
		// Inputs that v1.15 cannot decode (managedFields fieldsType, v1.18),
		// against the newest conversion code.
		Name:    "controllerrevision-apps-v1beta1-v1-newer-fields",
		Release: "v1.36",
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
		Name:    "controllerrevision-apps-v1beta2-v1",
		Release: "v1.15",
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
		// Inputs that v1.15 cannot decode (managedFields fieldsType, v1.18),
		// against the newest conversion code.
		Name:    "controllerrevision-apps-v1beta2-v1-newer-fields",
		Release: "v1.36",
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
		Name:    "deployment-extensions-v1beta1-apps-v1",
		Release: "v1.15",
		Sides: [2]Side{
			{"v1beta1", gvk("extensions", "v1beta1", "Deployment")},
			{"v1", gvk("apps", "v1", "Deployment")},
		},
	},
	{
		// Inputs that v1.15 cannot decode, or convert without the defaulting its
		// apiserver applied first (pod template and metadata fields), against
		// the newest conversion code.
		Name:    "deployment-extensions-v1beta1-apps-v1-newer-fields",
		Release: "v1.36",
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
		Name:    "daemonset-extensions-v1beta1-apps-v1",
		Release: "v1.15",
		Sides: [2]Side{
			{"v1beta1", gvk("extensions", "v1beta1", "DaemonSet")},
			{"v1", gvk("apps", "v1", "DaemonSet")},
		},
	},
	{
		// Inputs that v1.15 cannot decode, or convert without the defaulting its
		// apiserver applied first (pod template and metadata fields), against
		// the newest conversion code.
		Name:    "daemonset-extensions-v1beta1-apps-v1-newer-fields",
		Release: "v1.36",
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
		Name:    "replicaset-extensions-v1beta1-apps-v1",
		Release: "v1.15",
		Sides: [2]Side{
			{"v1beta1", gvk("extensions", "v1beta1", "ReplicaSet")},
			{"v1", gvk("apps", "v1", "ReplicaSet")},
		},
		Fuzzed: map[string]string{
			"v1beta1": "extensions.v1beta1.ReplicaSet.json",
			"v1":      "apps.v1.ReplicaSet.json",
		},
	},
	{
		// Inputs that v1.15 cannot decode (pod template and metadata fields),
		// against the newest conversion code.
		Name:    "replicaset-extensions-v1beta1-apps-v1-newer-fields",
		Release: "v1.36",
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
		Name:    "networkpolicy-extensions-v1beta1-networking-v1",
		Release: "v1.15",
		Sides: [2]Side{
			{"v1beta1", gvk("extensions", "v1beta1", "NetworkPolicy")},
			{"v1", gvk("networking.k8s.io", "v1", "NetworkPolicy")},
		},
		Fuzzed: map[string]string{
			"v1beta1": "extensions.v1beta1.NetworkPolicy.json",
			"v1":      "networking.k8s.io.v1.NetworkPolicy.json",
		},
	},
	{
		// Inputs that v1.15 cannot decode (endPort, v1.21; metadata fields),
		// against the newest conversion code.
		Name:    "networkpolicy-extensions-v1beta1-networking-v1-newer-fields",
		Release: "v1.36",
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
		Name:    "role-rbac-v1beta1-v1",
		Release: "v1.21",
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
		// Inputs that v1.21 cannot decode (managedFields subresource, v1.22),
		// against the newest conversion code.
		Name:    "role-rbac-v1beta1-v1-newer-fields",
		Release: "v1.36",
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
		Name:    "clusterrole-rbac-v1beta1-v1",
		Release: "v1.21",
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
		// Inputs that v1.21 cannot decode (managedFields subresource, v1.22),
		// against the newest conversion code.
		Name:    "clusterrole-rbac-v1beta1-v1-newer-fields",
		Release: "v1.36",
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
		Name:    "rolebinding-rbac-v1beta1-v1",
		Release: "v1.21",
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
		// Inputs that v1.21 cannot decode (managedFields subresource, v1.22),
		// against the newest conversion code.
		Name:    "rolebinding-rbac-v1beta1-v1-newer-fields",
		Release: "v1.36",
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
		Name:    "clusterrolebinding-rbac-v1beta1-v1",
		Release: "v1.21",
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
		// Inputs that v1.21 cannot decode (managedFields subresource, v1.22),
		// against the newest conversion code.
		Name:    "clusterrolebinding-rbac-v1beta1-v1-newer-fields",
		Release: "v1.36",
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
		Name:    "role-rbac-v1alpha1-v1",
		Release: "v1.36",
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
		Name:    "clusterrole-rbac-v1alpha1-v1",
		Release: "v1.36",
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
		Name:    "rolebinding-rbac-v1alpha1-v1",
		Release: "v1.36",
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
		Name:    "clusterrolebinding-rbac-v1alpha1-v1",
		Release: "v1.36",
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
		Name:    "priorityclass-scheduling-v1beta1-v1",
		Release: "v1.21",
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
		// Inputs that v1.21 cannot decode (managedFields subresource, v1.22),
		// against the newest conversion code.
		Name:    "priorityclass-scheduling-v1beta1-v1-newer-fields",
		Release: "v1.36",
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
		// v1.35: v1.36 replaced scheduling.k8s.io/v1alpha1 with v1alpha2 in
		// its scheme.
		Name:    "priorityclass-scheduling-v1alpha1-v1",
		Release: "v1.35",
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
		Name:    "storageclass-storage-v1beta1-v1",
		Release: "v1.21",
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
		// Inputs that v1.21 cannot decode (managedFields subresource, v1.22),
		// against the newest conversion code.
		Name:    "storageclass-storage-v1beta1-v1-newer-fields",
		Release: "v1.36",
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
		Name:    "volumeattachment-storage-v1beta1-v1",
		Release: "v1.21",
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
		// Inputs that v1.21 cannot decode (status errorCode, v1.33;
		// managedFields subresource, v1.22), against the newest conversion code.
		Name:    "volumeattachment-storage-v1beta1-v1-newer-fields",
		Release: "v1.36",
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
		Name:    "csidriver-storage-v1beta1-v1",
		Release: "v1.21",
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
		// Inputs that v1.21 cannot decode (nodeAllocatableUpdatePeriodSeconds,
		// v1.33; managedFields subresource, v1.22), against the newest
		// conversion code.
		Name:    "csidriver-storage-v1beta1-v1-newer-fields",
		Release: "v1.36",
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
		Name:    "csinode-storage-v1beta1-v1",
		Release: "v1.21",
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
		// Inputs that v1.21 cannot decode (managedFields subresource, v1.22),
		// against the newest conversion code.
		Name:    "csinode-storage-v1beta1-v1-newer-fields",
		Release: "v1.36",
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
		Name:    "csistoragecapacity-storage-v1beta1-v1",
		Release: "v1.26",
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
		Name:    "volumeattachment-storage-v1alpha1-v1",
		Release: "v1.23",
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
		// Inputs that v1.23 cannot decode (errorCode, v1.33;
		// nodeExpandSecretRef; volumeAttributesClassName), against the newest
		// conversion code.
		Name:    "volumeattachment-storage-v1alpha1-v1-newer-fields",
		Release: "v1.36",
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
		Name:    "csistoragecapacity-storage-v1alpha1-v1beta1",
		Release: "v1.23",
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
		Name:    "runtimeclass-node-v1beta1-v1",
		Release: "v1.24",
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
		Name:    "runtimeclass-node-v1alpha1-v1",
		Release: "v1.36",
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
		Name:    "event-events-v1beta1-v1",
		Release: "v1.24",
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
		Name:    "endpointslice-discovery-v1beta1-v1",
		Release: "v1.24",
		Sides: [2]Side{
			{"v1beta1", gvk("discovery.k8s.io", "v1beta1", "EndpointSlice")},
			{"v1", gvk("discovery.k8s.io", "v1", "EndpointSlice")},
		},
		Fuzzed: map[string]string{
			"v1beta1": "discovery.k8s.io.v1beta1.EndpointSlice.json",
			"v1":      "discovery.k8s.io.v1.EndpointSlice.json",
		},
	},
	{
		// Inputs that v1.24 cannot decode (hints forNodes, v1.33), against the
		// newest conversion code.
		Name:    "endpointslice-discovery-v1beta1-v1-newer-fields",
		Release: "v1.36",
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
		Name:    "hpa-autoscaling-v2beta1-v2",
		Release: "v1.24",
		Sides: [2]Side{
			{"v2beta1", gvk("autoscaling", "v2beta1", "HorizontalPodAutoscaler")},
			{"v2", gvk("autoscaling", "v2", "HorizontalPodAutoscaler")},
		},
		Fuzzed: map[string]string{
			"v2beta1": "autoscaling.v2beta1.HorizontalPodAutoscaler.json",
			"v2":      "autoscaling.v2.HorizontalPodAutoscaler.json",
		},
	},
	{
		// Inputs that v1.24 cannot decode, or converts otherwise than newer
		// releases (behavior tolerance and scale-*-tolerance annotations,
		// v1.33), against the newest conversion code that registers
		// autoscaling/v2beta1: v1.35 (v1.36 dropped it from its scheme).
		Name:    "hpa-autoscaling-v2beta1-v2-newer-fields",
		Release: "v1.35",
		Sides: [2]Side{
			{"v2beta1", gvk("autoscaling", "v2beta1", "HorizontalPodAutoscaler")},
			{"v2", gvk("autoscaling", "v2", "HorizontalPodAutoscaler")},
		},
		Fuzzed: map[string]string{
			"v2": "autoscaling.v2.HorizontalPodAutoscaler.json",
		},
	},
	// PodSecurityPolicy between its groups: extensions/v1beta1 (removed in
	// v1.16) and policy/v1beta1 (removed in v1.25, no successor), both
	// served by v1.15. The versions are spelled alike, so the sides are
	// labelled by group.
	{
		Name:    "psp-extensions-v1beta1-policy-v1beta1",
		Release: "v1.15",
		Sides: [2]Side{
			{"extensions", gvk("extensions", "v1beta1", "PodSecurityPolicy")},
			{"policy", gvk("policy", "v1beta1", "PodSecurityPolicy")},
		},
		Fuzzed: map[string]string{
			"extensions": "extensions.v1beta1.PodSecurityPolicy.json",
			"policy":     "policy.v1beta1.PodSecurityPolicy.json",
		},
	},
	// MutatingAdmissionPolicy and its Binding: admissionregistration.k8s.io/v1
	// arrived in v1.36, the hub that v1beta1 and v1alpha1 convert to.
	{
		Name:    "mutatingadmissionpolicy-admissionregistration-v1beta1-v1",
		Release: "v1.36",
		Sides: [2]Side{
			{"v1beta1", gvk("admissionregistration.k8s.io", "v1beta1", "MutatingAdmissionPolicy")},
			{"v1", gvk("admissionregistration.k8s.io", "v1", "MutatingAdmissionPolicy")},
		},
		Fuzzed: map[string]string{
			"v1beta1": "admissionregistration.k8s.io.v1beta1.MutatingAdmissionPolicy.json",
			"v1":      "admissionregistration.k8s.io.v1.MutatingAdmissionPolicy.json",
		},
	},
	{
		Name:    "mutatingadmissionpolicy-admissionregistration-v1alpha1-v1",
		Release: "v1.36",
		Sides: [2]Side{
			{"v1alpha1", gvk("admissionregistration.k8s.io", "v1alpha1", "MutatingAdmissionPolicy")},
			{"v1", gvk("admissionregistration.k8s.io", "v1", "MutatingAdmissionPolicy")},
		},
		Fuzzed: map[string]string{
			"v1alpha1": "admissionregistration.k8s.io.v1alpha1.MutatingAdmissionPolicy.json",
			"v1":       "admissionregistration.k8s.io.v1.MutatingAdmissionPolicy.json",
		},
	},
	{
		Name:    "mutatingadmissionpolicybinding-admissionregistration-v1beta1-v1",
		Release: "v1.36",
		Sides: [2]Side{
			{"v1beta1", gvk("admissionregistration.k8s.io", "v1beta1", "MutatingAdmissionPolicyBinding")},
			{"v1", gvk("admissionregistration.k8s.io", "v1", "MutatingAdmissionPolicyBinding")},
		},
		Fuzzed: map[string]string{
			"v1beta1": "admissionregistration.k8s.io.v1beta1.MutatingAdmissionPolicyBinding.json",
			"v1":      "admissionregistration.k8s.io.v1.MutatingAdmissionPolicyBinding.json",
		},
	},
	{
		Name:    "mutatingadmissionpolicybinding-admissionregistration-v1alpha1-v1",
		Release: "v1.36",
		Sides: [2]Side{
			{"v1alpha1", gvk("admissionregistration.k8s.io", "v1alpha1", "MutatingAdmissionPolicyBinding")},
			{"v1", gvk("admissionregistration.k8s.io", "v1", "MutatingAdmissionPolicyBinding")},
		},
		Fuzzed: map[string]string{
			"v1alpha1": "admissionregistration.k8s.io.v1alpha1.MutatingAdmissionPolicyBinding.json",
			"v1":       "admissionregistration.k8s.io.v1.MutatingAdmissionPolicyBinding.json",
		},
	},
}
