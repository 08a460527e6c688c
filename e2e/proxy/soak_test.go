package proxy_test

import (
	"context"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/flowcontrol"

	"github.com/mvpctl/mvpctl/e2e/framework"
)

// The soak's load: bounded, loopback only.
const (
	soakQPS             = 50 // requests per second over all workers
	soakWorkers         = 3  // ConfigMap create/get/list/update/delete loops (configMapWorker)
	soakSampleEvery     = 10 * time.Second
	soakSettle          = 150 * time.Second // the proxy closes idle upstream connections after 90s
	soakLoadMargin      = 20                // goroutines the second half of the load may hold above the first's peak
	soakGoroutineMargin = 5                 // above the idle baseline once the load has stopped
	soakFDMargin        = 2                 // likewise, descriptors
	soakRSSMargin       = 32 << 20          // plus a quarter: memory the second half may hold above the first's peak
)

// TestProxy_Soak runs mixed client-go load through mvpctl proxy for
// MVPCTL_E2E_SOAK_DURATION (default 10m): GET, LIST, watches kept open and
// watches closed by the client, create/update/delete, and the same on an
// emulated version (the seed CRD's v1alpha1, which no server serves). Every
// 10s it samples the proxy's resident memory, goroutines (go_goroutines)
// and open file descriptors. No request may fail; under load the second
// half of the run may not hold more goroutines or memory than the first;
// once the load stops and idle connections close, goroutines and
// descriptors return to the idle baseline; SIGTERM then exits 0 with no
// goroutine left. Runs only with MVPCTL_E2E_SOAK=1 (make soak); writes
// Markdown to MVPCTL_E2E_SOAK_REPORT.
func TestProxy_Soak(t *testing.T) {
	if os.Getenv("MVPCTL_E2E_SOAK") != "1" {
		t.Skip("set MVPCTL_E2E_SOAK=1 to run the soak (make soak)")
	}
	duration := 10 * time.Minute
	if s := os.Getenv("MVPCTL_E2E_SOAK_DURATION"); s != "" {
		var err error
		if duration, err = time.ParseDuration(s); err != nil || duration <= 0 {
			t.Fatalf("MVPCTL_E2E_SOAK_DURATION=%q: want a positive duration such as 10m", s)
		}
	}
	cp := framework.Start(t, framework.Options{Versions: []string{oldVersion, newVersion}})
	ctx, cancel := context.WithTimeout(t.Context(), duration+10*time.Minute)
	defer cancel()

	// The seed CRD (v1beta1 only) and the seed rules: v1alpha1 is emulated.
	crd, rules := testdataPath(t, crdV1beta1OnlyFile), testdataPath(t, seedRulesFile)
	direct := cp.Server(1).Kubeconfig
	if out, err := kubectl(t, ctx, direct, "apply", "-f", crd); err != nil {
		t.Fatalf("creating the CRD: %v\n%s", err, out)
	}
	if out, err := kubectl(t, ctx, direct, "wait", "--for=condition=Established", "crd/customresources.myapps.example.com", "--timeout=60s"); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	p := startProxy(t, cp, "--rules", rules, "--refresh-interval", "2s")
	setup := kubernetes.NewForConfigOrDie(cp.Server(0).RESTConfig())
	if _, err := setup.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "load"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	cfg := p.tokenConfig(cp)
	cfg.RateLimiter = flowcontrol.NewTokenBucketRateLimiter(soakQPS, soakQPS/4)
	cfg.Timeout = 30 * time.Second // longer than the watches' 20s
	hc, err := rest.HTTPClientFor(cfg)
	if err != nil {
		t.Fatal(err)
	}
	cs, err := kubernetes.NewForConfigAndClient(cfg, hc)
	if err != nil {
		t.Fatal(err)
	}
	dyn, err := dynamic.NewForConfigAndClient(cfg, hc)
	if err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(time.Minute); ; {
		_, err := dyn.Resource(crV1alpha1).Namespace("load").List(ctx, metav1.ListOptions{Limit: 1})
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("v1alpha1 is not emulated after a minute: %v", err)
		}
		time.Sleep(200 * time.Millisecond)
	}

	time.Sleep(5 * time.Second)
	idle := sampleProxy(t, p)
	res := &loadResult{}
	// Not a deadline: the clients' rate limiter fails waits that would end
	// after it.
	loadCtx, stopLoad := context.WithCancel(ctx)
	defer stopLoad()
	time.AfterFunc(duration, stopLoad)
	var wg sync.WaitGroup
	for w := range soakWorkers {
		wg.Go(func() { configMapWorker(loadCtx, cs, w, res) })
	}
	wg.Go(func() { configMapWatcher(loadCtx, cs, res) })
	wg.Go(func() { shortWatches(loadCtx, cs, res) })
	wg.Go(func() { emulatedWorker(loadCtx, dyn, res) })
	wg.Go(func() { emulatedWatcher(loadCtx, dyn, res) })

	start := time.Now()
	var samples []proxySample
	tick := time.NewTicker(soakSampleEvery)
	for loadCtx.Err() == nil {
		select {
		case <-loadCtx.Done():
		case <-tick.C:
			samples = append(samples, sampleProxy(t, p))
		}
	}
	tick.Stop()
	wg.Wait()
	took := time.Since(start)
	loaded := sampleProxy(t, p)

	// The clients close their connections; the proxy's upstream ones go
	// after its idle timeout. Wait for the idle baseline (which had a few
	// pooled connections of its own), then allow the margins.
	hc.CloseIdleConnections()
	settled, settleStart := loaded, time.Now()
	for time.Since(settleStart) < soakSettle {
		time.Sleep(5 * time.Second)
		settled = sampleProxy(t, p)
		if settled.goroutines <= idle.goroutines && settled.fds <= idle.fds {
			break
		}
	}
	settledAfter := time.Since(settleStart)

	first, second := samples[:len(samples)/2], samples[len(samples)/2:]
	report := soakTable(idle, samples, loaded, settled, settledAfter)
	t.Logf("soak %s at %d req/s: %d requests, %d watch sessions, %d client-visible errors %v\n%s",
		took.Round(time.Second), soakQPS, res.requests.Load(), res.watches.Load(), res.total(), res.kinds(), report)
	if path := os.Getenv("MVPCTL_E2E_SOAK_REPORT"); path != "" {
		head := fmt.Sprintf("Soak of %s at %d req/s: %d requests, %d watch sessions, %d client-visible errors.\n\n",
			took.Round(time.Second), soakQPS, res.requests.Load(), res.watches.Load(), res.total())
		if err := os.WriteFile(path, []byte(head+report), 0o644); err != nil {
			t.Error(err)
		}
	}
	if res.total() != 0 {
		t.Errorf("%d client-visible errors, want 0: %v\nexamples: %v", res.total(), res.kinds(), res.examples)
	}
	if len(first) >= 2 {
		if a, b := maxOf(first, goroutinesOf), maxOf(second, goroutinesOf); b > a+soakLoadMargin {
			t.Errorf("goroutines under load grew: at most %d in the first half, %d in the second", a, b)
		}
		if a, b := maxOf(first, rssOf), maxOf(second, rssOf); b > a+a/4+soakRSSMargin {
			t.Errorf("resident memory under load grew: at most %d MiB in the first half, %d MiB in the second", a>>20, b>>20)
		}
	}
	if settled.goroutines > idle.goroutines+soakGoroutineMargin {
		t.Errorf("goroutines %s after the load: %d, idle before it %d", settledAfter.Round(time.Second), settled.goroutines, idle.goroutines)
	}
	if settled.fds > idle.fds+soakFDMargin {
		t.Errorf("open descriptors %s after the load: %d, idle before it %d", settledAfter.Round(time.Second), settled.fds, idle.fds)
	}
	stopped := time.Now()
	if err := p.stop(proxyExitTimeout); err != nil {
		t.Errorf("mvpctl proxy after SIGTERM: %v (see its log for leaked goroutines)", err)
	} else {
		t.Logf("SIGTERM: exited 0 in %s, no goroutine left", time.Since(stopped).Round(time.Millisecond))
	}
}

// proxySample is one reading of the proxy process.
type proxySample struct {
	at         time.Time
	rss        int64 // VmRSS, bytes
	goroutines int   // go_goroutines
	fds        int   // entries of /proc/<pid>/fd
}

func sampleProxy(t *testing.T, p *proxyProcess) proxySample {
	t.Helper()
	s := proxySample{at: time.Now(), rss: procKB(p.PID(), "VmRSS")}
	s.goroutines = int(metricSum(p.metricsText(t), "go_goroutines", nil))
	if fds, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", p.PID())); err == nil {
		s.fds = len(fds)
	}
	return s
}

func goroutinesOf(s proxySample) int64 { return int64(s.goroutines) }
func rssOf(s proxySample) int64        { return s.rss }

func maxOf(samples []proxySample, f func(proxySample) int64) int64 {
	m := int64(0)
	for _, s := range samples {
		m = max(m, f(s))
	}
	return m
}

// soakTable renders the samples' summary in Markdown.
func soakTable(idle proxySample, samples []proxySample, loaded, settled proxySample, settledAfter time.Duration) string {
	if len(samples) == 0 {
		samples = []proxySample{loaded}
	}
	var b strings.Builder
	row := func(name string, f func(proxySample) int64, unit func(int64) string) {
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %s |\n", name, unit(f(idle)), unit(f(samples[0])), unit(maxOf(samples, f)), unit(f(loaded)), unit(f(settled)))
	}
	fmt.Fprintf(&b, "| | idle before | first sample under load | max under load (%d samples, every %s) | end of load | %s after the load |\n|---|---:|---:|---:|---:|---:|\n",
		len(samples), soakSampleEvery, settledAfter.Round(time.Second))
	mib := func(v int64) string { return fmt.Sprintf("%.1f MiB", float64(v)/(1<<20)) }
	num := func(v int64) string { return fmt.Sprint(v) }
	row("resident memory (VmRSS)", rssOf, mib)
	row("goroutines (go_goroutines)", goroutinesOf, num)
	row("open descriptors (/proc/PID/fd)", func(s proxySample) int64 { return int64(s.fds) }, num)
	return b.String()
}

// shortWatches opens ConfigMap watches that the client closes after one to
// three seconds.
func shortWatches(ctx context.Context, cs *kubernetes.Clientset, res *loadResult) {
	for i := 0; ctx.Err() == nil; i++ {
		wctx, cancel := context.WithTimeout(ctx, time.Duration(1+i%3)*time.Second)
		res.requests.Add(1)
		w, err := cs.CoreV1().ConfigMaps("load").Watch(wctx, metav1.ListOptions{})
		if err != nil {
			if wctx.Err() == nil {
				res.fail(classify("short watch", err), err)
			}
			cancel()
			continue
		}
		res.watches.Add(1)
		for ev := range w.ResultChan() {
			if ev.Type == watch.Error && wctx.Err() == nil {
				res.fail("error event on short watch", nil)
			}
		}
		w.Stop()
		cancel()
	}
}

// emulatedWorker creates, reads, lists and deletes v1alpha1 custom
// resources, which the proxy converts to and from v1beta1; a read must give
// back what was written.
func emulatedWorker(ctx context.Context, dyn *dynamic.DynamicClient, res *loadResult) {
	crs := dyn.Resource(crV1alpha1).Namespace("load")
	for i := 0; ctx.Err() == nil; i++ {
		name := fmt.Sprintf("seed-%d", i)
		step := func(op string, f func() error) bool {
			res.requests.Add(1)
			err := f()
			if err != nil && ctx.Err() == nil {
				res.fail(classify("emulated "+op, err), err)
			}
			return err == nil
		}
		obj := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "myapps.example.com/v1alpha1", "kind": "CustomResource",
			"metadata": map[string]any{"name": name},
			"spec": map[string]any{"replicas": int64(1), "stateManagement": "ephemeral",
				"config": map[string]any{"legacyTimeout": int64(30), "retries": int64(3)}},
		}}
		if !step("create", func() error { _, err := crs.Create(ctx, obj, metav1.CreateOptions{}); return err }) {
			continue
		}
		step("get", func() error {
			got, err := crs.Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return err
			}
			if v, _, _ := unstructured.NestedInt64(got.Object, "spec", "config", "legacyTimeout"); v != 30 {
				res.fail("emulated get: legacyTimeout not read back", fmt.Errorf("%v", got.Object["spec"]))
			}
			return nil
		})
		step("list", func() error { _, err := crs.List(ctx, metav1.ListOptions{Limit: 20}); return err })
		step("delete", func() error { return crs.Delete(ctx, name, metav1.DeleteOptions{}) })
	}
}

func emulatedWatcher(ctx context.Context, dyn *dynamic.DynamicClient, res *loadResult) {
	crs := dyn.Resource(crV1alpha1).Namespace("load")
	timeout := int64(20)
	watchLoop(ctx, res, "emulated watch",
		func() (string, error) {
			l, err := crs.List(ctx, metav1.ListOptions{Limit: 1})
			if err != nil {
				return "", err
			}
			return l.GetResourceVersion(), nil
		},
		func(rv string) (watch.Interface, error) {
			return crs.Watch(ctx, metav1.ListOptions{ResourceVersion: rv, AllowWatchBookmarks: true, TimeoutSeconds: &timeout})
		})
}
