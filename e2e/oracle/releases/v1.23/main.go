// Command v1.23 generates the conversion-oracle fixtures of the pairs whose
// Release is v1.23 (e2e/oracle.Pairs) with the conversion code of the
// Kubernetes release in go.mod.
package main

import (
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/mvpctl/mvpctl/e2e/oracle"

	storageinstall "k8s.io/kubernetes/pkg/apis/storage/install"
)

func main() { oracle.Main(newScheme) }

// newScheme installs the groups of the last release that served
// storage.k8s.io/v1alpha1 VolumeAttachment and CSIStorageCapacity (removed
// in v1.24).
func newScheme() *runtime.Scheme {
	s := runtime.NewScheme()
	storageinstall.Install(s)
	return s
}
