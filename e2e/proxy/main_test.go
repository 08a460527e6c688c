// Package proxy_test proves `mvpctl proxy` on real kube-apiservers of two
// versions sharing one etcd: routing by group/version/resource, the discovery
// union, kubectl through the proxy, the security behaviour, and a rolling
// upgrade under client load compared with direct round-robin and with
// upstream's own peer proxy.
package proxy_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/mvpctl/mvpctl/e2e/framework"
)

func TestMain(m *testing.M) { framework.Main(m) }

const (
	oldVersion = "v1.35.4"
	newVersion = "v1.36.3"
)

// mvpctl is the mvpctl binary of this checkout, built once.
func mvpctl(t *testing.T) string { return framework.Mvpctl(t) }

// proxyProcess is a running `mvpctl proxy`.
type proxyProcess struct {
	URL        string // https://127.0.0.1:<port>
	MetricsURL string // http://127.0.0.1:<port>
	Kubeconfig string // written by --write-kubeconfig: the admin user, the proxy's CA
	LogPath    string
	CAData     []byte
	cmd        *exec.Cmd

	bin  string        // the mvpctl binary
	args []string      // the command line, for restart
	logf *os.File      // the log, shared by every run
	done chan struct{} // closed when the current run has exited
	err  error         // the current run's exit status, once done is closed
}

func freePort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// startProxy runs mvpctl proxy in front of every server of cp, with the
// admin certificate as its own identity, client certificates of the
// control plane's CA impersonated, and waits until every backend is ready.
func startProxy(t *testing.T, cp *framework.ControlPlane, extra ...string) *proxyProcess {
	t.Helper()
	return startProxyBinary(t, cp, mvpctl(t), extra...)
}

// startProxyBinary starts the proxy as startProxy does, from the mvpctl
// binary bin (a benchmark's baseline build).
func startProxyBinary(t *testing.T, cp *framework.ControlPlane, bin string, extra ...string) *proxyProcess {
	t.Helper()
	dir := t.TempDir()
	p := &proxyProcess{
		Kubeconfig: filepath.Join(dir, "proxy.kubeconfig"),
		LogPath:    filepath.Join(dir, "proxy.log"),
		bin:        bin,
	}
	port, mport := freePort(t), freePort(t)
	p.URL = "https://127.0.0.1:" + strconv.Itoa(port)
	p.MetricsURL = "http://127.0.0.1:" + strconv.Itoa(mport)
	args := []string{"proxy",
		"--listen", "127.0.0.1:" + strconv.Itoa(port),
		"--metrics-listen", "127.0.0.1:" + strconv.Itoa(mport),
		"--kubeconfig", cp.Server(0).Kubeconfig, "--context", "admin",
		"--client-ca-file", cp.PKI.CAFile,
		"--write-kubeconfig", p.Kubeconfig,
		"--log-format", "json",
	}
	for _, s := range cp.Servers() {
		args = append(args, "--backend", s.URL)
	}
	p.args = append(args, extra...)
	var err error
	if p.logf, err = os.Create(p.LogPath); err != nil {
		t.Fatal(err)
	}
	p.start(t)
	t.Cleanup(func() {
		p.stop(10 * time.Second)
		p.logf.Close()
		if t.Failed() {
			data, _ := os.ReadFile(p.LogPath)
			if len(data) > 4000 {
				data = data[len(data)-4000:]
			}
			t.Logf("end of the proxy's log:\n%s", data)
		}
	})
	p.waitReady(t, len(cp.Servers()))
	cfg, err := clientcmd.LoadFromFile(p.Kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	p.CAData = cfg.Clusters[cfg.Contexts[cfg.CurrentContext].Cluster].CertificateAuthorityData
	return p
}

// leakCheckEnv makes mvpctl proxy check, after a clean shutdown, that none
// of its goroutines is left, and exit 1 naming them if one is
// (cmd/mvpctl/cli/leakcheck.go).
const leakCheckEnv = "MVPCTL_DEBUG_LEAK_CHECK=1"

// start runs the proxy with p.args, its output appended to the log.
func (p *proxyProcess) start(t *testing.T) {
	t.Helper()
	cmd := exec.Command(p.bin, p.args...)
	cmd.Stdout, cmd.Stderr = p.logf, p.logf
	cmd.Env = append(os.Environ(), leakCheckEnv)
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	p.cmd, p.done = cmd, done
	go func() {
		err := cmd.Wait()
		p.err = err
		close(done)
	}()
}

// PID is the process id of the running proxy.
func (p *proxyProcess) PID() int { return p.cmd.Process.Pid }

// kill ends the proxy with SIGKILL and waits until it is gone.
func (p *proxyProcess) kill() {
	p.cmd.Process.Kill()
	<-p.done
}

// restart starts the proxy again with the same command line (same ports,
// same serving certificate if one was given) after it exited.
func (p *proxyProcess) restart(t *testing.T) {
	t.Helper()
	select {
	case <-p.done:
	default:
		t.Fatal("restart: the proxy is still running")
	}
	p.start(t)
}

// stop sends SIGTERM and waits up to grace for the proxy to exit (then
// kills it). It returns the exit status, and an error if it had to kill.
func (p *proxyProcess) stop(grace time.Duration) error {
	select {
	case <-p.done:
		return p.err
	default:
	}
	p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
		return p.err
	case <-time.After(grace):
		p.cmd.Process.Kill()
		<-p.done
		return fmt.Errorf("no exit within %s of SIGTERM; killed", grace)
	}
}

type capabilities struct {
	Backends []struct {
		Name    string   `json:"name"`
		Ready   bool     `json:"ready"`
		Version string   `json:"version"`
		Serves  []string `json:"serves"`
	} `json:"backends"`
}

func (p *proxyProcess) capabilities() (capabilities, error) {
	var c capabilities
	resp, err := http.Get(p.MetricsURL + "/debug/capabilities")
	if err != nil {
		return c, err
	}
	defer resp.Body.Close()
	return c, json.NewDecoder(resp.Body).Decode(&c)
}

func (p *proxyProcess) waitReady(t *testing.T, n int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	for {
		c, err := p.capabilities()
		ready := 0
		for _, b := range c.Backends {
			if b.Ready {
				ready++
			}
		}
		if err == nil && ready == n {
			return
		}
		select {
		case <-ctx.Done():
			t.Fatalf("proxy: %d of %d backends ready (%v)", ready, n, err)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// tokenConfig is a client of the proxy with the control plane's bearer
// token, which the proxy passes through.
func (p *proxyProcess) tokenConfig(cp *framework.ControlPlane) *rest.Config {
	return &rest.Config{
		Host:            p.URL,
		TLSClientConfig: rest.TLSClientConfig{CAData: p.CAData},
		BearerToken:     cp.PKI.Token,
		QPS:             100, Burst: 200,
	}
}

// certConfig is a client of the proxy with the admin client certificate,
// which the proxy turns into impersonation.
func (p *proxyProcess) certConfig(cp *framework.ControlPlane) *rest.Config {
	return &rest.Config{
		Host: p.URL,
		TLSClientConfig: rest.TLSClientConfig{
			CAData: p.CAData, CertFile: cp.PKI.AdminCertFile, KeyFile: cp.PKI.AdminKeyFile,
		},
		QPS: 100, Burst: 200,
	}
}

// metric reads the sum of a counter's series whose labels include match.
func (p *proxyProcess) metricsText(t *testing.T) string {
	t.Helper()
	resp, err := http.Get(p.MetricsURL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var b []byte
	buf := make([]byte, 64<<10)
	for {
		n, err := resp.Body.Read(buf)
		b = append(b, buf[:n]...)
		if err != nil {
			break
		}
	}
	return string(b)
}
