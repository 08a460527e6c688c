package cli

import (
	"context"
	"io"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"strconv"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/client-go/rest"
	"k8s.io/klog/v2"
	"k8s.io/utils/ptr"

	"github.com/mvpctl/mvpctl/engine"
	"github.com/mvpctl/mvpctl/engine/rulesource"
	"github.com/mvpctl/mvpctl/rules"
	"github.com/mvpctl/mvpctl/webhook"
)

type webhookOptions struct {
	Rules            []string
	RulesFromCluster bool
	Kube             *genericclioptions.ConfigFlags

	BindAddress string
	SecurePort  int

	TLSCertFile, TLSKeyFile       string
	CertDir                       string
	ServiceName, ServiceNamespace string
	TLSSANs                       []string
	CertValidity                  time.Duration
	MetricsBindAddress            string
	ManageCRDs                    bool
	WebhookURL                    string
	MaxRequestBytes               int64
	MaxObjectsPerReview           int
	MaxConcurrentReviews          int
	ProgramTimeout                time.Duration
	MaxConnections                int
	ReadHeaderTimeout             time.Duration
	LogFormat, LogLevel           string
}

func newWebhookCmd() *cobra.Command {
	opts := webhookOptions{LogFormat: "text", LogLevel: "info"}
	cmd := &cobra.Command{
		Use:   "webhook --rules RULES [--cert-dir DIR | --tls-cert-file FILE --tls-private-key-file FILE] [--manage-crds]",
		Short: "Serve CRD conversion (ConversionReview) from TransformationRules",
		Long: `Serve a conversion webhook for CustomResourceDefinitions from TransformationRules:
POST /convert answers apiextensions.k8s.io/v1 and v1beta1 ConversionReviews with the
same rules and engine as mvpctl proxy, along chains of rules in both directions.

Every response holds exactly the request's objects, in order, under its uid, each
with the desired apiVersion, its kind, and metadata changed in labels and annotations
only; an object that would break that fails the whole review with a Failure whose
message names the object, the rule, the step and the path.

The serving certificate comes from --tls-cert-file/--tls-private-key-file (read again
when they change) or from --cert-dir, where the webhook keeps its own CA (ca.crt,
ca.key; one already there is used) and issues itself a certificate (tls.crt, tls.key)
for the Service's DNS names and --tls-san, renewed at two thirds of --cert-validity.

With --manage-crds the webhook writes spec.conversion into each CRD its rules cover,
after a self-test ConversionReview for every pair of the CRD's served versions
through its own HTTPS endpoint; a CRD whose versions the rules cannot all reach is
left as it was, with a log line and an Event saying why.

/healthz, /readyz (rules loaded and serving) and /metrics (users the cluster
authorizes, or --metrics-bind-address) are served beside /convert.`,
		Example: `  mvpctl webhook --rules rules/ --cert-dir /var/run/mvpctl-webhook \
    --service-name mvpctl-webhook --service-namespace mvpctl-system --manage-crds
  mvpctl webhook --rules rules.yaml --bind-address 127.0.0.1 --secure-port 9443 \
    --cert-dir certs --tls-san 127.0.0.1 --manage-crds --webhook-url https://127.0.0.1:9443/convert`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			return runWebhook(ctx, cmd.ErrOrStderr(), opts)
		},
	}
	cmd.AddCommand(newWebhookCheckCmd())
	f := cmd.Flags()
	f.StringArrayVar(&opts.Rules, "rules", nil, "TransformationRules file or directory, watched for changes (repeatable)")
	markFilenameFlags(cmd, "rules")
	f.BoolVar(&opts.RulesFromCluster, "rules-from-cluster", false, "also take the cluster's TransformationRules objects, and write their status")
	opts.Kube = &genericclioptions.ConfigFlags{KubeConfig: ptr.To(""), Context: ptr.To("")}
	opts.Kube.AddFlags(f)
	f.Lookup("kubeconfig").Usage = "kubeconfig for --rules-from-cluster, --manage-crds and authorizing /metrics; default: the pod's service account, then KUBECONFIG"
	f.StringVar(&opts.BindAddress, "bind-address", "0.0.0.0", "address to serve on")
	f.IntVar(&opts.SecurePort, "secure-port", 9443, "port to serve HTTPS on")
	f.StringVar(&opts.TLSCertFile, "tls-cert-file", "", "serving certificate, read again when it changes")
	f.StringVar(&opts.TLSKeyFile, "tls-private-key-file", "", "key of --tls-cert-file")
	f.StringVar(&opts.CertDir, "cert-dir", "", "directory where the webhook keeps its CA and its serving certificate, which it issues and renews itself (instead of --tls-cert-file)")
	f.StringVar(&opts.ServiceName, "service-name", "mvpctl-webhook", "the webhook's Service: its DNS names go in the --cert-dir certificate, and --manage-crds points CRDs at it (without --webhook-url)")
	f.StringVar(&opts.ServiceNamespace, "service-namespace", "mvpctl-system", "namespace of --service-name")
	f.StringArrayVar(&opts.TLSSANs, "tls-san", nil, "another IP address or DNS name for the --cert-dir certificate (repeatable)")
	f.DurationVar(&opts.CertValidity, "cert-validity", webhook.DefaultCertValidity, "validity of the --cert-dir serving certificate; it is renewed at two thirds of it")
	f.StringVar(&opts.MetricsBindAddress, "metrics-bind-address", "", "also serve /metrics on this host:port: openly on loopback, elsewhere over HTTPS to users the cluster authorizes")
	f.BoolVar(&opts.ManageCRDs, "manage-crds", false, "write spec.conversion into each CRD the rules cover, once a self-test of all its served versions passes, and keep its caBundle current")
	f.StringVar(&opts.WebhookURL, "webhook-url", "", "with --manage-crds, point CRDs at this URL (e.g. https://127.0.0.1:9443/convert) instead of the Service")
	f.Int64Var(&opts.MaxRequestBytes, "max-request-bytes", webhook.DefaultMaxRequestBytes, "largest ConversionReview body accepted (413 beyond)")
	f.IntVar(&opts.MaxObjectsPerReview, "max-objects-per-review", webhook.DefaultMaxObjectsPerReview, "most objects in one ConversionReview (a Failure beyond)")
	f.IntVar(&opts.MaxConcurrentReviews, "max-concurrent-reviews", webhook.DefaultMaxConcurrentReviews, "reviews read and converted at once; others wait for a slot")
	f.DurationVar(&opts.ProgramTimeout, "program-timeout", engine.DefaultProgramTimeout, "longest run of one rule's program on one object; a rule that loops fails the review naming it")
	f.IntVar(&opts.MaxConnections, "max-connections", webhook.DefaultMaxConnections, "connections open at once; further ones wait until one closes")
	f.DurationVar(&opts.ReadHeaderTimeout, "read-header-timeout", 10*time.Second, "close connections whose request headers take longer")
	f.StringVar(&opts.LogFormat, "log-format", opts.LogFormat, "log format: text or json")
	f.StringVar(&opts.LogLevel, "log-level", opts.LogLevel, "log level: debug, info, warn or error")
	return cmd
}

// runWebhook serves until ctx ends (a signal).
func runWebhook(ctx context.Context, stderr io.Writer, opts webhookOptions) error {
	log, err := newLogger(stderr, opts.LogFormat, opts.LogLevel)
	if err != nil {
		return err
	}
	if err := checkWebhookOptions(opts); err != nil {
		return err
	}
	klog.SetSlogLogger(log)
	cluster, err := webhookCluster(opts)
	if err != nil {
		return err
	}
	var sourceCluster *rest.Config
	if opts.RulesFromCluster {
		sourceCluster = cluster
	}
	host, _ := os.Hostname()
	src, err := startRuleSource(ctx, stderr, rulesource.Options{
		Files: opts.Rules, Component: "mvpctl-webhook", Host: host, Logger: log,
		Compile:   rules.CompileOptions{Lazy: true},
		Converter: engine.Options{ProgramTimeout: opts.ProgramTimeout, Strict: true},
	}, sourceCluster)
	if err != nil {
		return err
	}
	err = webhook.Run(ctx, webhookRunOptions(opts, src, cluster, log))
	<-src.Done()
	return failure(err)
}

func checkWebhookOptions(opts webhookOptions) error {
	switch {
	case len(opts.Rules) == 0 && !opts.RulesFromCluster:
		return usageErrorf("no rules: give --rules FILE|DIR, --rules-from-cluster, or both")
	case opts.CertDir == "" && (opts.TLSCertFile == "" || opts.TLSKeyFile == ""):
		return usageErrorf("no serving certificate: give --cert-dir DIR, or --tls-cert-file and --tls-private-key-file")
	case opts.CertDir != "" && (opts.TLSCertFile != "" || opts.TLSKeyFile != ""):
		return usageErrorf("--cert-dir and --tls-cert-file/--tls-private-key-file exclude each other")
	case opts.ProgramTimeout <= 0:
		return usageErrorf("--program-timeout must be positive")
	case opts.MaxRequestBytes <= 0 || opts.MaxObjectsPerReview <= 0 || opts.MaxConcurrentReviews <= 0 || opts.MaxConnections <= 0:
		return usageErrorf("--max-request-bytes, --max-objects-per-review, --max-concurrent-reviews and --max-connections must be positive")
	case opts.CertValidity < time.Minute:
		return usageErrorf("--cert-validity %s: want at least a minute", opts.CertValidity)
	case opts.SecurePort < 0 || opts.SecurePort > 65535:
		return usageErrorf("--secure-port %d: want 0 to 65535", opts.SecurePort)
	case opts.ManageCRDs && opts.CertDir == "" && opts.WebhookURL == "":
		return usageErrorf("--manage-crds writes the CA of --cert-dir into the CRDs: give --cert-dir")
	}
	return nil
}

// webhookCluster is the cluster configuration: required by
// --rules-from-cluster and --manage-crds, optional otherwise (it then only
// authorizes /metrics); nil when there is none.
func webhookCluster(opts webhookOptions) (*rest.Config, error) {
	needed := opts.RulesFromCluster || opts.ManageCRDs
	if !needed && noKubeconfig(opts.Kube) {
		return nil, nil
	}
	cfg, err := clusterConfig(opts.Kube)
	if err != nil && !needed {
		return nil, nil
	}
	if cfg != nil {
		cfg.UserAgent = "mvpctl-webhook"
	}
	return cfg, err
}

func webhookRunOptions(opts webhookOptions, src *rulesource.Source, cluster *rest.Config, log *slog.Logger) webhook.Options {
	ro := webhook.Options{
		Rules: src,
		Serve: webhook.ServeOptions{
			Address:  net.JoinHostPort(opts.BindAddress, strconv.Itoa(opts.SecurePort)),
			CertFile: opts.TLSCertFile, KeyFile: opts.TLSKeyFile,
			MaxConnections: opts.MaxConnections, ReadHeaderTimeout: opts.ReadHeaderTimeout,
		},
		Handler: webhook.HandlerOptions{
			MaxRequestBytes: opts.MaxRequestBytes, MaxObjectsPerReview: opts.MaxObjectsPerReview,
			MaxConcurrentReviews: opts.MaxConcurrentReviews,
		},
		Cluster:        cluster,
		MetricsAddress: opts.MetricsBindAddress,
		Logger:         log,
	}
	if opts.CertDir != "" {
		ro.CertDir = &webhook.CertDirOptions{Dir: opts.CertDir, ServiceName: opts.ServiceName,
			ServiceNamespace: opts.ServiceNamespace, SANs: opts.TLSSANs, Validity: opts.CertValidity}
	}
	if opts.ManageCRDs {
		ro.ManageCRDs = &webhook.ManageOptions{URL: opts.WebhookURL, ServiceName: opts.ServiceName, ServiceNamespace: opts.ServiceNamespace}
	}
	return ro
}
