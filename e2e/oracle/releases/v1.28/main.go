// Command v1.28 generates the conversion-oracle fixtures of the pairs whose
// Release is v1.28 (e2e/oracle.Pairs) with the conversion code of the
// Kubernetes release in go.mod.
package main

import (
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/mvpctl/mvpctl/e2e/oracle"

	flowcontrolinstall "k8s.io/kubernetes/pkg/apis/flowcontrol/install"
)

func main() { oracle.Main(newScheme) }

// newScheme installs the groups of the last release that served
// flowcontrol.apiserver.k8s.io/v1beta2 (removed in v1.29).
func newScheme() *runtime.Scheme {
	s := runtime.NewScheme()
	flowcontrolinstall.Install(s)
	return s
}
