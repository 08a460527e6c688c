// Command v1.33 generates the conversion-oracle fixtures of the pairs whose
// Release is v1.33 (e2e/oracle.Pairs) with the conversion code of the
// Kubernetes release in go.mod.
package main

import (
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/mvpctl/mvpctl/e2e/oracle"

	admissionregistrationinstall "k8s.io/kubernetes/pkg/apis/admissionregistration/install"
)

func main() { oracle.Main(newScheme) }

// newScheme installs the groups of the last release that served
// admissionregistration.k8s.io/v1beta1 ValidatingAdmissionPolicy and
// ValidatingAdmissionPolicyBinding (removed in v1.34).
func newScheme() *runtime.Scheme {
	s := runtime.NewScheme()
	admissionregistrationinstall.Install(s)
	return s
}
