// Command v1.15 generates the conversion-oracle fixtures of the pairs whose
// Release is v1.15 (e2e/oracle.Pairs) with the conversion code of the
// Kubernetes release in go.mod.
package main

import (
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/mvpctl/mvpctl/e2e/oracle"

	appsinstall "k8s.io/kubernetes/pkg/apis/apps/install"
	extensionsinstall "k8s.io/kubernetes/pkg/apis/extensions/install"
	networkinginstall "k8s.io/kubernetes/pkg/apis/networking/install"
	policyinstall "k8s.io/kubernetes/pkg/apis/policy/install"
)

func main() { oracle.Main(newScheme) }

// newScheme installs the groups of the last release that served
// extensions/v1beta1 and apps/v1beta1 and v1beta2 workloads,
// extensions/v1beta1 NetworkPolicy and PodSecurityPolicy (removed in v1.16).
func newScheme() *runtime.Scheme {
	s := runtime.NewScheme()
	appsinstall.Install(s)
	extensionsinstall.Install(s)
	networkinginstall.Install(s)
	policyinstall.Install(s)
	return s
}
