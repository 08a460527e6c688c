package v1beta1

import (
	"sigs.k8s.io/controller-runtime/pkg/conversion"

	v1 "github.com/mvpctl/mvpctl/e2e/webhook/crbaseline/api/v1"
	"github.com/mvpctl/mvpctl/e2e/webhook/crbaseline/convdata"
)

// ConvertTo converts this Widget to the Hub version (v1).
func (src *Widget) ConvertTo(dstRaw conversion.Hub) error {
	dst := dstRaw.(*v1.Widget)
	convdata.CopyMeta(&dst.ObjectMeta, &src.ObjectMeta)
	data, err := convdata.Take(&dst.ObjectMeta)
	if err != nil {
		return err
	}
	dst.Spec.Replicas = src.Spec.Replicas
	if src.Spec.Config != nil {
		dst.Spec.Config = &v1.WidgetConfig{TimeoutSeconds: src.Spec.Config.TimeoutSeconds}
	}
	dst.Spec.Tier = src.Spec.Tier
	if src.Spec.Image != "" {
		dst.Spec.Container = &v1.WidgetContainer{Image: src.Spec.Image}
	}
	dst.Spec.Payload = src.Spec.Payload
	dst.Spec.Tags = src.Spec.Tags
	dst.Spec.Paused = data.Paused
	dst.Status.ObservedGeneration = src.Status.ObservedGeneration
	// v1alpha1's debug, kept by an earlier conversion, still has no place.
	return convdata.Put(&dst.ObjectMeta, convdata.Data{Debug: data.Debug})
}

// ConvertFrom converts from the Hub version (v1) to this version.
func (dst *Widget) ConvertFrom(srcRaw conversion.Hub) error {
	src := srcRaw.(*v1.Widget)
	convdata.CopyMeta(&dst.ObjectMeta, &src.ObjectMeta)
	data, err := convdata.Take(&dst.ObjectMeta)
	if err != nil {
		return err
	}
	dst.Spec.Replicas = src.Spec.Replicas
	if src.Spec.Config != nil {
		dst.Spec.Config = &WidgetConfig{TimeoutSeconds: src.Spec.Config.TimeoutSeconds}
	}
	dst.Spec.Tier = src.Spec.Tier
	if src.Spec.Container != nil {
		dst.Spec.Image = src.Spec.Container.Image
	}
	dst.Spec.Payload = src.Spec.Payload
	dst.Spec.Tags = src.Spec.Tags
	dst.Status.ObservedGeneration = src.Status.ObservedGeneration
	return convdata.Put(&dst.ObjectMeta, convdata.Data{Debug: data.Debug, Paused: src.Spec.Paused})
}
