// Package convdata keeps, in an annotation, what one version of a Widget
// cannot hold while it is converted through another, so that the round
// trip loses nothing: the hand-written equivalent of Cluster API's
// util/conversion MarshalData/UnmarshalData, limited to the fields that
// need it.
package convdata

import (
	"encoding/json"
	"maps"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Annotation holds the fields of other versions.
const Annotation = "example.com/conversion-data"

// Data are the fields only some versions have.
type Data struct {
	// Debug is v1alpha1's spec.debug, which later versions dropped.
	Debug *bool `json:"debug,omitempty"`
	// Paused is v1's spec.paused, which earlier versions lack.
	Paused *bool `json:"paused,omitempty"`
}

// CopyMeta copies src to dst with its own annotations map, so that
// changing the converted object's annotations leaves the source alone.
func CopyMeta(dst, src *metav1.ObjectMeta) {
	*dst = *src
	dst.Annotations = maps.Clone(src.Annotations)
}

// Take removes the annotation from m and returns what it held.
func Take(m *metav1.ObjectMeta) (Data, error) {
	var d Data
	s, ok := m.Annotations[Annotation]
	if !ok {
		return d, nil
	}
	delete(m.Annotations, Annotation)
	if len(m.Annotations) == 0 {
		m.Annotations = nil
	}
	return d, json.Unmarshal([]byte(s), &d)
}

// Put stores d in the annotation of m, unless it is empty.
func Put(m *metav1.ObjectMeta, d Data) error {
	if d.Debug == nil && d.Paused == nil {
		return nil
	}
	b, err := json.Marshal(d)
	if err != nil {
		return err
	}
	if m.Annotations == nil {
		m.Annotations = map[string]string{}
	}
	m.Annotations[Annotation] = string(b)
	return nil
}
