package webhook

import (
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"log/slog"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	certutil "k8s.io/client-go/util/cert"
	"k8s.io/client-go/util/keyutil"
)

// The files of a certificate directory.
const (
	CAFile   = "ca.crt"
	CAKey    = "ca.key"
	CertFile = "tls.crt"
	KeyFile  = "tls.key"
)

// caCommonName prefixes the common name of the CAs the webhook makes, so
// that a caBundle can tell its own CAs (of other replicas, or rotated)
// from others.
const caCommonName = "mvpctl-webhook-ca"

// DefaultCertValidity is the default validity of a serving certificate.
const DefaultCertValidity = 365 * 24 * time.Hour

// caValidityFactor makes a CA outlive many serving certificates.
const caValidityFactor = 10

// CertDirOptions configure [OpenCertDir].
type CertDirOptions struct {
	// Dir holds ca.crt, ca.key, tls.crt and tls.key. A CA already there is
	// used (e.g. one shared by replicas); otherwise one is made.
	Dir string
	// ServiceName and ServiceNamespace give the serving certificate the
	// Service's DNS names (name, name.ns, name.ns.svc,
	// name.ns.svc.cluster.local); empty name means none.
	ServiceName, ServiceNamespace string
	// SANs are more names: IP addresses or DNS names.
	SANs []string
	// Validity is how long a serving certificate is valid; it is renewed
	// at two thirds of it. Zero means [DefaultCertValidity].
	Validity time.Duration
	// Logger receives a line per certificate made; nil discards.
	Logger *slog.Logger
}

// CertDir keeps a CA and the serving certificate it issues, renewing the
// certificate before it expires. The TLS handshake takes the current one
// ([CertDir.GetCertificate]), so a renewal fails no request.
type CertDir struct {
	opts   CertDirOptions
	log    *slog.Logger
	ca     *x509.Certificate
	caKey  crypto.Signer
	caPEM  []byte
	cur    atomic.Pointer[tls.Certificate]
	mu     sync.Mutex // serializes renewals
	notAft time.Time
}

// OpenCertDir loads or makes the CA and issues a fresh serving certificate.
func OpenCertDir(opts CertDirOptions) (*CertDir, error) {
	if opts.Validity <= 0 {
		opts.Validity = DefaultCertValidity
	}
	if opts.ServiceName == "" && len(opts.SANs) == 0 {
		return nil, errors.New("the serving certificate needs a name: a service name or SANs")
	}
	d := &CertDir{opts: opts, log: opts.Logger}
	if d.log == nil {
		d.log = slog.New(slog.DiscardHandler)
	}
	if err := os.MkdirAll(opts.Dir, 0o700); err != nil {
		return nil, err
	}
	if err := d.loadOrMakeCA(); err != nil {
		return nil, err
	}
	if err := d.Renew(); err != nil {
		return nil, err
	}
	return d, nil
}

// loadOrMakeCA uses the directory's CA unless it is missing or expires
// before a serving certificate would.
func (d *CertDir) loadOrMakeCA() error {
	caPath, keyPath := filepath.Join(d.opts.Dir, CAFile), filepath.Join(d.opts.Dir, CAKey)
	certs, err := certutil.CertsFromFile(caPath)
	if err == nil {
		key, kerr := keyutil.PrivateKeyFromFile(keyPath)
		signer, ok := key.(crypto.Signer)
		if kerr != nil || !ok {
			return fmt.Errorf("%s: %v", keyPath, kerr)
		}
		if time.Until(certs[0].NotAfter) > 2*d.opts.Validity {
			d.ca, d.caKey, d.caPEM = certs[0], signer, pemCert(certs[0].Raw)
			return nil
		}
		d.log.Info("the CA expires soon; making a new one", "file", caPath, "notAfter", certs[0].NotAfter)
	} else if !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("%s: %w", caPath, err)
	}
	return d.makeCA(caPath, keyPath)
}

func (d *CertDir) makeCA(caPath, keyPath string) error {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return err
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber:          serialNumber(),
		Subject:               pkix.Name{CommonName: fmt.Sprintf("%s@%d", caCommonName, now.Unix())},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(caValidityFactor * d.opts.Validity),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return err
	}
	ca, err := x509.ParseCertificate(der)
	if err != nil {
		return err
	}
	keyPEM, err := keyutil.MarshalPrivateKeyToPEM(key)
	if err != nil {
		return err
	}
	if err := writeFileAtomic(keyPath, keyPEM, 0o600); err != nil {
		return err
	}
	d.ca, d.caKey, d.caPEM = ca, key, pemCert(der)
	d.log.Info("made a CA", "file", caPath, "notAfter", ca.NotAfter)
	return writeFileAtomic(caPath, d.caPEM, 0o644)
}

// Renew issues a new serving certificate, writes it and makes it current.
func (d *CertDir) Renew() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return err
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber: serialNumber(),
		Subject:      pkix.Name{CommonName: d.commonName()},
		NotBefore:    now.Add(-5 * time.Minute), // clock skew
		NotAfter:     now.Add(d.opts.Validity),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	tmpl.DNSNames, tmpl.IPAddresses = d.names()
	der, err := x509.CreateCertificate(rand.Reader, tmpl, d.ca, &key.PublicKey, d.caKey)
	if err != nil {
		return err
	}
	keyPEM, err := keyutil.MarshalPrivateKeyToPEM(key)
	if err != nil {
		return err
	}
	certPEM := append(pemCert(der), d.caPEM...)
	pair, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		return err
	}
	// The key first: a reader of the files that sees the new certificate
	// finds its key.
	if err := writeFileAtomic(filepath.Join(d.opts.Dir, KeyFile), keyPEM, 0o600); err != nil {
		return err
	}
	if err := writeFileAtomic(filepath.Join(d.opts.Dir, CertFile), certPEM, 0o644); err != nil {
		return err
	}
	d.cur.Store(&pair)
	d.notAft = tmpl.NotAfter
	d.log.Info("issued a serving certificate", "dnsNames", tmpl.DNSNames, "ips", fmt.Sprint(tmpl.IPAddresses), "notAfter", tmpl.NotAfter)
	return nil
}

func (d *CertDir) commonName() string {
	if d.opts.ServiceName != "" {
		return d.opts.ServiceName + "." + d.opts.ServiceNamespace + ".svc"
	}
	return d.opts.SANs[0]
}

// names are the serving certificate's DNS names and IP addresses.
func (d *CertDir) names() ([]string, []net.IP) {
	var dns []string
	var ips []net.IP
	if n, ns := d.opts.ServiceName, d.opts.ServiceNamespace; n != "" {
		dns = append(dns, n)
		if ns != "" {
			dns = append(dns, n+"."+ns, n+"."+ns+".svc", n+"."+ns+".svc.cluster.local")
		}
	}
	for _, s := range d.opts.SANs {
		if ip := net.ParseIP(s); ip != nil {
			ips = append(ips, ip)
		} else {
			dns = append(dns, s)
		}
	}
	return dns, ips
}

// GetCertificate is the current serving certificate, for tls.Config.
func (d *CertDir) GetCertificate(*tls.ClientHelloInfo) (*tls.Certificate, error) {
	return d.cur.Load(), nil
}

// CAPEM is the CA's certificate, PEM-encoded: what clients trust.
func (d *CertDir) CAPEM() []byte { return d.caPEM }

// Run renews the serving certificate at two thirds of its validity until
// ctx ends; a failed renewal is tried again a minute later.
func (d *CertDir) Run(ctx context.Context) {
	for ctx.Err() == nil {
		d.mu.Lock()
		wait := time.Until(d.notAft.Add(-d.opts.Validity / 3))
		d.mu.Unlock()
		t := time.NewTimer(max(wait, 0))
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
		if err := d.Renew(); err != nil {
			d.log.Error("renewing the serving certificate failed; trying again in a minute", "error", err.Error())
			select {
			case <-ctx.Done():
				return
			case <-time.After(time.Minute):
			}
		}
	}
}

func pemCert(der []byte) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
}

func serialNumber() *big.Int {
	n, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 126))
	if err != nil {
		panic(err) // crypto/rand does not fail
	}
	return n
}

// writeFileAtomic writes a file whole or not at all (a rename): a reader
// never sees half of it.
func writeFileAtomic(path string, data []byte, perm os.FileMode) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Chmod(perm); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}
