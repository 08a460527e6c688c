package framework

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/hex"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"time"

	certutil "k8s.io/client-go/util/cert"
)

// Identities the PKI issues. The admin user is in system:masters, so it
// passes RBAC without any binding.
const (
	AdminUser         = "mvpctl-e2e-admin"
	AdminGroup        = "system:masters"
	TokenUser         = "mvpctl-e2e-token"
	FrontProxyClient  = "front-proxy-client"
	ServiceIP         = "10.0.0.1"
	ServiceCIDR       = "10.0.0.0/24"
	ServiceAccountIss = "https://kubernetes.default.svc.cluster.local"
)

// PKI is the key material of one control plane, generated in Go and written
// as PEM files under Dir. All servers of a control plane share it.
type PKI struct {
	Dir string

	// CAFile signs the serving certificate and the admin client
	// certificate; servers trust it for client certificates and peers.
	CAFile string
	// ServingCertFile and ServingKeyFile are every kube-apiserver's serving
	// certificate, valid for 127.0.0.1, ::1, localhost, the kubernetes
	// Service's IP and its names (kubernetes.default.svc, ...).
	ServingCertFile, ServingKeyFile string
	// FrontProxyCAFile verifies request-header (front proxy) clients;
	// FrontProxyCertFile and FrontProxyKeyFile are such a client
	// (CN front-proxy-client), used by the servers' own peer proxy and
	// aggregator, and available to tests that act as an authenticating
	// proxy.
	FrontProxyCAFile, FrontProxyCertFile, FrontProxyKeyFile string
	// ServiceAccountKeyFile is the service-account token signing key
	// (ECDSA P-256, SEC 1).
	ServiceAccountKeyFile string
	// AdminCertFile and AdminKeyFile are a client certificate for
	// AdminUser in AdminGroup.
	AdminCertFile, AdminKeyFile string
	// Token is a bearer token for TokenUser in AdminGroup, listed in
	// TokenFile (the servers' --token-auth-file).
	Token     string
	TokenFile string

	// CAPEM is the content of CAFile.
	CAPEM []byte
	// CAPool holds the CA, to verify the servers.
	CAPool *x509.CertPool
	// AdminCert is the admin client certificate with its key.
	AdminCert tls.Certificate

	ca *keyPair
}

// ClientCert is a client certificate issued by a control plane's CA, as PEM
// files and in memory.
type ClientCert struct {
	CertFile, KeyFile string
	Cert              tls.Certificate
}

// IssueClientCert issues a client certificate from the control plane's CA
// for user (its common name) in groups (its organizations), as a cluster
// administrator hands one to a person: the servers authenticate it like any
// other client certificate, and RBAC decides what it may do. The files are
// written under Dir as <user>.crt and <user>.key.
func (p *PKI) IssueClientCert(user string, groups ...string) (ClientCert, error) {
	kp, err := p.ca.issue(&x509.Certificate{
		Subject:     pkix.Name{CommonName: user, Organization: groups},
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	})
	if err != nil {
		return ClientCert{}, err
	}
	c := ClientCert{CertFile: filepath.Join(p.Dir, user+".crt"), KeyFile: filepath.Join(p.Dir, user+".key")}
	if err := os.WriteFile(c.CertFile, kp.certPEM, 0o600); err != nil {
		return ClientCert{}, err
	}
	if err := os.WriteFile(c.KeyFile, kp.keyPEM, 0o600); err != nil {
		return ClientCert{}, err
	}
	if c.Cert, err = tls.X509KeyPair(kp.certPEM, kp.keyPEM); err != nil {
		return ClientCert{}, err
	}
	return c, nil
}

// NewPKI generates a PKI and writes it under dir.
func NewPKI(dir string) (*PKI, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	p := &PKI{
		Dir:                   dir,
		CAFile:                filepath.Join(dir, "ca.crt"),
		ServingCertFile:       filepath.Join(dir, "serving.crt"),
		ServingKeyFile:        filepath.Join(dir, "serving.key"),
		FrontProxyCAFile:      filepath.Join(dir, "front-proxy-ca.crt"),
		FrontProxyCertFile:    filepath.Join(dir, "front-proxy-client.crt"),
		FrontProxyKeyFile:     filepath.Join(dir, "front-proxy-client.key"),
		ServiceAccountKeyFile: filepath.Join(dir, "service-account.key"),
		AdminCertFile:         filepath.Join(dir, "admin.crt"),
		AdminKeyFile:          filepath.Join(dir, "admin.key"),
		TokenFile:             filepath.Join(dir, "tokens.csv"),
	}

	ca, err := newCA("mvpctl-e2e-ca")
	if err != nil {
		return nil, err
	}
	frontCA, err := newCA("mvpctl-e2e-front-proxy-ca")
	if err != nil {
		return nil, err
	}
	serving, err := ca.issue(&x509.Certificate{
		Subject:     pkix.Name{CommonName: "kube-apiserver"},
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1"), net.IPv6loopback, net.ParseIP(ServiceIP)},
		DNSNames: []string{"localhost", "kubernetes", "kubernetes.default",
			"kubernetes.default.svc", "kubernetes.default.svc.cluster.local"},
	})
	if err != nil {
		return nil, err
	}
	admin, err := ca.issue(&x509.Certificate{
		Subject:     pkix.Name{CommonName: AdminUser, Organization: []string{AdminGroup}},
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	})
	if err != nil {
		return nil, err
	}
	front, err := frontCA.issue(&x509.Certificate{
		Subject:     pkix.Name{CommonName: FrontProxyClient},
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	})
	if err != nil {
		return nil, err
	}
	saKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	token := make([]byte, 16)
	if _, err := rand.Read(token); err != nil {
		return nil, err
	}
	p.Token = hex.EncodeToString(token)
	p.CAPEM = ca.certPEM
	if p.CAPool, err = certutil.NewPoolFromBytes(ca.certPEM); err != nil {
		return nil, err
	}
	p.ca = ca

	writes := []struct {
		path string
		data []byte
	}{
		{p.CAFile, ca.certPEM},
		{p.FrontProxyCAFile, frontCA.certPEM},
		{p.ServingCertFile, serving.certPEM},
		{p.ServingKeyFile, serving.keyPEM},
		{p.AdminCertFile, admin.certPEM},
		{p.AdminKeyFile, admin.keyPEM},
		{p.FrontProxyCertFile, front.certPEM},
		{p.FrontProxyKeyFile, front.keyPEM},
		{p.ServiceAccountKeyFile, keyPEM(saKey)},
		{p.TokenFile, fmt.Appendf(nil, "%s,%s,%s,%q\n", p.Token, TokenUser, TokenUser, AdminGroup)},
	}
	for _, w := range writes {
		if err := os.WriteFile(w.path, w.data, 0o600); err != nil {
			return nil, err
		}
	}
	if p.AdminCert, err = tls.X509KeyPair(admin.certPEM, admin.keyPEM); err != nil {
		return nil, err
	}
	return p, nil
}

// TLSConfig returns a client TLS configuration that trusts the control
// plane's CA and presents the admin client certificate.
func (p *PKI) TLSConfig() *tls.Config {
	return &tls.Config{RootCAs: p.CAPool, Certificates: []tls.Certificate{p.AdminCert}, MinVersion: tls.VersionTLS12}
}

type keyPair struct {
	cert    *x509.Certificate
	key     crypto.Signer
	certPEM []byte
	keyPEM  []byte
}

func newCA(name string) (*keyPair, error) {
	tmpl := &x509.Certificate{
		Subject:               pkix.Name{CommonName: name},
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature | x509.KeyUsageCRLSign,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	return sign(tmpl, nil)
}

func (ca *keyPair) issue(tmpl *x509.Certificate) (*keyPair, error) {
	tmpl.KeyUsage = x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment
	return sign(tmpl, ca)
}

// sign creates a key and a certificate from tmpl, signed by parent or, when
// parent is nil, by itself.
func sign(tmpl *x509.Certificate, parent *keyPair) (*keyPair, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	if err != nil {
		return nil, err
	}
	tmpl.SerialNumber = serial
	tmpl.NotBefore = time.Now().Add(-time.Hour)
	tmpl.NotAfter = time.Now().Add(7 * 24 * time.Hour)
	issuer, signer := tmpl, crypto.Signer(key)
	if parent != nil {
		issuer, signer = parent.cert, parent.key
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, issuer, key.Public(), signer)
	if err != nil {
		return nil, err
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, err
	}
	return &keyPair{
		cert:    cert,
		key:     key,
		certPEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		keyPEM:  keyPEM(key),
	}, nil
}

func keyPEM(key *ecdsa.PrivateKey) []byte {
	der, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		panic(err) // cannot fail for a P-256 key
	}
	return pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: der})
}
