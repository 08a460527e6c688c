package proxy_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/flowcontrol"

	"github.com/mvpctl/mvpctl/e2e/framework"
)

// The load of the rolling-upgrade scenario: bounded, loopback only.
const (
	loadQPS      = 200 // requests per second over all workers
	loadWorkers  = 8   // create/get/list/update/delete loops on ConfigMaps
	loadWatchers = 3   // ConfigMap watches, re-established after each clean close
	settle       = 5 * time.Second
)

// TestProxy_RollingUpgradeUnderLoad runs one scenario three times: three
// v1.35.4 servers on one etcd, client-go load, then each server replaced by
// v1.36.3 in turn. The load goes through mvpctl proxy, round-robin straight
// to the servers, and round-robin with upstream's peer proxy on every server.
// Through mvpctl proxy no error may reach the clients; the other two are
// measured for comparison.
func TestProxy_RollingUpgradeUnderLoad(t *testing.T) {
	if testing.Short() {
		t.Skip("rolling upgrade under load takes minutes")
	}
	modes := []struct {
		name      string
		peerProxy bool
		viaProxy  bool
	}{
		{"mvpctl proxy", false, true},
		{"direct round-robin", false, false},
		{"round-robin + upstream peer proxy", true, false},
	}
	if only := os.Getenv("MVPCTL_E2E_ROLLING_MODES"); only != "" {
		modes = slices.DeleteFunc(modes, func(m struct {
			name      string
			peerProxy bool
			viaProxy  bool
		}) bool {
			return !strings.Contains(only, m.name)
		})
	}
	var results []*loadResult
	for _, m := range modes {
		t.Run(strings.ReplaceAll(m.name, " ", "_"), func(t *testing.T) {
			cp := framework.Start(t, framework.Options{
				Versions:  []string{oldVersion, oldVersion, oldVersion},
				PeerProxy: m.peerProxy,
			})
			var cfg *rest.Config
			if m.viaProxy {
				p := startProxy(t, cp)
				cfg = p.tokenConfig(cp)
			} else {
				cfg = roundRobinConfig(cp)
			}
			res := runRollingUpgrade(t, cp, cfg, newVersion)
			res.mode = m.name
			results = append(results, res)
			t.Logf("%s: %d requests, %d watch sessions, %d client-visible errors %v", m.name, res.requests.Load(), res.watches.Load(), res.total(), res.kinds())
			if m.viaProxy && res.total() != 0 {
				t.Errorf("through mvpctl proxy: %d client-visible errors, want 0: %v\nexamples: %v", res.total(), res.kinds(), res.examples)
			}
		})
	}
	report := resultTable(results)
	t.Log("\n" + report)
	if path := os.Getenv("MVPCTL_E2E_ROLLING_REPORT"); path != "" {
		if err := os.WriteFile(path, []byte(report), 0o644); err != nil {
			t.Error(err)
		}
	}
}

// roundRobinConfig spreads requests over the servers, one after the other,
// as a plain TCP or DNS load balancer would.
func roundRobinConfig(cp *framework.ControlPlane) *rest.Config {
	cfg := cp.Server(0).TokenRESTConfig()
	var hosts []string
	for _, s := range cp.Servers() {
		hosts = append(hosts, strings.TrimPrefix(s.URL, "https://"))
	}
	var next atomic.Uint64
	cfg.WrapTransport = func(rt http.RoundTripper) http.RoundTripper {
		return roundTripFunc(func(req *http.Request) (*http.Response, error) {
			req = req.Clone(req.Context())
			req.URL.Host = hosts[next.Add(1)%uint64(len(hosts))]
			req.Host = ""
			return rt.RoundTrip(req)
		})
	}
	return cfg
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// loadResult counts what the clients saw.
type loadResult struct {
	mode     string
	requests atomic.Int64
	watches  atomic.Int64
	expired  atomic.Int64 // watches ended by 410 Gone, which clients answer by listing again

	mu       sync.Mutex
	errors   map[string]int
	examples map[string]string
}

func (r *loadResult) fail(kind string, err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.errors == nil {
		r.errors, r.examples = map[string]int{}, map[string]string{}
	}
	r.errors[kind]++
	if _, ok := r.examples[kind]; !ok && err != nil {
		r.examples[kind] = err.Error()
	}
}

func (r *loadResult) total() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for _, c := range r.errors {
		n += c
	}
	return n
}

func (r *loadResult) kinds() map[string]int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return copyCounts(r.errors)
}

func copyCounts(m map[string]int) map[string]int {
	out := make(map[string]int, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

// classify names a client-visible error.
func classify(op string, err error) string {
	var st apierrors.APIStatus
	if errors.As(err, &st) {
		code := st.Status().Code
		switch {
		case code >= 500:
			return fmt.Sprintf("%d on %s", code, op)
		case code == 404:
			return "404 on " + op
		default:
			return fmt.Sprintf("%d on %s", code, op)
		}
	}
	return "connection error on " + op
}

// runRollingUpgrade starts the load, replaces every server by one of version
// to, one at a time, and stops the load once the last one has served a
// while. MutatingAdmissionPolicies join the load once the first server runs
// v1.36.
func runRollingUpgrade(t *testing.T, cp *framework.ControlPlane, cfg *rest.Config, to string) *loadResult {
	ctx, cancel := context.WithTimeout(t.Context(), 15*time.Minute)
	defer cancel()
	cfg = rest.CopyConfig(cfg)
	cfg.RateLimiter = flowcontrol.NewTokenBucketRateLimiter(loadQPS, loadQPS/4)
	cfg.Timeout = 30 * time.Second
	cs := kubernetes.NewForConfigOrDie(cfg)
	dyn := dynamic.NewForConfigOrDie(cfg)
	setup := kubernetes.NewForConfigOrDie(cp.Server(0).RESTConfig())
	if _, err := setup.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "load"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	res := &loadResult{}
	loadCtx, stopLoad := context.WithCancel(ctx)
	var wg sync.WaitGroup
	var mapServed atomic.Bool
	for w := range loadWorkers {
		wg.Go(func() { configMapWorker(loadCtx, cs, w, res) })
	}
	for range loadWatchers {
		wg.Go(func() { configMapWatcher(loadCtx, cs, res) })
	}
	wg.Go(func() { policyWorker(loadCtx, dyn, &mapServed, res) })
	wg.Go(func() { policyWatcher(loadCtx, dyn, &mapServed, res) })

	time.Sleep(settle)
	for i := range cp.Servers() {
		start := time.Now()
		s, err := cp.Replace(ctx, i, to)
		if err != nil {
			stopLoad()
			wg.Wait()
			t.Fatalf("replacing server %d: %v", i, err)
		}
		t.Logf("server %d replaced by %s in %s (ready after %s)", i, s.Version, time.Since(start).Round(time.Millisecond), s.ReadyAfter.Round(time.Millisecond))
		if i == 0 && to == newVersion {
			mapServed.Store(true)
		}
		time.Sleep(settle)
	}
	stopLoad()
	wg.Wait()
	return res
}

func configMapWorker(ctx context.Context, cs *kubernetes.Clientset, id int, res *loadResult) {
	cms := cs.CoreV1().ConfigMaps("load")
	for i := 0; ctx.Err() == nil; i++ {
		name := fmt.Sprintf("w%d-%d", id, i)
		step := func(op string, f func() error) bool {
			res.requests.Add(1)
			err := f()
			if err != nil && ctx.Err() == nil {
				res.fail(classify(op, err), err)
			}
			return err == nil
		}
		var cm *corev1.ConfigMap
		if !step("create", func() (err error) {
			cm, err = cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name}, Data: map[string]string{"i": "0"}}, metav1.CreateOptions{})
			return err
		}) {
			continue
		}
		if !step("get", func() (err error) { cm, err = cms.Get(ctx, name, metav1.GetOptions{}); return err }) {
			continue
		}
		step("list", func() error { _, err := cms.List(ctx, metav1.ListOptions{Limit: 50}); return err })
		cm.Data["i"] = "1"
		step("update", func() error { _, err := cms.Update(ctx, cm, metav1.UpdateOptions{}); return err })
		step("delete", func() error { return cms.Delete(ctx, name, metav1.DeleteOptions{}) })
	}
}

// watchLoop keeps one watch open, resuming from the last resource version
// after each clean close, and counts error events (410 Gone apart: clients
// list again, as reflectors do).
func watchLoop(ctx context.Context, res *loadResult, what string, list func() (string, error), start func(rv string) (watch.Interface, error)) {
	rv := ""
	for ctx.Err() == nil {
		if rv == "" {
			res.requests.Add(1)
			var err error
			if rv, err = list(); err != nil {
				if ctx.Err() == nil {
					res.fail(classify("list for "+what, err), err)
				}
				time.Sleep(100 * time.Millisecond)
				continue
			}
		}
		res.requests.Add(1)
		w, err := start(rv)
		if err != nil {
			if ctx.Err() == nil {
				res.fail(classify(what, err), err)
			}
			time.Sleep(100 * time.Millisecond)
			continue
		}
		res.watches.Add(1)
		for ev := range w.ResultChan() {
			if ev.Type == watch.Error {
				err := apierrors.FromObject(ev.Object)
				if apierrors.IsResourceExpired(err) || apierrors.IsGone(err) {
					res.expired.Add(1)
					rv = ""
				} else if ctx.Err() == nil {
					res.fail("error event on "+what, err)
				}
				break
			}
			if m, err := metaAccessor(ev.Object); err == nil {
				rv = m
			}
		}
		w.Stop()
	}
}

func metaAccessor(obj any) (string, error) {
	if o, ok := obj.(metav1.Object); ok {
		return o.GetResourceVersion(), nil
	}
	return "", errors.New("no metadata")
}

func configMapWatcher(ctx context.Context, cs *kubernetes.Clientset, res *loadResult) {
	cms := cs.CoreV1().ConfigMaps("load")
	timeout := int64(20)
	watchLoop(ctx, res, "configmaps watch",
		func() (string, error) {
			l, err := cms.List(ctx, metav1.ListOptions{Limit: 1})
			if err != nil {
				return "", err
			}
			return l.ResourceVersion, nil
		},
		func(rv string) (watch.Interface, error) {
			return cms.Watch(ctx, metav1.ListOptions{ResourceVersion: rv, AllowWatchBookmarks: true, TimeoutSeconds: &timeout})
		})
}

// policyWorker creates, reads and deletes MutatingAdmissionPolicies once the
// first v1.36 server is up.
func policyWorker(ctx context.Context, dyn *dynamic.DynamicClient, served *atomic.Bool, res *loadResult) {
	maps := dyn.Resource(mapGVR)
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for i := 0; ctx.Err() == nil; i++ {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		if !served.Load() {
			continue
		}
		name := fmt.Sprintf("load-%d", i)
		res.requests.Add(1)
		if _, err := maps.Create(ctx, newPolicy(name), metav1.CreateOptions{}); err != nil {
			if ctx.Err() == nil {
				res.fail(classify("policy create", err), err)
			}
			continue
		}
		for _, op := range []string{"policy get", "policy list", "policy delete"} {
			res.requests.Add(1)
			var err error
			switch op {
			case "policy get":
				_, err = maps.Get(ctx, name, metav1.GetOptions{})
			case "policy list":
				_, err = maps.List(ctx, metav1.ListOptions{Limit: 20})
			case "policy delete":
				err = maps.Delete(ctx, name, metav1.DeleteOptions{})
			}
			if err != nil && ctx.Err() == nil {
				res.fail(classify(op, err), err)
			}
		}
	}
}

func policyWatcher(ctx context.Context, dyn *dynamic.DynamicClient, served *atomic.Bool, res *loadResult) {
	for !served.Load() {
		select {
		case <-ctx.Done():
			return
		case <-time.After(100 * time.Millisecond):
		}
	}
	maps := dyn.Resource(mapGVR)
	timeout := int64(20)
	watchLoop(ctx, res, "policies watch",
		func() (string, error) {
			l, err := maps.List(ctx, metav1.ListOptions{Limit: 1})
			if err != nil {
				return "", err
			}
			return l.GetResourceVersion(), nil
		},
		func(rv string) (watch.Interface, error) {
			return maps.Watch(ctx, metav1.ListOptions{ResourceVersion: rv, AllowWatchBookmarks: true, TimeoutSeconds: &timeout})
		})
}

// resultTable renders the three runs side by side in Markdown.
func resultTable(results []*loadResult) string {
	kinds := map[string]bool{}
	for _, r := range results {
		for k := range r.kinds() {
			kinds[k] = true
		}
	}
	var sorted []string
	for k := range kinds {
		sorted = append(sorted, k)
	}
	sort.Strings(sorted)
	var b strings.Builder
	b.WriteString("| | ")
	for _, r := range results {
		b.WriteString(r.mode + " | ")
	}
	b.WriteString("\n|---|")
	for range results {
		b.WriteString("---:|")
	}
	row := func(name string, f func(*loadResult) string) {
		b.WriteString("\n| " + name + " | ")
		for _, r := range results {
			b.WriteString(f(r) + " | ")
		}
	}
	row("requests", func(r *loadResult) string { return fmt.Sprint(r.requests.Load()) })
	row("watch sessions", func(r *loadResult) string { return fmt.Sprint(r.watches.Load()) })
	row("**client-visible errors**", func(r *loadResult) string { return fmt.Sprintf("**%d**", r.total()) })
	for _, k := range sorted {
		row("&nbsp;&nbsp;"+k, func(r *loadResult) string { return fmt.Sprint(r.kinds()[k]) })
	}
	row("watches ended by 410 Gone (relist, not counted)", func(r *loadResult) string { return fmt.Sprint(r.expired.Load()) })
	b.WriteString("\n")
	return b.String()
}
