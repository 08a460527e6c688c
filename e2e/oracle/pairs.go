package oracle

// Pairs lists every pair the oracle covers, in one list for all releases:
// each entry names the Kubernetes minor release whose conversion code it is
// checked against, and releases/<Release> generates it.
var Pairs = []Pair{
	{
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
		// behavior tolerance (v1.33), which v1.25 cannot decode, against the
		// newest conversion code (it carries tolerance in annotations).
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
		// unhealthyPodEvictionPolicy (v1.26), which v1.24 cannot decode,
		// against the newest conversion code.
		Name:    "pdb-policy-v1beta1-v1-newer-fields",
		Release: "v1.35",
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
		// Lease fields added after v1.21 (strategy, preferredHolder: v1.31),
		// which v1.21 cannot decode, against the newest conversion code.
		Name:    "lease-coordination-v1beta1-v1-newer-fields",
		Release: "v1.35",
		Sides: [2]Side{
			{"v1beta1", gvk("coordination.k8s.io", "v1beta1", "Lease")},
			{"v1", gvk("coordination.k8s.io", "v1", "Lease")},
		},
		Fuzzed: map[string]string{
			"v1beta1": "coordination.k8s.io.v1beta1.Lease.json",
			"v1":      "coordination.k8s.io.v1.Lease.json",
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
