package proxy

import (
	"bytes"
	"crypto/tls"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"testing"

	"github.com/mvpctl/mvpctl/engine/proxy/internal/proxytest"
)

// replaceFile writes data to path whole, as a Secret volume updates its
// files: a new file renamed over the old one.
func replaceFile(t *testing.T, path string, data []byte) {
	t.Helper()
	tmp := path + ".new"
	if err := os.WriteFile(tmp, data, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
}

// certFiles is a serving certificate and client CA on disk.
type certFiles struct{ cert, key, ca string }

func writeCertFiles(t *testing.T, serving, client *testCA) certFiles {
	t.Helper()
	dir := t.TempDir()
	f := certFiles{filepath.Join(dir, "tls.crt"), filepath.Join(dir, "tls.key"), filepath.Join(dir, "ca.crt")}
	f.rotate(t, serving, client)
	return f
}

// rotate writes a new serving certificate of serving and the client CA
// client, and returns the certificate.
func (f certFiles) rotate(t *testing.T, serving, client *testCA) []byte {
	t.Helper()
	c := serving.issue(t, "proxy", nil, net.ParseIP("127.0.0.1"))
	replaceFile(t, f.key, c.keyPEM)
	replaceFile(t, f.cert, c.certPEM)
	if client != nil {
		replaceFile(t, f.ca, client.pem)
	}
	return c.tls.Certificate[0]
}

// serveVerifiedUser serves, on a loopback TLS listener of opts, the common
// name of the verified client certificate of each request.
func serveVerifiedUser(t *testing.T, opts ServeOptions) string {
	t.Helper()
	srv := serveProxy(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if len(r.TLS.VerifiedChains) > 0 {
			io.WriteString(w, r.TLS.VerifiedChains[0][0].Subject.CommonName)
		}
	}), opts)
	return srv.Addr().String()
}

// handshake makes one request on a new connection, with a client
// certificate or none, and returns the server's certificate and the user
// it verified.
func handshake(addr string, cert *tls.Certificate) (serverCert []byte, user string, err error) {
	cfg := &tls.Config{InsecureSkipVerify: true, NextProtos: []string{"http/1.1"}}
	if cert != nil {
		// Sent whether or not the server names its CA as acceptable.
		cfg.GetClientCertificate = func(*tls.CertificateRequestInfo) (*tls.Certificate, error) { return cert, nil }
	}
	tr := &http.Transport{TLSClientConfig: cfg, DisableKeepAlives: true}
	defer tr.CloseIdleConnections()
	c := &http.Client{Transport: tr, Timeout: badInputTimeout}
	resp, err := c.Get("https://" + addr + "/")
	if err != nil {
		return nil, "", err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, "", err
	}
	return resp.TLS.PeerCertificates[0].Raw, string(body), nil
}

// A rotated serving certificate is served on new connections without a
// restart.
func TestServer_ReloadsTheServingCertificate(t *testing.T) {
	ca := newTestCA(t)
	files := writeCertFiles(t, ca, nil)
	addr := serveVerifiedUser(t, ServeOptions{CertFile: files.cert, KeyFile: files.key})
	first, _, err := handshake(addr, nil)
	if err != nil {
		t.Fatal(err)
	}
	rotated := files.rotate(t, ca, nil)
	if bytes.Equal(first, rotated) {
		t.Fatal("the rotated certificate is the first one")
	}
	proxytest.Poll(t, "the rotated certificate served", func() bool {
		got, _, err := handshake(addr, nil)
		return err == nil && bytes.Equal(got, rotated)
	})
}

// A rotated client CA verifies the certificates it issued on new
// connections, and the old one's no longer.
func TestServer_ReloadsTheClientCA(t *testing.T) {
	oldCA, newCA := newTestCA(t), newTestCA(t)
	oldUser, newUser := oldCA.issue(t, "old-user", nil).tls, newCA.issue(t, "new-user", nil).tls
	files := writeCertFiles(t, oldCA, oldCA)
	addr := serveVerifiedUser(t, ServeOptions{CertFile: files.cert, KeyFile: files.key, ClientCAFile: files.ca})
	if _, user, err := handshake(addr, &oldUser); err != nil || user != "old-user" {
		t.Fatalf("a certificate of the client CA: %q, %v", user, err)
	}
	if _, user, err := handshake(addr, &newUser); err == nil {
		t.Fatalf("a certificate of another CA was accepted as %q", user)
	}
	files.rotate(t, oldCA, newCA)
	proxytest.Poll(t, "a certificate of the new client CA verified", func() bool {
		_, user, err := handshake(addr, &newUser)
		return err == nil && user == "new-user"
	})
	if _, user, err := handshake(addr, &oldUser); err == nil {
		t.Errorf("a certificate of the replaced CA was accepted as %q", user)
	}
}
