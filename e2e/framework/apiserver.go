package framework

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// Server is one running kube-apiserver of a [ControlPlane]. It does not
// change once returned: [ControlPlane.Replace] starts a new Server in the
// old one's place (same index, port, hostname and kubeconfig path).
type Server struct {
	// Index is the server's position in the control plane.
	Index int
	// Version is the Kubernetes version it runs, e.g. "v1.36.3".
	Version string
	// URL is its https://127.0.0.1:<port> address.
	URL string
	// Port is its secure port.
	Port int
	// Hostname is the hostname in its UTS namespace (apiserver-<index>),
	// from which it derives its identity lease; empty when it shares the
	// host's (not root).
	Hostname string
	// Kubeconfig is the path of a kubeconfig for this server alone, with
	// the admin client certificate (context "admin", current) and the
	// bearer token (context "token").
	Kubeconfig string
	// LogPath is the path of its log (stdout and stderr).
	LogPath string
	// ReadyAfter is how long it took from start to a 200 from /readyz.
	ReadyAfter time.Duration

	pki  *PKI
	proc *process
}

// RESTConfig returns a client configuration for this server with the admin
// client certificate. Each call returns a new copy.
func (s *Server) RESTConfig() *rest.Config {
	return &rest.Config{
		Host: s.URL,
		TLSClientConfig: rest.TLSClientConfig{
			CAFile:   s.pki.CAFile,
			CertFile: s.pki.AdminCertFile,
			KeyFile:  s.pki.AdminKeyFile,
		},
		QPS:   100,
		Burst: 200,
	}
}

// TokenRESTConfig is [Server.RESTConfig] authenticating with the bearer
// token instead of the client certificate.
func (s *Server) TokenRESTConfig() *rest.Config {
	return &rest.Config{
		Host:            s.URL,
		TLSClientConfig: rest.TLSClientConfig{CAFile: s.pki.CAFile},
		BearerToken:     s.pki.Token,
		QPS:             100,
		Burst:           200,
	}
}

// PID is the server's process id.
func (s *Server) PID() int { return s.proc.cmd.Process.Pid }

// PeakRSS is the high-water mark of the server's resident memory so far,
// in bytes (0 once it has exited).
func (s *Server) PeakRSS() int64 { return s.proc.peakRSS() }

// Exited reports whether the server's process has ended.
func (s *Server) Exited() bool { return s.proc.exited() }

// serverSpec is what starting one kube-apiserver needs.
type serverSpec struct {
	index     int
	version   string
	bin       string
	port      int // 0 picks a free port
	dir       string
	etcdURL   string
	pki       *PKI
	peerProxy bool
	isolate   bool // own UTS namespace and hostname
	extraArgs []string
	// generation numbers the servers started at this index, to name logs.
	generation int
}

func startServer(ctx context.Context, spec serverSpec) (*Server, error) {
	var last error
	fixedPort := spec.port != 0
	for attempt := 0; attempt < 3; attempt++ {
		if !fixedPort {
			p, err := freePort()
			if err != nil {
				return nil, err
			}
			spec.port = p
		}
		s, err := tryStartServer(ctx, spec, attempt)
		if err == nil {
			return s, nil
		}
		last = err
		if !errors.Is(err, errAddrInUse) {
			return nil, err
		}
		if fixedPort {
			// The previous server at this index may still hold the port
			// for a moment after exiting.
			time.Sleep(500 * time.Millisecond)
		}
	}
	return nil, last
}

func tryStartServer(ctx context.Context, spec serverSpec, attempt int) (*Server, error) {
	s := &Server{
		Index:      spec.index,
		Version:    spec.version,
		Port:       spec.port,
		URL:        fmt.Sprintf("https://127.0.0.1:%d", spec.port),
		Kubeconfig: filepath.Join(spec.dir, fmt.Sprintf("server-%d.kubeconfig", spec.index)),
		LogPath:    filepath.Join(spec.dir, fmt.Sprintf("server-%d-%s-%d.log", spec.index, spec.version, spec.generation)),
		pki:        spec.pki,
	}
	if spec.isolate {
		s.Hostname = fmt.Sprintf("apiserver-%d", spec.index)
	}
	if attempt > 0 {
		s.LogPath = fmt.Sprintf("%s.%d", s.LogPath, attempt)
	}
	if err := writeKubeconfig(s); err != nil {
		return nil, err
	}
	start := time.Now()
	p, err := startProcess(fmt.Sprintf("kube-apiserver %d (%s)", spec.index, spec.version),
		spec.bin, serverArgs(spec), s.LogPath, s.Hostname)
	if err != nil {
		return nil, err
	}
	s.proc = p
	client := &http.Client{Transport: &http.Transport{TLSClientConfig: spec.pki.TLSConfig()}, Timeout: 5 * time.Second}
	defer client.CloseIdleConnections()
	if err := waitHealthy(ctx, p, client, s.URL+"/readyz", "ok"); err != nil {
		p.stop(0)
		return nil, err
	}
	s.ReadyAfter = time.Since(start)
	return s, nil
}

// serverArgs are the flags of one kube-apiserver: loopback only, the shared
// etcd and PKI, and the peer proxy explicitly on or off.
func serverArgs(spec serverSpec) []string {
	p := spec.pki
	args := []string{
		"--bind-address=127.0.0.1",
		"--advertise-address=127.0.0.1",
		"--secure-port=" + strconv.Itoa(spec.port),
		"--cert-dir=" + spec.dir,
		"--etcd-servers=" + spec.etcdURL,
		"--tls-cert-file=" + p.ServingCertFile,
		"--tls-private-key-file=" + p.ServingKeyFile,
		"--client-ca-file=" + p.CAFile,
		"--token-auth-file=" + p.TokenFile,
		"--authorization-mode=RBAC",
		"--service-account-issuer=" + ServiceAccountIss,
		"--service-account-key-file=" + p.ServiceAccountKeyFile,
		"--service-account-signing-key-file=" + p.ServiceAccountKeyFile,
		"--service-cluster-ip-range=" + ServiceCIDR,
		// The reconciler would publish 127.0.0.1 as the kubernetes
		// Service's endpoint, which endpoint validation rejects.
		"--endpoint-reconciler-type=none",
		"--requestheader-client-ca-file=" + p.FrontProxyCAFile,
		"--requestheader-allowed-names=" + FrontProxyClient,
		"--requestheader-username-headers=X-Remote-User",
		"--requestheader-group-headers=X-Remote-Group",
		"--requestheader-uid-headers=X-Remote-Uid",
		"--requestheader-extra-headers-prefix=X-Remote-Extra-",
		"--proxy-client-cert-file=" + p.FrontProxyCertFile,
		"--proxy-client-key-file=" + p.FrontProxyKeyFile,
	}
	if spec.peerProxy {
		args = append(args,
			"--feature-gates=UnknownVersionInteroperabilityProxy=true",
			"--peer-ca-file="+p.CAFile,
			"--peer-advertise-ip=127.0.0.1",
			"--peer-advertise-port="+strconv.Itoa(spec.port),
		)
	} else {
		args = append(args, "--feature-gates=UnknownVersionInteroperabilityProxy=false")
	}
	return append(args, spec.extraArgs...)
}

// writeKubeconfig writes s.Kubeconfig.
func writeKubeconfig(s *Server) error {
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["e2e"] = &clientcmdapi.Cluster{Server: s.URL, CertificateAuthority: s.pki.CAFile}
	cfg.AuthInfos["admin"] = &clientcmdapi.AuthInfo{
		ClientCertificate: s.pki.AdminCertFile,
		ClientKey:         s.pki.AdminKeyFile,
	}
	cfg.AuthInfos["token"] = &clientcmdapi.AuthInfo{Token: s.pki.Token}
	cfg.Contexts["admin"] = &clientcmdapi.Context{Cluster: "e2e", AuthInfo: "admin"}
	cfg.Contexts["token"] = &clientcmdapi.Context{Cluster: "e2e", AuthInfo: "token"}
	cfg.CurrentContext = "admin"
	if err := clientcmd.WriteToFile(*cfg, s.Kubeconfig); err != nil {
		return err
	}
	return os.Chmod(s.Kubeconfig, 0o600)
}
