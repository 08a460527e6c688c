// Command demo shows mvpctl proxy in front of a mixed-version control plane:
// it starts etcd with a v1.35.4 and a v1.36.3 kube-apiserver (the e2e
// harness), mvpctl proxy in front of both, runs a short kubectl session that
// shows the difference, and tears everything down. `make demo` runs it.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/mvpctl/mvpctl/e2e/bins"
	"github.com/mvpctl/mvpctl/e2e/framework"
)

const policy = `apiVersion: admissionregistration.k8s.io/v1
kind: MutatingAdmissionPolicy
metadata:
  name: demo-add-label
spec:
  matchConstraints:
    resourceRules:
    - apiGroups: ["apps"]
      apiVersions: ["v1"]
      operations: ["CREATE"]
      resources: ["deployments"]
  reinvocationPolicy: Never
  mutations:
  - patchType: ApplyConfiguration
    applyConfiguration:
      expression: 'Object{metadata: Object.metadata{labels: {"demo": "true"}}}'
`

func main() {
	mvpctl := flag.String("mvpctl", "../bin/mvpctl", "the mvpctl binary")
	flag.Parse()
	if err := run(*mvpctl); err != nil {
		fmt.Fprintln(os.Stderr, "demo:", err)
		os.Exit(1)
	}
}

func run(mvpctl string) error {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	mvpctl, err := filepath.Abs(mvpctl)
	if err != nil {
		return err
	}
	kubectlBin, err := bins.Find(bins.Kubectl, "v1.36.3")
	if err != nil {
		return err
	}
	step("Starting etcd, kube-apiserver v1.35.4 and kube-apiserver v1.36.3 on 127.0.0.1")
	startCtx, cancel := context.WithTimeout(ctx, 3*time.Minute)
	cp, err := framework.StartContext(startCtx, framework.Options{Versions: []string{"v1.35.4", "v1.36.3"}})
	cancel()
	if err != nil {
		return err
	}
	defer cp.Stop()
	old, cur := cp.Server(0), cp.Server(1)
	fmt.Printf("  v1.35.4 at %s\n  v1.36.3 at %s\n", old.URL, cur.URL)

	dir, err := os.MkdirTemp("", "mvpctl-demo-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	port, mport := freePort(), freePort()
	kubeconfig := filepath.Join(dir, "proxy.kubeconfig")
	metrics := "127.0.0.1:" + strconv.Itoa(mport)
	args := []string{"proxy", "--listen", "127.0.0.1:" + strconv.Itoa(port), "--metrics-listen", metrics,
		"--kubeconfig", old.Kubeconfig, "--context", "admin", "--client-ca-file", cp.PKI.CAFile,
		"--backend", old.URL, "--backend", cur.URL, "--write-kubeconfig", kubeconfig}
	step("mvpctl " + strings.Join(args, " "))
	logf, err := os.Create(filepath.Join(dir, "proxy.log"))
	if err != nil {
		return err
	}
	proxy := exec.CommandContext(ctx, mvpctl, args...)
	proxy.Stdout, proxy.Stderr = logf, logf
	proxy.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := proxy.Start(); err != nil {
		return err
	}
	defer func() { proxy.Process.Signal(syscall.SIGTERM); proxy.Wait() }()
	if err := waitReady(ctx, "http://"+metrics+"/debug/capabilities"); err != nil {
		return err
	}

	kubectl := func(kubeconfig string, args ...string) {
		label := "proxy"
		if kubeconfig == old.Kubeconfig {
			label = "v1.35.4 directly"
		}
		fmt.Printf("\n$ kubectl %s   # %s\n", strings.Join(args, " "), label)
		cmd := exec.CommandContext(ctx, kubectlBin, append([]string{"--kubeconfig", kubeconfig}, args...)...)
		if strings.Contains(strings.Join(args, " "), "-f -") {
			cmd.Stdin = strings.NewReader(policy)
		}
		cmd.Stdout, cmd.Stderr = os.Stdout, os.Stdout
		if err := cmd.Run(); err != nil {
			fmt.Printf("(exit: %v)\n", err)
		}
	}
	step("A v1.36-only resource (MutatingAdmissionPolicy, admissionregistration.k8s.io/v1)")
	kubectl(kubeconfig, "apply", "-f", "-")
	kubectl(kubeconfig, "get", "mutatingadmissionpolicies.v1.admissionregistration.k8s.io")
	kubectl(old.Kubeconfig, "get", "mutatingadmissionpolicies.v1.admissionregistration.k8s.io")

	step("Discovery through the proxy is the union of both servers")
	kubectl(kubeconfig, "api-resources", "--api-group", "admissionregistration.k8s.io")
	kubectl(old.Kubeconfig, "api-resources", "--api-group", "admissionregistration.k8s.io")

	step("Ordinary resources go to either server")
	kubectl(kubeconfig, "create", "configmap", "demo", "--from-literal", "k=v")
	kubectl(kubeconfig, "get", "configmap", "demo", "-o", "jsonpath={.data}{\"\\n\"}")

	step("The proxy's metrics (mvpctl_proxy_requests_total, by routing decision)")
	resp, err := http.Get("http://" + metrics + "/metrics")
	if err != nil {
		return err
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	for _, line := range strings.Split(string(body), "\n") {
		if strings.HasPrefix(line, "mvpctl_proxy_requests_total{") && (strings.Contains(line, "mutatingadmissionpolicies") || strings.Contains(line, `resource="configmaps"`)) ||
			strings.HasPrefix(line, "mvpctl_proxy_backend_ready") {
			fmt.Println("  " + line)
		}
	}
	step("Tearing down")
	return nil
}

func step(s string) { fmt.Printf("\n=== %s\n", s) }

func freePort() int {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		panic(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

func waitReady(ctx context.Context, url string) error {
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	for {
		resp, err := http.Get(url)
		if err == nil {
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if strings.Count(string(body), `"ready": true`) == 2 {
				return nil
			}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("the proxy's backends did not become ready: %w", ctx.Err())
		case <-time.After(100 * time.Millisecond):
		}
	}
}
