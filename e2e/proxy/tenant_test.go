package proxy_test

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	certutil "k8s.io/client-go/util/cert"

	"github.com/mvpctl/mvpctl/e2e/framework"
)

// The hostile tenant: one real kube-apiserver v1.36.3 and `mvpctl proxy`
// in front with its default bounds. mallory holds a certificate of the
// cluster's CA and may only get, list and watch ConfigMaps of her own
// namespace; she opens 2,000 watches and floods LISTs through the proxy.
// In the same run victor, a ServiceAccount token allowed to get ConfigMaps
// of his namespace, keeps reading one: he must get no error, and his
// latency is reported next to his baseline measured before the attack. The
// proxy's /readyz is polled the whole time and must never fail, anonymous
// requests must be answered (401/403, never a hang), and the number of
// metric series must stay bounded.
const (
	tenantNamespace = "tenant"
	victimNamespace = "victim"
	// tenantWatches is how many watches mallory opens: twice the default
	// --max-long-running-requests-per-user.
	tenantWatches = 2000
	// tenantFlooders are mallory's concurrent LIST loops: past the default
	// --max-requests-in-flight-per-user plus its queue.
	tenantFlooders = 200
	// victimGets is how many GETs victor makes in each phase.
	victimGets = 300
)

func TestProxy_HostileTenant(t *testing.T) {
	start := time.Now()
	cp := framework.Start(t, framework.Options{Versions: []string{newVersion}})
	p := startProxy(t, cp)
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Minute)
	defer cancel()
	cs := kubernetes.NewForConfigOrDie(cp.Server(0).RESTConfig())
	victimToken := tenantSetup(t, ctx, cs)
	proxyCA, err := certutil.NewPoolFromBytes(p.CAData)
	if err != nil {
		t.Fatal(err)
	}
	malloryCert, err := cp.PKI.IssueClientCert("mallory", "mvp:tenants")
	if err != nil {
		t.Fatal(err)
	}
	newClient := func(cert *tls.Certificate) *http.Client {
		tc := &tls.Config{RootCAs: proxyCA, MinVersion: tls.VersionTLS12}
		if cert != nil {
			tc.Certificates = []tls.Certificate{*cert}
		}
		tr := &http.Transport{TLSClientConfig: tc, TLSHandshakeTimeout: 10 * time.Second, Protocols: new(http.Protocols), MaxIdleConnsPerHost: 64}
		tr.Protocols.SetHTTP2(true)
		t.Cleanup(tr.CloseIdleConnections)
		return &http.Client{Transport: tr}
	}
	mallory := newClient(&malloryCert.Cert)
	victor := newClient(nil)
	anonymous := newClient(nil)
	victorGet := func(ctx context.Context) (time.Duration, error) {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, p.URL+"/api/v1/namespaces/"+victimNamespace+"/configmaps/data", nil)
		req.Header.Set("Authorization", "Bearer "+victimToken)
		req.Header.Set("Accept", "application/json")
		began := time.Now()
		resp, err := victor.Do(req)
		if err != nil {
			return 0, err
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return 0, fmt.Errorf("%d %.300s", resp.StatusCode, body)
		}
		return time.Since(began), nil
	}
	await(t, ctx, "victor may get his ConfigMap through the proxy", func() error { _, err := victorGet(ctx); return err })
	await(t, ctx, "mallory may list her ConfigMaps through the proxy", func() error {
		code, body := send(ctx, mallory, p.URL+"/api/v1/namespaces/"+tenantNamespace+"/configmaps", "")
		if code != http.StatusOK {
			return fmt.Errorf("%d %.300s", code, body)
		}
		return nil
	})

	seriesBefore := metricSeries(t, p)
	baseline := measure(t, ctx, victorGet)

	// The attack: /readyz is polled all along.
	attackCtx, stopAttack := context.WithCancel(ctx)
	defer stopAttack()
	var readyz readyzPoll
	var attackers sync.WaitGroup
	attackers.Go(func() { readyz.run(attackCtx, anonymous, p.URL+"/readyz") })

	var watchCodes sync.Map // status code -> *atomic.Int64
	count := func(m *sync.Map, code int) {
		v, _ := m.LoadOrStore(code, new(atomic.Int64))
		v.(*atomic.Int64).Add(1)
	}
	var opened sync.WaitGroup
	sem := make(chan struct{}, 100)
	for i := range tenantWatches {
		opened.Add(1)
		attackers.Go(func() {
			sem <- struct{}{}
			req, _ := http.NewRequestWithContext(attackCtx, http.MethodGet,
				fmt.Sprintf("%s/api/v1/namespaces/%s/configmaps?watch=true&timeoutSeconds=600&labelSelector=w%%3D%d", p.URL, tenantNamespace, i), nil)
			resp, err := mallory.Do(req)
			<-sem
			if err != nil {
				count(&watchCodes, -1)
				opened.Done()
				return
			}
			count(&watchCodes, resp.StatusCode)
			opened.Done()
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		})
	}
	opened.Wait()
	t.Logf("mallory's %d watches: %s", tenantWatches, codes(&watchCodes))
	if n := loadCode(&watchCodes, http.StatusOK); n < 500 {
		t.Errorf("only %d of mallory's watches were opened; the attack did not happen", n)
	}
	impersonatingConns := metricValue(t, p, "mvpctl_proxy_upstream_connections", `pool="impersonating"`)
	watching := measure(t, ctx, victorGet)

	floodStart, cpuStart := time.Now(), cpuOf(p.PID(), cp.Server(0).PID())
	var floodCodes sync.Map
	for range tenantFlooders {
		attackers.Go(func() {
			for attackCtx.Err() == nil {
				code, _ := send(attackCtx, mallory, p.URL+"/api/v1/namespaces/"+tenantNamespace+"/configmaps", "")
				if attackCtx.Err() == nil {
					count(&floodCodes, code)
				}
			}
		})
	}
	// The flood is under way once mallory's share turns requests away.
	await(t, ctx, "mallory's flood is refused past her share", func() error {
		if loadCode(&floodCodes, http.StatusTooManyRequests) == 0 {
			return fmt.Errorf("no 429 yet: %s", codes(&floodCodes))
		}
		return nil
	})

	// Anonymous requests are answered while the attack runs.
	for _, path := range []string{"/api/v1/namespaces/" + victimNamespace + "/configmaps/data", "/api/v1/namespaces/" + tenantNamespace + "/configmaps"} {
		actx, acancel := context.WithTimeout(ctx, 30*time.Second)
		code, body := send(actx, anonymous, p.URL+path, "")
		acancel()
		var st metav1.Status
		if (code != http.StatusUnauthorized && code != http.StatusForbidden) || json.Unmarshal(body, &st) != nil || st.Kind != "Status" {
			t.Errorf("anonymous GET %s during the attack: %d %.300s; want a 401 or 403 Status", path, code, body)
		}
	}

	attacked := measure(t, ctx, victorGet)
	cpuEnd, floodTook := cpuOf(p.PID(), cp.Server(0).PID()), time.Since(floodStart)
	stopAttack()
	attackers.Wait()
	seriesAfter := metricSeries(t, p)

	t.Logf("mallory's flood of LISTs (%d loops): %s", tenantFlooders, codes(&floodCodes))
	t.Logf("proxy /readyz polled %d times during the attack, %d failed", readyz.polls.Load(), readyz.failed.Load())
	t.Logf("upstream connections of impersonated users with %d watches open: %v", loadCode(&watchCodes, http.StatusOK), impersonatingConns)
	t.Logf("victor's GET, %d each: baseline p50 %s p99 %s; with mallory's watches open p50 %s p99 %s (p99 ratio %.1f); with her flood too p50 %s p99 %s (p99 ratio %.1f)",
		victimGets, baseline.p50, baseline.p99, watching.p50, watching.p99, float64(watching.p99)/float64(baseline.p99),
		attacked.p50, attacked.p99, float64(attacked.p99)/float64(baseline.p99))
	t.Logf("CPU during the flood (%s): proxy %.2f cores, kube-apiserver %.2f, this test process (mallory's and victor's clients) %.2f",
		floodTook.Round(100*time.Millisecond), (cpuEnd[0]-cpuStart[0])/floodTook.Seconds(), (cpuEnd[1]-cpuStart[1])/floodTook.Seconds(), (cpuEnd[2]-cpuStart[2])/floodTook.Seconds())
	t.Logf("metric series: %d before the attack, %d after", seriesBefore, seriesAfter)
	t.Logf("proxy peak RSS %d MiB; the test ran %s", procKB(p.PID(), "VmHWM")>>20, time.Since(start).Round(time.Second))

	if attacked.errors > 0 || watching.errors > 0 || baseline.errors > 0 {
		t.Errorf("victor's GETs failed: %d before the attack, %d with the watches open, %d with the flood too (first: %v)",
			baseline.errors, watching.errors, attacked.errors, cmpOr(baseline.first, watching.first, attacked.first))
	}
	if n := readyz.failed.Load(); n > 0 || readyz.polls.Load() == 0 {
		t.Errorf("proxy /readyz failed %d of %d polls during the attack (first: %s)", n, readyz.polls.Load(), readyz.firstFailure())
	}
	if loadCode(&watchCodes, http.StatusTooManyRequests) == 0 {
		t.Errorf("none of mallory's %d watches was refused: %s", tenantWatches, codes(&watchCodes))
	}
	// Over HTTP/2, mallory's watches share connections: kube-apiserver
	// allows 100 streams on one (--http2-max-streams-per-connection), so
	// one per 100 watches, not one each as over HTTP/1.1.
	if open := loadCode(&watchCodes, http.StatusOK); impersonatingConns <= 0 || impersonatingConns > float64(open/100+8) {
		t.Errorf("%v upstream connections carry mallory's %d watches; want about one per 100 (HTTP/2)", impersonatingConns, open)
	}
	if seriesAfter > seriesBefore+500 {
		t.Errorf("the attack added %d metric series (%d -> %d)", seriesAfter-seriesBefore, seriesBefore, seriesAfter)
	}
}

// tenantSetup creates the namespaces, mallory's Role (get, list, watch
// ConfigMaps of her namespace) and victor's ServiceAccount with its Role
// (get ConfigMaps of his), and returns victor's token.
func tenantSetup(t *testing.T, ctx context.Context, cs *kubernetes.Clientset) string {
	t.Helper()
	for _, ns := range []string{tenantNamespace, victimNamespace} {
		if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 10 {
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("cm-%d", i)}, Data: map[string]string{"k": strings.Repeat("v", 200)}}
		if _, err := cs.CoreV1().ConfigMaps(tenantNamespace).Create(ctx, cm, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := cs.CoreV1().ConfigMaps(victimNamespace).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "data"}, Data: map[string]string{"k": "v"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	role := func(ns string, verbs []string, subject rbacv1.Subject) {
		r := &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "configmaps"}, Rules: []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: verbs}}}
		if _, err := cs.RbacV1().Roles(ns).Create(ctx, r, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		b := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "configmaps"},
			RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "configmaps"}, Subjects: []rbacv1.Subject{subject}}
		if _, err := cs.RbacV1().RoleBindings(ns).Create(ctx, b, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	role(tenantNamespace, []string{"get", "list", "watch"}, rbacv1.Subject{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: "mallory"})
	if _, err := cs.CoreV1().ServiceAccounts(victimNamespace).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "victor"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	role(victimNamespace, []string{"get"}, rbacv1.Subject{Kind: rbacv1.ServiceAccountKind, Namespace: victimNamespace, Name: "victor"})
	hour := int64(3600)
	tok, err := cs.CoreV1().ServiceAccounts(victimNamespace).CreateToken(ctx, "victor",
		&authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: &hour}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return tok.Status.Token
}

// send GETs url with c and returns the code and body; 0 when it got no
// answer.
func send(ctx context.Context, c *http.Client, url, token string) (int, []byte) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return 0, nil
	}
	req.Header.Set("Accept", "application/json")
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := c.Do(req)
	if err != nil {
		return 0, []byte(err.Error())
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	return resp.StatusCode, body
}

// await polls cond every 100ms until it returns nil or ctx ends.
func await(t *testing.T, ctx context.Context, what string, cond func() error) {
	t.Helper()
	for {
		err := cond()
		if err == nil {
			return
		}
		select {
		case <-ctx.Done():
			t.Fatalf("waiting until %s: %v (last: %v)", what, ctx.Err(), err)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// latencies are one phase of victor's GETs.
type latencies struct {
	p50, p99 time.Duration
	errors   int
	first    error
}

// measure makes victimGets GETs one after the other.
func measure(t *testing.T, ctx context.Context, get func(context.Context) (time.Duration, error)) latencies {
	t.Helper()
	var l latencies
	var took []time.Duration
	for range victimGets {
		gctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		d, err := get(gctx)
		cancel()
		if err != nil {
			l.errors++
			if l.first == nil {
				l.first = err
			}
			continue
		}
		took = append(took, d)
	}
	if len(took) > 0 {
		slices.Sort(took)
		l.p50 = took[len(took)/2].Round(10 * time.Microsecond)
		l.p99 = took[(len(took)*99)/100].Round(10 * time.Microsecond)
	}
	return l
}

func cmpOr(errs ...error) error {
	for _, e := range errs {
		if e != nil {
			return e
		}
	}
	return nil
}

// readyzPoll polls the proxy's /readyz every 100ms, each poll bounded.
type readyzPoll struct {
	polls, failed atomic.Int64
	mu            sync.Mutex
	first         string
}

func (r *readyzPoll) run(ctx context.Context, c *http.Client, url string) {
	for ctx.Err() == nil {
		pctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		code, body := send(pctx, c, url, "")
		cancel()
		if ctx.Err() != nil {
			return
		}
		r.polls.Add(1)
		if code != http.StatusOK {
			r.failed.Add(1)
			r.mu.Lock()
			if r.first == "" {
				r.first = fmt.Sprintf("%d %.300s", code, body)
			}
			r.mu.Unlock()
		}
		select {
		case <-ctx.Done():
		case <-time.After(100 * time.Millisecond):
		}
	}
}

func (r *readyzPoll) firstFailure() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.first
}

func loadCode(m *sync.Map, code int) int64 {
	if v, ok := m.Load(code); ok {
		return v.(*atomic.Int64).Load()
	}
	return 0
}

// codes formats a map of status codes to counts (-1: no answer).
func codes(m *sync.Map) string {
	var parts []string
	m.Range(func(k, v any) bool {
		parts = append(parts, fmt.Sprintf("%d: %d", k, v.(*atomic.Int64).Load()))
		return true
	})
	slices.Sort(parts)
	return strings.Join(parts, ", ")
}

// metricSeries counts the series the proxy's /metrics exposes.
func metricSeries(t *testing.T, p *proxyProcess) int {
	t.Helper()
	n := 0
	for _, line := range strings.Split(p.metricsText(t), "\n") {
		if line != "" && !strings.HasPrefix(line, "#") {
			n++
		}
	}
	return n
}

// metricValue sums the series of name whose labels contain match.
func metricValue(t *testing.T, p *proxyProcess, name, match string) float64 {
	t.Helper()
	var sum float64
	for _, line := range strings.Split(p.metricsText(t), "\n") {
		if !strings.HasPrefix(line, name+"{") || !strings.Contains(line, match) {
			continue
		}
		var v float64
		if _, err := fmt.Sscan(line[strings.LastIndexByte(line, ' ')+1:], &v); err == nil {
			sum += v
		}
	}
	return sum
}

// cpuOf is the CPU seconds used so far by each of pids, then by this
// process.
func cpuOf(pids ...int) []float64 {
	var out []float64
	for _, pid := range append(pids, os.Getpid()) {
		data, _ := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		// The fields after the command name (which may hold spaces):
		// utime and stime are the 12th and 13th, in clock ticks (100/s).
		f := strings.Fields(string(data[strings.LastIndexByte(string(data), ')')+1:]))
		var ticks float64
		for _, i := range []int{11, 12} {
			if i < len(f) {
				v, _ := strconv.ParseFloat(f[i], 64)
				ticks += v
			}
		}
		out = append(out, ticks/100)
	}
	return out
}
