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
	name string
	url  string
	pids func() []int // processes whose CPU time is the proxy's; nil for direct
}

type benchScenario struct {
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
	p := startProxy(t, cp, "--log-level", "warn")
	variants = append(variants, benchVariant{name: "mvpctl proxy", url: p.URL, pids: func() []int { return []int{p.cmd.Process.Pid} }})

	scenarios := []benchScenario{
		{"GET one ConfigMap, concurrency 1", func() string { return fmt.Sprintf("/api/v1/namespaces/bench/configmaps/cm-%03d", mrand.IntN(500)) }, 1, 4 * time.Second},
		{"GET one ConfigMap, concurrency 16", func() string { return fmt.Sprintf("/api/v1/namespaces/bench/configmaps/cm-%03d", mrand.IntN(500)) }, 16, 4 * time.Second},
		{"LIST 500 ConfigMaps (2.5 MB), concurrency 4", func() string { return "/api/v1/namespaces/bench/configmaps" }, 4, 6 * time.Second},
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
				smp := runScenario(ctx, client, v, sc, cp.PKI.Token, sc.duration)
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
	t.Log("\n" + report)
	if path := os.Getenv("MVPCTL_E2E_BENCH_REPORT"); path != "" {
		if err := os.WriteFile(path, []byte(report), 0o644); err != nil {
			t.Error(err)
		}
	}
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
				req, _ := http.NewRequestWithContext(ctx, http.MethodGet, v.url+sc.path(), nil)
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
	os.MkdirAll(ndir, 0o755)
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
	os.WriteFile(confPath, []byte(conf), 0o644)
	cmd := exec.Command(bin, "-c", confPath, "-p", ndir)
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL, Setpgid: true}
	out, _ := os.Create(filepath.Join(ndir, "stderr.log"))
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
	os.WriteFile(filepath.Join(dir, "cert.pem"), pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o644)
	os.WriteFile(filepath.Join(dir, "key.pem"), pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kb}), 0o600)
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
