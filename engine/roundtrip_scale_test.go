package engine_test

import (
	"context"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"math/rand"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	admissionregistrationv1alpha1 "k8s.io/api/admissionregistration/v1alpha1"
	admissionregistrationv1beta1 "k8s.io/api/admissionregistration/v1beta1"
	appsv1 "k8s.io/api/apps/v1"
	appsv1beta1 "k8s.io/api/apps/v1beta1"
	appsv1beta2 "k8s.io/api/apps/v1beta2"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	batchv1 "k8s.io/api/batch/v1"
	batchv1beta1 "k8s.io/api/batch/v1beta1"
	certificatesv1 "k8s.io/api/certificates/v1"
	certificatesv1alpha1 "k8s.io/api/certificates/v1alpha1"
	certificatesv1beta1 "k8s.io/api/certificates/v1beta1"
	coordinationv1 "k8s.io/api/coordination/v1"
	coordinationv1beta1 "k8s.io/api/coordination/v1beta1"
	discoveryv1 "k8s.io/api/discovery/v1"
	discoveryv1beta1 "k8s.io/api/discovery/v1beta1"
	eventsv1 "k8s.io/api/events/v1"
	eventsv1beta1 "k8s.io/api/events/v1beta1"
	extensionsv1beta1 "k8s.io/api/extensions/v1beta1"
	networkingv1 "k8s.io/api/networking/v1"
	networkingv1beta1 "k8s.io/api/networking/v1beta1"
	nodev1 "k8s.io/api/node/v1"
	nodev1alpha1 "k8s.io/api/node/v1alpha1"
	nodev1beta1 "k8s.io/api/node/v1beta1"
	policyv1 "k8s.io/api/policy/v1"
	policyv1beta1 "k8s.io/api/policy/v1beta1"
	rbacv1 "k8s.io/api/rbac/v1"
	rbacv1alpha1 "k8s.io/api/rbac/v1alpha1"
	rbacv1beta1 "k8s.io/api/rbac/v1beta1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	schedulingv1beta1 "k8s.io/api/scheduling/v1beta1"
	storagev1 "k8s.io/api/storage/v1"
	storagev1alpha1 "k8s.io/api/storage/v1alpha1"
	storagev1beta1 "k8s.io/api/storage/v1beta1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsv1beta1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1beta1"
	"k8s.io/apimachinery/pkg/api/apitesting/fuzzer"
	metafuzzer "k8s.io/apimachinery/pkg/apis/meta/fuzzer"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/scheme"
	apiregistrationv1 "k8s.io/kube-aggregator/pkg/apis/apiregistration/v1"
	apiregistrationv1beta1 "k8s.io/kube-aggregator/pkg/apis/apiregistration/v1beta1"
	"sigs.k8s.io/randfill"

	"github.com/mvpctl/mvpctl/engine"
	"github.com/mvpctl/mvpctl/rules"
)

// roundTripDefaultN is the objects per rule and direction in `go test`
// (fewer under the race detector, which finds nothing in this
// single-goroutine test and makes it ten times slower).
var roundTripDefaultN = 200

// roundTripSeed makes every run generate the same objects; a failure names
// the object's index, which reproduces it.
const roundTripSeed = 20261129

// TestRoundTripAtScale converts generated objects of every shipped rule set
// to the other version and back, in both directions, and requires the
// object back exactly (go-cmp, numbers by value). Half the objects are the
// Kubernetes Go types of the version filled at random (randfill with
// apimachinery's metadata fuzzers, as Kubernetes' and Cluster API's
// conversion round-trip tests do); the other half, and all of a custom
// resource's, are built from the rule's own field paths with random values
// drawn from the rule file's own words and literals, plus random fields no
// rule mentions. MVPCTL_ROUNDTRIP_N sets the objects per rule and direction
// (default 200, 20 with -race; `make roundtrip` runs 10,000).
func TestRoundTripAtScale(t *testing.T) {
	n := roundTripDefaultN
	if s := os.Getenv("MVPCTL_ROUNDTRIP_N"); s != "" {
		v, err := strconv.Atoi(s)
		if err != nil || v <= 0 {
			t.Fatalf("MVPCTL_ROUNDTRIP_N=%q: want a positive number", s)
		}
		n = v
	}
	files, _ := filepath.Glob("../rules/builtin/*.yaml")
	files = append(files, "../testdata/examples/seed/mvp-rules.yaml")
	for _, file := range files {
		conv, err := engine.Load(engine.Options{}, file)
		if err != nil {
			t.Fatal(err)
		}
		src, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		words := ruleWords(src)
		for _, c := range conv.Rules() {
			for _, dir := range []rules.Direction{rules.Forward, rules.Reverse} {
				prog := c.Program(dir)
				name := fmt.Sprintf("%s/%s.%s/%s", filepath.Base(file), c.Rule.Resource, c.Rule.FromVersion, dir)
				t.Run(name, func(t *testing.T) {
					g := newObjectGen(name, c, prog, words)
					var typed, converted, convErrors, diffs int
					for i := range n {
						obj, isTyped := g.object(t, i)
						if isTyped {
							typed++
						}
						orig := rules.DeepCopyJSON(obj).(map[string]any)
						out, err := conv.Convert(context.Background(), obj, prog.To)
						if err != nil {
							// Random values where a rule expects a type
							// (a rename to integer of "x") do not convert;
							// a real object always does.
							if isTyped {
								t.Errorf("object %d (typed) does not convert to %s: %v", i, prog.To, err)
							}
							convErrors++
							continue
						}
						converted++
						back, err := conv.Convert(context.Background(), out, prog.From)
						if err != nil {
							diffs++
							t.Errorf("object %d converted to %s does not convert back: %v", i, prog.To, err)
							continue
						}
						if diff := cmp.Diff(orig, back, numberComparer); diff != "" {
							diffs++
							if diffs <= 3 {
								in, _ := json.Marshal(orig)
								t.Errorf("object %d: %s -> %s -> %s changed it (-in +back):\n%s\ninput: %s", i, prog.From, prog.To, prog.From, diff, in)
							}
						}
					}
					t.Logf("roundtrip: %-45s %-8s %s -> %s: %d objects (%d typed, %d from rule paths), %d converted and back, %d conversion errors, %d differences",
						filepath.Base(file), dir, prog.From, prog.To, n, typed, n-typed, converted, convErrors, diffs)
				})
			}
		}
	}
}

// typedObjects are the Kubernetes Go types of the versions the shipped rules
// convert. autoscaling/v2beta2 is gone from k8s.io/api; v2 has its fields.
// So is scheduling.k8s.io/v1alpha1, whose PriorityClass has v1's fields, and
// autoscaling/v2beta1 (hpaV2beta1 in oracle_test.go).
var typedObjects = map[schema.GroupVersionKind]func() any{
	{Group: "policy", Version: "v1beta1", Kind: "PodDisruptionBudget"}:          func() any { return &policyv1beta1.PodDisruptionBudget{} },
	{Group: "policy", Version: "v1", Kind: "PodDisruptionBudget"}:               func() any { return &policyv1.PodDisruptionBudget{} },
	{Group: "networking.k8s.io", Version: "v1beta1", Kind: "Ingress"}:           func() any { return &networkingv1beta1.Ingress{} },
	{Group: "networking.k8s.io", Version: "v1", Kind: "Ingress"}:                func() any { return &networkingv1.Ingress{} },
	{Group: "extensions", Version: "v1beta1", Kind: "Ingress"}:                  func() any { return &extensionsv1beta1.Ingress{} },
	{Group: "batch", Version: "v1beta1", Kind: "CronJob"}:                       func() any { return &batchv1beta1.CronJob{} },
	{Group: "batch", Version: "v1", Kind: "CronJob"}:                            func() any { return &batchv1.CronJob{} },
	{Group: "autoscaling", Version: "v1", Kind: "HorizontalPodAutoscaler"}:      func() any { return &autoscalingv1.HorizontalPodAutoscaler{} },
	{Group: "autoscaling", Version: "v2", Kind: "HorizontalPodAutoscaler"}:      func() any { return &autoscalingv2.HorizontalPodAutoscaler{} },
	{Group: "autoscaling", Version: "v2beta2", Kind: "HorizontalPodAutoscaler"}: func() any { return &autoscalingv2.HorizontalPodAutoscaler{} },
	{Group: "coordination.k8s.io", Version: "v1beta1", Kind: "Lease"}:           func() any { return &coordinationv1beta1.Lease{} },
	{Group: "coordination.k8s.io", Version: "v1", Kind: "Lease"}:                func() any { return &coordinationv1.Lease{} },
	// admissionregistration.k8s.io
	{Group: "admissionregistration.k8s.io", Version: "v1beta1", Kind: "ValidatingWebhookConfiguration"}: func() any {
		return &admissionregistrationv1beta1.ValidatingWebhookConfiguration{}
	},
	{Group: "admissionregistration.k8s.io", Version: "v1", Kind: "ValidatingWebhookConfiguration"}: func() any {
		return &admissionregistrationv1.ValidatingWebhookConfiguration{}
	},
	{Group: "admissionregistration.k8s.io", Version: "v1beta1", Kind: "MutatingWebhookConfiguration"}: func() any {
		return &admissionregistrationv1beta1.MutatingWebhookConfiguration{}
	},
	{Group: "admissionregistration.k8s.io", Version: "v1", Kind: "MutatingWebhookConfiguration"}: func() any {
		return &admissionregistrationv1.MutatingWebhookConfiguration{}
	},
	{Group: "admissionregistration.k8s.io", Version: "v1alpha1", Kind: "ValidatingAdmissionPolicy"}: func() any {
		return &admissionregistrationv1alpha1.ValidatingAdmissionPolicy{}
	},
	{Group: "admissionregistration.k8s.io", Version: "v1beta1", Kind: "ValidatingAdmissionPolicy"}: func() any {
		return &admissionregistrationv1beta1.ValidatingAdmissionPolicy{}
	},
	{Group: "admissionregistration.k8s.io", Version: "v1", Kind: "ValidatingAdmissionPolicy"}: func() any {
		return &admissionregistrationv1.ValidatingAdmissionPolicy{}
	},
	{Group: "admissionregistration.k8s.io", Version: "v1alpha1", Kind: "ValidatingAdmissionPolicyBinding"}: func() any {
		return &admissionregistrationv1alpha1.ValidatingAdmissionPolicyBinding{}
	},
	{Group: "admissionregistration.k8s.io", Version: "v1beta1", Kind: "ValidatingAdmissionPolicyBinding"}: func() any {
		return &admissionregistrationv1beta1.ValidatingAdmissionPolicyBinding{}
	},
	{Group: "admissionregistration.k8s.io", Version: "v1", Kind: "ValidatingAdmissionPolicyBinding"}: func() any {
		return &admissionregistrationv1.ValidatingAdmissionPolicyBinding{}
	},
	{Group: "admissionregistration.k8s.io", Version: "v1alpha1", Kind: "MutatingAdmissionPolicy"}: func() any {
		return &admissionregistrationv1alpha1.MutatingAdmissionPolicy{}
	},
	{Group: "admissionregistration.k8s.io", Version: "v1beta1", Kind: "MutatingAdmissionPolicy"}: func() any {
		return &admissionregistrationv1beta1.MutatingAdmissionPolicy{}
	},
	{Group: "admissionregistration.k8s.io", Version: "v1alpha1", Kind: "MutatingAdmissionPolicyBinding"}: func() any {
		return &admissionregistrationv1alpha1.MutatingAdmissionPolicyBinding{}
	},
	{Group: "admissionregistration.k8s.io", Version: "v1beta1", Kind: "MutatingAdmissionPolicyBinding"}: func() any {
		return &admissionregistrationv1beta1.MutatingAdmissionPolicyBinding{}
	},
	// apiextensions.k8s.io (schemas filled by crdSchemaFuncs)
	{Group: "apiextensions.k8s.io", Version: "v1beta1", Kind: "CustomResourceDefinition"}: func() any {
		return &apiextensionsv1beta1.CustomResourceDefinition{}
	},
	{Group: "apiextensions.k8s.io", Version: "v1", Kind: "CustomResourceDefinition"}: func() any {
		return &apiextensionsv1.CustomResourceDefinition{}
	},
	// apiregistration.k8s.io
	{Group: "apiregistration.k8s.io", Version: "v1beta1", Kind: "APIService"}: func() any { return &apiregistrationv1beta1.APIService{} },
	{Group: "apiregistration.k8s.io", Version: "v1", Kind: "APIService"}:      func() any { return &apiregistrationv1.APIService{} },
	// certificates.k8s.io
	{Group: "certificates.k8s.io", Version: "v1beta1", Kind: "CertificateSigningRequest"}: func() any {
		return &certificatesv1beta1.CertificateSigningRequest{}
	},
	{Group: "certificates.k8s.io", Version: "v1", Kind: "CertificateSigningRequest"}: func() any {
		return &certificatesv1.CertificateSigningRequest{}
	},
	{Group: "certificates.k8s.io", Version: "v1alpha1", Kind: "ClusterTrustBundle"}: func() any {
		return &certificatesv1alpha1.ClusterTrustBundle{}
	},
	{Group: "certificates.k8s.io", Version: "v1beta1", Kind: "ClusterTrustBundle"}: func() any {
		return &certificatesv1beta1.ClusterTrustBundle{}
	},
	{Group: "apps", Version: "v1", Kind: "Deployment"}:                                    func() any { return &appsv1.Deployment{} },
	{Group: "apps", Version: "v1", Kind: "StatefulSet"}:                                   func() any { return &appsv1.StatefulSet{} },
	{Group: "apps", Version: "v1", Kind: "DaemonSet"}:                                     func() any { return &appsv1.DaemonSet{} },
	{Group: "apps", Version: "v1", Kind: "ReplicaSet"}:                                    func() any { return &appsv1.ReplicaSet{} },
	{Group: "apps", Version: "v1", Kind: "ControllerRevision"}:                            func() any { return &appsv1.ControllerRevision{} },
	{Group: "apps", Version: "v1beta1", Kind: "Deployment"}:                               func() any { return &appsv1beta1.Deployment{} },
	{Group: "apps", Version: "v1beta1", Kind: "StatefulSet"}:                              func() any { return &appsv1beta1.StatefulSet{} },
	{Group: "apps", Version: "v1beta1", Kind: "ControllerRevision"}:                       func() any { return &appsv1beta1.ControllerRevision{} },
	{Group: "apps", Version: "v1beta2", Kind: "Deployment"}:                               func() any { return &appsv1beta2.Deployment{} },
	{Group: "apps", Version: "v1beta2", Kind: "StatefulSet"}:                              func() any { return &appsv1beta2.StatefulSet{} },
	{Group: "apps", Version: "v1beta2", Kind: "DaemonSet"}:                                func() any { return &appsv1beta2.DaemonSet{} },
	{Group: "apps", Version: "v1beta2", Kind: "ReplicaSet"}:                               func() any { return &appsv1beta2.ReplicaSet{} },
	{Group: "apps", Version: "v1beta2", Kind: "ControllerRevision"}:                       func() any { return &appsv1beta2.ControllerRevision{} },
	{Group: "extensions", Version: "v1beta1", Kind: "Deployment"}:                         func() any { return &extensionsv1beta1.Deployment{} },
	{Group: "extensions", Version: "v1beta1", Kind: "DaemonSet"}:                          func() any { return &extensionsv1beta1.DaemonSet{} },
	{Group: "extensions", Version: "v1beta1", Kind: "ReplicaSet"}:                         func() any { return &extensionsv1beta1.ReplicaSet{} },
	{Group: "extensions", Version: "v1beta1", Kind: "NetworkPolicy"}:                      func() any { return &extensionsv1beta1.NetworkPolicy{} },
	{Group: "networking.k8s.io", Version: "v1", Kind: "NetworkPolicy"}:                    func() any { return &networkingv1.NetworkPolicy{} },
	{Group: "rbac.authorization.k8s.io", Version: "v1", Kind: "Role"}:                     func() any { return &rbacv1.Role{} },
	{Group: "rbac.authorization.k8s.io", Version: "v1", Kind: "ClusterRole"}:              func() any { return &rbacv1.ClusterRole{} },
	{Group: "rbac.authorization.k8s.io", Version: "v1", Kind: "RoleBinding"}:              func() any { return &rbacv1.RoleBinding{} },
	{Group: "rbac.authorization.k8s.io", Version: "v1", Kind: "ClusterRoleBinding"}:       func() any { return &rbacv1.ClusterRoleBinding{} },
	{Group: "rbac.authorization.k8s.io", Version: "v1beta1", Kind: "Role"}:                func() any { return &rbacv1beta1.Role{} },
	{Group: "rbac.authorization.k8s.io", Version: "v1beta1", Kind: "ClusterRole"}:         func() any { return &rbacv1beta1.ClusterRole{} },
	{Group: "rbac.authorization.k8s.io", Version: "v1beta1", Kind: "RoleBinding"}:         func() any { return &rbacv1beta1.RoleBinding{} },
	{Group: "rbac.authorization.k8s.io", Version: "v1beta1", Kind: "ClusterRoleBinding"}:  func() any { return &rbacv1beta1.ClusterRoleBinding{} },
	{Group: "rbac.authorization.k8s.io", Version: "v1alpha1", Kind: "Role"}:               func() any { return &rbacv1alpha1.Role{} },
	{Group: "rbac.authorization.k8s.io", Version: "v1alpha1", Kind: "ClusterRole"}:        func() any { return &rbacv1alpha1.ClusterRole{} },
	{Group: "rbac.authorization.k8s.io", Version: "v1alpha1", Kind: "RoleBinding"}:        func() any { return &rbacv1alpha1.RoleBinding{} },
	{Group: "rbac.authorization.k8s.io", Version: "v1alpha1", Kind: "ClusterRoleBinding"}: func() any { return &rbacv1alpha1.ClusterRoleBinding{} },
	{Group: "scheduling.k8s.io", Version: "v1", Kind: "PriorityClass"}:                    func() any { return &schedulingv1.PriorityClass{} },
	{Group: "scheduling.k8s.io", Version: "v1beta1", Kind: "PriorityClass"}:               func() any { return &schedulingv1beta1.PriorityClass{} },
	{Group: "scheduling.k8s.io", Version: "v1alpha1", Kind: "PriorityClass"}:              func() any { return &schedulingv1.PriorityClass{} },
	{Group: "storage.k8s.io", Version: "v1", Kind: "StorageClass"}:                        func() any { return &storagev1.StorageClass{} },
	{Group: "storage.k8s.io", Version: "v1", Kind: "VolumeAttachment"}:                    func() any { return &storagev1.VolumeAttachment{} },
	{Group: "storage.k8s.io", Version: "v1", Kind: "CSIDriver"}:                           func() any { return &storagev1.CSIDriver{} },
	{Group: "storage.k8s.io", Version: "v1", Kind: "CSINode"}:                             func() any { return &storagev1.CSINode{} },
	{Group: "storage.k8s.io", Version: "v1", Kind: "CSIStorageCapacity"}:                  func() any { return &storagev1.CSIStorageCapacity{} },
	{Group: "storage.k8s.io", Version: "v1beta1", Kind: "StorageClass"}:                   func() any { return &storagev1beta1.StorageClass{} },
	{Group: "storage.k8s.io", Version: "v1beta1", Kind: "VolumeAttachment"}:               func() any { return &storagev1beta1.VolumeAttachment{} },
	{Group: "storage.k8s.io", Version: "v1beta1", Kind: "CSIDriver"}:                      func() any { return &storagev1beta1.CSIDriver{} },
	{Group: "storage.k8s.io", Version: "v1beta1", Kind: "CSINode"}:                        func() any { return &storagev1beta1.CSINode{} },
	{Group: "storage.k8s.io", Version: "v1beta1", Kind: "CSIStorageCapacity"}:             func() any { return &storagev1beta1.CSIStorageCapacity{} },
	{Group: "storage.k8s.io", Version: "v1alpha1", Kind: "VolumeAttachment"}:              func() any { return &storagev1alpha1.VolumeAttachment{} },
	{Group: "storage.k8s.io", Version: "v1alpha1", Kind: "CSIStorageCapacity"}:            func() any { return &storagev1alpha1.CSIStorageCapacity{} },
	{Group: "node.k8s.io", Version: "v1", Kind: "RuntimeClass"}:                           func() any { return &nodev1.RuntimeClass{} },
	{Group: "node.k8s.io", Version: "v1beta1", Kind: "RuntimeClass"}:                      func() any { return &nodev1beta1.RuntimeClass{} },
	{Group: "node.k8s.io", Version: "v1alpha1", Kind: "RuntimeClass"}:                     func() any { return &nodev1alpha1.RuntimeClass{} },
	{Group: "events.k8s.io", Version: "v1", Kind: "Event"}:                                func() any { return &eventsv1.Event{} },
	{Group: "events.k8s.io", Version: "v1beta1", Kind: "Event"}:                           func() any { return &eventsv1beta1.Event{} },
	{Group: "discovery.k8s.io", Version: "v1", Kind: "EndpointSlice"}:                     func() any { return &discoveryv1.EndpointSlice{} },
	{Group: "discovery.k8s.io", Version: "v1beta1", Kind: "EndpointSlice"}:                func() any { return &discoveryv1beta1.EndpointSlice{} },
	{Group: "autoscaling", Version: "v2beta1", Kind: "HorizontalPodAutoscaler"}:           func() any { return &hpaV2beta1{} },
}

// crdSchemaFuncs fill CustomResourceDefinition schemas with a few fields and
// one level of properties: a schema filled field by field nests without end,
// and its JSON values (default, example, enum) must hold JSON.
var crdSchemaFuncs = []any{
	func(p *apiextensionsv1.JSONSchemaProps, c randfill.Continue) {
		c.Fill(&p.Description)
		p.Type = c.String(0)
		p.Nullable = c.Bool()
		if c.Bool() {
			p.Properties = map[string]apiextensionsv1.JSONSchemaProps{c.String(0): {Type: "string", Description: c.String(0)}}
			p.Required = []string{c.String(0)}
		}
	},
	func(p *apiextensionsv1beta1.JSONSchemaProps, c randfill.Continue) {
		c.Fill(&p.Description)
		p.Type = c.String(0)
		p.Nullable = c.Bool()
		if c.Bool() {
			p.Properties = map[string]apiextensionsv1beta1.JSONSchemaProps{c.String(0): {Type: "string", Description: c.String(0)}}
			p.Required = []string{c.String(0)}
		}
	},
}

// objectGen generates the objects of one rule and direction.
type objectGen struct {
	rnd     *rand.Rand
	filler  *randfill.Filler
	newObj  func() any // nil: no Go type
	from    schema.GroupVersion
	kind    string
	paths   []rules.Path      // where the rule looks, named as in the source version
	types   []rules.ValueType // the value type the source version has there, if the rule says
	words   []string
	program *rules.Program
}

func newObjectGen(name string, c *rules.Compiled, prog *rules.Program, words []string) *objectGen {
	h := fnv.New64a()
	h.Write([]byte(name))
	seed := int64(roundTripSeed) ^ int64(h.Sum64()>>1)
	kind := kindOf(c.Rule)
	g := &objectGen{
		rnd:     rand.New(rand.NewSource(seed)),
		filler:  fuzzer.FuzzerFor(metafuzzer.Funcs, rand.NewSource(seed+1), scheme.Codecs).NilChance(0.4).NumElements(0, 2).Funcs(crdSchemaFuncs...),
		newObj:  typedObjects[prog.From.WithKind(kind)],
		from:    prog.From,
		kind:    kind,
		words:   words,
		program: prog,
	}
	g.paths, g.types = sourcePaths(c.Rule, prog.Direction)
	return g
}

// object returns object i: even ones typed where a Go type exists.
func (g *objectGen) object(t *testing.T, i int) (map[string]any, bool) {
	t.Helper()
	var obj map[string]any
	typed := g.newObj != nil && i%2 == 0
	if typed {
		v := g.newObj()
		g.filler.Fill(v)
		data, err := json.Marshal(v)
		if err != nil {
			t.Fatalf("object %d: %v", i, err)
		}
		if obj, err = engine.DecodeObject(data); err != nil {
			t.Fatalf("object %d: %v", i, err)
		}
	} else {
		obj = map[string]any{"metadata": map[string]any{"name": fmt.Sprintf("obj-%d", i), "namespace": "ns"}}
		for j, p := range g.paths {
			if g.rnd.Intn(4) > 0 {
				g.set(obj, p, g.typedValue(g.types[j]))
			}
		}
	}
	// Fields no rule mentions, anywhere.
	for range g.rnd.Intn(3) {
		g.set(obj, rules.Path{{Kind: rules.StepKey, Key: g.pick([]string{"spec", "status", "metadata"})}, {Kind: rules.StepKey, Key: "x-" + g.word()}}, g.value(2))
	}
	if g.rnd.Intn(3) == 0 {
		g.set(obj, rules.Path{{Kind: rules.StepKey, Key: "metadata"}, {Kind: rules.StepKey, Key: "annotations"}, {Kind: rules.StepKey, Key: "example.com/" + g.word()}}, g.word())
	}
	obj["apiVersion"] = g.from.String()
	obj["kind"] = g.kind
	// The conversion-data annotation is mvpctl's own: inputs start without it.
	if meta, ok := obj["metadata"].(map[string]any); ok {
		if ann, ok := meta["annotations"].(map[string]any); ok {
			delete(ann, rules.ConversionDataAnnotation)
		}
	}
	// Through JSON, so that the object is what a decoder hands the converter.
	data, err := json.Marshal(obj)
	if err != nil {
		t.Fatalf("object %d: %v", i, err)
	}
	out, err := engine.DecodeObject(data)
	if err != nil {
		t.Fatalf("object %d: %v", i, err)
	}
	return out, typed
}

// sourcePaths lists the paths a rule's transformations name that exist in
// the source version of direction d, with the type the rule gives the value
// there: a rename's target and what lies under it, and a newField's path,
// exist only in the newer version; a rename's source and a remove's path
// only in the older one. An object of one version never holds the other's
// fields (the apiserver prunes or rejects them), so neither do these.
func sourcePaths(r *rules.MigrationRule, d rules.Direction) ([]rules.Path, []rules.ValueType) {
	var older, newer []string // names only one version has
	for _, tr := range r.Transformations {
		switch tr.Action {
		case rules.ActionRename:
			older, newer = append(older, tr.Path), append(newer, tr.TargetPath)
		case rules.ActionRemove:
			older = append(older, tr.Path)
		case rules.ActionNewField:
			newer = append(newer, tr.Path)
		}
	}
	other := older
	if d == rules.Forward {
		other = newer
	}
	under := func(p string, of []string) bool {
		for _, o := range of {
			if p == o || strings.HasPrefix(p, o+".") || strings.HasPrefix(p, o+"[") {
				return true
			}
		}
		return false
	}
	var paths []rules.Path
	var types []rules.ValueType
	add := func(s string, typ rules.ValueType) {
		if s == "" || under(s, other) {
			return
		}
		if p, err := rules.ParsePath(s); err == nil {
			paths, types = append(paths, p), append(types, typ)
		}
	}
	for _, tr := range r.Transformations {
		switch {
		case tr.Action == rules.ActionRename && d == rules.Forward && tr.FromType == "" && tr.Type != "":
			add(tr.Path, convertibleTo+tr.Type)
		case tr.Action == rules.ActionRename && d == rules.Forward:
			add(tr.Path, tr.FromType)
		case tr.Action == rules.ActionRename:
			add(tr.TargetPath, tr.Type)
		case tr.Action == rules.ActionConvertType && d == rules.Forward:
			add(tr.Path, tr.FromType)
		case tr.Action == rules.ActionConvertType:
			add(tr.Path, tr.Type)
		default:
			add(tr.Path, "")
		}
	}
	return paths, types
}

// convertibleTo prefixes a type in sourcePaths: the older version's type is
// not known, but a rename converts the value to this type, so the older
// version holds values that convert (or their strings).
const convertibleTo = "convertible-to:"

// typedValue is a value of typ, or any value when typ is empty.
func (g *objectGen) typedValue(typ rules.ValueType) any {
	if to, ok := strings.CutPrefix(string(typ), convertibleTo); ok {
		switch g.rnd.Intn(4) {
		case 0:
			return g.value(3) // may not convert: a conversion error, counted
		case 1:
			v := g.typedValue(rules.ValueType(to))
			if n, ok := v.(json.Number); ok {
				return n.String()
			}
			return v
		}
		return g.typedValue(rules.ValueType(to))
	}
	ints := []string{"0", "1", "30", "2147483647", "9223372036854775807", "-1"}
	switch typ {
	case rules.TypeInteger:
		return json.Number(g.pick(ints))
	case rules.TypeNumber:
		return json.Number(g.pick(append(ints, "1.5", "0.25", "1e3")))
	case rules.TypeBoolean:
		return g.rnd.Intn(2) == 0
	case rules.TypeString:
		return g.word()
	case rules.TypeIntOrString:
		if g.rnd.Intn(2) == 0 {
			return json.Number(g.pick(ints))
		}
		return g.pick([]string{"50%", "http", g.word()})
	}
	return g.value(3)
}

// set puts v at p, creating objects and arrays on the way; a wildcard makes
// an array of one to three elements.
func (g *objectGen) set(obj map[string]any, p rules.Path, v any) {
	var put func(cur any, steps rules.Path) any
	put = func(cur any, steps rules.Path) any {
		if len(steps) == 0 {
			return v
		}
		s := steps[0]
		switch s.Kind {
		case rules.StepKey:
			m, ok := cur.(map[string]any)
			if !ok {
				m = map[string]any{}
			}
			m[s.Key] = put(m[s.Key], steps[1:])
			return m
		case rules.StepIndex:
			a, _ := cur.([]any)
			for len(a) <= s.Index {
				a = append(a, nil)
			}
			a[s.Index] = put(a[s.Index], steps[1:])
			return a
		default:
			a, _ := cur.([]any)
			if len(a) == 0 {
				a = make([]any, 1+g.rnd.Intn(3))
			}
			for i := range a {
				a[i] = put(a[i], steps[1:])
			}
			return a
		}
	}
	put(obj, p)
}

// value is a random JSON value: mostly the rule file's own words and
// numbers, sometimes nested.
func (g *objectGen) value(depth int) any {
	n := 9
	if depth <= 0 {
		n = 7
	}
	switch g.rnd.Intn(n) {
	case 0:
		return nil
	case 1:
		return g.rnd.Intn(2) == 0
	case 2:
		return json.Number(g.pick([]string{"0", "1", "-1", "30", "100", "2147483647", "9223372036854775807", "1.5", "1e3"}))
	case 3:
		return g.pick([]string{"", "0", "1", "30", "50%", "true", "null", "{}", "ünïcode", "a.b/c"})
	case 4, 5, 6:
		return g.word()
	case 7:
		a := make([]any, g.rnd.Intn(3))
		for i := range a {
			a[i] = g.value(depth - 1)
		}
		return a
	default:
		m := map[string]any{}
		for range g.rnd.Intn(4) {
			m[g.word()] = g.value(depth - 1)
		}
		return m
	}
}

func (g *objectGen) word() string { return g.pick(g.words) }

func (g *objectGen) pick(s []string) string { return s[g.rnd.Intn(len(s))] }

var (
	quotedRE = regexp.MustCompile(`"((?:[^"\\]|\\.)*)"`)
	identRE  = regexp.MustCompile(`[A-Za-z][A-Za-z0-9]*`)
)

// ruleWords are the identifiers and string literals of a rules file: field
// names and the values its expressions compare with.
func ruleWords(src []byte) []string {
	seen := map[string]bool{}
	for _, m := range quotedRE.FindAllSubmatch(src, -1) {
		if s, err := strconv.Unquote(`"` + string(m[1]) + `"`); err == nil {
			seen[s] = true
		}
	}
	for _, m := range identRE.FindAll(src, -1) {
		seen[string(m)] = true
	}
	words := make([]string, 0, len(seen))
	for w := range seen {
		words = append(words, w)
	}
	slices.Sort(words)
	return words
}
