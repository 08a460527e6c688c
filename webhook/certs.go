package webhook

import (
	"bytes"
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
//
// The CA is replaced in two renewals: once it has less than three serving
// certificates' validity left, a next CA is made and joins the bundle
// ([CertDir.CAPEM]) that clients trust; the renewal after that signs with
// it. Clients thus trust a CA well before it signs what they see.
type CertDir struct {
	opts    CertDirOptions
	log     *slog.Logger
	cur     atomic.Pointer[tls.Certificate]
	changed chan struct{} // a token when the CA bundle changes

	mu       sync.Mutex // serializes renewals; guards what follows
	ca, next *authority // next is nil unless a rotation is under way
	notAft   time.Time
}

// authority is a CA that signs serving certificates.
type authority struct {
	cert *x509.Certificate
	key  crypto.Signer
	pem  []byte
}

// The files of a CA that is to replace the current one.
const (
	nextCAFile = "ca-next.crt"
	nextCAKey  = "ca-next.key"
)

// OpenCertDir loads or makes the CA and issues a fresh serving certificate.
func OpenCertDir(opts CertDirOptions) (*CertDir, error) {
	if opts.Validity <= 0 {
		opts.Validity = DefaultCertValidity
	}
	if opts.ServiceName == "" && len(opts.SANs) == 0 {
		return nil, errors.New("the serving certificate needs a name: a service name or SANs")
	}
	d := &CertDir{opts: opts, log: opts.Logger, changed: make(chan struct{}, 1)}
	if d.log == nil {
		d.log = slog.New(slog.DiscardHandler)
	}
	if err := os.MkdirAll(opts.Dir, 0o700); err != nil {
		return nil, err
	}
	var err error
	if d.ca, err = d.loadCA(CAFile, CAKey); err != nil {
		return nil, err
	}
	if d.next, err = d.loadCA(nextCAFile, nextCAKey); err != nil {
		return nil, err
	}
	if d.ca == nil || time.Until(d.ca.cert.NotAfter) < d.opts.Validity {
		if d.ca, err = d.makeCA(CAFile, CAKey, caValidityFactor*d.opts.Validity); err != nil {
			return nil, err
		}
		d.next = nil
	}
	if err := d.Renew(); err != nil {
		return nil, err
	}
	return d, nil
}

// loadCA reads a CA of the directory; nil when there is none.
func (d *CertDir) loadCA(certName, keyName string) (*authority, error) {
	certPath, keyPath := filepath.Join(d.opts.Dir, certName), filepath.Join(d.opts.Dir, keyName)
	certs, err := certutil.CertsFromFile(certPath)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %w", certPath, err)
	}
	key, err := keyutil.PrivateKeyFromFile(keyPath)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", keyPath, err)
	}
	signer, ok := key.(crypto.Signer)
	if !ok {
		return nil, fmt.Errorf("%s: not a signing key", keyPath)
	}
	return &authority{cert: certs[0], key: signer, pem: pemCert(certs[0].Raw)}, nil
}

// makeCA makes a CA valid for lifetime and writes it to the directory.
func (d *CertDir) makeCA(certName, keyName string, lifetime time.Duration) (*authority, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber:          serialNumber(),
		Subject:               pkix.Name{CommonName: fmt.Sprintf("%s@%d", caCommonName, now.UnixNano())},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(lifetime),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, err
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, err
	}
	a := &authority{cert: cert, key: key, pem: pemCert(der)}
	if err := d.writeCA(a, certName, keyName); err != nil {
		return nil, err
	}
	d.log.Info("made a CA", "file", certName, "notAfter", cert.NotAfter)
	return a, nil
}

// writeCA writes a CA's key, then its certificate.
func (d *CertDir) writeCA(a *authority, certName, keyName string) error {
	keyPEM, err := keyutil.MarshalPrivateKeyToPEM(a.key)
	if err != nil {
		return err
	}
	if err := writeFileAtomic(filepath.Join(d.opts.Dir, keyName), keyPEM, 0o600); err != nil {
		return err
	}
	return writeFileAtomic(filepath.Join(d.opts.Dir, certName), a.pem, 0o644)
}

// rotateCA moves the CA rotation on by one step at a renewal: promote the
// next CA made at an earlier renewal, or make one when the current CA
// has less than three serving certificates' validity left.
func (d *CertDir) rotateCA() error {
	switch {
	case d.next != nil:
		if err := d.writeCA(d.next, CAFile, CAKey); err != nil {
			return err
		}
		d.ca, d.next = d.next, nil
		os.Remove(filepath.Join(d.opts.Dir, nextCAFile))
		os.Remove(filepath.Join(d.opts.Dir, nextCAKey))
		d.log.Info("the next CA now signs the serving certificate", "notAfter", d.ca.cert.NotAfter)
	case time.Until(d.ca.cert.NotAfter) < 3*d.opts.Validity:
		next, err := d.makeCA(nextCAFile, nextCAKey, caValidityFactor*d.opts.Validity)
		if err != nil {
			return err
		}
		d.next = next
		d.log.Info("the CA expires soon: a next CA joins the bundle and signs from the next renewal on")
	default:
		return nil
	}
	select {
	case d.changed <- struct{}{}:
	default:
	}
	return nil
}

// Renew issues a new serving certificate, writes it and makes it current.
func (d *CertDir) Renew() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if err := d.rotateCA(); err != nil {
		return err
	}
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
	der, err := x509.CreateCertificate(rand.Reader, tmpl, d.ca.cert, &key.PublicKey, d.ca.key)
	if err != nil {
		return err
	}
	keyPEM, err := keyutil.MarshalPrivateKeyToPEM(key)
	if err != nil {
		return err
	}
	certPEM := append(pemCert(der), d.ca.pem...)
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

// CAPEM is the CA bundle clients trust, PEM-encoded: the CA and, during a
// rotation, the next one.
func (d *CertDir) CAPEM() []byte {
	d.mu.Lock()
	defer d.mu.Unlock()
	out := bytes.Clone(d.ca.pem)
	if d.next != nil {
		out = append(out, d.next.pem...)
	}
	return out
}

// Changed receives a token when the CA bundle changes.
func (d *CertDir) Changed() <-chan struct{} { return d.changed }

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
