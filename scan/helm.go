package scan

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/mvpctl/mvpctl/scan/helmrelease"
)

// Helm 3 keeps each revision of a release in a Secret of type
// helm.sh/release.v1 (a ConfigMap with the configmap driver) labelled
// owner=helm, name, status and version, whose "release" key holds the
// release as base64 text of gzipped JSON (helm's pkg/storage/driver/util.go).
const (
	helmSecretType = helmrelease.SecretType
	// helmDeployed selects the revision each release has deployed: the one
	// `helm upgrade` builds its current objects from, and fails on when they
	// use a removed API.
	helmDeployed = "owner=helm,status=deployed"
)

// MaxRelease bounds a decoded Helm release (its JSON after gunzip).
const MaxRelease = helmrelease.MaxRelease

// HelmRelease is what a scan reads of a Helm release.
type HelmRelease struct {
	Name      string `json:"name"`
	Namespace string `json:"namespace"`
	Version   int    `json:"version"`
	// Manifest is the YAML documents Helm rendered and applied.
	Manifest string `json:"manifest"`
}

// DecodeHelmRelease decodes the "release" value of a Helm 3 storage object
// as Helm does (package helmrelease: base64, then gunzip if the gzip magic
// is there, then JSON), bounded by MaxRelease.
func DecodeHelmRelease(data []byte) (*HelmRelease, error) {
	body, err := helmrelease.DecodeJSON(data)
	if err != nil {
		return nil, err
	}
	var rel HelmRelease
	if err := json.Unmarshal(body, &rel); err != nil {
		return nil, fmt.Errorf("helm release: %w", err)
	}
	return &rel, nil
}

// scanRelease checks the objects of a release's manifest; each finding
// names the release and the chart template it came from.
func scanRelease(rel *HelmRelease, chk checker, at Location) ([]Finding, int, []error) {
	at.HelmRelease, at.HelmRevision = rel.Namespace+"/"+rel.Name, rel.Version
	return scanStream(at.String(), strings.NewReader(rel.Manifest), chk, at)
}
