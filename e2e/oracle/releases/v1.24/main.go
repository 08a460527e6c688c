// Command v1.24 generates the conversion-oracle fixtures of the pairs whose
// Release is v1.24 (e2e/oracle.Pairs) with the conversion code of the
// Kubernetes release in go.mod.
package main

import (
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/mvpctl/mvpctl/e2e/oracle"

	autoscalinginstall "k8s.io/kubernetes/pkg/apis/autoscaling/install"
	batchinstall "k8s.io/kubernetes/pkg/apis/batch/install"
	coreinstall "k8s.io/kubernetes/pkg/apis/core/install"
	discoveryinstall "k8s.io/kubernetes/pkg/apis/discovery/install"
	eventsinstall "k8s.io/kubernetes/pkg/apis/events/install"
	nodeinstall "k8s.io/kubernetes/pkg/apis/node/install"
	policyinstall "k8s.io/kubernetes/pkg/apis/policy/install"
)

func main() { oracle.Main(newScheme) }

// newScheme installs the groups of the last release that served the versions
// v1.25 removed: batch/v1beta1 CronJob, discovery.k8s.io/v1beta1
// EndpointSlice, events.k8s.io/v1beta1 Event (its internal type is core's),
// autoscaling/v2beta1 HorizontalPodAutoscaler, policy/v1beta1
// PodDisruptionBudget and PodSecurityPolicy, node.k8s.io/v1beta1
// RuntimeClass.
func newScheme() *runtime.Scheme {
	s := runtime.NewScheme()
	autoscalinginstall.Install(s)
	batchinstall.Install(s)
	coreinstall.Install(s)
	discoveryinstall.Install(s)
	eventsinstall.Install(s)
	nodeinstall.Install(s)
	policyinstall.Install(s)
	return s
}
