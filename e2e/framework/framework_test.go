package framework

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	certutil "k8s.io/client-go/util/cert"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"

	"github.com/mvpctl/mvpctl/e2e/bins"
)

func TestMain(m *testing.M) {
	if os.Getenv(helperEnv) != "" {
		runHelper()
		return
	}
	Main(m)
}

func TestNewPKI_CertificatesVerify(t *testing.T) {
	p, err := NewPKI(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	roots, err := certutil.NewPoolFromBytes(p.CAPEM)
	if err != nil {
		t.Fatal(err)
	}
	serving := readCert(t, p.ServingCertFile)
	for _, name := range []string{"127.0.0.1", "localhost", "kubernetes.default.svc", ServiceIP} {
		if _, err := serving.Verify(x509.VerifyOptions{Roots: roots, DNSName: name}); err != nil {
			t.Errorf("serving certificate for %s: %v", name, err)
		}
	}
	admin := readCert(t, p.AdminCertFile)
	if _, err := admin.Verify(x509.VerifyOptions{Roots: roots, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}); err != nil {
		t.Errorf("admin client certificate: %v", err)
	}
	if admin.Subject.CommonName != AdminUser || len(admin.Subject.Organization) != 1 || admin.Subject.Organization[0] != AdminGroup {
		t.Errorf("admin subject = %v", admin.Subject)
	}

	// The front-proxy client chains to the front-proxy CA, not the main CA.
	frontRoots := x509.NewCertPool()
	frontRoots.AddCert(readCert(t, p.FrontProxyCAFile))
	front := readCert(t, p.FrontProxyCertFile)
	opts := x509.VerifyOptions{Roots: frontRoots, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}
	if _, err := front.Verify(opts); err != nil {
		t.Errorf("front-proxy client: %v", err)
	}
	opts.Roots = roots
	if _, err := front.Verify(opts); err == nil {
		t.Errorf("front-proxy client verifies against the main CA")
	}
	issued, err := p.IssueClientCert("mallory", "mvp:testers", "team-b")
	if err != nil {
		t.Fatal(err)
	}
	mallory := readCert(t, issued.CertFile)
	if _, err := mallory.Verify(x509.VerifyOptions{Roots: roots, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}); err != nil {
		t.Errorf("issued client certificate: %v", err)
	}
	groups := slices.Sorted(slices.Values(mallory.Subject.Organization)) // a SET in DER: any order
	if mallory.Subject.CommonName != "mallory" || strings.Join(groups, ",") != "mvp:testers,team-b" {
		t.Errorf("issued subject = %v", mallory.Subject)
	}
	if _, err := tls.LoadX509KeyPair(issued.CertFile, issued.KeyFile); err != nil || len(issued.Cert.Certificate) != 1 {
		t.Errorf("issued key pair: %v", err)
	}
	if _, err := tls.LoadX509KeyPair(p.ServingCertFile, p.ServingKeyFile); err != nil {
		t.Errorf("serving key pair: %v", err)
	}
	tokens, err := os.ReadFile(p.TokenFile)
	if err != nil || !strings.HasPrefix(string(tokens), p.Token+","+TokenUser+",") || len(p.Token) != 32 {
		t.Errorf("token file %q (token %q): %v", tokens, p.Token, err)
	}
}

func readCert(t *testing.T, path string) *x509.Certificate {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	block, _ := pem.Decode(b)
	if block == nil {
		t.Fatalf("%s: no PEM", path)
	}
	c, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestStartContext_MissingBinary(t *testing.T) {
	t.Setenv("MVPCTL_E2E_CACHE", t.TempDir())
	_, err := StartContext(t.Context(), Options{Versions: []string{"v1.35.4"}})
	var nb *bins.NotBuiltError
	if !errors.As(err, &nb) || !strings.Contains(err.Error(), "make e2e-bins") {
		t.Fatalf("err = %v, want a NotBuiltError that says to run make e2e-bins", err)
	}
}

// A control plane's processes and ports are gone after Stop.
func TestControlPlane_StopLeavesNothing(t *testing.T) {
	cp := Start(t, Options{Versions: []string{"v1.35.4", "v1.36.3"}})
	pids, addrs := footprint(cp)
	if cp.isolate {
		checkIdentities(t, cp)
	}
	cp.Stop()
	checkGone(t, pids, addrs)
	if _, err := os.Stat(cp.Dir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("control plane directory %s still there: %v", cp.Dir, err)
	}
	cp.Stop() // idempotent
}

// checkIdentities checks that each server runs in a UTS namespace of its
// own and so holds an identity lease of its own.
func checkIdentities(t *testing.T, cp *ControlPlane) {
	t.Helper()
	self, _ := os.Readlink("/proc/self/ns/uts")
	seen := map[string]bool{self: true}
	for _, s := range cp.Servers() {
		ns, err := os.Readlink(fmt.Sprintf("/proc/%d/ns/uts", s.PID()))
		if err != nil || seen[ns] {
			t.Errorf("server %d: UTS namespace %q (%v) is not its own", s.Index, ns, err)
		}
		seen[ns] = true
	}
	c := kubernetes.NewForConfigOrDie(cp.Server(0).RESTConfig())
	var leases []string
	err := wait.PollUntilContextTimeout(t.Context(), 200*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		l, err := c.CoordinationV1().Leases("kube-system").List(ctx, metav1.ListOptions{
			LabelSelector: "apiserver.kubernetes.io/identity=kube-apiserver",
		})
		if err != nil {
			return false, err
		}
		leases = leases[:0]
		for _, item := range l.Items {
			leases = append(leases, item.Name+" "+item.Labels["kubernetes.io/hostname"])
		}
		return len(leases) >= len(cp.Servers()), nil
	})
	if err != nil || len(leases) != len(cp.Servers()) {
		t.Errorf("identity leases %q (%v), want one per server (%d)", leases, err, len(cp.Servers()))
	}
}

// footprint lists the control plane's process ids and listening addresses.
func footprint(cp *ControlPlane) (pids []int, addrs []string) {
	pids = append(pids, cp.etcd.proc.cmd.Process.Pid)
	addrs = append(addrs, strings.TrimPrefix(cp.EtcdURL, "http://"))
	for _, s := range cp.Servers() {
		pids = append(pids, s.PID())
		addrs = append(addrs, "127.0.0.1:"+strconv.Itoa(s.Port))
	}
	return pids, addrs
}

// checkGone waits up to 10s for every pid to be gone and every address to
// refuse connections, and reports what is left.
func checkGone(t *testing.T, pids []int, addrs []string) {
	t.Helper()
	var left []string
	for deadline := time.Now().Add(10 * time.Second); ; {
		left = left[:0]
		for _, pid := range pids {
			if alive(pid) {
				left = append(left, fmt.Sprintf("process %d", pid))
			}
		}
		for _, a := range addrs {
			if c, err := net.DialTimeout("tcp", a, time.Second); err == nil {
				c.Close()
				left = append(left, "a listener on "+a)
			}
		}
		if len(left) == 0 || time.Now().After(deadline) {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	for _, l := range left {
		t.Errorf("%s is still there", l)
	}
}

// alive reports whether pid exists and is not a finished zombie. A
// multi-threaded process's leader turns zombie before its other threads
// have exited and released its files (and sockets), so a zombie with more
// than one thread still counts.
func alive(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	// The state follows the parenthesised command name.
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 || i+2 >= len(s) || s[i+2] != 'Z' {
		return true
	}
	tasks, err := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid))
	return err == nil && len(tasks) > 1
}

const helperEnv = "MVPCTL_E2E_FRAMEWORK_HELPER"

// runHelper is the test binary re-executed by
// TestControlPlane_KilledRunLeavesNothing: it starts a control plane, writes
// its footprint to the file named by helperEnv and waits to be killed.
func runHelper() {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cp, err := StartContext(ctx, Options{Versions: []string{"v1.35.4", "v1.36.3"}})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	pids, addrs := footprint(cp)
	var lines []string
	for _, p := range pids {
		lines = append(lines, strconv.Itoa(p))
	}
	lines = append(lines, addrs...)
	lines = append(lines, "dir "+cp.Dir)
	out := os.Getenv(helperEnv)
	if err := os.WriteFile(out+".tmp", []byte(strings.Join(lines, "\n")), 0o644); err != nil {
		os.Exit(1)
	}
	if err := os.Rename(out+".tmp", out); err != nil {
		os.Exit(1)
	}
	<-ctx.Done()
	os.Exit(1)
}

// A test binary killed with SIGKILL (no cleanup runs) takes etcd and every
// kube-apiserver with it.
func TestControlPlane_KilledRunLeavesNothing(t *testing.T) {
	report := filepath.Join(t.TempDir(), "footprint")
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), helperEnv+"="+report)
	out, err := os.Create(filepath.Join(t.TempDir(), "helper.log"))
	if err != nil {
		t.Fatal(err)
	}
	defer out.Close()
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	var b []byte
	for deadline := time.Now().Add(2 * time.Minute); ; {
		if b, err = os.ReadFile(report); err == nil {
			break
		}
		select {
		case err := <-done:
			t.Fatalf("helper exited early: %v\n%s", err, tailFile(out.Name(), 40))
		case <-time.After(100 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			cmd.Process.Kill()
			t.Fatalf("helper did not start a control plane in time:\n%s", tailFile(out.Name(), 40))
		}
	}
	var pids []int
	var addrs []string
	for _, l := range strings.Split(string(b), "\n") {
		if dir, ok := strings.CutPrefix(l, "dir "); ok {
			t.Cleanup(func() { os.RemoveAll(dir) }) // nobody removed it
			continue
		}
		if pid, err := strconv.Atoi(l); err == nil {
			pids = append(pids, pid)
		} else {
			addrs = append(addrs, l)
		}
	}
	if len(pids) != 3 || len(addrs) != 3 {
		t.Fatalf("footprint %q: want 3 pids and 3 addresses", b)
	}
	for _, pid := range pids {
		if !alive(pid) {
			t.Fatalf("process %d is not running before the kill", pid)
		}
	}
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-done
	checkGone(t, pids, addrs)
}
