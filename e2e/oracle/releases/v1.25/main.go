// Command v1.25 generates the conversion-oracle fixtures of the pairs whose
// Release is v1.25 (e2e/oracle.Pairs) with the conversion code of the
// Kubernetes release in go.mod.
package main

import (
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/mvpctl/mvpctl/e2e/oracle"

	autoscalinginstall "k8s.io/kubernetes/pkg/apis/autoscaling/install"
	flowcontrolinstall "k8s.io/kubernetes/pkg/apis/flowcontrol/install"
)

func main() { oracle.Main(newScheme) }

// newScheme installs the groups of the last release that served
// autoscaling/v2beta2 HorizontalPodAutoscaler and
// flowcontrol.apiserver.k8s.io/v1beta1 (removed in v1.26).
func newScheme() *runtime.Scheme {
	s := runtime.NewScheme()
	autoscalinginstall.Install(s)
	flowcontrolinstall.Install(s)
	return s
}
