package cli

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/pprof"
	"net/url"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	discoveryclient "k8s.io/client-go/kubernetes/typed/discovery/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/mvpctl/mvpctl/engine"
	"github.com/mvpctl/mvpctl/engine/proxy"
	"github.com/mvpctl/mvpctl/engine/rulesource"
	"github.com/mvpctl/mvpctl/rules"
)

type proxyOptions struct {
	Listen   string   // the proxy's address
	Backends []string // kube-apiserver URLs; empty: the kubeconfig's server
	Rules    []string // TransformationRules files or directories (apiRoutingRules, apiMigrationRules), watched
	// RulesFromCluster adds the cluster's TransformationRules objects.
	RulesFromCluster bool
	// OpenAPIFrom are OpenAPI v3 documents of emulated versions.
	OpenAPIFrom []string

	Discover bool // follow the kubernetes EndpointSlices for backends

	Kubeconfig string // credentials and CA for the backends
	Context    string // kubeconfig context; empty: current

	BackendCA  string // CA file for the backends (overrides the kubeconfig's)
	ClientCert string // the proxy's own client certificate for the backends
	ClientKey  string
	Token      string // the proxy's own bearer token for the backends
	Insecure   bool   // skip verifying the backends' certificates

	TLSCertFile     string // serving certificate; empty: self-signed for loopback
	TLSKeyFile      string
	ClientCAFile    string // verifies client certificates, turned into impersonation
	WriteKubeconfig string // path of a kubeconfig for clients of the proxy

	MetricsListen     string // /metrics and /debug/capabilities; empty: off
	Profiling         bool   // /debug/pprof on the metrics address
	LogFormat         string // text or json
	LogLevel          string // debug, info, warn, error
	RefreshInterval   time.Duration
	HealthInterval    time.Duration
	ReadHeaderTimeout time.Duration
	MaxBodyBytes      int64
	ShutdownDelay     time.Duration // keep serving, not ready, after SIGTERM
}

func newProxyCmd() *cobra.Command {
	opts := proxyOptions{Listen: "127.0.0.1:6443", LogFormat: "text", LogLevel: "info"}
	cmd := &cobra.Command{
		Use:   "proxy --backend URL... [--kubeconfig FILE] [--rules RULES] [--rules-from-cluster]",
		Short: "Serve several kube-apiservers of different versions as one cluster",
		Long: `Serve several kube-apiservers of different versions as one cluster.

Each request goes to a ready server that serves its group, version and
resource (apiRoutingRules in --rules order the candidates); discovery and
OpenAPI are the union of the servers'. A request that could not reach a
server is sent to another one; when no ready server serves a resource that
one of them served, the answer is 503 with Retry-After, never 404.

Rules come from --rules files and directories, which are watched, and with
--rules-from-cluster from the cluster's TransformationRules objects. A change
is validated and compiled first and then replaces the active rules at once:
requests in flight finish with the old ones; rules that do not validate are
rejected (the object's status says why) and the active ones stay.

The backends' CA and the proxy's own credentials come from --kubeconfig (or
the flags). Clients' bearer tokens pass through unchanged; client
certificates verified with --client-ca-file become impersonation of their
user and groups, which the proxy's own identity must be allowed.`,
		Example: `  mvpctl proxy --kubeconfig admin.kubeconfig \
    --backend https://127.0.0.1:6441 --backend https://127.0.0.1:6442 \
    --rules routing.yaml --write-kubeconfig proxy.kubeconfig --metrics-listen 127.0.0.1:9464
  kubectl --kubeconfig proxy.kubeconfig api-resources`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			return runProxy(ctx, cmd.OutOrStdout(), cmd.ErrOrStderr(), opts)
		},
	}
	f := cmd.Flags()
	f.StringVar(&opts.Listen, "listen", opts.Listen, "address to serve the Kubernetes API on")
	f.StringArrayVar(&opts.Backends, "backend", nil, "kube-apiserver URL (repeatable); default: the kubeconfig's server")
	f.StringSliceVar(&opts.Rules, "rules", nil, "TransformationRules file or directory, watched for changes: apiRoutingRules order the servers, apiMigrationRules emulate versions no server serves (repeatable)")
	f.BoolVar(&opts.RulesFromCluster, "rules-from-cluster", false, "also take the cluster's TransformationRules objects (read through --kubeconfig), and write their status")
	f.StringSliceVar(&opts.OpenAPIFrom, "openapi-from", nil, "OpenAPI v3 document (file, or directory of *.json) of a version to emulate, e.g. from an older release: served in /openapi/v3 and /openapi/v2 for kubectl explain and validation, instead of the schema a CRD keeps for the version (repeatable)")
	f.BoolVar(&opts.Discover, "discover-backends", false, "add the kube-apiservers listed in the default/kubernetes EndpointSlices (read through --kubeconfig), followed every 10s")
	f.StringVar(&opts.Kubeconfig, "kubeconfig", "", "kubeconfig with the backends' CA and the proxy's credentials")
	f.StringVar(&opts.Context, "context", "", "kubeconfig context; default: the current one")
	f.StringVar(&opts.BackendCA, "backend-ca", "", "CA file that verifies the backends")
	f.StringVar(&opts.ClientCert, "client-certificate", "", "the proxy's client certificate for the backends")
	f.StringVar(&opts.ClientKey, "client-key", "", "the key of --client-certificate")
	f.StringVar(&opts.Token, "token", "", "the proxy's bearer token for the backends")
	f.BoolVar(&opts.Insecure, "insecure-skip-tls-verify", false, "do not verify the backends' certificates (tests only)")
	f.StringVar(&opts.TLSCertFile, "tls-cert-file", "", "serving certificate; default: a self-signed one (loopback --listen only)")
	f.StringVar(&opts.TLSKeyFile, "tls-private-key-file", "", "key of --tls-cert-file")
	f.StringVar(&opts.ClientCAFile, "client-ca-file", "", "CA that verifies client certificates; their user and groups are impersonated")
	f.StringVar(&opts.WriteKubeconfig, "write-kubeconfig", "", "write a kubeconfig for the proxy here (server, CA, and the --kubeconfig's user)")
	f.StringVar(&opts.MetricsListen, "metrics-listen", "", "address for /metrics and /debug/capabilities; default: off")
	f.BoolVar(&opts.Profiling, "profiling", false, "serve /debug/pprof on the --metrics-listen address")
	f.StringVar(&opts.LogFormat, "log-format", opts.LogFormat, "log format: text or json")
	f.StringVar(&opts.LogLevel, "log-level", opts.LogLevel, "log level: debug (one line per request), info, warn or error")
	f.DurationVar(&opts.RefreshInterval, "refresh-interval", 30*time.Second, "how often each server's discovery is read again")
	f.DurationVar(&opts.HealthInterval, "health-interval", time.Second, "how often each server's /readyz is checked")
	f.DurationVar(&opts.ReadHeaderTimeout, "read-header-timeout", 10*time.Second, "close connections whose request headers take longer")
	f.Int64Var(&opts.MaxBodyBytes, "max-request-body-bytes", proxy.DefaultMaxRequestBodyBytes, "largest request body accepted (413 beyond)")
	f.DurationVar(&opts.ShutdownDelay, "shutdown-delay-duration", 0, "on SIGTERM, keep serving this long with /readyz failing, so that load balancers stop sending requests before the listener closes (as kube-apiserver's flag of the same name)")
	return cmd
}

// startupReadyWait bounds how long a starting proxy holds connections
// while no backend has answered its health probe yet.
const startupReadyWait = 3 * time.Second

// runProxy serves until stop ends (a signal), then drains for
// --shutdown-delay-duration and shuts down.
func runProxy(stop context.Context, stdout, stderr io.Writer, opts proxyOptions) error {
	log, err := newLogger(stderr, opts.LogFormat, opts.LogLevel)
	if err != nil {
		return err
	}
	identity, kubeAuth, restConfig, err := backendCredentials(opts)
	if err != nil {
		return err
	}
	kubeServer := restConfig.Host
	urls := opts.Backends
	var endpointSlices discoveryclient.EndpointSlicesGetter
	if opts.Discover {
		if opts.Kubeconfig == "" {
			return usageErrorf("--discover-backends reads the cluster through --kubeconfig")
		}
		client, err := discoveryclient.NewForConfig(restConfig)
		if err != nil {
			return inputError(err)
		}
		endpointSlices = client
		ctx, cancel := context.WithTimeout(stop, 30*time.Second)
		found, err := proxy.EndpointSliceBackends(ctx, client)
		cancel()
		if err != nil {
			return failure(fmt.Errorf("--discover-backends: %w", err))
		}
		for _, u := range found {
			if !slices.Contains(urls, u) {
				urls = append(urls, u)
			}
		}
	}
	if len(urls) == 0 {
		if kubeServer == "" {
			return usageErrorf("no backends: give --backend URL or a --kubeconfig whose context names a server")
		}
		urls = []string{kubeServer}
	}
	var backends []proxy.Backend
	for _, raw := range urls {
		u, err := url.Parse(raw)
		if err != nil || u.Host == "" || (u.Scheme != "https" && u.Scheme != "http") {
			return usageErrorf("--backend %q: want https://HOST:PORT", raw)
		}
		b := identity
		b.URL = u
		backends = append(backends, b)
	}
	openAPI, err := loadOpenAPIV3(opts.OpenAPIFrom)
	if err != nil {
		return inputError(fmt.Errorf("--openapi-from: %w", err))
	}
	var clientCA *x509.CertPool
	if opts.ClientCAFile != "" {
		if clientCA, err = proxy.LoadCertPool(opts.ClientCAFile); err != nil {
			return inputError(fmt.Errorf("--client-ca-file: %w", err))
		}
	}
	p, err := proxy.New(proxy.Options{
		Backends:               backends,
		RefreshInterval:        opts.RefreshInterval,
		HealthInterval:         opts.HealthInterval,
		MaxRequestBodyBytes:    opts.MaxBodyBytes,
		ImpersonateClientCerts: clientCA != nil,
		Logger:                 log,
		OpenAPIV3:              openAPI,
	})
	if err != nil {
		return inputError(err)
	}
	ctx, cancel := context.WithCancel(context.WithoutCancel(stop))
	defer cancel()
	followCPULimit(ctx, log, 30*time.Second, func() (float64, bool) { return cgroupCPULimit("/") })
	go func() {
		select {
		case <-ctx.Done():
			return
		case <-stop.Done():
		}
		p.Drain()
		if opts.ShutdownDelay > 0 {
			log.Info("shutting down: /readyz fails, requests are still served", "delay", opts.ShutdownDelay.String())
			select {
			case <-time.After(opts.ShutdownDelay):
			case <-ctx.Done():
			}
		}
		cancel()
	}()
	if err := followRules(ctx, stderr, log, p, opts, restConfig); err != nil {
		return err
	}
	srv, err := proxy.NewServer(p, proxy.ServeOptions{
		Listen:            opts.Listen,
		CertFile:          opts.TLSCertFile,
		KeyFile:           opts.TLSKeyFile,
		ClientCA:          clientCA,
		ReadHeaderTimeout: opts.ReadHeaderTimeout,
		Logger:            log,
	})
	if err != nil {
		return inputError(err)
	}
	if opts.WriteKubeconfig != "" {
		if err := writeProxyKubeconfig(opts, srv, kubeAuth); err != nil {
			return failure(fmt.Errorf("--write-kubeconfig: %w", err))
		}
	}
	p.Run(ctx)
	if endpointSlices != nil {
		var static []proxy.Backend
		for _, b := range backends {
			if slices.Contains(opts.Backends, b.URL.String()) {
				static = append(static, b)
			}
		}
		go p.FollowEndpointSlices(ctx, endpointSlices, identity, static, 10*time.Second)
	}
	errc := make(chan error, 2)
	if opts.MetricsListen != "" {
		mln, err := net.Listen("tcp", opts.MetricsListen)
		if err != nil {
			return inputError(fmt.Errorf("--metrics-listen: %w", err))
		}
		mux := http.NewServeMux()
		mux.Handle("/metrics", p.MetricsHandler())
		mux.Handle("/debug/capabilities", p.DebugHandler())
		mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, "ok") })
		if opts.Profiling {
			mux.HandleFunc("/debug/pprof/", pprof.Index)
			mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
			mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
			mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
		}
		msrv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
		go func() { errc <- msrv.Serve(mln) }()
		go func() { <-ctx.Done(); msrv.Close() }()
		log.Info("serving metrics", "address", mln.Addr().String())
	}
	// Until the first health probes answer, every request would be a 503
	// with Retry-After: 1, and a restarted proxy would cost its clients a
	// second: connections wait in the listen backlog instead, a few seconds
	// at most.
	readyCtx, readyCancel := context.WithTimeout(ctx, startupReadyWait)
	_ = p.WaitReady(readyCtx)
	readyCancel()
	log.Info("serving the Kubernetes API", "address", srv.Addr().String(), "backends", len(backends))
	go func() { errc <- srv.Serve(ctx) }()
	select {
	case <-ctx.Done():
		cancel()
		if err := <-errc; err != nil && !errors.Is(err, http.ErrServerClosed) {
			return failure(err)
		}
		return nil
	case err := <-errc:
		return failure(err)
	}
}

// followRules loads the rules and keeps the proxy on the latest good set:
// the rules files (watched) and, with --rules-from-cluster, the cluster's
// TransformationRules objects. Rules that do not load at start-up are an
// error; later bad changes are rejected by the source and never reach p.
func followRules(ctx context.Context, stderr io.Writer, log *slog.Logger, p *proxy.Proxy, opts proxyOptions, restConfig *rest.Config) error {
	if len(opts.Rules) == 0 && !opts.RulesFromCluster {
		return nil
	}
	var cluster *rest.Config
	if opts.RulesFromCluster {
		if restConfig.Host == "" {
			return usageErrorf("--rules-from-cluster reads the cluster through --kubeconfig")
		}
		cluster = restConfig
	}
	host, _ := os.Hostname()
	src, err := startRuleSource(ctx, stderr, rulesource.Options{
		Files:     opts.Rules,
		Component: "mvpctl-proxy",
		Host:      host,
		Logger:    log,
		// The proxy converts with the native executor: the jq programs are
		// compiled only if something asks for them.
		Compile: rules.CompileOptions{Lazy: true},
		Converter: engine.Options{
			Resolver: p.ResourceFor,
			Warn:     func(msg string) { log.Debug("emulation: " + msg) },
		},
	}, cluster)
	if err != nil {
		return err
	}
	var subscribeErr error
	src.Subscribe(func(set *rulesource.Set) {
		err := p.SetRules(proxy.Rules{Routing: set.RoutingRules, Converter: set.Converter})
		if err != nil {
			// The source validates preferApiServerVersion as the proxy
			// does, so this is not expected; keep the active rules.
			log.Error("rules not applied; the previous rules stay active", "revision", set.Revision, "error", err.Error())
			if set.Revision == 1 {
				subscribeErr = err
			}
		}
	})
	if subscribeErr != nil {
		return inputError(subscribeErr)
	}
	return nil
}

func newLogger(w io.Writer, format, level string) (*slog.Logger, error) {
	var lvl slog.Level
	if err := lvl.UnmarshalText([]byte(level)); err != nil {
		return nil, usageErrorf("--log-level %q: want debug, info, warn or error", level)
	}
	hopts := &slog.HandlerOptions{Level: lvl}
	switch format {
	case "text":
		return slog.New(slog.NewTextHandler(w, hopts)), nil
	case "json":
		return slog.New(slog.NewJSONHandler(w, hopts)), nil
	}
	return nil, usageErrorf("--log-format %q: want text or json", format)
}

// backendCredentials builds the proxy's identity for the backends (TLS
// configuration, token or token file) from the kubeconfig, then the flags
// (which win). It also returns the kubeconfig's user, for
// --write-kubeconfig, and the client configuration.
func backendCredentials(opts proxyOptions) (proxy.Backend, *clientcmdapi.AuthInfo, *rest.Config, error) {
	var none proxy.Backend
	cfg := &rest.Config{}
	var auth *clientcmdapi.AuthInfo
	if opts.Kubeconfig != "" {
		rules := &clientcmd.ClientConfigLoadingRules{ExplicitPath: opts.Kubeconfig}
		loader := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{CurrentContext: opts.Context})
		var err error
		if cfg, err = loader.ClientConfig(); err != nil {
			return none, nil, nil, inputError(fmt.Errorf("--kubeconfig: %w", err))
		}
		raw, err := loader.RawConfig()
		if err != nil {
			return none, nil, nil, inputError(fmt.Errorf("--kubeconfig: %w", err))
		}
		name := opts.Context
		if name == "" {
			name = raw.CurrentContext
		}
		if c := raw.Contexts[name]; c != nil {
			auth = raw.AuthInfos[c.AuthInfo]
		}
	}
	if opts.BackendCA != "" {
		cfg.TLSClientConfig.CAFile, cfg.TLSClientConfig.CAData = opts.BackendCA, nil
	}
	if (opts.ClientCert == "") != (opts.ClientKey == "") {
		return none, nil, nil, usageErrorf("--client-certificate and --client-key go together")
	}
	if opts.ClientCert != "" {
		cfg.TLSClientConfig.CertFile, cfg.TLSClientConfig.KeyFile = opts.ClientCert, opts.ClientKey
		cfg.TLSClientConfig.CertData, cfg.TLSClientConfig.KeyData = nil, nil
	}
	if opts.Token != "" {
		cfg.BearerToken, cfg.BearerTokenFile = opts.Token, ""
	}
	if opts.Insecure {
		cfg.TLSClientConfig.Insecure = true
		cfg.TLSClientConfig.CAFile, cfg.TLSClientConfig.CAData = "", nil
	}
	if cfg.ExecProvider != nil || cfg.AuthProvider != nil {
		return none, nil, nil, usageErrorf("--kubeconfig: exec and auth-provider credentials are not supported for the proxy's identity; use a client certificate or token")
	}
	if cfg.BearerToken == "" && cfg.BearerTokenFile != "" {
		// Read now for a clear error at start; the proxy reads it again
		// every minute, as rotated ServiceAccount tokens need.
		if _, err := os.ReadFile(cfg.BearerTokenFile); err != nil {
			return none, nil, nil, inputError(err)
		}
	}
	tlsConfig, err := rest.TLSConfigFor(cfg)
	if err != nil {
		return none, nil, nil, inputError(fmt.Errorf("backend TLS: %w", err))
	}
	if tlsConfig == nil {
		tlsConfig = &tls.Config{}
	}
	tlsConfig.MinVersion = tls.VersionTLS12
	return proxy.Backend{TLS: tlsConfig, BearerToken: cfg.BearerToken, BearerTokenFile: cfg.BearerTokenFile}, auth, cfg, nil
}

// writeProxyKubeconfig writes a kubeconfig whose cluster is the proxy (with
// its self-signed CA, or the serving certificate as trust anchor) and whose
// user is the --kubeconfig's.
func writeProxyKubeconfig(opts proxyOptions, srv *proxy.Server, auth *clientcmdapi.AuthInfo) error {
	cluster := &clientcmdapi.Cluster{Server: "https://" + srv.Addr().String()}
	switch {
	case srv.CACertPEM() != nil:
		cluster.CertificateAuthorityData = srv.CACertPEM()
	default:
		data, err := os.ReadFile(opts.TLSCertFile)
		if err != nil {
			return err
		}
		cluster.CertificateAuthorityData = data
	}
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["mvpctl-proxy"] = cluster
	if auth == nil {
		auth = &clientcmdapi.AuthInfo{}
	}
	cfg.AuthInfos["mvpctl-proxy"] = auth
	cfg.Contexts["mvpctl-proxy"] = &clientcmdapi.Context{Cluster: "mvpctl-proxy", AuthInfo: "mvpctl-proxy"}
	cfg.CurrentContext = "mvpctl-proxy"
	data, err := clientcmd.Write(*cfg)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(opts.WriteKubeconfig), 0o755); err != nil {
		return err
	}
	// Clients and scripts wait for the file to appear: it must appear whole.
	return writeFileAtomic(opts.WriteKubeconfig, data, 0o600)
}

// loadOpenAPIV3 reads OpenAPI v3 documents, one group/version each, keyed
// by their /openapi/v3 path.
func loadOpenAPIV3(paths []string) (map[string][]byte, error) {
	if len(paths) == 0 {
		return nil, nil
	}
	var files []string
	for _, p := range paths {
		st, err := os.Stat(p)
		if err != nil {
			return nil, err
		}
		if !st.IsDir() {
			files = append(files, p)
			continue
		}
		matches, err := filepath.Glob(filepath.Join(p, "*.json"))
		if err != nil {
			return nil, err
		}
		files = append(files, matches...)
	}
	out := map[string][]byte{}
	for _, f := range files {
		doc, err := os.ReadFile(f)
		if err != nil {
			return nil, err
		}
		key, err := proxy.OpenAPIV3Path(doc)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", f, err)
		}
		if _, dup := out[key]; dup {
			return nil, fmt.Errorf("%s: a second document for %s", f, key)
		}
		out[key] = doc
	}
	return out, nil
}
