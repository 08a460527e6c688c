// Command v1.21 generates the conversion-oracle fixtures of the pairs whose
// Release is v1.21 (e2e/oracle.Pairs) with the conversion code of the
// Kubernetes release in go.mod.
package main

import (
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/mvpctl/mvpctl/e2e/oracle"

	apiextensionsinstall "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/install"
	apiregistrationinstall "k8s.io/kube-aggregator/pkg/apis/apiregistration/install"
	admissionregistrationinstall "k8s.io/kubernetes/pkg/apis/admissionregistration/install"
	certificatesinstall "k8s.io/kubernetes/pkg/apis/certificates/install"
	coordinationinstall "k8s.io/kubernetes/pkg/apis/coordination/install"
	extensionsinstall "k8s.io/kubernetes/pkg/apis/extensions/install"
	networkinginstall "k8s.io/kubernetes/pkg/apis/networking/install"
	rbacinstall "k8s.io/kubernetes/pkg/apis/rbac/install"
	schedulinginstall "k8s.io/kubernetes/pkg/apis/scheduling/install"
	storageinstall "k8s.io/kubernetes/pkg/apis/storage/install"
)

func main() { oracle.Main(newScheme) }

// newScheme installs the groups of the last release that served the v1beta1
// versions v1.22 removed: admissionregistration webhooks, apiextensions
// CustomResourceDefinition, apiregistration APIService, certificates
// CertificateSigningRequest, coordination Lease, extensions and networking
// Ingress, IngressClass, rbac, scheduling PriorityClass, storage CSIDriver,
// CSINode, StorageClass and VolumeAttachment.
func newScheme() *runtime.Scheme {
	s := runtime.NewScheme()
	admissionregistrationinstall.Install(s)
	apiextensionsinstall.Install(s)
	apiregistrationinstall.Install(s)
	certificatesinstall.Install(s)
	coordinationinstall.Install(s)
	extensionsinstall.Install(s)
	networkinginstall.Install(s)
	rbacinstall.Install(s)
	schedulinginstall.Install(s)
	storageinstall.Install(s)
	return s
}
