package cli

import (
	"os"
	"path/filepath"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/utils/clock"
	"sigs.k8s.io/yaml"
)

// The Deployment in deploy/ runs mvpctl with flags this binary must accept:
// a renamed or removed flag would crash-loop every replica.
func TestDeployManifest_ArgsAreValidFlags(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("..", "..", "..", "deploy", "base", "deployment.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var d appsv1.Deployment
	if err := yaml.UnmarshalStrict(data, &d); err != nil {
		t.Fatal(err)
	}
	containers := d.Spec.Template.Spec.Containers
	if len(containers) != 1 || len(containers[0].Args) == 0 || containers[0].Args[0] != "proxy" {
		t.Fatalf("want one container running mvpctl proxy, got %+v", containers)
	}
	// The client-certificates component appends this one.
	args := append(containers[0].Args[1:], "--client-ca-file=/etc/mvpctl/client-ca/ca.crt")
	cmd := newProxyCmd(clock.RealClock{})
	if err := cmd.ParseFlags(args); err != nil {
		t.Errorf("deploy/base/deployment.yaml: %v", err)
	}
	if cmd.Flags().NArg() != 0 {
		t.Errorf("deploy/base/deployment.yaml: stray arguments %v", cmd.Flags().Args())
	}
}
