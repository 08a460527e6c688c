// Command v1.36 generates the conversion-oracle fixtures of the pairs whose
// Release is v1.36 (e2e/oracle.Pairs) with the conversion code of the
// Kubernetes release in go.mod.
package main

import (
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/mvpctl/mvpctl/e2e/oracle"

	admissionregistrationinstall "k8s.io/kubernetes/pkg/apis/admissionregistration/install"
	resourceinstall "k8s.io/kubernetes/pkg/apis/resource/install"
)

func main() { oracle.Main(newScheme) }

// newScheme installs the groups whose versions v1.36 added or still
// converts: admissionregistration.k8s.io/v1 MutatingAdmissionPolicy and its
// Binding (new in v1.36, converted from v1beta1 and v1alpha1) and
// resource.k8s.io DeviceTaintRule (v1alpha3 and v1beta2).
func newScheme() *runtime.Scheme {
	s := runtime.NewScheme()
	admissionregistrationinstall.Install(s)
	resourceinstall.Install(s)
	return s
}
