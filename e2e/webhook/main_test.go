// Package webhook_test proves `mvpctl webhook` on a real kube-apiserver:
// a CRD with three versions whose conversion it serves (wired by
// --manage-crds, under the RBAC of deploy/webhook), every kubectl verb in
// every version, exact read-back across versions and lossless round trips
// through the stored version, the webhook stopped and restarted while
// clients work, and a serving-certificate rotation in the middle of a LIST
// loop. The benchmark against a controller-runtime webhook (crbaseline/)
// runs with MVPCTL_E2E_BENCH_WEBHOOK=1.
package webhook_test

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mvpctl/mvpctl/e2e/bins"
	"github.com/mvpctl/mvpctl/e2e/framework"
)

func TestMain(m *testing.M) { framework.Main(m) }

// serverVersion is the kube-apiserver (and kubectl) the suite runs.
const serverVersion = "v1.36.3"

// The Widget CRD of testdata/crd.yaml and its rules.
const (
	crdName   = "widgets.example.com"
	group     = "example.com"
	crdFile   = "testdata/crd.yaml"
	rulesFile = "testdata/rules.yaml"

	// A CRD whose versions gadgetRulesFile cannot all reach.
	gadgetCRDName   = "gadgets.example.com"
	gadgetCRDFile   = "testdata/gadget-crd.yaml"
	gadgetRulesFile = "testdata/gadget-rules.yaml"
)

// versions are the Widget's served versions; v1 is stored.
var versions = []string{"v1alpha1", "v1beta1", "v1"}

func kubectlPath(t testing.TB) string {
	t.Helper()
	if p := os.Getenv("KUBECTL"); p != "" {
		return p
	}
	p, err := bins.Find(bins.Kubectl, serverVersion)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// run runs a command with stdin and a time bound; it returns stdout and an
// error that includes stderr.
func run(t testing.TB, stdin, bin string, args ...string) (string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Stdin = strings.NewReader(stdin)
	cmd.Env = append(os.Environ(), "KUBECACHEDIR="+kubeCache(t))
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return stdout.String(), fmt.Errorf("%s %s: %w: %s%s", filepath.Base(bin), strings.Join(args, " "), err, stderr.String(), stdout.String())
	}
	return stdout.String(), nil
}

// kubeCacheDir is kubectl's discovery cache, shared by the invocations of
// one test (set by the test) so that each does not discover the API again.
var kubeCacheDir string

func kubeCache(t testing.TB) string {
	if kubeCacheDir == "" {
		return t.TempDir()
	}
	return kubeCacheDir
}

func kubectl(t testing.TB, kubeconfig, stdin string, args ...string) (string, error) {
	t.Helper()
	return run(t, stdin, kubectlPath(t), append([]string{"--kubeconfig", kubeconfig}, args...)...)
}

func mustKubectl(t testing.TB, kubeconfig, stdin string, args ...string) string {
	t.Helper()
	out, err := kubectl(t, kubeconfig, stdin, args...)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// eventually polls cond every 100ms until it is true, and fails the test
// naming what it waited for if that takes longer than timeout.
func eventually(t testing.TB, timeout time.Duration, what string, cond func() (bool, error)) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), timeout)
	defer cancel()
	var last error
	for {
		ok, err := cond()
		if ok {
			return
		}
		if err != nil {
			last = err
		}
		select {
		case <-ctx.Done():
			t.Fatalf("waited %s for %s; last error: %v", timeout, what, last)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

func freePort(t testing.TB) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// process is a server the test runs (mvpctl webhook, or the baseline): its
// command line, its log, and each run's exit.
type process struct {
	name    string
	bin     string
	args    []string
	env     []string
	logPath string
	logf    *os.File
	cmd     *exec.Cmd
	done    chan struct{} // closed when the current run has exited
	err     error         // the current run's exit status, once done is closed
}

// newProcess prepares a process that lives until owner ends (a test that
// may outlive the subtest t which starts it).
func newProcess(t, owner testing.TB, name, bin string, args ...string) *process {
	t.Helper()
	p := &process{name: name, bin: bin, args: args, logPath: filepath.Join(owner.TempDir(), name+".log")}
	var err error
	if p.logf, err = os.Create(p.logPath); err != nil {
		t.Fatal(err)
	}
	owner.Cleanup(func() {
		p.stop(10 * time.Second)
		p.logf.Close()
		if owner.Failed() {
			owner.Logf("end of %s's log:\n%s", p.name, p.tail(6000))
		}
	})
	return p
}

// start runs the command line once more, its output appended to the log.
func (p *process) start(t testing.TB) {
	t.Helper()
	if p.cmd != nil {
		select {
		case <-p.done:
		default:
			t.Fatalf("%s is still running", p.name)
		}
	}
	cmd := exec.Command(p.bin, p.args...)
	cmd.Stdout, cmd.Stderr = p.logf, p.logf
	cmd.Env = append(os.Environ(), p.env...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	p.cmd, p.done = cmd, done
	go func() {
		p.err = cmd.Wait()
		close(done)
	}()
}

func (p *process) pid() int { return p.cmd.Process.Pid }

func (p *process) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// kill ends the process with SIGKILL and waits until it is gone.
func (p *process) kill() {
	p.cmd.Process.Kill()
	<-p.done
}

// stop sends SIGTERM and waits up to grace for the exit (then kills). It
// returns the exit status, and an error if it had to kill.
func (p *process) stop(grace time.Duration) error {
	if p.cmd == nil {
		return nil
	}
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
		return fmt.Errorf("%s: no exit within %s of SIGTERM; killed", p.name, grace)
	}
}

func (p *process) tail(n int) string {
	data, _ := os.ReadFile(p.logPath)
	if len(data) > n {
		data = data[len(data)-n:]
	}
	return string(data)
}

// cpuTime is the CPU time (user and system) the current run has used so
// far, from /proc/<pid>/stat.
func (p *process) cpuTime(t testing.TB) time.Duration {
	t.Helper()
	data, err := os.ReadFile("/proc/" + strconv.Itoa(p.pid()) + "/stat")
	if err != nil {
		t.Fatal(err)
	}
	// The command name (field 2) is in parentheses and may hold spaces;
	// utime and stime are fields 14 and 15, in clock ticks (USER_HZ, 100
	// on Linux).
	s := string(data)
	fields := strings.Fields(s[strings.LastIndexByte(s, ')')+2:])
	utime, err1 := strconv.ParseInt(fields[11], 10, 64)
	stime, err2 := strconv.ParseInt(fields[12], 10, 64)
	if err := errors.Join(err1, err2); err != nil {
		t.Fatal(err)
	}
	return time.Duration(utime+stime) * 10 * time.Millisecond
}

// webhook is a running `mvpctl webhook` on 127.0.0.1 with its own
// --cert-dir.
type webhook struct {
	*process
	Port    int
	URL     string // https://127.0.0.1:<port>/convert
	CertDir string
	Metrics string // http://127.0.0.1:<port>/metrics
}

// startWebhook runs mvpctl webhook with the Widget rules, serving on
// 127.0.0.1 with a certificate of its own --cert-dir for 127.0.0.1, and
// waits until it is ready. It runs until owner ends. In extra, "$URL"
// stands for the webhook's /convert URL (for --webhook-url).
func startWebhook(t, owner testing.TB, kubeconfig string, extra ...string) *webhook {
	t.Helper()
	port, mport := freePort(t), freePort(t)
	w := &webhook{
		Port:    port,
		URL:     "https://127.0.0.1:" + strconv.Itoa(port) + "/convert",
		CertDir: filepath.Join(owner.TempDir(), "certs"),
		Metrics: "http://127.0.0.1:" + strconv.Itoa(mport) + "/metrics",
	}
	args := []string{"webhook",
		"--rules", rulesFile,
		"--bind-address", "127.0.0.1", "--secure-port", strconv.Itoa(port),
		"--cert-dir", w.CertDir, "--tls-san", "127.0.0.1",
		"--metrics-bind-address", "127.0.0.1:" + strconv.Itoa(mport),
		"--log-format", "json",
	}
	if kubeconfig != "" {
		args = append(args, "--kubeconfig", kubeconfig)
	}
	for _, a := range extra {
		args = append(args, strings.ReplaceAll(a, "$URL", w.URL))
	}
	w.process = newProcess(t, owner, "mvpctl-webhook", framework.Mvpctl(t), args...)
	w.start(t)
	w.waitReady(t)
	return w
}

// setArg replaces the value of flag in the command line, or adds it; the
// next start uses it.
func (w *webhook) setArg(flag, value string) {
	for i := range w.args {
		if w.args[i] == flag && i+1 < len(w.args) {
			w.args[i+1] = value
			return
		}
	}
	w.args = append(w.args, flag, value)
}

// caPEM is the webhook's CA, what the CRD's caBundle must hold.
func (w *webhook) caPEM(t testing.TB) []byte {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(w.CertDir, "ca.crt"))
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// client is an HTTPS client that trusts only the webhook's CA and makes a
// new connection (a new TLS handshake) for every request.
func (w *webhook) client(t testing.TB) *http.Client {
	t.Helper()
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(w.caPEM(t)) {
		t.Fatal("no certificate in ca.crt")
	}
	return &http.Client{
		Timeout: 10 * time.Second,
		Transport: &http.Transport{
			TLSClientConfig:   &tls.Config{RootCAs: pool, ServerName: "127.0.0.1"},
			DisableKeepAlives: true,
		},
	}
}

// waitReady waits for a 200 from /readyz, verifying the serving
// certificate against the CA of --cert-dir.
func (w *webhook) waitReady(t testing.TB) {
	t.Helper()
	readyz := "https://127.0.0.1:" + strconv.Itoa(w.Port) + "/readyz"
	eventually(t, 60*time.Second, "mvpctl webhook's /readyz", func() (bool, error) {
		if w.exited() {
			t.Fatalf("mvpctl webhook exited: %v\n%s", w.err, w.tail(4000))
		}
		if _, err := os.Stat(filepath.Join(w.CertDir, "ca.crt")); err != nil {
			return false, err
		}
		resp, err := w.client(t).Get(readyz)
		if err != nil {
			return false, err
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return resp.StatusCode == http.StatusOK, fmt.Errorf("%s: %s", resp.Status, body)
	})
}

// servingSerial is the serial number of the certificate the webhook
// serves now, from a new TLS handshake verified against its CA.
func (w *webhook) servingSerial(t testing.TB) (string, error) {
	t.Helper()
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(w.caPEM(t))
	d := tls.Dialer{Config: &tls.Config{RootCAs: pool, ServerName: "127.0.0.1"}, NetDialer: &net.Dialer{Timeout: 5 * time.Second}}
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	c, err := d.DialContext(ctx, "tcp", "127.0.0.1:"+strconv.Itoa(w.Port))
	if err != nil {
		return "", err
	}
	defer c.Close()
	return c.(*tls.Conn).ConnectionState().PeerCertificates[0].SerialNumber.String(), nil
}

// metricValue is the sum of the samples at url (a Prometheus text
// endpoint) whose lines start with prefix (a name and labels); 0 if none.
func metricValue(t testing.TB, url, prefix string) float64 {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 8<<20))
	if err != nil {
		t.Fatal(err)
	}
	sum := 0.0
	for _, line := range strings.Split(string(body), "\n") {
		if !strings.HasPrefix(line, prefix) {
			continue
		}
		f := strings.Fields(line)
		v, err := strconv.ParseFloat(f[len(f)-1], 64)
		if err != nil {
			t.Fatalf("%s: %q: %v", url, line, err)
		}
		sum += v
	}
	return sum
}
