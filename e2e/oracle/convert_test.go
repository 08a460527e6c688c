package oracle

import (
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/conversion"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// widget is a test kind, registered both as the internal and as the v1
// version of group test.
type widget struct {
	metav1.TypeMeta
	Size *int
}

func (w *widget) DeepCopyObject() runtime.Object {
	c := *w
	return &c
}

type widgetV1 struct{ widget }

func (w *widgetV1) DeepCopyObject() runtime.Object {
	c := *w
	return &c
}

// TestConvertReportsPanic checks that a conversion function that panics, as
// older releases' do on input their defaulting would have completed, is an
// error of that input and does not stop the generator.
func TestConvertReportsPanic(t *testing.T) {
	s := runtime.NewScheme()
	internal := schema.GroupVersion{Group: "test", Version: runtime.APIVersionInternal}
	v1 := schema.GroupVersion{Group: "test", Version: "v1"}
	s.AddKnownTypeWithName(internal.WithKind("Widget"), &widget{})
	s.AddKnownTypeWithName(v1.WithKind("Widget"), &widgetV1{})
	err := s.AddConversionFunc((*widgetV1)(nil), (*widget)(nil), func(a, b interface{}, _ conversion.Scope) error {
		b.(*widget).Size = new(int)
		*b.(*widget).Size = *a.(*widgetV1).Size // nil: panics
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	in := &widgetV1{}
	in.SetGroupVersionKind(v1.WithKind("Widget"))
	_, err = NewConverter(s).Convert(in, v1.WithKind("Widget"))
	if err == nil || !strings.Contains(err.Error(), "panicked") {
		t.Fatalf("Convert = %v, want an error saying the conversion panicked", err)
	}
}
