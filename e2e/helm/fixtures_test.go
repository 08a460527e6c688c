package helm_test

import (
	"bytes"
	"context"
	"flag"
	"os"
	"path/filepath"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/release"
	"helm.sh/helm/v3/pkg/storage/driver"
	helmtime "helm.sh/helm/v3/pkg/time"
)

var update = flag.Bool("update", false, "rewrite the Helm-encoded fixtures of scan/helmrelease/testdata")

// fixtureDir holds records encoded by Helm's own storage driver, for the
// unit tests of package scan/helmrelease (which cannot import the SDK).
const fixtureDir = "../../scan/helmrelease/testdata"

// TestFixtures_EncodedByHelm encodes releases with the Helm SDK's Secrets
// driver and checks (or with -update writes) the "release" values in
// fixtureDir: the unit tests decode them, and check that encoding them
// again gives the same bytes.
func TestFixtures_EncodedByHelm(t *testing.T) {
	at := time.Date(2021, 8, 4, 10, 30, 0, 123456789, time.FixedZone("CEST", 2*3600))
	shop := renderInstalled(t, "shop", "default", at)

	// A release whose PodSecurityPolicy has no replacement, and a
	// Deployment on extensions/v1beta1, at revision 3 of its history.
	legacy := &release.Release{Name: "legacy", Namespace: "ops", Version: 3,
		Info: &release.Info{FirstDeployed: helmtime.Time{Time: at}, LastDeployed: helmtime.Time{Time: at.Add(time.Hour)},
			Description: "Upgrade complete", Status: release.StatusDeployed, Notes: "<b>ops</b> & more"},
		Chart:  &chart.Chart{Metadata: &chart.Metadata{APIVersion: "v1", Name: "legacy", Version: "1.2.3"}},
		Config: map[string]any{"image": "nginx:1.19"},
		Manifest: `---
# Source: legacy/templates/psp.yaml
apiVersion: policy/v1beta1
kind: PodSecurityPolicy
metadata:
  name: legacy
spec:
  privileged: false
  seLinux: {rule: RunAsAny}
  runAsUser: {rule: MustRunAsNonRoot}
  supplementalGroups: {rule: RunAsAny}
  fsGroup: {rule: RunAsAny}
  volumes: ["*"]
---
# Source: legacy/templates/deployment.yaml
apiVersion: extensions/v1beta1
kind: Deployment
metadata:
  name: legacy
spec:
  replicas: 2
  template:
    metadata:
      labels: {app: legacy}
    spec:
      containers:
      - name: web
        image: nginx:1.19
`}

	for _, rel := range []*release.Release{shop, legacy} {
		secrets := fake.NewSimpleClientset().CoreV1().Secrets(rel.Namespace)
		key := "sh.helm.release.v1." + rel.Name + ".v" + itoa(rel.Version)
		if err := driver.NewSecrets(secrets).Create(key, rel); err != nil {
			t.Fatal(err)
		}
		s, err := secrets.Get(context.Background(), key, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		path := filepath.Join(fixtureDir, key+".release")
		got := s.Data["release"]
		if *update {
			if err := os.WriteFile(path, append(got, '\n'), 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		want, err := os.ReadFile(path)
		if err != nil {
			t.Fatalf("%v (run with -update to write it)", err)
		}
		if !bytes.Equal(bytes.TrimSpace(want), got) {
			t.Errorf("%s differs from what Helm encodes now (run with -update)", path)
		}
	}
}
