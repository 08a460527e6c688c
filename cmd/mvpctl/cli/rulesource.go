package cli

import (
	"context"
	"errors"
	"io"
	"io/fs"
	"log/slog"
	"net/http"

	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/mvpctl/mvpctl/engine/rulesource"
	"github.com/mvpctl/mvpctl/rules"
)

// startRuleSource starts watching rules files and, with a cluster config,
// TransformationRules objects, as `mvpctl proxy` and `mvpctl rules watch`
// both do. Bad rules files are a usage error (exit 2) with positions on
// stderr; a cluster that cannot be reached is an input error (exit 2), one
// that refuses is a failure (exit 1).
func startRuleSource(ctx context.Context, stderr io.Writer, opts rulesource.Options, cluster *rest.Config) (*rulesource.Source, error) {
	var hc *http.Client
	if cluster != nil {
		cfg := rest.CopyConfig(cluster)
		cfg.UserAgent = "mvpctl"
		var err error
		if hc, err = rest.HTTPClientFor(cfg); err != nil {
			return nil, inputError(err)
		}
		if opts.Cluster, err = dynamic.NewForConfigAndClient(cfg, hc); err != nil {
			return nil, inputError(err)
		}
		kc, err := kubernetes.NewForConfigAndClient(cfg, hc)
		if err != nil {
			return nil, inputError(err)
		}
		opts.Events = kc.CoreV1()
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.NewJSONHandler(stderr, nil))
	}
	src, err := rulesource.Start(ctx, opts)
	if err != nil {
		if hc != nil {
			hc.CloseIdleConnections()
		}
		var el rules.ErrorList
		var pe *fs.PathError
		if errors.As(err, &el) || errors.As(err, &pe) || cluster == nil {
			return nil, rulesError(stderr, err)
		}
		return nil, clusterError(err)
	}
	if hc != nil {
		// The connections would otherwise outlive the source (client-go
		// shares transports), keeping a read loop per connection.
		go func() {
			<-src.Done()
			hc.CloseIdleConnections()
		}()
	}
	return src, nil
}
