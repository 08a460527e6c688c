// Command v1.25 generates the conversion-oracle fixtures of the pairs whose
// Release is v1.25 (e2e/oracle.Pairs) with the conversion code of the
// Kubernetes release in go.mod.
package main

import (
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/mvpctl/mvpctl/e2e/oracle"

	autoscalinginstall "k8s.io/kubernetes/pkg/apis/autoscaling/install"
)

func main() { oracle.Main(newScheme) }

// newScheme installs the groups of the last release that served
// autoscaling/v2beta2 HorizontalPodAutoscaler (removed in v1.26).
// flowcontrol.apiserver.k8s.io/v1beta1, removed in v1.26 too, is checked
// against v1.26 (releases/v1.26): v1.25 has no v1beta3 to convert it to.
func newScheme() *runtime.Scheme {
	s := runtime.NewScheme()
	autoscalinginstall.Install(s)
	return s
}
