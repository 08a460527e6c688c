package apidoc

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/google/go-cmp/cmp"
	apidiscoveryv2 "k8s.io/api/apidiscovery/v2"
)

func TestPrefersProtobuf(t *testing.T) {
	tests := map[string]bool{
		OpenAPIV2ProtobufDeprecated:                              true,
		OpenAPIV2Protobuf:                                        true,
		"application/json, " + OpenAPIV2Protobuf:                 false,
		OpenAPIV2Protobuf + ", application/json":                 true,
		OpenAPIV2Protobuf + "; q=0.5, application/json":          false,
		"application/json;q=0.9, " + OpenAPIV2ProtobufDeprecated: true,
		"": false,
	}
	for accept, want := range tests {
		if got := PrefersProtobuf(accept); got != want {
			t.Errorf("PrefersProtobuf(%q) = %v, want %v", accept, got, want)
		}
	}
}

func TestWantsAggregated(t *testing.T) {
	tests := map[string]bool{
		"application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,application/json":                true,
		"application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList;profile=nopeer,application/json": true,
		"application/json": false,
		"application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList,application/json":               false,
		"application/vnd.kubernetes.protobuf;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,application/json": false,
		"": false,
	}
	for accept, want := range tests {
		if got := WantsAggregated(accept); got != want {
			t.Errorf("WantsAggregated(%q) = %v, want %v", accept, got, want)
		}
	}
}

func TestMergeGroups_FirstDocumentWins(t *testing.T) {
	res := func(name, kind string) apidiscoveryv2.APIResourceDiscovery {
		return apidiscoveryv2.APIResourceDiscovery{Resource: name, ResponseKind: &metav1.GroupVersionKind{Kind: kind}}
	}
	newer := []apidiscoveryv2.APIGroupDiscovery{{ObjectMeta: metav1.ObjectMeta{Name: "apps"}, Versions: []apidiscoveryv2.APIVersionDiscovery{
		{Version: "v1", Resources: []apidiscoveryv2.APIResourceDiscovery{res("deployments", "New")}},
	}}}
	older := []apidiscoveryv2.APIGroupDiscovery{
		{ObjectMeta: metav1.ObjectMeta{Name: "apps"}, Versions: []apidiscoveryv2.APIVersionDiscovery{
			{Version: "v1", Freshness: apidiscoveryv2.DiscoveryFreshnessCurrent, Resources: []apidiscoveryv2.APIResourceDiscovery{res("deployments", "Old"), res("gone", "Gone")}},
			{Version: "v1beta1", Resources: []apidiscoveryv2.APIResourceDiscovery{res("deployments", "Beta")}},
		}},
		{ObjectMeta: metav1.ObjectMeta{Name: "batch"}},
	}
	got := MergeGroups([][]apidiscoveryv2.APIGroupDiscovery{newer, older})
	want := []apidiscoveryv2.APIGroupDiscovery{
		{ObjectMeta: metav1.ObjectMeta{Name: "apps"}, Versions: []apidiscoveryv2.APIVersionDiscovery{
			{Version: "v1", Freshness: apidiscoveryv2.DiscoveryFreshnessCurrent, Resources: []apidiscoveryv2.APIResourceDiscovery{res("deployments", "New"), res("gone", "Gone")}},
			{Version: "v1beta1", Resources: []apidiscoveryv2.APIResourceDiscovery{res("deployments", "Beta")}},
		}},
		{ObjectMeta: metav1.ObjectMeta{Name: "batch"}},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	if newer[0].Versions[0].Resources[0].ResponseKind.Kind != "New" || len(newer[0].Versions) != 1 {
		t.Error("MergeGroups changed its input")
	}
}
