package v1alpha1

import (
	"sigs.k8s.io/controller-runtime/pkg/conversion"

	v1 "github.com/mvpctl/mvpctl/e2e/webhook/crbaseline/api/v1"
	"github.com/mvpctl/mvpctl/e2e/webhook/crbaseline/convdata"
)

var (
	tierToHub   = map[string]string{"S": "small", "M": "medium", "L": "large"}
	tierFromHub = map[string]string{"small": "S", "medium": "M", "large": "L"}
)

func mapTier(m map[string]string, tier string) string {
	if t, ok := m[tier]; ok {
		return t
	}
	return tier
}

// ConvertTo converts this Widget to the Hub version (v1).
func (src *Widget) ConvertTo(dstRaw conversion.Hub) error {
	dst := dstRaw.(*v1.Widget)
	convdata.CopyMeta(&dst.ObjectMeta, &src.ObjectMeta)
	data, err := convdata.Take(&dst.ObjectMeta)
	if err != nil {
		return err
	}
	dst.Spec.Replicas = src.Spec.ReplicaCount
	if src.Spec.LegacyTimeout != nil {
		dst.Spec.Config = &v1.WidgetConfig{TimeoutSeconds: src.Spec.LegacyTimeout}
	}
	dst.Spec.Tier = mapTier(tierToHub, src.Spec.Tier)
	if src.Spec.Image != "" {
		dst.Spec.Container = &v1.WidgetContainer{Image: src.Spec.Image}
	}
	dst.Spec.Payload = src.Spec.Payload
	dst.Spec.Tags = src.Spec.Tags
	dst.Spec.Paused = data.Paused
	dst.Status.ObservedGeneration = src.Status.ObservedGeneration
	return convdata.Put(&dst.ObjectMeta, convdata.Data{Debug: src.Spec.Debug})
}

// ConvertFrom converts from the Hub version (v1) to this version.
func (dst *Widget) ConvertFrom(srcRaw conversion.Hub) error {
	src := srcRaw.(*v1.Widget)
	convdata.CopyMeta(&dst.ObjectMeta, &src.ObjectMeta)
	data, err := convdata.Take(&dst.ObjectMeta)
	if err != nil {
		return err
	}
	dst.Spec.ReplicaCount = src.Spec.Replicas
	if src.Spec.Config != nil {
		dst.Spec.LegacyTimeout = src.Spec.Config.TimeoutSeconds
	}
	dst.Spec.Tier = mapTier(tierFromHub, src.Spec.Tier)
	if src.Spec.Container != nil {
		dst.Spec.Image = src.Spec.Container.Image
	}
	dst.Spec.Payload = src.Spec.Payload
	dst.Spec.Tags = src.Spec.Tags
	dst.Spec.Debug = data.Debug
	dst.Status.ObservedGeneration = src.Status.ObservedGeneration
	return convdata.Put(&dst.ObjectMeta, convdata.Data{Paused: src.Spec.Paused})
}
