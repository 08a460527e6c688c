package webhook

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/net/netutil"
	"k8s.io/apiserver/pkg/server/dynamiccertificates"
)

// DefaultMaxConnections is the default of [ServeOptions.MaxConnections].
const DefaultMaxConnections = 1024

// ServeOptions configure [NewServer].
type ServeOptions struct {
	// Address is host:port to listen on.
	Address string
	// CertFile and KeyFile are the serving certificate, read again when
	// they change. CertDir takes their place when set.
	CertFile, KeyFile string
	// CertDir issues the serving certificate and renews it.
	CertDir *CertDir
	// Convert serves POST /convert.
	Convert http.Handler
	// Metrics serves GET /metrics; nil answers 404 (the metrics are then
	// served elsewhere, or not at all).
	Metrics http.Handler
	// Ready says whether the webhook can convert (rules loaded); /readyz
	// also needs the listener to be serving.
	Ready func() bool
	// MaxConnections bounds the connections open at once; further ones wait
	// in the kernel's accept queue. Zero means [DefaultMaxConnections].
	MaxConnections int
	// ReadHeaderTimeout closes connections whose request headers take
	// longer; zero means 10s. IdleTimeout closes idle keep-alive
	// connections; zero means 90s (kube-apiserver's).
	ReadHeaderTimeout, IdleTimeout time.Duration
	// Logger receives the HTTP server's errors; nil discards.
	Logger *slog.Logger
}

// Server is the webhook's HTTPS listener.
type Server struct {
	srv     *http.Server
	ln      net.Listener
	serving atomic.Bool
	runners []func(ctx context.Context) // certificate watchers and renewal
}

// NewServer listens on opts.Address; [Server.Serve] serves there.
func NewServer(opts ServeOptions) (*Server, error) {
	s := &Server{}
	tlsConfig, err := s.tlsConfig(opts)
	if err != nil {
		return nil, err
	}
	if opts.ReadHeaderTimeout <= 0 {
		opts.ReadHeaderTimeout = 10 * time.Second
	}
	if opts.IdleTimeout <= 0 {
		opts.IdleTimeout = 90 * time.Second
	}
	if opts.MaxConnections <= 0 {
		opts.MaxConnections = DefaultMaxConnections
	}
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	s.srv = &http.Server{
		Handler:           s.routes(opts),
		TLSConfig:         tlsConfig,
		ReadHeaderTimeout: opts.ReadHeaderTimeout,
		IdleTimeout:       opts.IdleTimeout,
		MaxHeaderBytes:    1 << 20,
		ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelDebug),
	}
	ln, err := net.Listen("tcp", opts.Address)
	if err != nil {
		s.discard()
		return nil, err
	}
	s.ln = netutil.LimitListener(ln, opts.MaxConnections)
	return s, nil
}

// tlsConfig takes the serving certificate from the certificate directory
// or the files (watched with k8s.io/apiserver's dynamic certificates).
func (s *Server) tlsConfig(opts ServeOptions) (*tls.Config, error) {
	base := &tls.Config{MinVersion: tls.VersionTLS12, NextProtos: []string{"h2", "http/1.1"}}
	switch {
	case opts.CertDir != nil:
		base.GetCertificate = opts.CertDir.GetCertificate
		s.runners = append(s.runners, opts.CertDir.Run)
		return base, nil
	case opts.CertFile == "" || opts.KeyFile == "":
		return nil, errors.New("a serving certificate is needed: a certificate and key file, or a certificate directory")
	}
	if _, err := tls.LoadX509KeyPair(opts.CertFile, opts.KeyFile); err != nil {
		return nil, fmt.Errorf("serving certificate: %w", err)
	}
	content, err := dynamiccertificates.NewDynamicServingContentFromFiles("serving-cert", opts.CertFile, opts.KeyFile)
	if err != nil {
		return nil, fmt.Errorf("serving certificate: %w", err)
	}
	ctrl := dynamiccertificates.NewDynamicServingCertificateController(base, nil, content, nil, nil)
	content.AddListener(ctrl)
	if err := ctrl.RunOnce(); err != nil {
		return nil, fmt.Errorf("serving certificate: %w", err)
	}
	s.runners = append(s.runners,
		func(ctx context.Context) { content.Run(ctx, 1) },
		func(ctx context.Context) { ctrl.Run(1, ctx.Done()) })
	return &tls.Config{GetConfigForClient: ctrl.GetConfigForClient}, nil
}

// routes are the webhook's endpoints.
func (s *Server) routes(opts ServeOptions) http.Handler {
	mux := http.NewServeMux()
	mux.Handle("/convert", opts.Convert)
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, "ok") })
	mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, _ *http.Request) {
		if !s.serving.Load() || (opts.Ready != nil && !opts.Ready()) {
			http.Error(w, "not ready: rules not loaded or not serving yet", http.StatusServiceUnavailable)
			return
		}
		io.WriteString(w, "ok")
	})
	if opts.Metrics != nil {
		mux.Handle("GET /metrics", opts.Metrics)
	}
	return mux
}

// discard stops what watches the certificate files of a server that will
// not serve.
func (s *Server) discard() {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	for _, run := range s.runners {
		run(ctx)
	}
}

// Addr is the address the server listens on.
func (s *Server) Addr() net.Addr { return s.ln.Addr() }

// Serve serves until ctx ends, then shuts down, giving open reviews a few
// seconds, and returns once everything it started has stopped.
func (s *Server) Serve(ctx context.Context) error {
	wctx, stop := context.WithCancel(ctx)
	var wg sync.WaitGroup
	defer wg.Wait()
	defer stop()
	for _, run := range s.runners {
		wg.Go(func() { run(wctx) })
	}
	errc := make(chan error, 1)
	go func() { errc <- s.srv.ServeTLS(s.ln, "", "") }()
	s.serving.Store(true)
	defer s.serving.Store(false)
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := s.srv.Shutdown(sctx); err != nil {
		_ = s.srv.Close()
	}
	if err := <-errc; !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}
