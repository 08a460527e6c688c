package proxy

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"time"

	certutil "k8s.io/client-go/util/cert"
)

// ServeOptions configures the proxy's own TLS listener.
type ServeOptions struct {
	// Listen is the host:port to listen on, e.g. 127.0.0.1:6443.
	Listen string
	// CertFile and KeyFile are the serving certificate. Empty means a
	// self-signed certificate for localhost, 127.0.0.1 and ::1 (only allowed
	// when listening on loopback); its CA is [Server.CACertPEM].
	CertFile, KeyFile string
	// ClientCA verifies client certificates. Nil means client certificates are
	// not requested.
	ClientCA *x509.CertPool
	// ReadHeaderTimeout closes connections whose request headers do not
	// arrive in time. Zero means 10s. It does not cover HTTP/2, whose
	// server reads a request's headers once they are complete: an HTTP/2
	// connection without a complete request is closed after IdleTimeout.
	ReadHeaderTimeout time.Duration
	// IdleTimeout closes keep-alive connections without requests (HTTP/1.1
	// between requests; HTTP/2 without open streams, including one whose
	// first request headers never complete). Zero means 90s, kube-apiserver's.
	IdleTimeout time.Duration
	// Logger receives the HTTP server's errors. Nil means none.
	Logger *slog.Logger
}

// Server is the proxy's TLS listener.
type Server struct {
	srv      *http.Server
	ln       net.Listener
	caPEM    []byte
	shutdown time.Duration
}

// NewServer listens on opts.Listen; [Server.Serve] serves h there.
func NewServer(h http.Handler, opts ServeOptions) (*Server, error) {
	if opts.ReadHeaderTimeout <= 0 {
		opts.ReadHeaderTimeout = 10 * time.Second
	}
	if opts.IdleTimeout <= 0 {
		opts.IdleTimeout = 90 * time.Second
	}
	s := &Server{shutdown: 5 * time.Second}
	var cert tls.Certificate
	var err error
	switch {
	case opts.CertFile != "" && opts.KeyFile != "":
		cert, err = tls.LoadX509KeyPair(opts.CertFile, opts.KeyFile)
		if err != nil {
			return nil, fmt.Errorf("serving certificate: %w", err)
		}
	case opts.CertFile != "" || opts.KeyFile != "":
		return nil, errors.New("a serving certificate needs both a certificate and a key file")
	default:
		host, _, err := net.SplitHostPort(opts.Listen)
		if err != nil {
			return nil, err
		}
		if ip := net.ParseIP(host); host != "localhost" && (ip == nil || !ip.IsLoopback()) {
			return nil, fmt.Errorf("listening on %s needs a serving certificate (a self-signed one is only generated for loopback)", opts.Listen)
		}
		certPEM, keyPEM, err := certutil.GenerateSelfSignedCertKey("127.0.0.1", []net.IP{net.ParseIP("127.0.0.1"), net.IPv6loopback}, []string{"localhost"})
		if err != nil {
			return nil, err
		}
		if cert, err = tls.X509KeyPair(certPEM, keyPEM); err != nil {
			return nil, err
		}
		s.caPEM = certPEM
	}
	tlsConfig := &tls.Config{
		MinVersion:   tls.VersionTLS12,
		Certificates: []tls.Certificate{cert},
		NextProtos:   []string{"h2", "http/1.1"},
	}
	if opts.ClientCA != nil {
		tlsConfig.ClientCAs = opts.ClientCA
		tlsConfig.ClientAuth = tls.VerifyClientCertIfGiven
	}
	var errLog *slog.Logger = opts.Logger
	if errLog == nil {
		errLog = slog.New(slog.DiscardHandler)
	}
	s.srv = &http.Server{
		Handler:           h,
		TLSConfig:         tlsConfig,
		ReadHeaderTimeout: opts.ReadHeaderTimeout,
		IdleTimeout:       opts.IdleTimeout,
		MaxHeaderBytes:    1 << 20,
		ErrorLog:          slog.NewLogLogger(errLog.Handler(), slog.LevelDebug),
	}
	ln, err := net.Listen("tcp", opts.Listen)
	if err != nil {
		return nil, err
	}
	s.ln = ln
	return s, nil
}

// Addr is the address the server listens on.
func (s *Server) Addr() net.Addr { return s.ln.Addr() }

// CACertPEM is the CA of a generated self-signed certificate, or nil.
func (s *Server) CACertPEM() []byte { return s.caPEM }

// Serve serves until ctx ends, then shuts down, giving open requests a few
// seconds.
func (s *Server) Serve(ctx context.Context) error {
	errc := make(chan error, 1)
	go func() { errc <- s.srv.ServeTLS(s.ln, "", "") }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), s.shutdown)
	defer cancel()
	if err := s.srv.Shutdown(sctx); err != nil {
		_ = s.srv.Close()
	}
	if err := <-errc; !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// LoadCertPool reads PEM certificates from a file.
func LoadCertPool(file string) (*x509.CertPool, error) {
	data, err := os.ReadFile(file)
	if err != nil {
		return nil, err
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(data) {
		return nil, fmt.Errorf("%s: no PEM certificates", file)
	}
	return pool, nil
}
