package proxy_test

import (
	"context"
	"fmt"
	"net/http"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/flowcontrol"

	"github.com/mvpctl/mvpctl/e2e/framework"
)

// The restart scenario's load: bounded, loopback only.
const (
	restartQPS       = 100              // requests per second over all workers
	restartWorkers   = 4                // create/get/list/update/delete loops (configMapWorker)
	restartCycles    = 3                // kill and restart, this many times
	restartInterval  = 5 * time.Second  // load before the first kill, between cycles and after the last
	restartRecovery  = 10 * time.Second // generous bound; the measured figure is what matters
	proxyExitTimeout = 20 * time.Second // SIGTERM to exit: 5s for open requests, up to 5s of leak check
)

// TestProxy_RestartUnderLoad kills mvpctl proxy (SIGKILL) under client-go
// load and starts it again on the same address with the same serving
// certificate: clients must recover (the time from the restart to the first
// successful request is reported), and a SIGTERM with a watch open must
// make it exit 0, with no goroutine left (MVPCTL_DEBUG_LEAK_CHECK).
func TestProxy_RestartUnderLoad(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a control plane under load for 20s")
	}
	cp := framework.Start(t, framework.Options{Versions: []string{oldVersion, newVersion}})
	p := startProxy(t, cp, "--tls-cert-file", cp.PKI.ServingCertFile, "--tls-private-key-file", cp.PKI.ServingKeyFile)
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Minute)
	defer cancel()

	setup := kubernetes.NewForConfigOrDie(cp.Server(0).RESTConfig())
	if _, err := setup.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "load"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	log := &requestLog{}
	cfg := p.tokenConfig(cp)
	cfg.CAData = cp.PKI.CAPEM
	cfg.RateLimiter = flowcontrol.NewTokenBucketRateLimiter(restartQPS, restartQPS/4)
	cfg.Timeout = 30 * time.Second // longer than the watches' 20s
	cfg.WrapTransport = log.wrap
	cs := kubernetes.NewForConfigOrDie(cfg)

	res := &loadResult{}
	loadCtx, stopLoad := context.WithCancel(ctx)
	var wg sync.WaitGroup
	for w := range restartWorkers {
		wg.Go(func() { configMapWorker(loadCtx, cs, w, res) })
	}
	wg.Go(func() { configMapWatcher(loadCtx, cs, res) })

	type cycle struct{ killed, restarted time.Time }
	var cycles []cycle
	for range restartCycles {
		time.Sleep(restartInterval)
		c := cycle{killed: time.Now()}
		p.kill()
		c.restarted = time.Now()
		p.restart(t)
		cycles = append(cycles, c)
	}
	time.Sleep(restartInterval)
	stopped := time.Now() // attempts cut short by stopping the load end after this
	stopLoad()
	wg.Wait()

	// Per cycle: the attempts from its kill to the next one.
	attempts := log.snapshot()
	var recoveries []time.Duration
	for i, c := range cycles {
		end := stopped
		if i+1 < len(cycles) {
			end = cycles[i+1].killed
		}
		var firstOK, lastFail time.Time
		n, failed := 0, map[string]int{}
		for _, a := range attempts {
			if a.end.Before(c.killed) || !a.end.Before(end) {
				continue
			}
			n++
			switch {
			case !a.ok:
				failed[short(a.what)]++
				lastFail = a.end
			case firstOK.IsZero() && a.end.After(c.restarted):
				firstOK = a.end
			}
		}
		if firstOK.IsZero() {
			t.Errorf("restart %d: no request succeeded after it; failures %v", i+1, failed)
			continue
		}
		recovery := firstOK.Sub(c.restarted)
		recoveries = append(recoveries, recovery)
		t.Logf("restart %d: kill to restart %s, restart to first success %s, last failed attempt %s after the restart; %d attempts, failed %v",
			i+1, c.restarted.Sub(c.killed).Round(time.Microsecond), recovery.Round(time.Millisecond), lastFail.Sub(c.restarted).Round(time.Millisecond), n, failed)
		if recovery > restartRecovery {
			t.Errorf("restart %d: first success %s after it, want within %s", i+1, recovery, restartRecovery)
		}
		// Once recovered, requests succeed again: nothing that starts a
		// second after the first success fails.
		for _, a := range attempts {
			if !a.ok && a.start.After(firstOK.Add(time.Second)) && a.end.Before(end) {
				t.Errorf("restart %d: an attempt started %s after recovery failed: %s", i+1, a.start.Sub(firstOK).Round(time.Millisecond), a.what)
			}
		}
	}
	for _, a := range attempts {
		if !a.ok && a.end.Before(cycles[0].killed) {
			t.Errorf("failed attempt before the first kill: %s", a.what)
		}
	}
	t.Logf("%d restarts under %d req/s: %d requests; restart to first success %v; client-visible errors %d %v; watch sessions %d",
		len(cycles), restartQPS, len(attempts), recoveries, res.total(), res.kinds(), res.watches.Load())

	// SIGTERM with a watch open: exit 0 within the bound, nothing left.
	hc, err := rest.HTTPClientFor(cfg)
	if err != nil {
		t.Fatal(err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, p.URL+"/api/v1/namespaces/load/configmaps?watch=1&timeoutSeconds=300", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := hc.Do(req)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("watch: %v %v", resp, err)
	}
	defer resp.Body.Close()
	start := time.Now()
	if err := p.stop(proxyExitTimeout); err != nil {
		t.Errorf("mvpctl proxy after SIGTERM: %v (see its log for leaked goroutines)", err)
	}
	t.Logf("SIGTERM with a watch open: exited 0 in %s", time.Since(start).Round(time.Millisecond))
}

// requestLog records every HTTP attempt a client makes (client-go's own
// retries included): when, and whether it got an answer below 500.
type requestLog struct {
	mu       sync.Mutex
	attempts []attempt
}

type attempt struct {
	start, end time.Time
	ok         bool
	what       string // the error or status of a failed attempt
}

func (l *requestLog) wrap(rt http.RoundTripper) http.RoundTripper {
	return roundTripFunc(func(req *http.Request) (*http.Response, error) {
		a := attempt{start: time.Now()}
		resp, err := rt.RoundTrip(req)
		a.end = time.Now()
		switch {
		case err != nil:
			a.what = err.Error()
		case resp.StatusCode >= 500:
			a.what = resp.Status
		default:
			a.ok = true
		}
		l.mu.Lock()
		l.attempts = append(l.attempts, a)
		l.mu.Unlock()
		return resp, err
	})
}

// snapshot returns the attempts ordered by their end.
func (l *requestLog) snapshot() []attempt {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := append([]attempt(nil), l.attempts...)
	sort.Slice(out, func(i, j int) bool { return out[i].end.Before(out[j].end) })
	return out
}

// short names a failure without its addresses and ports.
func short(what string) string {
	for _, s := range []string{"connection refused", "connection reset", "EOF", "client connection lost", "503", "502", "stream error", "broken pipe"} {
		if strings.Contains(what, s) {
			return s
		}
	}
	return fmt.Sprintf("%.60s", what)
}
