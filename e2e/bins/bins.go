// Package bins builds and locates the real control-plane binaries the e2e
// suite runs: etcd and, for each Kubernetes version, kube-apiserver and
// kubectl, and on demand kubectl-convert (for comparisons of mvpctl convert
// with it, not for the suite). Each is built from its published Go module through a pinned build
// module under e2e/build (go.mod and go.sum are committed), so nothing but
// the Go toolchain and the Go module proxy is needed.
//
// Binaries go to a cache outside the work tree, keyed by component and
// version:
//
//	<cache>/etcd/v3.6.16/etcd
//	<cache>/kubernetes/v1.35.4/kube-apiserver
//	<cache>/kubernetes/v1.35.4/kubectl
//
// where <cache> is $MVPCTL_E2E_CACHE, else $XDG_CACHE_HOME/mvpctl-e2e, else
// $HOME/.cache/mvpctl-e2e. A binary that is present is not rebuilt.
package bins

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

const (
	// DefaultEtcdVersion is the etcd built and started when none is asked for.
	DefaultEtcdVersion = "v3.6.16"

	// Etcd, KubeAPIServer, Kubectl and KubectlConvert name the components.
	Etcd           = "etcd"
	KubeAPIServer  = "kube-apiserver"
	Kubectl        = "kubectl"
	KubectlConvert = "kubectl-convert"
)

// DefaultComponents are the components built when none are asked for: what
// the e2e suite runs. KubectlConvert is left out: only the convert
// comparison needs it, and its build costs minutes of CPU on a cold cache.
var DefaultComponents = []string{Etcd, KubeAPIServer, Kubectl}

// kubernetesComponents are the components built from k8s.io/kubernetes, in
// build order.
var kubernetesComponents = []string{KubeAPIServer, Kubectl, KubectlConvert}

// DefaultVersions are the Kubernetes versions built and started when none
// are asked for: the two sides of a rolling upgrade, oldest first.
var DefaultVersions = []string{"v1.35.4", "v1.36.3"}

// CacheDir returns the root of the binary cache (see the package comment).
func CacheDir() (string, error) {
	if d := os.Getenv("MVPCTL_E2E_CACHE"); d != "" {
		return filepath.Abs(d)
	}
	d, err := os.UserCacheDir()
	if err != nil {
		return "", fmt.Errorf("locating the e2e binary cache (set MVPCTL_E2E_CACHE): %w", err)
	}
	return filepath.Join(d, "mvpctl-e2e"), nil
}

// Path returns where the binary of component at version lives under cache.
// Component is [Etcd], [KubeAPIServer], [Kubectl] or [KubectlConvert];
// version is an etcd version for Etcd and a Kubernetes version otherwise.
func Path(cache, component, version string) string {
	group := "kubernetes"
	if component == Etcd {
		group = "etcd"
	}
	return filepath.Join(cache, group, version, component)
}

// NotBuiltError reports a binary missing from the cache.
type NotBuiltError struct {
	Path string
}

func (e *NotBuiltError) Error() string {
	target := "e2e-bins"
	if filepath.Base(e.Path) == KubectlConvert {
		target = "e2e-bins-convert"
	}
	return fmt.Sprintf("%s is not built: run `make %s` (or set MVPCTL_E2E_CACHE to a cache that has it)", e.Path, target)
}

// Find returns the path of component at version in the default cache, or a
// *[NotBuiltError] when it has not been built.
func Find(component, version string) (string, error) {
	cache, err := CacheDir()
	if err != nil {
		return "", err
	}
	p := Path(cache, component, version)
	if _, err := os.Stat(p); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return "", &NotBuiltError{Path: p}
		}
		return "", err
	}
	return p, nil
}
