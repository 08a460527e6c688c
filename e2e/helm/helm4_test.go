package helm_test

import (
	"strings"
	"testing"

	"k8s.io/client-go/kubernetes"

	rspb "helm.sh/helm/v4/pkg/release/v1"
	storage4 "helm.sh/helm/v4/pkg/storage"
	driver4 "helm.sh/helm/v4/pkg/storage/driver"
)

// helm4History reads a release's history with the Helm 4 SDK's storage
// (secret or configmap driver): one "revision status description" line per
// revision, and the deployed revision's manifest.
func helm4History(t *testing.T, cs kubernetes.Interface, driver, name string) (string, string) {
	t.Helper()
	var d driver4.Driver = driver4.NewSecrets(cs.CoreV1().Secrets("default"))
	if driver == "configmap" {
		d = driver4.NewConfigMaps(cs.CoreV1().ConfigMaps("default"))
	}
	st := storage4.Init(d)
	all, err := st.History(name)
	if err != nil {
		t.Fatalf("Helm 4: history of %s: %v", name, err)
	}
	lines := make([]string, len(all))
	manifest := ""
	for _, r := range all {
		rel, ok := r.(*rspb.Release)
		if !ok {
			t.Fatalf("Helm 4: %T", r)
		}
		if rel.Version < 1 || rel.Version > len(all) {
			t.Fatalf("Helm 4: revision %d of %d", rel.Version, len(all))
		}
		lines[rel.Version-1] = itoa(rel.Version) + " " + rel.Info.Status.String() + " " + rel.Info.Description
		if rel.Info.Status.String() == "deployed" {
			manifest = rel.Manifest
		}
	}
	return strings.Join(lines, "\n") + "\n", manifest
}
