// Command v1.36 generates the conversion-oracle fixtures of the pairs whose
// Release is v1.36 (e2e/oracle.Pairs) with the conversion code of the
// Kubernetes release in go.mod.
package main

import (
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/mvpctl/mvpctl/e2e/oracle"

	apiextensionsinstall "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/install"
	apiregistrationinstall "k8s.io/kube-aggregator/pkg/apis/apiregistration/install"
	admissionregistrationinstall "k8s.io/kubernetes/pkg/apis/admissionregistration/install"
	appsinstall "k8s.io/kubernetes/pkg/apis/apps/install"
	autoscalinginstall "k8s.io/kubernetes/pkg/apis/autoscaling/install"
	batchinstall "k8s.io/kubernetes/pkg/apis/batch/install"
	certificatesinstall "k8s.io/kubernetes/pkg/apis/certificates/install"
	coordinationinstall "k8s.io/kubernetes/pkg/apis/coordination/install"
	discoveryinstall "k8s.io/kubernetes/pkg/apis/discovery/install"
	eventsinstall "k8s.io/kubernetes/pkg/apis/events/install"
	extensionsinstall "k8s.io/kubernetes/pkg/apis/extensions/install"
	flowcontrolinstall "k8s.io/kubernetes/pkg/apis/flowcontrol/install"
	networkinginstall "k8s.io/kubernetes/pkg/apis/networking/install"
	nodeinstall "k8s.io/kubernetes/pkg/apis/node/install"
	policyinstall "k8s.io/kubernetes/pkg/apis/policy/install"
	rbacinstall "k8s.io/kubernetes/pkg/apis/rbac/install"
	resourceinstall "k8s.io/kubernetes/pkg/apis/resource/install"
	schedulinginstall "k8s.io/kubernetes/pkg/apis/scheduling/install"
	storageinstall "k8s.io/kubernetes/pkg/apis/storage/install"
)

func main() { oracle.Main(newScheme) }

// newScheme installs the groups of the newest release module: versions still
// served (autoscaling v1 and v2), the beta and alpha versions current
// releases still convert (admissionregistration policies, among them
// MutatingAdmissionPolicy and its Binding, v1 since v1.36; certificates
// ClusterTrustBundle, coordination LeaseCandidate, networking ServiceCIDR and
// IPAddress, rbac, scheduling and node v1alpha1, resource.k8s.io, storage
// VolumeAttributesClass), and every group of a removed version whose types
// gained fields after its last serving release (the *-newer-fields pairs).
func newScheme() *runtime.Scheme {
	s := runtime.NewScheme()
	admissionregistrationinstall.Install(s)
	apiextensionsinstall.Install(s)
	apiregistrationinstall.Install(s)
	appsinstall.Install(s)
	autoscalinginstall.Install(s)
	batchinstall.Install(s)
	certificatesinstall.Install(s)
	coordinationinstall.Install(s)
	discoveryinstall.Install(s)
	eventsinstall.Install(s)
	extensionsinstall.Install(s)
	flowcontrolinstall.Install(s)
	networkinginstall.Install(s)
	nodeinstall.Install(s)
	policyinstall.Install(s)
	rbacinstall.Install(s)
	resourceinstall.Install(s)
	schedulinginstall.Install(s)
	storageinstall.Install(s)
	return s
}
