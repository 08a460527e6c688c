package scan

import (
	"bytes"
	"compress/gzip"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"strings"
)

// Helm 3 keeps each revision of a release in a Secret of type
// helm.sh/release.v1 (a ConfigMap with the configmap driver) labelled
// owner=helm, name, status and version, whose "release" key holds the
// release as base64 text of gzipped JSON (helm's pkg/storage/driver/util.go).
const (
	helmSecretType = "helm.sh/release.v1"
	// helmDeployed selects the revision each release has deployed: the one
	// `helm upgrade` builds its current objects from, and fails on when they
	// use a removed API.
	helmDeployed = "owner=helm,status=deployed"
)

// MaxRelease bounds a decoded Helm release (its JSON after gunzip).
const MaxRelease = 64 << 20

var gzipMagic = []byte{0x1f, 0x8b, 0x08}

// HelmRelease is what a scan reads of a Helm release.
type HelmRelease struct {
	Name      string `json:"name"`
	Namespace string `json:"namespace"`
	Version   int    `json:"version"`
	// Manifest is the YAML documents Helm rendered and applied.
	Manifest string `json:"manifest"`
}

// DecodeHelmRelease decodes the "release" value of a Helm 3 storage object
// as Helm does: base64, then gunzip if the gzip magic is there (releases of
// early Helm 3 are not compressed), then JSON. Only the standard library is
// needed; the decompressed size is bounded by MaxRelease.
func DecodeHelmRelease(data []byte) (*HelmRelease, error) {
	raw := make([]byte, base64.StdEncoding.DecodedLen(len(data)))
	n, err := base64.StdEncoding.Decode(raw, bytes.TrimSpace(data))
	if err != nil {
		return nil, fmt.Errorf("helm release: base64: %w", err)
	}
	raw = raw[:n]
	var r io.Reader = bytes.NewReader(raw)
	if bytes.HasPrefix(raw, gzipMagic) {
		zr, err := gzip.NewReader(r)
		if err != nil {
			return nil, fmt.Errorf("helm release: gzip: %w", err)
		}
		defer zr.Close()
		r = zr
	}
	body, err := io.ReadAll(io.LimitReader(r, MaxRelease+1))
	if err != nil {
		return nil, fmt.Errorf("helm release: gzip: %w", err)
	}
	if len(body) > MaxRelease {
		return nil, fmt.Errorf("helm release: larger than %d MiB decompressed", MaxRelease>>20)
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
