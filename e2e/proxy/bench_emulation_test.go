package proxy_test

import (
	"bufio"
	"context"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	mrand "math/rand/v2"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	utilyaml "k8s.io/apimachinery/pkg/util/yaml"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"

	"github.com/mvpctl/mvpctl/e2e/framework"
)

// webhookCRD is testdata/crd-webhook.yaml, as JSON, with the webhook's URL
// and CA.
func webhookCRD(t *testing.T, url string, ca []byte) string {
	t.Helper()
	var crd map[string]any
	if err := utilyaml.NewYAMLOrJSONDecoder(strings.NewReader(readTestdata(t, "testdata/crd-webhook.yaml")), 4096).Decode(&crd); err != nil {
		t.Fatal(err)
	}
	clientConfig := map[string]any{"url": url + "/convert", "caBundle": base64.StdEncoding.EncodeToString(ca)}
	if err := unstructured.SetNestedMap(crd, clientConfig, "spec", "conversion", "webhook", "clientConfig"); err != nil {
		t.Fatal(err)
	}
	data, err := json.Marshal(crd)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

// benchCRD is the emulation scenario's CRD with room for a payload.
func benchCRD(t *testing.T) string {
	t.Helper()
	const replicas = "              replicas: {type: integer}\n"
	crd := readTestdata(t, crdV1beta1OnlyFile)
	if !strings.Contains(crd, replicas) {
		t.Fatalf("%s has no spec.replicas to add a payload beside", crdV1beta1OnlyFile)
	}
	return strings.Replace(crd, replicas, replicas+"              payload: {type: string}\n", 1)
}

// conversionWebhook is the small Go webhook users write for the seed's
// change: legacyTimeout <-> requestTimeoutSeconds, ephemeral <-> stateless.
func conversionWebhook(w http.ResponseWriter, r *http.Request) {
	var review struct {
		APIVersion string `json:"apiVersion"`
		Kind       string `json:"kind"`
		Request    struct {
			UID               string           `json:"uid"`
			DesiredAPIVersion string           `json:"desiredAPIVersion"`
			Objects           []map[string]any `json:"objects"`
		} `json:"request"`
	}
	dec := json.NewDecoder(r.Body)
	dec.UseNumber()
	if err := dec.Decode(&review); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	out := make([]any, 0, len(review.Request.Objects))
	for _, o := range review.Request.Objects {
		spec, _ := o["spec"].(map[string]any)
		cfg, _ := spec["config"].(map[string]any)
		if strings.HasSuffix(review.Request.DesiredAPIVersion, "/v1beta1") {
			if v, ok := cfg["legacyTimeout"]; ok {
				cfg["requestTimeoutSeconds"] = v
				delete(cfg, "legacyTimeout")
			}
			if spec["stateManagement"] == "ephemeral" {
				spec["stateManagement"] = "stateless"
			}
		} else {
			if v, ok := cfg["requestTimeoutSeconds"]; ok {
				cfg["legacyTimeout"] = v
				delete(cfg, "requestTimeoutSeconds")
			}
			if spec["stateManagement"] == "stateless" {
				spec["stateManagement"] = "ephemeral"
			}
		}
		o["apiVersion"] = review.Request.DesiredAPIVersion
		out = append(out, o)
	}
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(map[string]any{
		"apiVersion": review.APIVersion, "kind": review.Kind,
		"response": map[string]any{"uid": review.Request.UID, "convertedObjects": out, "result": map[string]any{"status": "Success"}},
	})
}

// emulationBenchObject is a v1beta1 object of about size bytes.
func emulationBenchObject(kind, ns, name string, size int) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "myapps.example.com/v1beta1", "kind": kind,
		"metadata": map[string]any{"name": name, "namespace": ns},
		"spec": map[string]any{
			"replicas": int64(1), "stateManagement": "stateless",
			"config":  map[string]any{"requestTimeoutSeconds": int64(30), "retries": int64(3)},
			"payload": strings.Repeat("0123456789abcdef", size/16),
		},
	}}
}

func createMany(t *testing.T, ctx context.Context, dyn dynamic.Interface, gvr schema.GroupVersionResource, kind, ns string, n, size int) {
	t.Helper()
	var wg sync.WaitGroup
	errs := make(chan error, 16)
	for w := range 16 {
		wg.Go(func() {
			for i := w; i < n; i += 16 {
				if _, err := dyn.Resource(gvr).Namespace(ns).Create(ctx, emulationBenchObject(kind, ns, fmt.Sprintf("o-%05d", i), size), metav1.CreateOptions{}); err != nil {
					select {
					case errs <- err:
					default:
					}
					return
				}
			}
		})
	}
	wg.Wait()
	select {
	case err := <-errs:
		t.Fatalf("creating %s: %v", gvr.Resource, err)
	default:
	}
}

// peakRSSReset clears a process's peak resident set (VmHWM) so that the next
// reading is the peak of what follows.
func peakRSSReset(pid int) error {
	return os.WriteFile(fmt.Sprintf("/proc/%d/clear_refs", pid), []byte("5"), 0o644)
}

// procKB reads a VmRSS/VmHWM line of /proc/<pid>/status in bytes.
func procKB(pid int, key string) int64 {
	data, _ := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	for _, line := range strings.Split(string(data), "\n") {
		if v, ok := strings.CutPrefix(line, key+":"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			return kb << 10
		}
	}
	return 0
}

// TestProxy_EmulationBenchmark measures version emulation against one real
// kube-apiserver in one run: GET of a ~5 KB object emulated and passed
// through by the proxy, LIST of 10,000 objects (time and the proxy's peak
// memory), watch throughput (10,000 initial events), and a CRD conversion
// webhook doing the same conversion as the anchor. Runs only with
// MVPCTL_E2E_BENCH=1; writes Markdown to MVPCTL_E2E_EMULATION_REPORT.
func TestProxy_EmulationBenchmark(t *testing.T) {
	if os.Getenv("MVPCTL_E2E_BENCH") == "" {
		t.Skip("set MVPCTL_E2E_BENCH=1 to run the emulation benchmark")
	}
	cp := framework.Start(t, framework.Options{Versions: []string{newVersion}})
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Minute)
	defer cancel()
	direct := cp.Server(0).Kubeconfig
	dir := t.TempDir()

	hook := httptest.NewTLSServer(http.HandlerFunc(conversionWebhook))
	defer hook.Close()
	ca := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: hook.Certificate().Raw})
	for name, doc := range map[string]string{"crd.yaml": benchCRD(t), "hook.json": webhookCRD(t, hook.URL, ca)} {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, []byte(doc), 0o644); err != nil {
			t.Fatal(err)
		}
		if out, err := kubectl(t, ctx, direct, "apply", "-f", path); err != nil {
			t.Fatalf("%v\n%s", err, out)
		}
	}
	for _, crd := range []string{"customresources.myapps.example.com", "webhookresources.myapps.example.com"} {
		if out, err := kubectl(t, ctx, direct, "wait", "--for=condition=Established", "crd/"+crd, "--timeout=60s"); err != nil {
			t.Fatalf("%v\n%s", err, out)
		}
	}
	cfg := cp.Server(0).RESTConfig()
	cfg.QPS, cfg.Burst = 2000, 2000
	cs := kubernetes.NewForConfigOrDie(cfg)
	for _, ns := range []string{"get", "list"} {
		if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	dyn := dynamic.NewForConfigOrDie(cfg)
	hookV1beta1 := schema.GroupVersionResource{Group: "myapps.example.com", Version: "v1beta1", Resource: "webhookresources"}
	const getObjects, listObjects = 100, 10000
	createMany(t, ctx, dyn, crV1beta1, "CustomResource", "get", getObjects, 5000)
	createMany(t, ctx, dyn, hookV1beta1, "WebhookResource", "get", getObjects, 5000)
	createMany(t, ctx, dyn, crV1beta1, "CustomResource", "list", listObjects, 500)

	rulesFile := testdataPath(t, seedRulesFile)
	profileDir := os.Getenv("MVPCTL_E2E_PROFILE_DIR")
	// --profiling (on the loopback metrics address) forces the proxy's
	// garbage collection between measurements, and records its profiles.
	proxyArgs := []string{"--rules", rulesFile, "--log-level", "warn", "--profiling"}
	p := startProxy(t, cp, proxyArgs...)
	// A baseline build, measured in the same rounds: before/after figures
	// from one run, on one machine.
	var base *proxyProcess
	if bin := os.Getenv("MVPCTL_E2E_BASELINE_MVPCTL"); bin != "" {
		base = startProxyBinary(t, cp, bin, proxyArgs...)
	}
	apiPID := cp.Server(0).PID()
	client := benchClient()
	token := cp.PKI.Token
	get := func(base, path string) (int64, time.Duration, error) {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+path, nil)
		if err != nil {
			return 0, 0, err
		}
		req.Header.Set("Authorization", "Bearer "+token)
		req.Header.Set("Accept", "application/json")
		t0 := time.Now()
		resp, err := client.Do(req)
		if err != nil {
			return 0, 0, err
		}
		n, err := io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if err == nil && resp.StatusCode != http.StatusOK {
			err = fmt.Errorf("GET %s: HTTP %d", path, resp.StatusCode)
		}
		return n, time.Since(t0), err
	}

	// GET: four variants interleaved over rounds, concurrency 1.
	type getVariant struct{ name, base, path string }
	gets := []getVariant{
		{"proxy, v1beta1 passed through", p.URL, "/apis/myapps.example.com/v1beta1/namespaces/get/customresources/o-%05d"},
		{"proxy, v1alpha1 emulated", p.URL, "/apis/myapps.example.com/v1alpha1/namespaces/get/customresources/o-%05d"},
		{"direct, webhook CRD v1beta1 (storage version)", cp.Server(0).URL, "/apis/myapps.example.com/v1beta1/namespaces/get/webhookresources/o-%05d"},
		{"direct, webhook CRD v1alpha1 (conversion webhook)", cp.Server(0).URL, "/apis/myapps.example.com/v1alpha1/namespaces/get/webhookresources/o-%05d"},
	}
	lat := map[string][]time.Duration{}
	var objSize int64
	const rounds, perRound = 4, 2 * time.Second
	for round := range rounds + 1 {
		for _, v := range gets {
			deadline := time.Now().Add(perRound)
			for time.Now().Before(deadline) {
				n, d, err := get(v.base, fmt.Sprintf(v.path, mrand.IntN(getObjects)))
				if err != nil {
					t.Fatalf("%s: %v", v.name, err)
				}
				if round > 0 { // round 0 warms up
					lat[v.name] = append(lat[v.name], d)
					objSize = n
				}
			}
		}
	}

	// LIST of 10,000 objects: time, size, and the proxy's peak memory.
	type listResult struct {
		times    []time.Duration
		proxyCPU []time.Duration // the proxy's CPU time per LIST
		apiCPU   []time.Duration // the kube-apiserver's
		size     int64
		peakGrow int64
	}
	lists := map[string]*listResult{}
	type listVariant struct {
		name, path string
		proxy      *proxyProcess
	}
	listPaths := []listVariant{
		{"passed through (v1beta1)", "/apis/myapps.example.com/v1beta1/namespaces/list/customresources", p},
		{"emulated (v1alpha1)", "/apis/myapps.example.com/v1alpha1/namespaces/list/customresources", p},
	}
	if base != nil {
		listPaths = append(listPaths, listVariant{"emulated (v1alpha1), baseline build", listPaths[1].path, base})
	}
	const measuredRounds = 5
	for round := range measuredRounds + 1 {
		for _, lp := range listPaths {
			collectGarbage(t, ctx, cs, lp.proxy)
			pid := lp.proxy.PID()
			rss := procKB(pid, "VmRSS")
			if err := peakRSSReset(pid); err != nil {
				t.Fatalf("resetting the peak RSS: %v", err)
			}
			pcpu, acpu := procCPU(pid), procCPU(apiPID)
			n, d, err := get(lp.proxy.URL, lp.path)
			if err != nil {
				t.Fatal(err)
			}
			pcpu, acpu = procCPU(pid)-pcpu, procCPU(apiPID)-acpu
			grow := procKB(pid, "VmHWM") - rss
			if round == 0 {
				continue
			}
			r := lists[lp.name]
			if r == nil {
				r = &listResult{}
				lists[lp.name] = r
			}
			r.times = append(r.times, d)
			r.proxyCPU, r.apiCPU = append(r.proxyCPU, pcpu), append(r.apiCPU, acpu)
			r.size = n
			r.peakGrow = max(r.peakGrow, grow)
		}
	}

	// Watch throughput: the 10,000 initial events of a streaming list
	// (sendInitialEvents), up to the bookmark that ends them.
	watchRate := map[string][]float64{}
	watchCPU := map[string][2][]time.Duration{} // proxy, kube-apiserver
	watchInitial := func(base, path string) (int, time.Duration, error) {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+path+"?watch=true&sendInitialEvents=true&resourceVersionMatch=NotOlderThan&allowWatchBookmarks=true", nil)
		if err != nil {
			return 0, 0, err
		}
		req.Header.Set("Authorization", "Bearer "+token)
		req.Header.Set("Accept", "application/json")
		t0 := time.Now()
		resp, err := client.Do(req)
		if err != nil {
			return 0, 0, err
		}
		defer resp.Body.Close()
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(nil, 1<<20)
		events := 0
		for sc.Scan() {
			line := sc.Text()
			if strings.Contains(line, `"type":"BOOKMARK"`) && strings.Contains(line, "initial-events-end") {
				return events, time.Since(t0), nil
			}
			events++
		}
		return events, 0, fmt.Errorf("the watch ended after %d events without the initial-events-end bookmark (%v)", events, sc.Err())
	}
	for round := range measuredRounds + 1 {
		for _, lp := range listPaths {
			collectGarbage(t, ctx, cs, lp.proxy)
			pid := lp.proxy.PID()
			pcpu, acpu := procCPU(pid), procCPU(apiPID)
			events, d, err := watchInitial(lp.proxy.URL, lp.path)
			if err != nil {
				t.Fatalf("watch %s: %v", lp.name, err)
			}
			pcpu, acpu = procCPU(pid)-pcpu, procCPU(apiPID)-acpu
			if events != listObjects {
				t.Fatalf("watch %s: %d initial events, want %d", lp.name, events, listObjects)
			}
			if round > 0 {
				watchRate[lp.name] = append(watchRate[lp.name], float64(events)/d.Seconds())
				c := watchCPU[lp.name]
				watchCPU[lp.name] = [2][]time.Duration{append(c[0], pcpu), append(c[1], acpu)}
			}
		}
	}
	if profileDir != "" {
		profileProxy(t, p, profileDir, "list-passthrough", func() error { _, _, err := get(p.URL, listPaths[0].path); return err })
		profileProxy(t, p, profileDir, "list-emulated", func() error { _, _, err := get(p.URL, listPaths[1].path); return err })
		profileProxy(t, p, profileDir, "watch-passthrough", func() error { _, _, err := watchInitial(p.URL, listPaths[0].path); return err })
		profileProxy(t, p, profileDir, "watch-emulated", func() error { _, _, err := watchInitial(p.URL, listPaths[1].path); return err })
	}

	var b strings.Builder
	fmt.Fprintf(&b, "One kube-apiserver %s with etcd on loopback, one run; the proxy with the seed rules. GET: %d rounds of %s per variant, interleaved, concurrency 1, objects of %d bytes as served. LIST and watch: medians of %d runs (CPU: user+system time of each process during the request).\n\n", newVersion, rounds, perRound, objSize, measuredRounds)
	b.WriteString("**GET of one ~5 KB object**\n\n| variant | requests | p50 | mean | p99 |\n|---|---:|---:|---:|---:|\n")
	mean := func(d []time.Duration) time.Duration {
		var s time.Duration
		for _, x := range d {
			s += x
		}
		return s / time.Duration(max(1, len(d)))
	}
	for _, v := range gets {
		l := lat[v.name]
		fmt.Fprintf(&b, "| %s | %d | %s | %s | %s |\n", v.name, len(l), dur(float64(percentile(l, 0.5))), dur(float64(mean(l))), dur(float64(percentile(l, 0.99))))
	}
	pass, emu := percentile(lat[gets[0].name], 0.5), percentile(lat[gets[1].name], 0.5)
	plain, hooked := percentile(lat[gets[2].name], 0.5), percentile(lat[gets[3].name], 0.5)
	fmt.Fprintf(&b, "\nEmulated / passed-through p50: **×%.2f** (target ≤ ×1.3). Conversion cost per object (p50 difference): emulation %s, conversion webhook %s: the webhook costs **×%.1f** the proxy's conversion.\n\n",
		float64(emu)/float64(pass), dur(float64(emu-pass)), dur(float64(hooked-plain)), float64(hooked-plain)/float64(max(emu-pass, time.Microsecond)))
	fmt.Fprintf(&b, "**LIST of %d objects through the proxy**\n\n| variant | response | median time | proxy CPU | kube-apiserver CPU | proxy peak RSS growth | growth / response |\n|---|---:|---:|---:|---:|---:|---:|\n", listObjects)
	for _, lp := range listPaths {
		r := lists[lp.name]
		fmt.Fprintf(&b, "| %s | %.1f MB | %s | %s | %s | %.1f MB | %.2f |\n", lp.name, float64(r.size)/1e6, dur(float64(percentile(r.times, 0.5))),
			dur(float64(percentile(r.proxyCPU, 0.5))), dur(float64(percentile(r.apiCPU, 0.5))), float64(r.peakGrow)/1e6, float64(r.peakGrow)/float64(r.size))
	}
	lp, le := percentile(lists[listPaths[0].name].times, 0.5), percentile(lists[listPaths[1].name].times, 0.5)
	fmt.Fprintf(&b, "\nEmulated / passed-through LIST time: **×%.2f**.\n\n", float64(le)/float64(lp))
	if base != nil {
		lb := percentile(lists[listPaths[2].name].times, 0.5)
		fmt.Fprintf(&b, "Emulated LIST time, this build / the baseline build: **×%.2f**.\n\n", float64(le)/float64(lb))
	}
	fmt.Fprintf(&b, "**Watch: %d initial events through the proxy**\n\n| variant | events/s (median) | proxy CPU | kube-apiserver CPU |\n|---|---:|---:|---:|\n", listObjects)
	for _, lp := range listPaths {
		c := watchCPU[lp.name]
		fmt.Fprintf(&b, "| %s | %.0f | %s | %s |\n", lp.name, median(watchRate[lp.name]), dur(float64(percentile(c[0], 0.5))), dur(float64(percentile(c[1], 0.5))))
	}
	fmt.Fprintf(&b, "\nEmulated / passed-through watch throughput: **×%.2f**.\n", median(watchRate[listPaths[1].name])/median(watchRate[listPaths[0].name]))
	if base != nil {
		fmt.Fprintf(&b, "\nEmulated watch throughput, this build / the baseline build: **×%.2f**; baseline emulated / passed-through: ×%.2f.\n",
			median(watchRate[listPaths[1].name])/median(watchRate[listPaths[2].name]), median(watchRate[listPaths[2].name])/median(watchRate[listPaths[0].name]))
	}
	report := b.String()
	t.Log("\n" + report)
	if path := os.Getenv("MVPCTL_E2E_EMULATION_REPORT"); path != "" {
		if err := os.WriteFile(path, []byte(report), 0o644); err != nil {
			t.Error(err)
		}
	}
	if r := lists[listPaths[1].name]; r.peakGrow > 2*r.size {
		t.Errorf("emulated LIST: the proxy's peak RSS grew by %d bytes, more than twice the %d-byte response", r.peakGrow, r.size)
	}
}

// collectGarbage collects the garbage of the kube-apiserver and of the proxy
// before a measurement: a LIST of 10,000 objects leaves tens of MB of it in
// both, and without this the next LIST pays for the previous one's: with
// the variants in a fixed order, one variant was charged the other's
// collections, and which one changed from run to run.
func collectGarbage(t *testing.T, ctx context.Context, cs kubernetes.Interface, p *proxyProcess) {
	t.Helper()
	// kube-apiserver serves /debug/pprof (--profiling defaults to true) to
	// the admin; gc=1 collects before the heap profile is written.
	if _, err := cs.CoreV1().RESTClient().Get().AbsPath("/debug/pprof/heap").Param("gc", "1").DoRaw(ctx); err != nil {
		t.Fatalf("collecting the kube-apiserver's garbage: %v", err)
	}
	resp, err := http.Get(p.MetricsURL + "/debug/pprof/heap?gc=1")
	if err != nil {
		t.Fatalf("collecting the proxy's garbage: %v", err)
	}
	_, err = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("collecting the proxy's garbage: HTTP %d, %v", resp.StatusCode, err)
	}
}

// procCPU is a process's user and system CPU time so far.
func procCPU(pid int) time.Duration {
	return cpuTime(benchVariant{pids: func() []int { return []int{pid} }})
}

// profileProxy records a CPU profile of the proxy (its --profiling
// endpoint on the loopback metrics address) while run repeats, into
// dir/name.pprof.
func profileProxy(t *testing.T, p *proxyProcess, dir, name string, run func() error) {
	t.Helper()
	const seconds = 10
	type result struct {
		data []byte
		err  error
	}
	done := make(chan result, 1)
	go func() {
		resp, err := http.Get(fmt.Sprintf("%s/debug/pprof/profile?seconds=%d", p.MetricsURL, seconds))
		if err != nil {
			done <- result{err: err}
			return
		}
		defer resp.Body.Close()
		data, err := io.ReadAll(resp.Body)
		if err == nil && resp.StatusCode != http.StatusOK {
			err = fmt.Errorf("HTTP %d: %s", resp.StatusCode, data)
		}
		done <- result{data, err}
	}()
	for {
		if err := run(); err != nil {
			t.Fatalf("profiling %s: %v", name, err)
		}
		select {
		case r := <-done:
			if r.err != nil {
				t.Fatalf("profiling %s: %v", name, r.err)
			}
			if err := os.WriteFile(filepath.Join(dir, name+".pprof"), r.data, 0o644); err != nil {
				t.Fatal(err)
			}
			return
		default:
		}
	}
}
