// Command v1.31 generates the conversion-oracle fixtures of the pairs whose
// Release is v1.31 (e2e/oracle.Pairs) with the conversion code of the
// Kubernetes release in go.mod.
package main

import (
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/mvpctl/mvpctl/e2e/oracle"

	admissionregistrationinstall "k8s.io/kubernetes/pkg/apis/admissionregistration/install"
	flowcontrolinstall "k8s.io/kubernetes/pkg/apis/flowcontrol/install"
)

func main() { oracle.Main(newScheme) }

// newScheme installs the groups of the last release that served
// flowcontrol.apiserver.k8s.io/v1beta3 and admissionregistration.k8s.io/v1alpha1
// ValidatingAdmissionPolicy and ValidatingAdmissionPolicyBinding (removed in
// v1.32). It is also the oldest release module whose code has
// flowcontrol v1 (v1.29) and still v1beta1 and v1beta2, which it checks
// against v1.
func newScheme() *runtime.Scheme {
	s := runtime.NewScheme()
	admissionregistrationinstall.Install(s)
	flowcontrolinstall.Install(s)
	return s
}
