package v1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// WidgetSpec defines the desired state of Widget.
type WidgetSpec struct {
	// +optional
	Replicas *int64 `json:"replicas,omitempty"`
	// +optional
	Config *WidgetConfig `json:"config,omitempty"`
	// +kubebuilder:validation:Enum=small;medium;large
	// +optional
	Tier string `json:"tier,omitempty"`
	// +optional
	Container *WidgetContainer `json:"container,omitempty"`
	// +optional
	Paused *bool `json:"paused,omitempty"`
	// +optional
	Payload string `json:"payload,omitempty"`
	// +optional
	Tags []string `json:"tags,omitempty"`
}

// WidgetConfig holds the Widget's settings.
type WidgetConfig struct {
	// +optional
	TimeoutSeconds *int64 `json:"timeoutSeconds,omitempty"`
}

// WidgetContainer says what the Widget runs.
type WidgetContainer struct {
	// +optional
	Image string `json:"image,omitempty"`
}

// WidgetStatus defines the observed state of Widget.
type WidgetStatus struct {
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
}

// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:storageversion

// Widget is the Schema for the widgets API.
type Widget struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   WidgetSpec   `json:"spec,omitempty"`
	Status WidgetStatus `json:"status,omitempty"`
}

// +kubebuilder:object:root=true

// WidgetList contains a list of Widget.
type WidgetList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Widget `json:"items"`
}

func init() {
	SchemeBuilder.Register(&Widget{}, &WidgetList{})
}
