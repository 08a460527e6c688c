package cli

import (
	"cmp"
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/pprof"
	"net/url"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	discoveryclient "k8s.io/client-go/kubernetes/typed/discovery/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	certutil "k8s.io/client-go/util/cert"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
	"k8s.io/utils/ptr"

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
	// BuiltinRules adds the built-in rules under Rules and the objects.
	BuiltinRules bool
	// UsageTableSize bounds /debug/clients; 0: off.
	UsageTableSize int
	// OpenAPIFrom are OpenAPI v3 documents of emulated versions.
	OpenAPIFrom []string

	Discover bool // follow the kubernetes EndpointSlices for backends

	// Kube are client-go's kubeconfig flags for the backends' CA and the
	// proxy's own credentials (see addKubeconfigFlags).
	Kube *genericclioptions.ConfigFlags

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
	ProgramTimeout    time.Duration // longest run of one rule's program on one object

	// Limits (docs/proxy.md#limits).
	RequestBodyTimeout      time.Duration
	MaxBufferedRequestBytes int64
	MaxConnections          int
	MaxUpstreamConns        int // per backend and connection pool
	// Fair sharing per user (docs/security.md#availability).
	MaxLongRunningPerUser int
	MaxInFlightPerUser    int
	MaxQueuedPerUser      int // 0: none queue
	MaxTrackedUsers       int
	MaxObjectBytes        int64
	// GCPercent is the garbage collector's target, unless GOGC is set.
	GCPercent int

	// clock times the shutdown delay; tests end it when they choose.
	clock clock.Clock
}

// newProxyCmd is `mvpctl proxy`; clk times its shutdown delay.
func newProxyCmd(clk clock.Clock) *cobra.Command {
	opts := proxyOptions{Listen: "127.0.0.1:6443", LogFormat: "text", LogLevel: "info", clock: clk}
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
			return runProxy(ctx, cmd.ErrOrStderr(), opts)
		},
	}
	f := cmd.Flags()
	f.StringVar(&opts.Listen, "listen", opts.Listen, "address to serve the Kubernetes API on")
	f.StringArrayVar(&opts.Backends, "backend", nil, "kube-apiserver URL (repeatable); default: the kubeconfig's server")
	f.StringSliceVar(&opts.Rules, "rules", nil, "TransformationRules file or directory, watched for changes: apiRoutingRules order the servers, apiMigrationRules emulate versions no server serves (repeatable)")
	f.BoolVar(&opts.RulesFromCluster, "rules-from-cluster", false, "also take the cluster's TransformationRules objects (read through --kubeconfig), and write their status")
	f.BoolVar(&opts.BuiltinRules, "builtin-rules", false, "also take the built-in rules (mvpctl rules builtin): emulate every built-in API version no server serves; a --rules or cluster rule for the same resource and version replaces the built-in one")
	f.IntVar(&opts.UsageTableSize, "usage-table-size", proxy.DefaultUsageTableSize, "clients of old API versions (emulated, deprecated or removed) that /debug/clients remembers by user, user agent and resource, at most 100 per user (a user at its quota replaces its own least recently seen, a full table one of the users holding the most); at most 100000; 0: none")
	f.StringSliceVar(&opts.OpenAPIFrom, "openapi-from", nil, "OpenAPI v3 document (file, or directory of *.json) of a version to emulate, e.g. from an older release: served in /openapi/v3 and /openapi/v2 for kubectl explain and validation, instead of the schema a CRD keeps for the version (repeatable)")
	f.BoolVar(&opts.Discover, "discover-backends", false, "add the kube-apiservers listed in the default/kubernetes EndpointSlices (read through --kubeconfig), followed every 10s")
	opts.Kube = addKubeconfigFlags(f)
	f.StringVar(&opts.TLSCertFile, "tls-cert-file", "", "serving certificate, read again when it changes; default: a self-signed one (loopback --listen only)")
	f.StringVar(&opts.TLSKeyFile, "tls-private-key-file", "", "key of --tls-cert-file")
	f.StringVar(&opts.ClientCAFile, "client-ca-file", "", "CA that verifies client certificates, read again when it changes; their user and groups are impersonated")
	f.StringVar(&opts.WriteKubeconfig, "write-kubeconfig", "", "write a kubeconfig for the proxy here (server, CA, and the --kubeconfig's user)")
	f.StringVar(&opts.MetricsListen, "metrics-listen", "", "address for /metrics and /debug/capabilities; default: off. On loopback they are open; elsewhere served over HTTPS with the serving certificate, to clients the cluster authenticates (TokenReview, client certificates of --client-ca-file) and allows to get the path (SubjectAccessReview)")
	f.BoolVar(&opts.Profiling, "profiling", false, "serve /debug/pprof on the --metrics-listen address")
	f.StringVar(&opts.LogFormat, "log-format", opts.LogFormat, "log format: text or json")
	f.StringVar(&opts.LogLevel, "log-level", opts.LogLevel, "log level: debug (one line per request), info, warn or error")
	f.DurationVar(&opts.RefreshInterval, "refresh-interval", 30*time.Second, "how often each server's discovery is read again")
	f.DurationVar(&opts.HealthInterval, "health-interval", time.Second, "how often each server's /readyz is checked")
	f.DurationVar(&opts.ReadHeaderTimeout, "read-header-timeout", 10*time.Second, "close connections whose request headers take longer")
	f.Int64Var(&opts.MaxBodyBytes, "max-request-body-bytes", proxy.DefaultMaxRequestBodyBytes, "largest request body accepted (413 beyond)")
	f.DurationVar(&opts.ProgramTimeout, "program-timeout", engine.DefaultProgramTimeout, "longest run of one rule's program on one object; a rule that loops answers 500 naming it")
	f.DurationVar(&opts.RequestBodyTimeout, "request-body-timeout", proxy.DefaultRequestBodyTimeout, "how long a request body may take to arrive once the proxy reads it (408 beyond)")
	f.Int64Var(&opts.MaxBufferedRequestBytes, "max-buffered-request-bytes", proxy.DefaultMaxBufferedRequestBytes, "request body bytes held in memory at once, across all requests (429 with Retry-After beyond); must exceed --max-request-body-bytes")
	f.IntVar(&opts.MaxConnections, "max-connections", proxy.DefaultMaxConnections, "client connections open at once; further ones wait until one closes")
	f.IntVar(&opts.MaxUpstreamConns, "max-upstream-connections-per-backend", proxy.DefaultMaxUpstreamConnsPerBackend, "connections to each server, per credential kind of clients (impersonated certificate users, clients' own credentials; the proxy's own requests have 8 apart); over HTTP/2 each carries many requests and watches, over HTTP/1.1 (upgrades) one; past it a request waits up to 5s, then gets 503 with Retry-After")
	f.IntVar(&opts.MaxLongRunningPerUser, "max-long-running-requests-per-user", proxy.DefaultMaxLongRunningPerUser, "watches, followed logs and exec/attach/port-forward one user (certificate user, bearer token, or all anonymous requests) may have open at once (429 with Retry-After beyond)")
	f.IntVar(&opts.MaxInFlightPerUser, "max-requests-in-flight-per-user", proxy.DefaultMaxInFlightPerUser, "other requests one user may have in flight at once; further ones queue behind that user's own")
	f.IntVar(&opts.MaxQueuedPerUser, "max-queued-requests-per-user", proxy.DefaultMaxQueuedPerUser, "requests of one user waiting (up to 15s) for one of its in-flight slots (429 with Retry-After beyond); 0: none wait")
	f.IntVar(&opts.MaxTrackedUsers, "max-tracked-users", proxy.DefaultMaxTrackedUsers, "users with requests open at once; a request of a further user gets 429 with Retry-After")
	f.Int64Var(&opts.MaxObjectBytes, "max-object-bytes", proxy.DefaultMaxObjectBytes, "largest object, Table or discovery document read whole from a server, to convert it or for the capability map")
	f.IntVar(&opts.GCPercent, "gc-percent", defaultGCPercent, "how far the heap may grow past what is live before Go collects garbage, in percent (Go's GOGC, whose default is 100; a GOGC environment variable wins): higher costs memory and saves CPU; GOMEMLIMIT bounds the heap whatever it is")
	f.DurationVar(&opts.ShutdownDelay, "shutdown-delay-duration", 0, "on SIGTERM, keep serving this long with /readyz failing, so that load balancers stop sending requests before the listener closes (as kube-apiserver's flag of the same name)")
	return cmd
}

// addKubeconfigFlags registers client-go's kubeconfig flags that name the
// backends' CA and the proxy's own credentials: --kubeconfig, --context,
// --client-certificate, --client-key, --token, --insecure-skip-tls-verify,
// and the certificate authority as --backend-ca. Their help says what they
// are for here.
func addKubeconfigFlags(f *pflag.FlagSet) *genericclioptions.ConfigFlags {
	kube := &genericclioptions.ConfigFlags{
		KubeConfig:  ptr.To(""),
		Context:     ptr.To(""),
		CertFile:    ptr.To(""),
		KeyFile:     ptr.To(""),
		BearerToken: ptr.To(""),
		Insecure:    ptr.To(false),
	}
	kube.AddFlags(f)
	kube.CAFile = ptr.To("")
	f.StringVar(kube.CAFile, "backend-ca", "", "CA file that verifies the backends")
	for name, usage := range map[string]string{
		"kubeconfig":               "kubeconfig with the backends' CA and the proxy's credentials",
		"context":                  "kubeconfig context; default: the current one",
		"client-certificate":       "the proxy's client certificate for the backends",
		"client-key":               "the key of --client-certificate",
		"token":                    "the proxy's bearer token for the backends",
		"insecure-skip-tls-verify": "do not verify the backends' certificates (tests only)",
	} {
		f.Lookup(name).Usage = usage
	}
	return kube
}

// startupReadyWait bounds how long a starting proxy holds connections
// while no backend has answered its health probe yet.
const startupReadyWait = 3 * time.Second

// runProxy serves until stop ends (a signal), then drains for
// --shutdown-delay-duration and shuts down.
func runProxy(stop context.Context, stderr io.Writer, opts proxyOptions) error {
	log, err := checkProxyOptions(stderr, opts)
	if err != nil {
		return err
	}
	// k8s.io/apiserver's certificate reloading and delegated
	// authentication log through klog: into the proxy's log.
	klog.SetSlogLogger(log)
	id, err := backendCredentials(opts.Kube)
	if err != nil {
		return err
	}
	backends, err := findBackends(stop, opts, id)
	if err != nil {
		return err
	}
	registry := prometheus.NewRegistry()
	p, err := newProxy(opts, backends.list, log, registry)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(context.WithoutCancel(stop))
	defer cancel()
	followCPULimit(ctx, log, 30*time.Second, func() (float64, bool) { return cgroupCPULimit("/") })
	setGCPercent(log, opts.GCPercent)
	go drainOnStop(stop, ctx, cancel, p, opts, log)
	if err := followRules(ctx, stderr, log, p, opts, id.config); err != nil {
		return err
	}
	srv, err := newAPIServer(p, opts, log, registry, id.user)
	if err != nil {
		return err
	}
	p.Run(ctx)
	backends.follow(ctx, p, opts, id.backend)
	return serve(ctx, cancel, p, srv, opts, id.config, backends, log)
}

// checkProxyOptions checks what the flags say before anything starts and
// returns the proxy's logger.
func checkProxyOptions(stderr io.Writer, opts proxyOptions) (*slog.Logger, error) {
	log, err := newLogger(stderr, opts.LogFormat, opts.LogLevel)
	if err != nil {
		return nil, err
	}
	if opts.ProgramTimeout <= 0 {
		return nil, usageErrorf("--program-timeout %s: want a positive duration", opts.ProgramTimeout)
	}
	if err := checkLimits(opts); err != nil {
		return nil, err
	}
	if opts.ClientCAFile != "" {
		// Read here for a clear error; the listener reads it again when
		// it changes.
		if _, err := certutil.NewPool(opts.ClientCAFile); err != nil {
			return nil, inputError(fmt.Errorf("--client-ca-file: %w", err))
		}
	}
	return log, nil
}

// backendSet is where the proxy's backends come from.
type backendSet struct {
	list []proxy.Backend
	// endpointSlices lists the control plane's servers; nil without
	// --discover-backends.
	endpointSlices discoveryclient.EndpointSlicesGetter
}

// findBackends are the --backend URLs and, with --discover-backends, the
// servers the kubernetes EndpointSlices list; with neither, the
// kubeconfig's server. Each has the proxy's identity.
func findBackends(ctx context.Context, opts proxyOptions, id backendIdentity) (backendSet, error) {
	var set backendSet
	urls := opts.Backends
	if opts.Discover {
		if *opts.Kube.KubeConfig == "" {
			return set, usageErrorf("--discover-backends reads the cluster through --kubeconfig")
		}
		client, err := discoveryclient.NewForConfig(id.config)
		if err != nil {
			return set, inputError(err)
		}
		set.endpointSlices = client
		found, err := discoverBackends(ctx, client)
		if err != nil {
			return set, err
		}
		for _, u := range found {
			if !slices.Contains(urls, u) {
				urls = append(urls, u)
			}
		}
	}
	if len(urls) == 0 {
		if id.config.Host == "" {
			return set, usageErrorf("no backends: give --backend URL or a --kubeconfig whose context names a server")
		}
		urls = []string{id.config.Host}
	}
	for _, raw := range urls {
		u, err := url.Parse(raw)
		if err != nil || u.Host == "" || (u.Scheme != "https" && u.Scheme != "http") {
			return set, usageErrorf("--backend %q: want https://HOST:PORT", raw)
		}
		b := id.backend
		b.URL = u
		set.list = append(set.list, b)
	}
	return set, nil
}

// discoverBackends reads the servers the kubernetes EndpointSlices list
// once, to start with.
func discoverBackends(ctx context.Context, client discoveryclient.EndpointSlicesGetter) ([]string, error) {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	found, err := proxy.EndpointSliceBackends(ctx, client)
	if err != nil {
		return nil, failure(fmt.Errorf("--discover-backends: %w", err))
	}
	return found, nil
}

// follow keeps the backends on the servers the EndpointSlices list, plus
// the --backend ones, until ctx ends; without --discover-backends the set
// stays as it started.
func (s backendSet) follow(ctx context.Context, p *proxy.Proxy, opts proxyOptions, identity proxy.Backend) {
	if s.endpointSlices == nil {
		return
	}
	var static []proxy.Backend
	for _, b := range s.list {
		if slices.Contains(opts.Backends, b.URL.String()) {
			static = append(static, b)
		}
	}
	go p.FollowEndpointSlices(ctx, s.endpointSlices, identity, static, 10*time.Second)
}

// newProxy builds the proxy of the options, without rules: followRules
// gives them.
func newProxy(opts proxyOptions, backends []proxy.Backend, log *slog.Logger, registry *prometheus.Registry) (*proxy.Proxy, error) {
	openAPI, err := loadOpenAPIV3(opts.OpenAPIFrom)
	if err != nil {
		return nil, inputError(fmt.Errorf("--openapi-from: %w", err))
	}
	p, err := proxy.New(proxy.Options{
		Backends:                   backends,
		RefreshInterval:            opts.RefreshInterval,
		HealthInterval:             opts.HealthInterval,
		MaxRequestBodyBytes:        opts.MaxBodyBytes,
		RequestBodyTimeout:         opts.RequestBodyTimeout,
		MaxBufferedRequestBytes:    opts.MaxBufferedRequestBytes,
		MaxUpstreamConnsPerBackend: opts.MaxUpstreamConns,
		Fairness: proxy.FairnessOptions{
			MaxLongRunningPerUser: opts.MaxLongRunningPerUser,
			MaxInFlightPerUser:    opts.MaxInFlightPerUser,
			MaxQueuedPerUser:      cmp.Or(opts.MaxQueuedPerUser, -1),
			MaxTrackedUsers:       opts.MaxTrackedUsers,
		},
		MaxObjectBytes:         opts.MaxObjectBytes,
		ImpersonateClientCerts: opts.ClientCAFile != "",
		Logger:                 log,
		Registry:               registry,
		OpenAPIV3:              openAPI,
		UsageTableSize:         opts.UsageTableSize,
	})
	if err != nil {
		return nil, inputError(err)
	}
	return p, nil
}

// proxyRules are the rules of a rules source's set, as the proxy takes them.
func proxyRules(set *rulesource.Set) proxy.Rules {
	return proxy.Rules{Routing: set.RoutingRules, Converter: set.Converter}
}

// drainOnStop waits for stop (a signal), then has the proxy fail /readyz
// while it keeps serving for --shutdown-delay-duration, and then ends ctx
// with cancel. It returns when ctx ends.
func drainOnStop(stop, ctx context.Context, cancel context.CancelFunc, p *proxy.Proxy, opts proxyOptions, log *slog.Logger) {
	select {
	case <-ctx.Done():
		return
	case <-stop.Done():
	}
	p.Drain()
	if opts.ShutdownDelay > 0 {
		log.Info("shutting down: /readyz fails, requests are still served", "delay", opts.ShutdownDelay.String())
		select {
		case <-opts.clock.After(opts.ShutdownDelay):
		case <-ctx.Done():
		}
	}
	cancel()
}

// newAPIServer is the proxy's Kubernetes API listener; with
// --write-kubeconfig it writes a kubeconfig for it once it listens.
func newAPIServer(p *proxy.Proxy, opts proxyOptions, log *slog.Logger, registry *prometheus.Registry, user *clientcmdapi.AuthInfo) (*proxy.Server, error) {
	srv, err := proxy.NewServer(p, proxy.ServeOptions{
		Listen:            opts.Listen,
		CertFile:          opts.TLSCertFile,
		KeyFile:           opts.TLSKeyFile,
		ClientCAFile:      opts.ClientCAFile,
		MaxConnections:    opts.MaxConnections,
		ReadHeaderTimeout: opts.ReadHeaderTimeout,
		Logger:            log,
		Registry:          registry,
	})
	if err != nil {
		return nil, inputError(err)
	}
	if opts.WriteKubeconfig != "" {
		if err := writeProxyKubeconfig(opts, srv, user); err != nil {
			return nil, failure(fmt.Errorf("--write-kubeconfig: %w", err))
		}
	}
	return srv, nil
}

// serve runs the API listener and, with --metrics-listen, the metrics one
// until ctx ends or one of them fails, and returns the first error.
func serve(ctx context.Context, cancel context.CancelFunc, p *proxy.Proxy, srv *proxy.Server, opts proxyOptions, restConfig *rest.Config, backends backendSet, log *slog.Logger) error {
	// After the servers have stopped, so that no request is still using one.
	defer p.Close()
	errc := make(chan error, 2)
	servers := 1
	if opts.MetricsListen != "" {
		msrv, err := newMetricsServer(p, opts, restConfig, backends.list[0].URL.String(), log)
		if err != nil {
			return inputError(fmt.Errorf("--metrics-listen: %w", err))
		}
		servers++
		go func() { errc <- msrv.Serve(ctx) }()
		log.Info("serving metrics", "address", msrv.Addr().String())
	}
	// Until the first health probes answer, every request would be a 503
	// with Retry-After: 1, and a restarted proxy would cost its clients a
	// second: connections wait in the listen backlog instead, a few seconds
	// at most.
	readyCtx, readyCancel := context.WithTimeout(ctx, startupReadyWait)
	_ = p.WaitReady(readyCtx)
	readyCancel()
	log.Info("serving the Kubernetes API", "address", srv.Addr().String(), "backends", len(backends.list))
	go func() { errc <- srv.Serve(ctx) }()
	select {
	case <-ctx.Done():
		cancel()
		var first error
		for range servers {
			if err := <-errc; err != nil && first == nil {
				first = err
			}
		}
		if first != nil {
			return failure(first)
		}
		return nil
	case err := <-errc:
		return failure(err)
	}
}

// checkLimits refuses limits that would mean "none" or the default, and a
// metrics address off loopback without a serving certificate.
func checkLimits(opts proxyOptions) error {
	switch {
	case opts.RequestBodyTimeout <= 0:
		return usageErrorf("--request-body-timeout must be positive")
	case opts.MaxBufferedRequestBytes <= opts.MaxBodyBytes:
		return usageErrorf("--max-buffered-request-bytes (%d) must be larger than --max-request-body-bytes (%d)", opts.MaxBufferedRequestBytes, opts.MaxBodyBytes)
	case opts.MaxConnections <= 0:
		return usageErrorf("--max-connections must be positive")
	case opts.MaxUpstreamConns <= 0:
		return usageErrorf("--max-upstream-connections-per-backend must be positive")
	case opts.MaxLongRunningPerUser <= 0:
		return usageErrorf("--max-long-running-requests-per-user must be positive")
	case opts.MaxInFlightPerUser <= 0:
		return usageErrorf("--max-requests-in-flight-per-user must be positive")
	case opts.MaxQueuedPerUser < 0:
		return usageErrorf("--max-queued-requests-per-user must not be negative (0: none wait)")
	case opts.MaxTrackedUsers <= 0:
		return usageErrorf("--max-tracked-users must be positive")
	case opts.MaxObjectBytes <= 0:
		return usageErrorf("--max-object-bytes must be positive")
	case opts.GCPercent <= 0:
		return usageErrorf("--gc-percent must be positive")
	case opts.UsageTableSize < 0:
		return usageErrorf("--usage-table-size must not be negative (0 turns the table off)")
	case opts.UsageTableSize > proxy.MaxUsageTableSize:
		return usageErrorf("--usage-table-size %d: at most %d", opts.UsageTableSize, proxy.MaxUsageTableSize)
	}
	if opts.MetricsListen == "" {
		return nil
	}
	loopback, err := proxy.LoopbackAddress(opts.MetricsListen)
	if err != nil {
		return usageErrorf("--metrics-listen %q: %v", opts.MetricsListen, err)
	}
	if !loopback && (opts.TLSCertFile == "" || opts.TLSKeyFile == "") {
		return usageErrorf("--metrics-listen %s is not loopback: its endpoints are then served over HTTPS to authorized users, with --tls-cert-file and --tls-private-key-file", opts.MetricsListen)
	}
	return nil
}

// newMetricsServer serves /metrics, /debug/capabilities, /healthz and, with
// --profiling, /debug/pprof. Off loopback they take the serving
// certificate, and the proxy's kubeconfig (or its first backend with its
// credentials) reviews the tokens and access of their clients.
func newMetricsServer(p *proxy.Proxy, opts proxyOptions, restConfig *rest.Config, backend string, log *slog.Logger) (*proxy.Server, error) {
	mux := http.NewServeMux()
	mux.Handle("/metrics", p.MetricsHandler())
	mux.Handle("/debug/capabilities", p.DebugHandler())
	mux.Handle("/debug/clients", p.ClientsHandler())
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, "ok") })
	if opts.Profiling {
		mux.HandleFunc("/debug/pprof/", pprof.Index)
		mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
		mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
		mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	}
	auth := rest.CopyConfig(restConfig)
	if auth.Host == "" {
		auth.Host = backend
	}
	return proxy.NewMetricsServer(mux, proxy.MetricsServeOptions{
		Listen:       opts.MetricsListen,
		CertFile:     opts.TLSCertFile,
		KeyFile:      opts.TLSKeyFile,
		ClientCAFile: opts.ClientCAFile,
		Auth:         auth,
		Logger:       log,
	})
}

// followRules loads the rules and keeps the proxy on the latest good set:
// the rules files (watched) and, with --rules-from-cluster, the cluster's
// TransformationRules objects. Rules that do not load at start-up are an
// error; later bad changes are rejected by the source and never reach p.
func followRules(ctx context.Context, stderr io.Writer, log *slog.Logger, p *proxy.Proxy, opts proxyOptions, restConfig *rest.Config) error {
	if len(opts.Rules) == 0 && !opts.RulesFromCluster && !opts.BuiltinRules {
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
		Builtin:   opts.BuiltinRules,
		Component: "mvpctl-proxy",
		Host:      host,
		Logger:    log,
		// The proxy converts with the native executor: the jq programs are
		// compiled only if something asks for them.
		Compile: rules.CompileOptions{Lazy: true},
		Converter: engine.Options{
			ProgramTimeout: opts.ProgramTimeout,
			Resolver:       p.ResourceFor,
			Warn:           func(msg string) { log.Debug("emulation: " + msg) },
		},
	}, cluster)
	if err != nil {
		return err
	}
	var subscribeErr error
	src.Subscribe(func(set *rulesource.Set) {
		err := p.SetRules(proxyRules(set))
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

// backendIdentity is what the proxy presents to its backends.
type backendIdentity struct {
	backend proxy.Backend // TLS configuration and token; no URL
	// user is the kubeconfig's user, for --write-kubeconfig; nil without
	// --kubeconfig.
	user *clientcmdapi.AuthInfo
	// config reads the cluster (EndpointSlices, rules, reviews); its Host is
	// the kubeconfig's server, "" without --kubeconfig.
	config *rest.Config
}

// backendCredentials builds the proxy's identity for the backends from the
// kubeconfig and the flags, which win.
func backendCredentials(kube *genericclioptions.ConfigFlags) (backendIdentity, error) {
	var id backendIdentity
	if (*kube.CertFile == "") != (*kube.KeyFile == "") {
		return id, usageErrorf("--client-certificate and --client-key go together")
	}
	if *kube.Insecure && *kube.CAFile != "" {
		return id, usageErrorf("--backend-ca and --insecure-skip-tls-verify exclude each other")
	}
	cfg, user, err := kubeRESTConfig(kube)
	if err != nil {
		return id, err
	}
	if cfg.ExecProvider != nil || cfg.AuthProvider != nil {
		return id, usageErrorf("--kubeconfig: exec and auth-provider credentials are not supported for the proxy's identity; use a client certificate or token")
	}
	if *kube.BearerToken != "" {
		// --token wins over the kubeconfig's token file, which the proxy
		// would otherwise read again and use.
		cfg.BearerTokenFile = ""
	}
	if cfg.BearerToken == "" && cfg.BearerTokenFile != "" {
		// Read now for a clear error at start; the proxy reads it again
		// every minute, as rotated ServiceAccount tokens need.
		if _, err := os.ReadFile(cfg.BearerTokenFile); err != nil {
			return id, inputError(err)
		}
	}
	tlsConfig, err := rest.TLSConfigFor(cfg)
	if err != nil {
		return id, inputError(fmt.Errorf("backend TLS: %w", err))
	}
	if tlsConfig == nil {
		tlsConfig = &tls.Config{}
	}
	tlsConfig.MinVersion = tls.VersionTLS12
	id.backend = proxy.Backend{TLS: tlsConfig, BearerToken: cfg.BearerToken, BearerTokenFile: cfg.BearerTokenFile}
	id.user, id.config = user, cfg
	return id, nil
}

// kubeRESTConfig is the client configuration of the kubeconfig flags, and
// the user of the kubeconfig's context. Only a kubeconfig that --kubeconfig
// names is read, never $KUBECONFIG, ~/.kube/config or a pod's service
// account: the proxy's identity may impersonate anyone, so it is what its
// command line says.
func kubeRESTConfig(kube *genericclioptions.ConfigFlags) (*rest.Config, *clientcmdapi.AuthInfo, error) {
	if *kube.KubeConfig == "" {
		return &rest.Config{
			BearerToken: *kube.BearerToken,
			TLSClientConfig: rest.TLSClientConfig{
				CAFile:   *kube.CAFile,
				CertFile: *kube.CertFile,
				KeyFile:  *kube.KeyFile,
				Insecure: *kube.Insecure,
			},
		}, nil, nil
	}
	loader := kube.ToRawKubeConfigLoader()
	raw, err := loader.RawConfig()
	if err != nil {
		return nil, nil, inputError(fmt.Errorf("--kubeconfig: %w", err))
	}
	name := *kube.Context
	if name == "" {
		name = raw.CurrentContext
	}
	c := raw.Contexts[name]
	if c == nil {
		return nil, nil, inputError(fmt.Errorf("--kubeconfig %s: context %q does not exist", *kube.KubeConfig, name))
	}
	// Without a server client-go would take localhost:8080 and, over
	// plain HTTP, drop the user's credentials.
	if cl := raw.Clusters[c.Cluster]; cl == nil || cl.Server == "" {
		return nil, nil, inputError(fmt.Errorf("--kubeconfig %s: context %q names no cluster with a server", *kube.KubeConfig, name))
	}
	cfg, err := loader.ClientConfig()
	if err != nil {
		return nil, nil, inputError(fmt.Errorf("--kubeconfig: %w", err))
	}
	user := raw.AuthInfos[c.AuthInfo]
	return cfg, user, nil
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
