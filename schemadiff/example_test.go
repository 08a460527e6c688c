package schemadiff_test

import (
	"context"
	"fmt"
	"os"

	"github.com/mvpctl/mvpctl/schemadiff"
)

// ExampleDiff finds where EndpointSlice's v1beta1 fields went in
// discovery.k8s.io/v1 (Kubernetes v1.25 removed v1beta1).
func ExampleDiff() {
	ctx := context.Background()
	old, err := schemadiff.Load(ctx, "../testdata/schemadiff/k8s/v1.24.0-swagger.json.gz")
	if err != nil {
		fmt.Println(err)
		return
	}
	nw, err := schemadiff.Load(ctx, "../testdata/schemadiff/k8s/v1.25.0-swagger.json.gz")
	if err != nil {
		fmt.Println(err)
		return
	}
	r := schemadiff.Diff(old, nw, schemadiff.Options{Kind: "EndpointSlice"})
	for _, m := range r.Migrations {
		fmt.Println(m.From, "→", m.To.GroupVersion())
		for _, mv := range m.Schema.Moved {
			fmt.Printf("  %s → %s (%.2f)\n", mv.From.Path, mv.To.Path, mv.Confidence)
		}
		for _, f := range m.Schema.Added {
			fmt.Println("  added", f.Path)
		}
	}
	// Output:
	// discovery.k8s.io/v1beta1 EndpointSlice → discovery.k8s.io/v1
	//   endpoints[*].topology → endpoints[*].deprecatedTopology (0.83)
	//   added endpoints[*].zone
}

// ExampleDraftRules drafts the rules for discovery.k8s.io/v1beta1, which
// Kubernetes v1.25 removed. (Kubernetes also copies the zone out of the
// topology map into zone; no schema says so.)
func ExampleDraftRules() {
	ctx := context.Background()
	old, _ := schemadiff.Load(ctx, "../testdata/schemadiff/k8s/v1.24.0-swagger.json.gz")
	nw, _ := schemadiff.Load(ctx, "../testdata/schemadiff/k8s/v1.25.0-swagger.json.gz")
	r := schemadiff.Diff(old, nw, schemadiff.Options{Group: "discovery.k8s.io"})
	d := schemadiff.DraftRules(r, schemadiff.DraftOptions{Name: "discovery-v1.25"})
	d.Header = nil
	os.Stdout.Write(d.YAML())
	fmt.Println(len(d.TODOs), "TODOs")
	// Output:
	// apiVersion: mvp.k8s.io/v1
	// kind: TransformationRules
	// metadata:
	//   name: discovery-v1.25
	// spec:
	//   apiMigrationRules:
	//   - apiGroup: discovery.k8s.io
	//     resource: endpointslices
	//     kind: EndpointSlice
	//     fromVersion: v1beta1
	//     toVersion: v1
	//     transformations:
	//     - path: endpoints[*].topology
	//       action: rename
	//       targetPath: endpoints[*].deprecatedTopology
	//       description: endpoints[*].topology → endpoints[*].deprecatedTopology (confidence 0.83)
	//     - path: endpoints[*].zone
	//       action: newField
	//       description: only v1 has this field
	// 0 TODOs
}
