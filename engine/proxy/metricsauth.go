package proxy

import (
	"fmt"
	"log/slog"
	"net/http"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apiserver/pkg/authentication/authenticator"
	"k8s.io/apiserver/pkg/authentication/authenticatorfactory"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	"k8s.io/apiserver/pkg/authorization/authorizerfactory"
	"k8s.io/apiserver/pkg/authorization/union"
	genericfilters "k8s.io/apiserver/pkg/endpoints/filters"
	"k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/apiserver/pkg/server/dynamiccertificates"
	authenticationclient "k8s.io/client-go/kubernetes/typed/authentication/v1"
	authorizationclient "k8s.io/client-go/kubernetes/typed/authorization/v1"
	"k8s.io/client-go/rest"
)

// MetricsServeOptions configures the listener of the proxy's own endpoints:
// /metrics, /debug/capabilities, /debug/pprof and /healthz.
type MetricsServeOptions struct {
	// Listen is the host:port to listen on. On loopback the endpoints are
	// served over HTTP to anyone who can connect (local processes);
	// elsewhere over TLS, to users the cluster authenticates and authorizes.
	Listen string
	// CertFile and KeyFile are the serving certificate off loopback (read
	// again when they change), as [ServeOptions].
	CertFile, KeyFile string
	// ClientCAFile verifies client certificates off loopback; their common
	// name is the user. Empty means bearer tokens only.
	ClientCAFile string
	// Auth reaches the cluster that authenticates bearer tokens
	// (TokenReview) and authorizes users (SubjectAccessReview), with the
	// proxy's own credentials. Required off loopback.
	Auth *rest.Config
	// Logger receives the HTTP server's errors. Nil means none.
	Logger *slog.Logger
}

// metricsMaxConnections bounds the connections to the metrics listener:
// scrapers and operators, a handful.
const metricsMaxConnections = 128

// Caching and retries of the delegated reviews, as Kubernetes components
// have them (k8s.io/apiserver's delegating options).
const (
	authCacheTTL      = 10 * time.Second
	authReviewTimeout = 10 * time.Second
)

// authRetryBackoff is k8s.io/apiserver's DefaultAuthWebhookRetryBackoff
// (its options package would pull etcd's client into the binary).
func authRetryBackoff() *wait.Backoff {
	return &wait.Backoff{Duration: 500 * time.Millisecond, Factor: 1.5, Jitter: 0.2, Steps: 5}
}

// NewMetricsServer listens on opts.Listen; [Server.Serve] serves h there.
// Off loopback, every path but /healthz needs a user that the cluster
// authenticates (a bearer token by TokenReview, or a client certificate of
// opts.ClientCAFile) and allows to get the path (SubjectAccessReview on the
// non-resource URL), as Kubernetes components protect their metrics.
func NewMetricsServer(h http.Handler, opts MetricsServeOptions) (*Server, error) {
	loopback, err := LoopbackAddress(opts.Listen)
	if err != nil {
		return nil, err
	}
	return newMetricsServer(h, opts, !loopback)
}

// newMetricsServer serves h openly over HTTP, or protected over TLS.
func newMetricsServer(h http.Handler, opts MetricsServeOptions, protect bool) (*Server, error) {
	serve := ServeOptions{Listen: opts.Listen, MaxConnections: metricsMaxConnections, Logger: opts.Logger}
	if !protect {
		s := &Server{shutdown: 5 * time.Second, plain: true}
		if err := s.listen(h, serve); err != nil {
			return nil, err
		}
		return s, nil
	}
	if opts.CertFile == "" || opts.KeyFile == "" {
		return nil, fmt.Errorf("serving metrics on %s (not loopback) needs a serving certificate", opts.Listen)
	}
	if opts.Auth == nil {
		return nil, fmt.Errorf("serving metrics on %s (not loopback) needs a cluster to authenticate and authorize requests", opts.Listen)
	}
	serve.CertFile, serve.KeyFile, serve.ClientCAFile = opts.CertFile, opts.KeyFile, opts.ClientCAFile
	s, err := newTLSServer(serve)
	if err != nil {
		return nil, err
	}
	authn, authz, err := DelegatedAuth(opts.Auth, s.clientCA)
	if err == nil {
		err = s.listen(withOpenHealthz(h, WithDelegatedAuth(h, authn, authz)), serve)
	}
	if err != nil {
		s.discard()
		return nil, err
	}
	return s, nil
}

// DelegatedAuth builds what Kubernetes components use to authenticate and
// authorize requests to their own endpoints: bearer tokens reviewed by
// the cluster (TokenReview) and client certificates of clientCA (nil:
// none), and SubjectAccessReviews, each answer cached briefly. The
// system:masters group is allowed without asking, as in those components.
func DelegatedAuth(cfg *rest.Config, clientCA dynamiccertificates.CAContentProvider) (authenticator.Request, authorizer.Authorizer, error) {
	cfg = rest.CopyConfig(cfg)
	cfg.Timeout = authReviewTimeout
	authnClient, err := authenticationclient.NewForConfig(cfg)
	if err != nil {
		return nil, nil, err
	}
	authzClient, err := authorizationclient.NewForConfig(cfg)
	if err != nil {
		return nil, nil, err
	}
	authnCfg := authenticatorfactory.DelegatingAuthenticatorConfig{
		TokenAccessReviewClient:  authnClient,
		TokenAccessReviewTimeout: authReviewTimeout,
		WebhookRetryBackoff:      authRetryBackoff(),
		CacheTTL:                 authCacheTTL,
	}
	if clientCA != nil {
		authnCfg.ClientCertificateCAContentProvider = clientCA
	}
	authn, _, err := authnCfg.New()
	if err != nil {
		return nil, nil, err
	}
	delegated, err := authorizerfactory.DelegatingAuthorizerConfig{
		SubjectAccessReviewClient: authzClient,
		AllowCacheTTL:             authCacheTTL,
		DenyCacheTTL:              authCacheTTL,
		WebhookRetryBackoff:       authRetryBackoff(),
	}.New()
	if err != nil {
		return nil, nil, err
	}
	authz, err := union.New(
		union.NamedAuthorizer{AuthorizerName: "privileged-groups", Authorizer: authorizerfactory.NewPrivilegedGroups(user.SystemPrivilegedGroup)},
		union.NamedAuthorizer{AuthorizerName: "delegated", Authorizer: delegated},
	)
	if err != nil {
		return nil, nil, err
	}
	return authn, authz, nil
}

// WithDelegatedAuth serves h to authenticated, authorized users only: 401
// without credentials the authenticator accepts, 403 when the authorizer
// does not allow the verb on the path, both as metav1.Status.
func WithDelegatedAuth(h http.Handler, authn authenticator.Request, authz authorizer.Authorizer) http.Handler {
	h = genericfilters.WithAuthorization(h, authz, statusCodecs)
	h = genericfilters.WithAuthentication(h, authn, genericfilters.Unauthorized(statusCodecs), nil, nil)
	return genericfilters.WithRequestInfo(h, &request.RequestInfoFactory{
		APIPrefixes:          sets.NewString("api", "apis"),
		GrouplessAPIPrefixes: sets.NewString("api"),
	})
}

// withOpenHealthz serves /healthz with open, everything else with
// protected: probes carry no credentials (Kubernetes components always
// allow /healthz too).
func withOpenHealthz(open, protected http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/healthz" {
			open.ServeHTTP(w, r)
			return
		}
		protected.ServeHTTP(w, r)
	})
}

// statusCodecs encode the metav1.Status of a 401 or 403.
var statusCodecs = func() serializer.CodecFactory {
	scheme := runtime.NewScheme()
	metav1.AddToGroupVersion(scheme, schema.GroupVersion{Version: "v1"})
	return serializer.NewCodecFactory(scheme)
}()
