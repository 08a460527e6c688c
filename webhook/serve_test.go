package webhook

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
	certutil "k8s.io/client-go/util/cert"

	"github.com/mvpctl/mvpctl/engine"
)

// startServer serves opts on a loopback port until the test ends.
func startServer(t *testing.T, opts ServeOptions) *Server {
	t.Helper()
	opts.Address = "127.0.0.1:0"
	if opts.Convert == nil {
		opts.Convert = NewHandler(HandlerOptions{Converter: func() *engine.Converter { return nil }})
	}
	srv, err := NewServer(opts)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Serve: %v", err)
		}
	})
	return srv
}

// servedSerial is the serial number of the certificate the server shows
// on a new connection.
func servedSerial(addr string, roots *x509.CertPool) (string, error) {
	conn, err := tls.Dial("tcp", addr, &tls.Config{RootCAs: roots, ServerName: "127.0.0.1", InsecureSkipVerify: roots == nil})
	if err != nil {
		return "", err
	}
	defer conn.Close()
	return conn.ConnectionState().PeerCertificates[0].SerialNumber.String(), nil
}

func writeSelfSigned(t *testing.T, dir string) (serial string) {
	t.Helper()
	certPEM, keyPEM, err := certutil.GenerateSelfSignedCertKey(fmt.Sprintf("127.0.0.1-%d", time.Now().UnixNano()), nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	certs, err := certutil.ParseCertsPEM(certPEM)
	if err != nil {
		t.Fatal(err)
	}
	// The key first, then the certificate, each by a rename, as a
	// Secret volume's update replaces them.
	for _, f := range []struct {
		name string
		data []byte
	}{{"tls.key", keyPEM}, {"tls.crt", certPEM}} {
		if err := writeFileAtomic(filepath.Join(dir, f.name), f.data, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return certs[0].SerialNumber.String()
}

func TestServer_CertFilesAreReadAgain(t *testing.T) {
	dir := t.TempDir()
	first := writeSelfSigned(t, dir)
	srv := startServer(t, ServeOptions{CertFile: filepath.Join(dir, "tls.crt"), KeyFile: filepath.Join(dir, "tls.key")})
	addr := srv.Addr().String()
	if got, err := servedSerial(addr, nil); err != nil || got != first {
		t.Fatalf("serves %s (%v), want %s", got, err, first)
	}
	second := writeSelfSigned(t, dir)
	err := wait.PollUntilContextTimeout(context.Background(), 50*time.Millisecond, 2*time.Minute, true, func(context.Context) (bool, error) {
		got, err := servedSerial(addr, nil)
		return err == nil && got == second, nil
	})
	if err != nil {
		t.Fatalf("the new certificate is not served: %v", err)
	}
}

func TestServer_BadCertFiles(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "tls.crt"), []byte("not a certificate"), 0o600)
	os.WriteFile(filepath.Join(dir, "tls.key"), []byte("not a key"), 0o600)
	if _, err := NewServer(ServeOptions{Address: "127.0.0.1:0", CertFile: filepath.Join(dir, "tls.crt"), KeyFile: filepath.Join(dir, "tls.key")}); err == nil {
		t.Fatal("want an error for a bad certificate")
	}
	if _, err := NewServer(ServeOptions{Address: "127.0.0.1:0"}); err == nil {
		t.Fatal("want an error without a certificate")
	}
}

func TestCertDir_NamesAndReusedCA(t *testing.T) {
	dir := t.TempDir()
	opts := CertDirOptions{Dir: dir, ServiceName: "wh", ServiceNamespace: "sys", SANs: []string{"127.0.0.1", "wh.example"}}
	d, err := OpenCertDir(opts)
	if err != nil {
		t.Fatal(err)
	}
	leaf, err := x509.ParseCertificate(d.cur.Load().Certificate[0])
	if err != nil {
		t.Fatal(err)
	}
	wantDNS := []string{"wh", "wh.sys", "wh.sys.svc", "wh.sys.svc.cluster.local", "wh.example"}
	if fmt.Sprint(leaf.DNSNames) != fmt.Sprint(wantDNS) || len(leaf.IPAddresses) != 1 || !leaf.IPAddresses[0].Equal([]byte{127, 0, 0, 1}) {
		t.Errorf("names %v %v, want %v and 127.0.0.1", leaf.DNSNames, leaf.IPAddresses, wantDNS)
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(d.CAPEM())
	if _, err := leaf.Verify(x509.VerifyOptions{Roots: pool, DNSName: "wh.sys.svc"}); err != nil {
		t.Errorf("the serving certificate does not verify with the CA: %v", err)
	}
	again, err := OpenCertDir(opts)
	if err != nil {
		t.Fatal(err)
	}
	if string(again.CAPEM()) != string(d.CAPEM()) {
		t.Error("a second start made a new CA instead of using the directory's")
	}
	if _, err := tls.LoadX509KeyPair(filepath.Join(dir, CertFile), filepath.Join(dir, KeyFile)); err != nil {
		t.Errorf("tls.crt/tls.key: %v", err)
	}
}

// TestCertDir_RenewalFailsNoRequest renews the serving certificate while a
// client sends requests on new connections (each a handshake): none fails,
// and the client sees the new certificate.
func TestCertDir_RenewalFailsNoRequest(t *testing.T) {
	d, err := OpenCertDir(CertDirOptions{Dir: t.TempDir(), SANs: []string{"127.0.0.1"}})
	if err != nil {
		t.Fatal(err)
	}
	srv := startServer(t, ServeOptions{CertDir: d, Ready: func() bool { return true }})
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(d.CAPEM())
	client := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{
		TLSClientConfig: &tls.Config{RootCAs: pool}, DisableKeepAlives: true}}
	defer client.CloseIdleConnections()
	url := "https://" + srv.Addr().String() + "/readyz"
	first, err := servedSerial(srv.Addr().String(), pool)
	if err != nil {
		t.Fatal(err)
	}
	var requests, failures atomic.Int64
	var firstErr atomic.Value
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for range 2 {
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				requests.Add(1)
				if err := get(client, url); err != nil {
					failures.Add(1)
					firstErr.CompareAndSwap(nil, err)
				}
			}
		})
	}
	for range 5 {
		if err := d.Renew(); err != nil {
			t.Fatal(err)
		}
	}
	err = wait.PollUntilContextTimeout(context.Background(), 10*time.Millisecond, time.Minute, true, func(context.Context) (bool, error) {
		got, err := servedSerial(srv.Addr().String(), pool)
		return err == nil && got != first && requests.Load() > 20, nil
	})
	close(stop)
	wg.Wait()
	if err != nil {
		t.Fatalf("the renewed certificate is not served: %v", err)
	}
	if n := failures.Load(); n > 0 {
		t.Fatalf("%d of %d requests failed during renewals, first: %v", n, requests.Load(), firstErr.Load())
	}
}

func get(client *http.Client, url string) error {
	resp, err := client.Get(url)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	io.Copy(io.Discard, resp.Body)
	if resp.StatusCode != http.StatusOK {
		return errors.New(resp.Status)
	}
	return nil
}

func TestServer_Readyz(t *testing.T) {
	d, err := OpenCertDir(CertDirOptions{Dir: t.TempDir(), SANs: []string{"127.0.0.1"}})
	if err != nil {
		t.Fatal(err)
	}
	var ready atomic.Bool
	srv := startServer(t, ServeOptions{CertDir: d, Ready: ready.Load})
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(d.CAPEM())
	client := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
	defer client.CloseIdleConnections()
	base := "https://" + srv.Addr().String()
	if err := get(client, base+"/healthz"); err != nil {
		t.Errorf("/healthz: %v", err)
	}
	if err := get(client, base+"/readyz"); err == nil {
		t.Error("/readyz answers ok before the rules are loaded")
	}
	ready.Store(true)
	if err := get(client, base+"/readyz"); err != nil {
		t.Errorf("/readyz: %v", err)
	}
	if err := get(client, base+"/metrics"); err == nil {
		t.Error("/metrics is served without access control")
	}
}

func writeSelfSignedPEM(t *testing.T) []byte {
	t.Helper()
	certPEM, _, err := certutil.GenerateSelfSignedCertKey("foreign", nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	return certPEM
}

func testLogger(t *testing.T) *slog.Logger {
	return slog.New(slog.NewTextHandler(tWriter{t}, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

type tWriter struct{ t *testing.T }

func (w tWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimSpace(string(p)))
	return len(p), nil
}

// TestCertDir_CARotation: a CA near its end is replaced in two renewals;
// the serving certificate verifies with the bundle at every step, and
// the next CA is in the bundle a renewal before it signs.
func TestCertDir_CARotation(t *testing.T) {
	const validity = time.Hour
	dir := t.TempDir()
	old := &CertDir{opts: CertDirOptions{Dir: dir, Validity: validity}, log: slog.New(slog.DiscardHandler)}
	oldCA, err := old.makeCA(CAFile, CAKey, 5*validity/2)
	if err != nil {
		t.Fatal(err)
	}
	d, err := OpenCertDir(CertDirOptions{Dir: dir, SANs: []string{"127.0.0.1"}, Validity: validity})
	if err != nil {
		t.Fatal(err)
	}
	signer := func() string {
		leaf, err := x509.ParseCertificate(d.cur.Load().Certificate[0])
		if err != nil {
			t.Fatal(err)
		}
		pool := x509.NewCertPool()
		pool.AppendCertsFromPEM(d.CAPEM())
		if _, err := leaf.Verify(x509.VerifyOptions{Roots: pool, DNSName: "127.0.0.1"}); err != nil {
			t.Fatalf("the serving certificate does not verify with the bundle: %v", err)
		}
		return leaf.Issuer.CommonName
	}
	certs, _ := certutil.ParseCertsPEM(d.CAPEM())
	if len(certs) != 2 || signer() != oldCA.cert.Subject.CommonName {
		t.Fatalf("after the first renewal: %d CAs in the bundle, signed by %s; want 2, the old CA", len(certs), signer())
	}
	select {
	case <-d.Changed():
	default:
		t.Error("no change of the bundle signalled")
	}
	next := certs[1].Subject.CommonName
	if err := d.Renew(); err != nil {
		t.Fatal(err)
	}
	certs, _ = certutil.ParseCertsPEM(d.CAPEM())
	if len(certs) != 1 || certs[0].Subject.CommonName != next || signer() != next {
		t.Fatalf("after the second renewal: bundle of %d, signed by %s; want the next CA %s alone", len(certs), signer(), next)
	}
	onDisk, err := certutil.CertsFromFile(filepath.Join(dir, CAFile))
	if err != nil || onDisk[0].Subject.CommonName != next {
		t.Errorf("ca.crt is not the new CA: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, nextCAFile)); !os.IsNotExist(err) {
		t.Errorf("%s is left: %v", nextCAFile, err)
	}
}
