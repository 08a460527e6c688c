package proxy_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"io"
	"math/big"
	mrand "math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/mvpctl/mvpctl/e2e/framework"
)

// benchVariant is one way of reaching the apiserver.
type benchVariant struct {
	name       string
	url        string
	metricsURL string       // mvpctl's, for profiles
	pids       func() []int // processes whose CPU time is the proxy's; nil for direct
}

type benchScenario struct {
	id          string // for MVPCTL_E2E_BENCH_SCENARIOS
	name        string
	path        func() string
	concurrency int
	duration    time.Duration
}

type benchSample struct {
	requests  int
	errors    int
	latencies []time.Duration
	cpu       time.Duration
	elapsed   time.Duration
}

// TestProxy_Benchmark compares, against one real kube-apiserver holding 500
// ConfigMaps of about 5 KB, direct access with a bare httputil.ReverseProxy
// (default and tuned), nginx and mvpctl proxy, variants interleaved over
// several rounds. It runs only with MVPCTL_E2E_BENCH=1 and writes a Markdown
// table to MVPCTL_E2E_BENCH_REPORT when set.
//
// While iterating:
//   - MVPCTL_E2E_BENCH_ROUNDS=N: rounds (3).
//   - MVPCTL_E2E_BENCH_SCENARIOS=get1,get16,list: the scenarios to run (all).
//   - MVPCTL_E2E_BENCH_DURATION=20s: each scenario's duration (4s, 6s for
//     the LIST), e.g. for longer CPU profiles.
//   - MVPCTL_E2E_BENCH_VARIANTS=nginx,256,mvpctl: keep only the variants
//     whose name contains one of these (direct is always kept).
//   - MVPCTL_E2E_BENCH_MVPCTL="GOGC=200;/tmp/mvpctl-old --some-flag": more
//     mvpctl proxy variants, ';'-separated, each a list of environment
//     variables, a binary (a path) and flags, measured interleaved with the
//     others: A/B comparisons of runtime settings or of two builds.
//     cgroup=DIR runs the variant in that (existing) cgroup, e.g. one with a
//     CPU limit.
//   - MVPCTL_E2E_BENCH_PAIRED=1: then the same rounds again with every
//     proxy driven at the same time, each with the scenario's concurrency:
//     CPU per request as a ratio to mvpctl proxy's in the same round, which
//     the machine's other load affects alike.
//   - MVPCTL_E2E_BENCH_PROFILE=DIR: a CPU profile of every mvpctl variant in
//     every scenario and round, DIR/<variant>-<scenario>-r<round>.pprof.
func TestProxy_Benchmark(t *testing.T) {
	if os.Getenv("MVPCTL_E2E_BENCH") == "" {
		t.Skip("set MVPCTL_E2E_BENCH=1 to run the proxy benchmark")
	}
	rounds := 3
	if r, err := strconv.Atoi(os.Getenv("MVPCTL_E2E_BENCH_ROUNDS")); err == nil && r > 0 {
		rounds = r
	}
	cp := framework.Start(t, framework.Options{Versions: []string{oldVersion}})
	s := cp.Server(0)
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Minute)
	defer cancel()
	cs := kubernetes.NewForConfigOrDie(s.RESTConfig())
	if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "bench"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	payload := strings.Repeat("0123456789abcdef", 5000/16)
	for i := range 500 {
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("cm-%03d", i)}, Data: map[string]string{"payload": payload}}
		if _, err := cs.CoreV1().ConfigMaps("bench").Create(ctx, cm, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}

	dir := t.TempDir()
	variants := []benchVariant{{name: "direct", url: s.URL}}
	variants = append(variants, startBareProxy(t, dir, s.URL, cp.PKI.CAFile, false), startBareProxy(t, dir, s.URL, cp.PKI.CAFile, true))
	if v, ok := startNginx(t, dir, s.URL, cp.PKI.CAFile); ok {
		variants = append(variants, v)
	}
	profileDir := os.Getenv("MVPCTL_E2E_BENCH_PROFILE")
	proxyArgs := []string{"--log-level", "warn"}
	if profileDir != "" {
		proxyArgs = append(proxyArgs, "--profiling")
	}
	p := startProxy(t, cp, proxyArgs...)
	variants = append(variants, benchVariant{name: "mvpctl proxy", url: p.URL, metricsURL: p.MetricsURL, pids: func() []int { return []int{p.cmd.Process.Pid} }})
	for spec := range strings.SplitSeq(os.Getenv("MVPCTL_E2E_BENCH_MVPCTL"), ";") {
		if spec = strings.TrimSpace(spec); spec != "" {
			variants = append(variants, startBenchProxy(t, cp, spec, profileDir != ""))
		}
	}
	if keep := os.Getenv("MVPCTL_E2E_BENCH_VARIANTS"); keep != "" {
		variants = slices.DeleteFunc(variants, func(v benchVariant) bool {
			if v.name == "direct" {
				return false
			}
			for k := range strings.SplitSeq(keep, ",") {
				if k != "" && strings.Contains(v.name, k) {
					return false
				}
			}
			return true
		})
	}

	scenarios := []benchScenario{
		{"get1", "GET one ConfigMap, concurrency 1", func() string { return fmt.Sprintf("/api/v1/namespaces/bench/configmaps/cm-%03d", mrand.IntN(500)) }, 1, 4 * time.Second},
		{"get16", "GET one ConfigMap, concurrency 16", func() string { return fmt.Sprintf("/api/v1/namespaces/bench/configmaps/cm-%03d", mrand.IntN(500)) }, 16, 4 * time.Second},
		{"list", "LIST 500 ConfigMaps (2.5 MB), concurrency 4", func() string { return "/api/v1/namespaces/bench/configmaps" }, 4, 6 * time.Second},
	}
	if d, err := time.ParseDuration(os.Getenv("MVPCTL_E2E_BENCH_DURATION")); err == nil && d > 0 {
		for i := range scenarios {
			scenarios[i].duration = d
		}
	}
	if only := os.Getenv("MVPCTL_E2E_BENCH_SCENARIOS"); only != "" {
		ids := strings.Split(only, ",")
		scenarios = slices.DeleteFunc(scenarios, func(sc benchScenario) bool { return !slices.Contains(ids, sc.id) })
	}
	client := benchClient()
	// Warm every path (connections, caches) before measuring.
	for _, v := range variants {
		for _, sc := range scenarios {
			runScenario(ctx, client, v, sc, cp.PKI.Token, time.Second)
		}
	}
	results := map[string]map[string][]benchSample{}
	for round := range rounds {
		for si, sc := range scenarios {
			order := slices.Clone(variants)
			off := (round + si) % len(order)
			order = append(order[off:], order[:off]...)
			for _, v := range order {
				var prof chan struct{}
				if profileDir != "" && v.metricsURL != "" {
					prof = make(chan struct{})
					go func() {
						defer close(prof)
						name := fmt.Sprintf("%s-%s-r%d.pprof", strings.NewReplacer(" ", "_", "/", "_", "(", "", ")", "").Replace(v.name), sc.id, round)
						if err := cpuProfile(ctx, v.metricsURL, sc.duration-time.Second, filepath.Join(profileDir, name)); err != nil {
							t.Logf("profile %s: %v", name, err)
						}
					}()
				}
				smp := runScenario(ctx, client, v, sc, cp.PKI.Token, sc.duration)
				if prof != nil {
					<-prof
				}
				if results[sc.name] == nil {
					results[sc.name] = map[string][]benchSample{}
				}
				results[sc.name][v.name] = append(results[sc.name][v.name], smp)
				if smp.errors > 0 {
					t.Errorf("%s via %s: %d errors", sc.name, v.name, smp.errors)
				}
			}
		}
	}
	report := benchTable(variants, scenarios, results, rounds)
	if os.Getenv("MVPCTL_E2E_BENCH_PAIRED") != "" {
		report += pairedRounds(ctx, t, client, variants, scenarios, rounds, cp.PKI.Token)
	}
	t.Log("\n" + report)
	if path := os.Getenv("MVPCTL_E2E_BENCH_REPORT"); path != "" {
		if err := os.WriteFile(path, []byte(report), 0o644); err != nil {
			t.Error(err)
		}
	}
}

// pairedRounds drives all proxies at once per scenario and round and
// reports each one's CPU per request and its ratio to mvpctl proxy's.
func pairedRounds(ctx context.Context, t *testing.T, client *http.Client, variants []benchVariant, scenarios []benchScenario, rounds int, token string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "Paired: every proxy driven at the same time, %d rounds; medians of the CPU per request and of its per-round ratio to mvpctl proxy's.\n\n", rounds)
	for _, sc := range scenarios {
		cpu := map[string][]float64{}
		for range rounds {
			var mu sync.Mutex
			var wg sync.WaitGroup
			for _, v := range variants {
				if v.pids == nil {
					continue
				}
				wg.Go(func() {
					smp := runScenario(ctx, client, v, sc, token, sc.duration)
					if smp.errors > 0 {
						t.Errorf("paired %s via %s: %d errors", sc.name, v.name, smp.errors)
					}
					if smp.requests > 0 {
						mu.Lock()
						cpu[v.name] = append(cpu[v.name], float64(smp.cpu)/float64(smp.requests))
						mu.Unlock()
					}
				})
			}
			wg.Wait()
		}
		fmt.Fprintf(&b, "**%s**\n\n| variant | proxy CPU/request | ×mvpctl proxy |\n|---|---:|---:|\n", sc.name)
		ref := cpu["mvpctl proxy"]
		for _, v := range variants {
			c := cpu[v.name]
			if v.pids == nil || len(c) == 0 {
				continue
			}
			var ratios []float64
			for i := range min(len(c), len(ref)) {
				if ref[i] > 0 {
					ratios = append(ratios, c[i]/ref[i])
				}
			}
			fmt.Fprintf(&b, "| %s | %s | ×%.2f |\n", v.name, dur(median(c)), median(ratios))
		}
		b.WriteString("\n")
	}
	return b.String()
}

// startBenchProxy starts another mvpctl proxy variant with startProxy's
// backends, credentials and client CA: spec lists environment variables
// (KEY=VALUE), a binary (a path; default: this checkout's), flags and
// cgroup=DIR.
func startBenchProxy(t *testing.T, cp *framework.ControlPlane, spec string, profiling bool) benchVariant {
	t.Helper()
	bin := mvpctl(t)
	var env, flags []string
	var cgroup string
	for _, f := range strings.Fields(spec) {
		switch {
		case strings.HasPrefix(f, "cgroup="):
			cgroup = strings.TrimPrefix(f, "cgroup=")
		case strings.HasPrefix(f, "-"):
			flags = append(flags, f)
		case strings.HasPrefix(f, "/"):
			bin = f
		case strings.Contains(f, "="):
			env = append(env, f)
		default:
			flags = append(flags, f) // a flag's value
		}
	}
	port, mport := freePort(t), freePort(t)
	args := []string{"proxy",
		"--listen", "127.0.0.1:" + strconv.Itoa(port),
		"--metrics-listen", "127.0.0.1:" + strconv.Itoa(mport),
		"--kubeconfig", cp.Server(0).Kubeconfig, "--context", "admin",
		"--client-ca-file", cp.PKI.CAFile,
		"--log-level", "warn",
	}
	if profiling {
		args = append(args, "--profiling")
	}
	for _, s := range cp.Servers() {
		args = append(args, "--backend", s.URL)
	}
	cmd := exec.Command(bin, append(args, flags...)...)
	if cgroup != "" {
		// Join the cgroup before mvpctl starts, so that the Go runtime
		// sees its CPU limit from the beginning.
		cmd = exec.Command("sh", append([]string{"-c", `echo $$ > "$0/cgroup.procs" && exec "$@"`, cgroup, bin}, append(args, flags...)...)...)
	}
	cmd.Env = append(os.Environ(), env...)
	logf, err := os.Create(filepath.Join(t.TempDir(), "proxy.log"))
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait(); logf.Close() })
	url := "https://127.0.0.1:" + strconv.Itoa(port)
	client := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}, Timeout: time.Second}
	deadline := time.Now().Add(60 * time.Second)
	for {
		resp, err := client.Get(url + "/readyz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				break
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("mvpctl proxy (%s) not ready: %v", spec, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	return benchVariant{name: "mvpctl proxy (" + spec + ")", url: url, metricsURL: "http://127.0.0.1:" + strconv.Itoa(mport),
		pids: func() []int { return []int{cmd.Process.Pid} }}
}

// cpuProfile writes a CPU profile of d (whole seconds, at least one) from
// mvpctl's /debug/pprof.
func cpuProfile(ctx context.Context, metricsURL string, d time.Duration, path string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, fmt.Sprintf("%s/debug/pprof/profile?seconds=%d", metricsURL, max(1, int(d/time.Second))), nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("HTTP %d", resp.StatusCode)
	}
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	return os.WriteFile(path, data, 0o644)
}

// benchClient speaks HTTP/2 and does not ask for gzip (kubectl --disable-compression;
// with gzip the apiserver would compress the LIST to a few KB), so the LIST
// moves its 2.5 MB through the proxy.
func benchClient() *http.Client {
	return &http.Client{Transport: &http.Transport{
		TLSClientConfig:     &tls.Config{InsecureSkipVerify: true},
		ForceAttemptHTTP2:   true,
		MaxIdleConnsPerHost: 64,
		DisableCompression:  true,
	}, Timeout: 60 * time.Second}
}

func runScenario(ctx context.Context, client *http.Client, v benchVariant, sc benchScenario, token string, d time.Duration) benchSample {
	var mu sync.Mutex
	var smp benchSample
	cpu0 := cpuTime(v)
	start := time.Now()
	deadline := start.Add(d)
	var wg sync.WaitGroup
	for range sc.concurrency {
		wg.Go(func() {
			var lat []time.Duration
			n, errs := 0, 0
			for time.Now().Before(deadline) && ctx.Err() == nil {
				req, err := http.NewRequestWithContext(ctx, http.MethodGet, v.url+sc.path(), nil)
				if err != nil {
					errs++
					break
				}
				req.Header.Set("Authorization", "Bearer "+token)
				req.Header.Set("Accept", "application/json")
				t0 := time.Now()
				resp, err := client.Do(req)
				if err == nil {
					_, err = io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
					if err == nil && resp.StatusCode != http.StatusOK {
						err = fmt.Errorf("HTTP %d", resp.StatusCode)
					}
				}
				lat = append(lat, time.Since(t0))
				n++
				if err != nil {
					errs++
				}
			}
			mu.Lock()
			smp.requests += n
			smp.errors += errs
			smp.latencies = append(smp.latencies, lat...)
			mu.Unlock()
		})
	}
	wg.Wait()
	smp.elapsed = time.Since(start)
	smp.cpu = cpuTime(v) - cpu0
	return smp
}

// cpuTime is the user+system CPU time of the variant's processes, from
// /proc/<pid>/stat.
func cpuTime(v benchVariant) time.Duration {
	if v.pids == nil {
		return 0
	}
	var total time.Duration
	for _, pid := range v.pids() {
		data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil {
			continue
		}
		// Fields after the command name (which is in parentheses).
		fields := strings.Fields(string(data[strings.LastIndexByte(string(data), ')')+2:]))
		utime, _ := strconv.ParseInt(fields[11], 10, 64)
		stime, _ := strconv.ParseInt(fields[12], 10, 64)
		total += time.Duration(utime+stime) * time.Second / 100 // USER_HZ
	}
	return total
}

func startBareProxy(t *testing.T, dir, backend, caFile string, tuned bool) benchVariant {
	t.Helper()
	bin := filepath.Join(dir, "bareproxy")
	if _, err := os.Stat(bin); err != nil {
		out, err := exec.Command("go", "build", "-o", bin, "./bareproxy").CombinedOutput()
		if err != nil {
			t.Fatalf("go build ./bareproxy: %v\n%s", err, out)
		}
	}
	port := freePort(t)
	cmd := exec.Command(bin, "-listen", "127.0.0.1:"+strconv.Itoa(port), "-backend", backend, "-ca", caFile, "-tuned="+strconv.FormatBool(tuned))
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	waitListening(t, port)
	name := "bare ReverseProxy (default)"
	if tuned {
		name = "bare ReverseProxy (HTTP/1.1 upstream, no gzip, 256 idle)"
	}
	return benchVariant{name: name, url: "https://127.0.0.1:" + strconv.Itoa(port), pids: func() []int { return []int{cmd.Process.Pid} }}
}

// startNginx runs the Debian nginx as a reverse proxy with upstream
// keepalive; it reports false when nginx is not installed.
func startNginx(t *testing.T, dir, backend, caFile string) (benchVariant, bool) {
	t.Helper()
	bin, err := exec.LookPath("nginx")
	if err != nil {
		t.Log("nginx is not installed (apt-get install nginx-light); skipping that variant")
		return benchVariant{}, false
	}
	ndir := filepath.Join(dir, "nginx")
	if err := os.MkdirAll(ndir, 0o755); err != nil {
		t.Fatal(err)
	}
	writeServingCert(t, ndir)
	port := freePort(t)
	conf := fmt.Sprintf(`worker_processes auto;
daemon off;
pid %[1]s/nginx.pid;
error_log %[1]s/error.log warn;
events { worker_connections 4096; }
http {
  access_log off;
  client_body_temp_path %[1]s/body;
  proxy_temp_path %[1]s/proxy;
  fastcgi_temp_path %[1]s/fastcgi;
  uwsgi_temp_path %[1]s/uwsgi;
  scgi_temp_path %[1]s/scgi;
  upstream apiserver {
    server %[2]s;
    keepalive 64;
  }
  server {
    listen 127.0.0.1:%[3]d ssl http2;
    ssl_certificate %[1]s/cert.pem;
    ssl_certificate_key %[1]s/key.pem;
    client_max_body_size 3m;
    location / {
      proxy_pass https://apiserver;
      proxy_http_version 1.1;
      proxy_set_header Connection "";
      proxy_ssl_trusted_certificate %[4]s;
      proxy_ssl_session_reuse on;
      proxy_buffering off;
      proxy_request_buffering off;
      proxy_read_timeout 3600s;
    }
  }
}
`, ndir, strings.TrimPrefix(backend, "https://"), port, caFile)
	confPath := filepath.Join(ndir, "nginx.conf")
	if err := os.WriteFile(confPath, []byte(conf), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "-c", confPath, "-p", ndir)
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL, Setpgid: true}
	out, err := os.Create(filepath.Join(ndir, "stderr.log"))
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		cmd.Wait()
	})
	waitListening(t, port)
	master := cmd.Process.Pid
	return benchVariant{name: "nginx " + nginxVersion(bin), url: "https://127.0.0.1:" + strconv.Itoa(port), pids: func() []int { return processTree(master) }}, true
}

func nginxVersion(bin string) string {
	out, _ := exec.Command(bin, "-v").CombinedOutput()
	_, v, _ := strings.Cut(strings.TrimSpace(string(out)), "nginx/")
	return v
}

// processTree lists pid and its children (nginx's workers).
func processTree(pid int) []int {
	pids := []int{pid}
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		child, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", child))
		if err != nil {
			continue
		}
		fields := strings.Fields(string(data[strings.LastIndexByte(string(data), ')')+2:]))
		if ppid, _ := strconv.Atoi(fields[1]); ppid == pid {
			pids = append(pids, child)
		}
	}
	return pids
}

func waitListening(t *testing.T, port int) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		c, err := net.DialTimeout("tcp", "127.0.0.1:"+strconv.Itoa(port), time.Second)
		if err == nil {
			c.Close()
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("nothing listens on %d: %v", port, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func writeServingCert(t *testing.T, dir string) {
	t.Helper()
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "127.0.0.1"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		KeyUsage: x509.KeyUsageDigitalSignature,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	kb, _ := x509.MarshalECPrivateKey(key)
	if err := os.WriteFile(filepath.Join(dir, "cert.pem"), pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "key.pem"), pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kb}), 0o600); err != nil {
		t.Fatal(err)
	}
}

func percentile(d []time.Duration, p float64) time.Duration {
	if len(d) == 0 {
		return 0
	}
	s := slices.Clone(d)
	slices.Sort(s)
	return s[min(len(s)-1, int(float64(len(s))*p))]
}

func median(xs []float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	if len(s) == 0 {
		return 0
	}
	return s[len(s)/2]
}

// benchTable reports per scenario and variant the medians over the rounds:
// p50 and p99 latency, throughput as a ratio to direct in the same round,
// and the proxy's CPU time per request.
func benchTable(variants []benchVariant, scenarios []benchScenario, results map[string]map[string][]benchSample, rounds int) string {
	var b strings.Builder
	fmt.Fprintf(&b, "Medians over %d interleaved rounds; throughput ratio and added latency are against direct access in the same round.\n\n", rounds)
	for _, sc := range scenarios {
		fmt.Fprintf(&b, "**%s**\n\n| variant | p50 | p99 | added p50 | added p99 | req/s | ×direct | proxy CPU/request |\n|---|---:|---:|---:|---:|---:|---:|---:|\n", sc.name)
		direct := results[sc.name]["direct"]
		for _, v := range variants {
			smps := results[sc.name][v.name]
			var p50, p99, add50, add99, rps, ratio, cpu []float64
			for i, s := range smps {
				a50, a99 := percentile(s.latencies, 0.5), percentile(s.latencies, 0.99)
				d50, d99 := percentile(direct[i].latencies, 0.5), percentile(direct[i].latencies, 0.99)
				p50 = append(p50, float64(a50))
				p99 = append(p99, float64(a99))
				add50 = append(add50, float64(a50-d50))
				add99 = append(add99, float64(a99-d99))
				r := float64(s.requests) / s.elapsed.Seconds()
				rps = append(rps, r)
				ratio = append(ratio, r/(float64(direct[i].requests)/direct[i].elapsed.Seconds()))
				if s.requests > 0 {
					cpu = append(cpu, float64(s.cpu)/float64(s.requests))
				}
			}
			cpuCol := "–"
			if v.pids != nil {
				cpuCol = dur(median(cpu))
			}
			added50, added99 := dur(median(add50)), dur(median(add99))
			if v.name == "direct" {
				added50, added99 = "–", "–"
			}
			fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %.0f | ×%.2f | %s |\n", v.name, dur(median(p50)), dur(median(p99)), added50, added99, median(rps), median(ratio), cpuCol)
		}
		b.WriteString("\n")
	}
	return b.String()
}

func dur(ns float64) string {
	d := time.Duration(ns)
	switch {
	case d < 0 && -d < time.Millisecond:
		return fmt.Sprintf("%.0f µs", ns/1e3)
	case d < time.Millisecond && d > -time.Millisecond:
		return fmt.Sprintf("%.0f µs", ns/1e3)
	default:
		return fmt.Sprintf("%.2f ms", ns/1e6)
	}
}
