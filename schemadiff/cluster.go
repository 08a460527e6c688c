package schemadiff

import (
	"context"
	"fmt"
	"strings"

	"k8s.io/client-go/discovery"
	"k8s.io/client-go/tools/clientcmd"
)

// loadCluster reads /openapi/v3 of the cluster that kubeconfig context
// ctxName points to (the default loading rules: $KUBECONFIG or
// ~/.kube/config). An empty context name means the current context.
func loadCluster(ctx context.Context, source, ctxName string) (*Spec, error) {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	cfg, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{CurrentContext: ctxName}).ClientConfig()
	if err != nil {
		return nil, &LoadError{Source: source, Err: fmt.Errorf("kubeconfig: %w", err)}
	}
	dc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return nil, &LoadError{Source: source, Err: err}
	}
	paths, err := dc.OpenAPIV3().Paths()
	if err != nil {
		return nil, &LoadError{Source: source, Err: fmt.Errorf("GET /openapi/v3: %w", err)}
	}
	docs := map[string][]byte{}
	for p, gv := range paths {
		if !isGroupVersionPath(p) {
			continue
		}
		if err := ctx.Err(); err != nil {
			return nil, &LoadError{Source: source, Err: err}
		}
		b, err := gv.Schema("application/json")
		if err != nil {
			return nil, &LoadError{Source: source, Err: fmt.Errorf("GET /openapi/v3/%s: %w", p, err)}
		}
		docs[strings.ReplaceAll(p, "/", "__")+".json"] = b
	}
	spec, err := loadFromDocuments(source, docs)
	if err != nil {
		return nil, err
	}
	spec.Format = FormatCluster
	if v, err := dc.ServerVersion(); err == nil {
		spec.Version = v.GitVersion
	}
	return spec, nil
}

// isGroupVersionPath keeps api/v1 and apis/GROUP/VERSION, the documents that
// hold schemas.
func isGroupVersionPath(p string) bool {
	parts := strings.Split(p, "/")
	return (len(parts) == 2 && parts[0] == "api") || (len(parts) == 3 && parts[0] == "apis")
}
