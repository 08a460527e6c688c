// Command v1.35 generates the conversion-oracle fixtures of the pairs whose
// Release is v1.35 (e2e/oracle.Pairs) with the conversion code of the
// Kubernetes release in go.mod.
package main

import (
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/mvpctl/mvpctl/e2e/oracle"

	admissionregistrationinstall "k8s.io/kubernetes/pkg/apis/admissionregistration/install"
	autoscalinginstall "k8s.io/kubernetes/pkg/apis/autoscaling/install"
	certificatesinstall "k8s.io/kubernetes/pkg/apis/certificates/install"
	coordinationinstall "k8s.io/kubernetes/pkg/apis/coordination/install"
	networkinginstall "k8s.io/kubernetes/pkg/apis/networking/install"
	policyinstall "k8s.io/kubernetes/pkg/apis/policy/install"
	resourceinstall "k8s.io/kubernetes/pkg/apis/resource/install"
	storageinstall "k8s.io/kubernetes/pkg/apis/storage/install"
)

func main() { oracle.Main(newScheme) }

// newScheme installs the groups of the newest release module: versions still
// served (autoscaling v1 and v2), the beta versions current releases still
// convert (admissionregistration policies, certificates ClusterTrustBundle,
// coordination LeaseCandidate, networking ServiceCIDR and IPAddress,
// resource.k8s.io, storage VolumeAttributesClass), and removed versions
// whose types gained fields after their last serving release (coordination
// Lease, policy PodDisruptionBudget: the *-newer-fields pairs).
func newScheme() *runtime.Scheme {
	s := runtime.NewScheme()
	admissionregistrationinstall.Install(s)
	autoscalinginstall.Install(s)
	certificatesinstall.Install(s)
	coordinationinstall.Install(s)
	networkinginstall.Install(s)
	policyinstall.Install(s)
	resourceinstall.Install(s)
	storageinstall.Install(s)
	return s
}
