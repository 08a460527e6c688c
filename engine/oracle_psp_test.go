package engine_test

import (
	"bytes"
	"encoding/json"
	"path/filepath"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// podSecurityPolicy is PodSecurityPolicy as extensions/v1beta1 and
// policy/v1beta1 had it in Kubernetes v1.15 (the two are field for field the
// same), which this k8s.io/api no longer has: k8s.io/api v0.15's
// policy/v1beta1 types.go with its JSON tags, so that the oracle compares
// it as the typed encoding of that release does. TestPodSecurityPolicyType
// checks that it holds every field of every PodSecurityPolicy fixture.
type podSecurityPolicy struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              pspSpec `json:"spec,omitempty"`
}

// pspSpec is PodSecurityPolicySpec.
type pspSpec struct {
	Privileged               bool                `json:"privileged,omitempty"`
	DefaultAddCapabilities   []corev1.Capability `json:"defaultAddCapabilities,omitempty"`
	RequiredDropCapabilities []corev1.Capability `json:"requiredDropCapabilities,omitempty"`
	AllowedCapabilities      []corev1.Capability `json:"allowedCapabilities,omitempty"`
	Volumes                  []string            `json:"volumes,omitempty"`
	HostNetwork              bool                `json:"hostNetwork,omitempty"`
	HostPorts                []struct {
		Min int32 `json:"min"`
		Max int32 `json:"max"`
	} `json:"hostPorts,omitempty"`
	HostPID bool `json:"hostPID,omitempty"`
	HostIPC bool `json:"hostIPC,omitempty"`
	SELinux struct {
		Rule           string                 `json:"rule"`
		SELinuxOptions *corev1.SELinuxOptions `json:"seLinuxOptions,omitempty"`
	} `json:"seLinux"`
	RunAsUser                       pspIDStrategy  `json:"runAsUser"`
	RunAsGroup                      *pspIDStrategy `json:"runAsGroup,omitempty"`
	SupplementalGroups              pspIDStrategy  `json:"supplementalGroups"`
	FSGroup                         pspIDStrategy  `json:"fsGroup"`
	ReadOnlyRootFilesystem          bool           `json:"readOnlyRootFilesystem,omitempty"`
	DefaultAllowPrivilegeEscalation *bool          `json:"defaultAllowPrivilegeEscalation,omitempty"`
	AllowPrivilegeEscalation        *bool          `json:"allowPrivilegeEscalation,omitempty"`
	AllowedHostPaths                []struct {
		PathPrefix string `json:"pathPrefix,omitempty"`
		ReadOnly   bool   `json:"readOnly,omitempty"`
	} `json:"allowedHostPaths,omitempty"`
	AllowedFlexVolumes []struct {
		Driver string `json:"driver"`
	} `json:"allowedFlexVolumes,omitempty"`
	AllowedCSIDrivers []struct {
		Name string `json:"name"`
	} `json:"allowedCSIDrivers,omitempty"`
	AllowedUnsafeSysctls  []string               `json:"allowedUnsafeSysctls,omitempty"`
	ForbiddenSysctls      []string               `json:"forbiddenSysctls,omitempty"`
	AllowedProcMountTypes []corev1.ProcMountType `json:"allowedProcMountTypes,omitempty"`
	RuntimeClass          *struct {
		AllowedRuntimeClassNames []string `json:"allowedRuntimeClassNames"`
		DefaultRuntimeClassName  *string  `json:"defaultRuntimeClassName,omitempty"`
	} `json:"runtimeClass,omitempty"`
}

// pspIDStrategy is the shape of the runAsUser, runAsGroup,
// supplementalGroups and fsGroup strategies.
type pspIDStrategy struct {
	Rule   string `json:"rule,omitempty"`
	Ranges []struct {
		Min int64 `json:"min"`
		Max int64 `json:"max"`
	} `json:"ranges,omitempty"`
}

// The oracle decodes leniently (unknown fields allowed), so a field missing
// from podSecurityPolicy would go unnoticed there: the spec of every input
// and output of the pair must decode into it strictly. (Metadata is
// ObjectMeta of today, which lacks v1.15's clusterName.)
func TestPodSecurityPolicyType(t *testing.T) {
	files, _ := filepath.Glob(filepath.Join("..", "testdata", "oracle", "psp-*", "*", "*.json"))
	if len(files) == 0 {
		t.Fatal("no PodSecurityPolicy fixtures")
	}
	for _, f := range files {
		data, err := json.Marshal(readJSON(t, f))
		if err != nil {
			t.Fatal(err)
		}
		dec := json.NewDecoder(bytes.NewReader(data))
		dec.DisallowUnknownFields()
		var psp struct {
			APIVersion string          `json:"apiVersion"`
			Kind       string          `json:"kind"`
			Metadata   json.RawMessage `json:"metadata"`
			Spec       pspSpec         `json:"spec"`
		}
		if err := dec.Decode(&psp); err != nil {
			t.Errorf("%s: %v", f, err)
		}
	}
}
