package webhook

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"path/filepath"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset/typed/apiextensions/v1"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/rest"
	certutil "k8s.io/client-go/util/cert"

	"github.com/mvpctl/mvpctl/engine"
	"github.com/mvpctl/mvpctl/engine/proxy"
	"github.com/mvpctl/mvpctl/engine/rulesource"
)

// Options configure [Run].
type Options struct {
	// Rules is the active rule set's source.
	Rules *rulesource.Source
	// Serve configures the HTTPS listener; its Convert, Metrics, Ready and
	// CertDir are set by Run.
	Serve ServeOptions
	// CertDir, when set, takes the place of Serve's certificate files.
	CertDir *CertDirOptions
	// Handler bounds the reviews; its Converter and Metrics are set by Run.
	Handler HandlerOptions
	// Cluster reaches the cluster for --manage-crds and for authorizing
	// /metrics; nil means none: /metrics is then not served on the webhook's
	// port.
	Cluster *rest.Config
	// MetricsAddress, when set, serves /metrics there as the proxy serves
	// its own: openly on loopback, else over HTTPS to authorized users.
	MetricsAddress string
	// ManageCRDs, when set, wires the CRDs the rules cover to the webhook.
	ManageCRDs *ManageOptions
	// Registry receives the metrics; nil means a new one.
	Registry *prometheus.Registry
	// Logger receives the webhook's log; nil discards.
	Logger *slog.Logger
}

// Run serves conversion until ctx ends.
func Run(ctx context.Context, opts Options) error {
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if opts.Registry == nil {
		opts.Registry = prometheus.NewRegistry()
	}
	metrics, err := NewMetrics(opts.Registry)
	if err != nil {
		return err
	}
	converter := func() *engine.Converter {
		if set := opts.Rules.Current(); set != nil {
			return set.Converter
		}
		return nil
	}
	h := opts.Handler
	h.Converter, h.Metrics, h.Logger = converter, metrics, log
	serve := opts.Serve
	serve.Convert, serve.Logger = NewHandler(h), log
	serve.Ready = func() bool { return converter() != nil }
	if opts.CertDir != nil {
		cd := *opts.CertDir
		cd.Logger = log
		if serve.CertDir, err = OpenCertDir(cd); err != nil {
			return err
		}
	}
	metricsHandler := promhttp.HandlerFor(opts.Registry, promhttp.HandlerOpts{})
	if opts.Cluster != nil {
		authn, authz, err := proxy.DelegatedAuth(opts.Cluster, nil)
		if err != nil {
			return err
		}
		serve.Metrics = proxy.WithDelegatedAuth(metricsHandler, authn, authz)
	}
	if opts.ManageCRDs != nil {
		if opts.ManageCRDs, err = manageOptions(*opts.ManageCRDs, opts.Cluster, serve); err != nil {
			return err
		}
	}
	if serve.CertDir != nil {
		// The metrics listener off loopback reads the files.
		opts.Serve.CertFile, opts.Serve.KeyFile = filepath.Join(opts.CertDir.Dir, CertFile), filepath.Join(opts.CertDir.Dir, KeyFile)
	}
	srv, err := NewServer(serve)
	if err != nil {
		return err
	}
	log.Info("serving conversion", "address", srv.Addr().String())
	return runAll(ctx, srv, opts, metricsHandler, log)
}

// manageOptions completes m with the clients of cluster and the CA that
// verifies the serving certificate: the certificate directory's, or the
// last certificate of the serving certificate file.
func manageOptions(m ManageOptions, cluster *rest.Config, serve ServeOptions) (*ManageOptions, error) {
	if cluster == nil {
		return nil, errors.New("managing CRDs needs a cluster")
	}
	if m.CRDs == nil {
		c, err := apiextensionsclient.NewForConfig(cluster)
		if err != nil {
			return nil, err
		}
		m.CRDs = c.CustomResourceDefinitions()
	}
	if m.Events == nil {
		c, err := corev1client.NewForConfig(cluster)
		if err != nil {
			return nil, err
		}
		m.Events = c
	}
	switch {
	case m.CABundle != nil:
	case serve.CertDir != nil:
		m.CABundle, m.CAChanged = serve.CertDir.CAPEM, serve.CertDir.Changed()
	case serve.CertFile != "":
		file := serve.CertFile
		m.CABundle = func() []byte {
			certs, err := certutil.CertsFromFile(file)
			if err != nil {
				return nil
			}
			return pemCert(certs[len(certs)-1].Raw)
		}
	}
	return &m, nil
}

// runAll runs the server, the metrics listener and the CRD manager until
// ctx ends or one fails, and waits for all of them.
func runAll(ctx context.Context, srv *Server, opts Options, metricsHandler http.Handler, log *slog.Logger) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var wg sync.WaitGroup
	errs := make([]error, 3)
	run := func(i int, f func(context.Context) error) {
		wg.Go(func() {
			if errs[i] = f(ctx); errs[i] != nil {
				cancel()
			}
		})
	}
	run(0, srv.Serve)
	if opts.MetricsAddress != "" {
		msrv, err := proxy.NewMetricsServer(metricsHandler, proxy.MetricsServeOptions{
			Listen: opts.MetricsAddress, CertFile: opts.Serve.CertFile, KeyFile: opts.Serve.KeyFile,
			Auth: opts.Cluster, Logger: log,
		})
		if err != nil {
			cancel()
			wg.Wait()
			return err
		}
		log.Info("serving metrics", "address", msrv.Addr().String())
		run(1, msrv.Serve)
	}
	if opts.ManageCRDs != nil {
		m := *opts.ManageCRDs
		run(2, func(ctx context.Context) error { return m.run(ctx, opts.Rules, srv, log) })
	}
	wg.Wait()
	return errors.Join(errs...)
}
