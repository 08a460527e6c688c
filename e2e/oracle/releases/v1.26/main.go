// Command v1.26 generates the conversion-oracle fixtures of the pairs whose
// Release is v1.26 (e2e/oracle.Pairs) with the conversion code of the
// Kubernetes release in go.mod.
package main

import (
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/mvpctl/mvpctl/e2e/oracle"

	flowcontrolinstall "k8s.io/kubernetes/pkg/apis/flowcontrol/install"
	storageinstall "k8s.io/kubernetes/pkg/apis/storage/install"
)

func main() { oracle.Main(newScheme) }

// newScheme installs the groups of the last release that served
// storage.k8s.io/v1beta1 CSIStorageCapacity (removed in v1.27), and
// flowcontrol.apiserver.k8s.io: v1.26 is the first release whose code has
// v1beta3, the version v1beta1 (last served by v1.25) converts to.
func newScheme() *runtime.Scheme {
	s := runtime.NewScheme()
	flowcontrolinstall.Install(s)
	storageinstall.Install(s)
	return s
}
