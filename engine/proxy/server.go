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
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apiserver/pkg/server/dynamiccertificates"
	certutil "k8s.io/client-go/util/cert"
)

// ServeOptions configures the proxy's own TLS listener.
type ServeOptions struct {
	// Listen is the host:port to listen on, e.g. 127.0.0.1:6443.
	Listen string
	// CertFile and KeyFile are the serving certificate, read again when
	// they change (a rotated certificate needs no restart). Empty means a
	// self-signed certificate for localhost, 127.0.0.1 and ::1 (only allowed
	// when listening on loopback); its CA is [Server.CACertPEM].
	CertFile, KeyFile string
	// ClientCA verifies client certificates. Nil (and no ClientCAFile)
	// means client certificates are not requested.
	ClientCA *x509.CertPool
	// ClientCAFile verifies client certificates, read again when it
	// changes. It takes the place of ClientCA.
	ClientCAFile string
	// MaxConnections bounds the client connections open at once; further
	// ones wait in the kernel's accept queue until one closes. Zero means
	// [DefaultMaxConnections].
	MaxConnections int
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
	// Registry receives the listener's metrics (open connections). Nil
	// means none.
	Registry prometheus.Registerer
}

// DefaultMaxConnections is the default of [ServeOptions.MaxConnections].
const DefaultMaxConnections = 4096

// Server is the proxy's TLS listener.
type Server struct {
	srv      *http.Server
	ln       *limitListener
	caPEM    []byte
	shutdown time.Duration
	plain    bool // serves HTTP, not TLS (a metrics listener on loopback)

	certs    *dynamiccertificates.DynamicServingCertificateController
	runners  []dynamiccertificates.ControllerRunner // file contents to watch
	clientCA dynamiccertificates.CAContentProvider  // nil without ClientCAFile
}

// NewServer listens on opts.Listen; [Server.Serve] serves h there.
func NewServer(h http.Handler, opts ServeOptions) (*Server, error) {
	s, err := newTLSServer(opts)
	if err != nil {
		return nil, err
	}
	if err := s.listen(h, opts); err != nil {
		s.discard()
		return nil, err
	}
	return s, nil
}

// discard stops the work queues of the certificate content of a server
// that will not serve.
func (s *Server) discard() {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	for _, r := range s.runners {
		r.Run(ctx, 1)
	}
	if s.certs != nil {
		s.certs.Run(1, ctx.Done())
	}
}

// newTLSServer loads the serving certificate and the client CA; listen
// opens the listener.
func newTLSServer(opts ServeOptions) (*Server, error) {
	s := &Server{shutdown: 5 * time.Second}
	serving, err := s.servingContent(opts)
	if err != nil {
		return nil, err
	}
	base := &tls.Config{
		MinVersion: tls.VersionTLS12,
		NextProtos: []string{"h2", "http/1.1"},
	}
	switch {
	case opts.ClientCAFile != "":
		if _, err := certutil.NewPool(opts.ClientCAFile); err != nil {
			s.discard()
			return nil, fmt.Errorf("client CA: %w", err)
		}
		ca, err := dynamiccertificates.NewDynamicCAContentFromFile("client-ca", opts.ClientCAFile)
		if err != nil {
			s.discard()
			return nil, fmt.Errorf("client CA: %w", err)
		}
		s.clientCA = ca
		s.runners = append(s.runners, ca)
		base.ClientAuth = tls.VerifyClientCertIfGiven
	case opts.ClientCA != nil:
		base.ClientCAs = opts.ClientCA
		base.ClientAuth = tls.VerifyClientCertIfGiven
	}
	s.certs = dynamiccertificates.NewDynamicServingCertificateController(base, s.clientCA, serving, nil, nil)
	serving.AddListener(s.certs)
	if s.clientCA != nil {
		s.clientCA.AddListener(s.certs)
	}
	if err := s.certs.RunOnce(); err != nil {
		s.discard()
		return nil, fmt.Errorf("serving certificate: %w", err)
	}
	return s, nil
}

// servingContent is the serving certificate: the files, watched, or a
// self-signed one for loopback.
func (s *Server) servingContent(opts ServeOptions) (dynamiccertificates.CertKeyContentProvider, error) {
	switch {
	case opts.CertFile != "" && opts.KeyFile != "":
		// Checked first: the content's work queue would outlive a failed
		// load.
		if _, err := tls.LoadX509KeyPair(opts.CertFile, opts.KeyFile); err != nil {
			return nil, fmt.Errorf("serving certificate: %w", err)
		}
		c, err := dynamiccertificates.NewDynamicServingContentFromFiles("serving-cert", opts.CertFile, opts.KeyFile)
		if err != nil {
			return nil, fmt.Errorf("serving certificate: %w", err)
		}
		s.runners = append(s.runners, c)
		return c, nil
	case opts.CertFile != "" || opts.KeyFile != "":
		return nil, errors.New("a serving certificate needs both a certificate and a key file")
	}
	loopback, err := LoopbackAddress(opts.Listen)
	if err != nil {
		return nil, err
	}
	if !loopback {
		return nil, fmt.Errorf("listening on %s needs a serving certificate (a self-signed one is only generated for loopback)", opts.Listen)
	}
	certPEM, keyPEM, err := certutil.GenerateSelfSignedCertKey("127.0.0.1", []net.IP{net.ParseIP("127.0.0.1"), net.IPv6loopback}, []string{"localhost"})
	if err != nil {
		return nil, err
	}
	s.caPEM = certPEM
	return dynamiccertificates.NewStaticCertKeyContent("self-signed", certPEM, keyPEM)
}

// listen opens the listener, at most opts.MaxConnections connections at
// once, and prepares the HTTP server.
func (s *Server) listen(h http.Handler, opts ServeOptions) error {
	if opts.ReadHeaderTimeout <= 0 {
		opts.ReadHeaderTimeout = 10 * time.Second
	}
	if opts.IdleTimeout <= 0 {
		opts.IdleTimeout = 90 * time.Second
	}
	if opts.MaxConnections <= 0 {
		opts.MaxConnections = DefaultMaxConnections
	}
	errLog := opts.Logger
	if errLog == nil {
		errLog = slog.New(slog.DiscardHandler)
	}
	s.srv = &http.Server{
		Handler:           h,
		ReadHeaderTimeout: opts.ReadHeaderTimeout,
		IdleTimeout:       opts.IdleTimeout,
		MaxHeaderBytes:    1 << 20,
		ErrorLog:          slog.NewLogLogger(errLog.Handler(), slog.LevelDebug),
	}
	if s.certs != nil {
		s.srv.TLSConfig = &tls.Config{GetConfigForClient: s.certs.GetConfigForClient}
	}
	ln, err := net.Listen("tcp", opts.Listen)
	if err != nil {
		return err
	}
	s.ln = newLimitListener(ln, opts.MaxConnections)
	if opts.Registry != nil {
		if err := s.ln.register(opts.Registry); err != nil {
			ln.Close()
			return err
		}
	}
	return nil
}

// Addr is the address the server listens on.
func (s *Server) Addr() net.Addr { return s.ln.Addr() }

// CACertPEM is the CA of a generated self-signed certificate, or nil.
func (s *Server) CACertPEM() []byte { return s.caPEM }

// Serve serves until ctx ends, then shuts down, giving open requests a few
// seconds. The serving certificate and client CA files are watched
// meanwhile.
func (s *Server) Serve(ctx context.Context) error {
	wctx, stopWatching := context.WithCancel(ctx)
	var watchers sync.WaitGroup
	defer watchers.Wait()
	defer stopWatching()
	for _, r := range s.runners {
		watchers.Go(func() { r.Run(wctx, 1) })
	}
	if s.certs != nil {
		watchers.Go(func() { s.certs.Run(1, wctx.Done()) })
	}
	errc := make(chan error, 1)
	go func() {
		if s.plain {
			errc <- s.srv.Serve(s.ln)
			return
		}
		errc <- s.srv.ServeTLS(s.ln, "", "")
	}()
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
