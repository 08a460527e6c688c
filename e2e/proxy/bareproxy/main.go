// Command bareproxy is the floor of the proxy benchmark: httputil.ReverseProxy
// in front of one kube-apiserver, as a new user would write it (-tuned=false:
// the default transport, HTTP/2 upstream, transparent gzip, 2 idle
// connections per host) or with the settings mvpctl proxy uses (-tuned:
// HTTP/1.1 upstream, compression left to the client, 256 idle connections).
package main

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"flag"
	"log"
	"math/big"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"time"

	certutil "k8s.io/client-go/util/cert"
)

func main() {
	listen := flag.String("listen", "127.0.0.1:0", "address to listen on")
	backend := flag.String("backend", "", "kube-apiserver URL")
	caFile := flag.String("ca", "", "CA of the backend")
	tuned := flag.Bool("tuned", false, "HTTP/1.1 upstream, no transparent compression, 256 idle connections")
	flag.Parse()
	u, err := url.Parse(*backend)
	if err != nil {
		log.Fatal(err)
	}
	pool, err := certutil.NewPool(*caFile)
	if err != nil {
		log.Fatal(err)
	}
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.TLSClientConfig = &tls.Config{RootCAs: pool}
	if *tuned {
		tr.ForceAttemptHTTP2 = false
		tr.TLSNextProto = map[string]func(string, *tls.Conn) http.RoundTripper{}
		tr.TLSClientConfig.NextProtos = []string{"http/1.1"}
		tr.DisableCompression = true
		tr.MaxIdleConns, tr.MaxIdleConnsPerHost = 256, 256
	}
	rp := httputil.NewSingleHostReverseProxy(u)
	rp.Transport = tr
	rp.FlushInterval = -1
	srv := &http.Server{Handler: rp, TLSConfig: &tls.Config{Certificates: []tls.Certificate{selfSigned()}}, ReadHeaderTimeout: 10 * time.Second}
	ln, err := net.Listen("tcp", *listen)
	if err != nil {
		log.Fatal(err)
	}
	log.Fatal(srv.ServeTLS(ln, "", ""))
}

func selfSigned() tls.Certificate {
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "bareproxy"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		KeyUsage: x509.KeyUsageDigitalSignature,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		log.Fatal(err)
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}
}
