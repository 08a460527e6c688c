package proxy_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"

	"github.com/mvpctl/mvpctl/e2e/framework"
)

// faultRouting pins ConfigMaps to the v1.35 server while it is ready (the
// v1.36 one is the fallback), so that the server a request is on, and the
// one to kill, is known.
const faultRouting = `apiVersion: mvp.k8s.io/v1
kind: TransformationRules
metadata: {name: faults}
spec:
  apiRoutingRules:
  - {apiGroup: "", resource: configmaps, preferApiServerVersion: v1.35.x}
`

// The fault scenarios' sizes: bounded, loopback only.
const (
	faultListObjects   = 2000      // ConfigMaps in the large LIST
	faultListObjectKiB = 16        // data per ConfigMap: a LIST is ~33 MiB, a page ~16 MiB; the buffers between server and client held up to ~9 MiB
	faultListPauseAt   = 256 << 10 // bytes a client reads before the kill
	faultCreates       = 600       // creates per kill round
	faultCreateWorkers = 4
)

// TestProxy_BackendKilled kills (SIGKILL) the kube-apiserver behind mvpctl
// proxy in the middle of large LISTs, of a watch with an informer on it,
// and of a stream of creates. Clients must see a clean error or a whole
// answer, never a truncated one taken for success; the informer must
// converge to the truth; no create may be applied twice, and every create
// a client saw succeed must exist. MVPCTL_E2E_FAULT_ROUNDS repeats the
// create round (default 1).
func TestProxy_BackendKilled(t *testing.T) {
	if testing.Short() {
		t.Skip("kills and restarts kube-apiservers")
	}
	cp := framework.Start(t, framework.Options{Versions: []string{oldVersion, newVersion}})
	rules := filepath.Join(t.TempDir(), "faults.yaml")
	if err := os.WriteFile(rules, []byte(faultRouting), 0o644); err != nil {
		t.Fatal(err)
	}
	p := startProxy(t, cp, "--rules", rules)
	f := &faultRig{t: t, cp: cp, p: p}

	t.Run("MidList", f.midList)
	f.revive(t)
	t.Run("MidWatch", f.midWatch)
	rounds := 1
	if s := os.Getenv("MVPCTL_E2E_FAULT_ROUNDS"); s != "" {
		var err error
		if rounds, err = strconv.Atoi(s); err != nil || rounds < 1 {
			t.Fatalf("MVPCTL_E2E_FAULT_ROUNDS=%q: want a positive number", s)
		}
	}
	t.Run("DuringCreates", func(t *testing.T) {
		for r := range rounds {
			f.revive(t)
			f.duringCreates(t, r)
		}
	})
}

// faultRig is the control plane (server 0 is the v1.35 server that
// ConfigMap requests go to, server 1 the survivor) and the proxy.
type faultRig struct {
	t  *testing.T
	cp *framework.ControlPlane
	p  *proxyProcess
}

// kill SIGKILLs server 0 and waits until it is gone.
func (f *faultRig) kill(t *testing.T) time.Time {
	t.Helper()
	at, err := f.killServer0()
	if err != nil {
		t.Fatal(err)
	}
	return at
}

// killServer0 is kill for any goroutine.
func (f *faultRig) killServer0() (time.Time, error) {
	s := f.cp.Server(0)
	if err := syscall.Kill(s.PID(), syscall.SIGKILL); err != nil {
		return time.Time{}, fmt.Errorf("kill -9 %d: %v", s.PID(), err)
	}
	at := time.Now()
	deadline := time.Now().Add(10 * time.Second)
	for !s.Exited() {
		if time.Now().After(deadline) {
			return at, errors.New("server 0 still runs 10s after SIGKILL")
		}
		time.Sleep(10 * time.Millisecond)
	}
	return at, nil
}

// revive starts server 0 again if it was killed and waits until the proxy
// uses it again.
func (f *faultRig) revive(t *testing.T) {
	t.Helper()
	if !f.cp.Server(0).Exited() {
		return
	}
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	start := time.Now()
	s, err := f.cp.Replace(ctx, 0, oldVersion)
	if err != nil {
		t.Fatal(err)
	}
	f.p.waitReady(t, 2)
	t.Logf("server 0 restarted in %s (ready after %s)", time.Since(start).Round(time.Millisecond), s.ReadyAfter.Round(time.Millisecond))
}

// proxyConfig is a client of the proxy; direct is one of the survivor.
func (f *faultRig) proxyConfig() *rest.Config {
	cfg := f.p.tokenConfig(f.cp)
	cfg.Timeout = 60 * time.Second
	cfg.WrapTransport = pausingTransport
	return cfg
}

func (f *faultRig) direct() *kubernetes.Clientset {
	return kubernetes.NewForConfigOrDie(f.cp.Server(1).RESTConfig())
}

// retried is the proxy's count of requests it sent to another backend.
func (f *faultRig) retried(t *testing.T, verb string) int {
	return int(metricSum(f.p.metricsText(t), "mvpctl_proxy_requests_total", map[string]string{"decision": "retried", "verb": verb}))
}

func (f *faultRig) midList(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Minute)
	defer cancel()
	const ns = "faults-list"
	start := time.Now()
	createConfigMaps(t, ctx, f.direct(), ns, faultListObjects, faultListObjectKiB<<10)
	t.Logf("created %d ConfigMaps of %d KiB in %s", faultListObjects, faultListObjectKiB, time.Since(start).Round(time.Millisecond))

	jsonCfg := f.proxyConfig()
	jsonCfg.ContentType, jsonCfg.AcceptContentTypes = "application/json", "application/json"
	protoCfg := f.proxyConfig()
	protoCfg.ContentType, protoCfg.AcceptContentTypes = "application/vnd.kubernetes.protobuf", "application/vnd.kubernetes.protobuf"
	h1Cfg := rest.CopyConfig(jsonCfg)
	h1Cfg.NextProtos = []string{"http/1.1"}
	viaJSON := kubernetes.NewForConfigOrDie(jsonCfg).CoreV1().ConfigMaps(ns)
	viaProto := kubernetes.NewForConfigOrDie(protoCfg).CoreV1().ConfigMaps(ns)
	viaH1 := kubernetes.NewForConfigOrDie(h1Cfg).CoreV1().ConfigMaps(ns)

	// The first page of the paginated LIST is read whole, before the kill.
	first, err := viaJSON.List(ctx, metav1.ListOptions{Limit: faultListObjects / 2})
	if err != nil || len(first.Items) != faultListObjects/2 || first.Continue == "" {
		t.Fatalf("first page: %v", err)
	}

	// LISTs in flight on server 0, each paused after its client read
	// faultListPauseAt bytes: JSON (HTTP/2 and HTTP/1.1) and protobuf
	// whole, and the second page.
	type outcome struct {
		name  string
		items int
		want  int
		err   error
	}
	lists := []struct {
		name string
		want int
		list func(ctx context.Context) (int, error)
	}{
		{"unpaginated JSON", faultListObjects, func(ctx context.Context) (int, error) {
			l, err := viaJSON.List(ctx, metav1.ListOptions{})
			return itemsOf(l), err
		}},
		{"unpaginated protobuf", faultListObjects, func(ctx context.Context) (int, error) {
			l, err := viaProto.List(ctx, metav1.ListOptions{})
			return itemsOf(l), err
		}},
		{"unpaginated JSON over HTTP/1.1", faultListObjects, func(ctx context.Context) (int, error) {
			l, err := viaH1.List(ctx, metav1.ListOptions{})
			return itemsOf(l), err
		}},
		{"page 2 of 2, JSON", faultListObjects / 2, func(ctx context.Context) (int, error) {
			l, err := viaJSON.List(ctx, metav1.ListOptions{Limit: faultListObjects / 2, Continue: first.Continue})
			return itemsOf(l), err
		}},
	}
	outcomes := make([]outcome, len(lists))
	pauses := make([]*pause, len(lists))
	var wg sync.WaitGroup
	for i, l := range lists {
		pauses[i] = newPause(faultListPauseAt)
		wg.Go(func() {
			n, err := l.list(withPause(ctx, pauses[i]))
			outcomes[i] = outcome{name: l.name, items: n, want: l.want, err: err}
		})
	}
	for i, ps := range pauses {
		select {
		case <-ps.reached:
		case <-ctx.Done():
			t.Fatalf("%s: never read %d bytes", lists[i].name, faultListPauseAt)
		}
	}
	retriedBefore := f.retried(t, "list")
	f.kill(t)
	for _, ps := range pauses {
		close(ps.release)
	}
	wg.Wait()

	// After the kill: the same LISTs succeed on the survivor, the paginated
	// one resuming with its continue token; the first requests find server 0
	// refusing connections and are sent on by the proxy.
	again, sizes := 0, make([]int64, len(lists))
	for i, l := range lists {
		count := newPause(1 << 62) // counts the bytes, never pauses
		n, err := l.list(withPause(ctx, count))
		sizes[i] = count.total.Load()
		if err != nil || n != l.want {
			t.Errorf("%s again after the kill: %d items, %v", l.name, n, err)
			continue
		}
		again++
	}
	midResponse := 0
	for i, o := range outcomes {
		switch {
		case o.err != nil:
			midResponse++
			t.Logf("%s: clean error after %d of %d bytes: %v", o.name, pauses[i].total.Load(), sizes[i], o.err)
		case o.items == o.want:
			t.Logf("%s: whole answer (%d items, %d bytes): the kill came after the server had sent it", o.name, o.items, pauses[i].total.Load())
		default:
			t.Errorf("%s: a truncated LIST taken for success: %d items, want %d", o.name, o.items, o.want)
		}
	}
	if midResponse == 0 {
		t.Errorf("no kill landed in the middle of a response; make the LIST larger")
	}
	names := map[string]bool{}
	for _, cm := range first.Items {
		names[cm.Name] = true
	}
	if l, err := viaJSON.List(ctx, metav1.ListOptions{Limit: faultListObjects / 2, Continue: first.Continue}); err == nil {
		for _, cm := range l.Items {
			names[cm.Name] = true
		}
	}
	if len(names) != faultListObjects {
		t.Errorf("pages 1 (before the kill) and 2 (after): %d distinct ConfigMaps, want %d", len(names), faultListObjects)
	}
	t.Logf("LIST: %d in flight at the kill, %d ended with a clean error mid-response, %d whole; %d of %d repeated after the kill succeeded, %d sent on by the proxy (retried)",
		len(lists), midResponse, len(lists)-midResponse, again, len(lists), f.retried(t, "list")-retriedBefore)
}

func itemsOf(l *corev1.ConfigMapList) int {
	if l == nil {
		return 0
	}
	return len(l.Items)
}

// createConfigMaps creates n ConfigMaps of size bytes of data in a new
// namespace, eight at a time.
func createConfigMaps(t *testing.T, ctx context.Context, cs *kubernetes.Clientset, ns string, n, size int) {
	t.Helper()
	if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	value := strings.Repeat("x", size)
	next := atomic.Int64{}
	errs := make(chan error, 8)
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for {
				i := next.Add(1) - 1
				if i >= int64(n) {
					return
				}
				cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("cm-%05d", i)}, Data: map[string]string{"v": value}}
				if _, err := cs.CoreV1().ConfigMaps(ns).Create(ctx, cm, metav1.CreateOptions{}); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	select {
	case err := <-errs:
		t.Fatalf("creating ConfigMaps: %v", err)
	default:
	}
}

func (f *faultRig) midWatch(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Minute)
	defer cancel()
	const ns, objects = "faults-watch", 50
	direct := f.direct()
	createConfigMaps(t, ctx, direct, ns, objects, 64)
	cs := kubernetes.NewForConfigOrDie(f.proxyConfig())

	// Informers on the ConfigMaps through the proxy, one with JSON, one
	// with protobuf (length-prefixed watch frames).
	type informer struct {
		name   string
		inf    cache.SharedIndexInformer
		events atomic.Int64
	}
	var infs []*informer
	stop := make(chan struct{})
	for _, ct := range []string{"application/json", "application/vnd.kubernetes.protobuf"} {
		cfg := f.proxyConfig()
		cfg.ContentType, cfg.AcceptContentTypes = ct, ct
		factory := informers.NewSharedInformerFactoryWithOptions(kubernetes.NewForConfigOrDie(cfg), 0, informers.WithNamespace(ns))
		i := &informer{name: ct, inf: factory.Core().V1().ConfigMaps().Informer()}
		i.inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
			AddFunc:    func(any) { i.events.Add(1) },
			UpdateFunc: func(any, any) { i.events.Add(1) },
			DeleteFunc: func(any) { i.events.Add(1) },
		})
		factory.Start(stop)
		defer factory.Shutdown()
		infs = append(infs, i)
	}
	defer close(stop)
	syncCtx, syncCancel := context.WithTimeout(ctx, time.Minute)
	for _, i := range infs {
		if !cache.WaitForCacheSync(syncCtx.Done(), i.inf.HasSynced) {
			syncCancel()
			t.Fatalf("the %s informer did not sync", i.name)
		}
	}
	syncCancel()

	// A raw watch through the proxy, to see how its stream ends.
	list, err := cs.CoreV1().ConfigMaps(ns).List(ctx, metav1.ListOptions{Limit: 1})
	if err != nil {
		t.Fatal(err)
	}
	hc, err := rest.HTTPClientFor(f.p.tokenConfig(f.cp))
	if err != nil {
		t.Fatal(err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet,
		f.p.URL+"/api/v1/namespaces/"+ns+"/configmaps?watch=1&timeoutSeconds=120&resourceVersion="+list.ResourceVersion, nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := hc.Do(req)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("watch through the proxy: %v %v", resp, err)
	}
	type watchEnd struct {
		events int
		tail   []byte
		err    error
	}
	ended := make(chan watchEnd, 1)
	var watched atomic.Int64 // events read so far
	go func() {
		defer resp.Body.Close()
		r := bufio.NewReader(resp.Body)
		var e watchEnd
		for {
			line, err := r.ReadBytes('\n')
			if err != nil {
				e.tail, e.err = line, err
				break
			}
			var ev struct {
				Type   string          `json:"type"`
				Object json.RawMessage `json:"object"`
			}
			if err := json.Unmarshal(line, &ev); err != nil || ev.Type == "" {
				e.err = fmt.Errorf("event %d is not a whole event: %v: %.100s", e.events, err, line)
				break
			}
			e.events++
			watched.Add(1)
		}
		ended <- e
	}()

	// Updates through the survivor, before, during and after the kill.
	var writes atomic.Int64
	writeCtx, stopWrites := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Go(func() {
		for i := 0; writeCtx.Err() == nil; i++ {
			name := fmt.Sprintf("cm-%05d", i%objects)
			cm, err := direct.CoreV1().ConfigMaps(ns).Get(writeCtx, name, metav1.GetOptions{})
			if err == nil {
				cm.Data = map[string]string{"i": strconv.Itoa(i)}
				if _, err = direct.CoreV1().ConfigMaps(ns).Update(writeCtx, cm, metav1.UpdateOptions{}); err == nil {
					writes.Add(1)
				}
			}
			time.Sleep(20 * time.Millisecond)
		}
	})
	// Kill with the watch mid-stream: it has carried events of the writes.
	waitUntil(t, "events on the watch", func() bool { return watched.Load() >= 5 })
	killed := f.kill(t)
	var end watchEnd
	select {
	case end = <-ended:
	case <-time.After(30 * time.Second):
		t.Fatal("the watch through the proxy did not end within 30s of the kill")
	}
	switch {
	case errors.Is(end.err, io.EOF) && len(end.tail) == 0:
		t.Logf("watch: ended cleanly %s after the kill, after %d whole events", time.Since(killed).Round(time.Millisecond), end.events)
	default:
		t.Errorf("watch: did not end cleanly after %d events: %v (incomplete tail %q)", end.events, end.err, end.tail)
	}
	atEnd := writes.Load()
	waitUntil(t, "updates through the survivor after the kill", func() bool { return writes.Load() >= atEnd+20 })
	stopWrites()
	wg.Wait()

	// Creates, updates and deletes after the kill, then the informer must
	// hold what the survivor holds.
	cms := direct.CoreV1().ConfigMaps(ns)
	for i := range 10 {
		if _, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("after-%d", i)}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		if err := cms.Delete(ctx, fmt.Sprintf("cm-%05d", i), metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	lastWrite := time.Now()
	for _, i := range infs {
		deadline := time.Now().Add(60 * time.Second)
		for {
			truth, err := cms.List(ctx, metav1.ListOptions{})
			if err != nil {
				t.Fatal(err)
			}
			diff := storeDiff(i.inf.GetStore(), truth.Items)
			if diff == "" {
				t.Logf("%s informer: %d events; converged to the survivor's %d ConfigMaps %s after the last write",
					i.name, i.events.Load(), len(truth.Items), time.Since(lastWrite).Round(time.Millisecond))
				break
			}
			if time.Now().After(deadline) {
				t.Errorf("the %s informer did not converge within 60s: %s", i.name, diff)
				break
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	t.Logf("%d updates through the survivor around the kill", writes.Load())
}

// storeDiff compares an informer's store with a LIST: names and resource
// versions. It returns "" when they agree.
func storeDiff(store cache.Store, truth []corev1.ConfigMap) string {
	want := map[string]string{}
	for _, cm := range truth {
		want[cm.Name] = cm.ResourceVersion
	}
	got := map[string]string{}
	for _, o := range store.List() {
		cm := o.(*corev1.ConfigMap)
		got[cm.Name] = cm.ResourceVersion
	}
	var diffs []string
	for n, rv := range want {
		if got[n] != rv {
			diffs = append(diffs, fmt.Sprintf("%s: informer %q, server %q", n, got[n], rv))
		}
	}
	for n := range got {
		if _, ok := want[n]; !ok {
			diffs = append(diffs, n+": only in the informer")
		}
	}
	if len(diffs) > 5 {
		diffs = append(diffs[:5], fmt.Sprintf("and %d more", len(diffs)-5))
	}
	return strings.Join(diffs, "; ")
}

// createResult is what a client saw of one create.
type createResult struct {
	id    int
	named bool   // a fixed name; otherwise generateName and the id annotation
	name  string // the created object's name, on success
	err   error
}

const idAnnotation = "e2e.mvpctl.io/client-id"

func (f *faultRig) duringCreates(t *testing.T, round int) {
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Minute)
	defer cancel()
	ns := fmt.Sprintf("faults-create-%d", round)
	direct := f.direct()
	if _, err := direct.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	cms := kubernetes.NewForConfigOrDie(f.proxyConfig()).CoreV1().ConfigMaps(ns)
	retriedBefore := f.retried(t, "create")

	// Creates as fast as four clients go; the kill comes when a third of
	// them have succeeded, with the others in flight.
	results := make([]createResult, faultCreates)
	var next, succeeded atomic.Int64
	var killOnce sync.Once
	var killErr error
	var wg sync.WaitGroup
	for range faultCreateWorkers {
		wg.Go(func() {
			for {
				id := int(next.Add(1) - 1)
				if id >= faultCreates {
					return
				}
				r := createResult{id: id, named: id%2 == 0}
				cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{
					Annotations: map[string]string{idAnnotation: strconv.Itoa(id)},
				}}
				if r.named {
					cm.Name = fmt.Sprintf("named-%d", id)
				} else {
					cm.GenerateName = "gen-"
				}
				got, err := cms.Create(ctx, cm, metav1.CreateOptions{})
				r.err = err
				if err == nil {
					r.name = got.Name
					if succeeded.Add(1) == faultCreates/3 {
						killOnce.Do(func() { _, killErr = f.killServer0() })
					}
				}
				results[id] = r
			}
		})
	}
	wg.Wait()
	if killErr != nil {
		t.Fatal(killErr)
	}
	if !f.cp.Server(0).Exited() {
		t.Fatal("server 0 was never killed")
	}

	// What exists, read from the survivor.
	list, err := direct.CoreV1().ConfigMaps(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	byID := map[int][]string{}
	for _, cm := range list.Items {
		id, err := strconv.Atoi(cm.Annotations[idAnnotation])
		if err != nil {
			continue // kube-root-ca.crt has no controller here, but be safe
		}
		byID[id] = append(byID[id], cm.Name)
	}
	var ok, failed, conflicts, ambiguous, duplicates, lost int
	errKinds := map[string]int{}
	for _, r := range results {
		names := byID[r.id]
		if len(names) > 1 {
			duplicates++
			t.Errorf("create %d was applied %d times: %v", r.id, len(names), names)
		}
		switch {
		case r.err == nil:
			ok++
			if len(names) == 0 || names[0] != r.name {
				lost++
				t.Errorf("create %d succeeded for the client (%s) but the object is not there (%v)", r.id, r.name, names)
			}
		case r.named && apierrors.IsAlreadyExists(r.err):
			// The proxy sent a named create on to the survivor after the
			// killed server had applied it and died without answering.
			conflicts++
		default:
			failed++
			errKinds[classify("create", r.err)]++
			if len(names) > 0 {
				ambiguous++ // applied by the killed server, which died before answering
			}
		}
	}
	retried := f.retried(t, "create") - retriedBefore
	t.Logf("creates round %d: %d sent (%d named, %d generateName), %d succeeded, %d failed %v (%d of those applied before the server died), %d named ones answered 409 AlreadyExists after being sent on; proxy retried %d; duplicates %d, lost %d",
		round, len(results), (len(results)+1)/2, len(results)/2, ok, failed, errKinds, ambiguous, conflicts, retried, duplicates, lost)
}

// metricSum adds up the samples of a metric whose labels include match.
func metricSum(text, name string, match map[string]string) float64 {
	sum := 0.0
	for line := range strings.Lines(text) {
		var labels, value string
		if rest, ok := strings.CutPrefix(line, name+"{"); ok {
			if labels, value, ok = strings.Cut(rest, "} "); !ok {
				continue
			}
		} else if rest, ok := strings.CutPrefix(line, name+" "); ok {
			value = rest
		} else {
			continue
		}
		all := true
		for k, v := range match {
			if !strings.Contains(","+labels+",", ","+k+`="`+v+`",`) {
				all = false
			}
		}
		if all {
			v, _ := strconv.ParseFloat(strings.TrimSpace(value), 64)
			sum += v
		}
	}
	return sum
}

// pause holds a response body after n bytes until release is closed.
type pause struct {
	n       int64
	once    sync.Once
	reached chan struct{} // closed when the client has read n bytes
	release chan struct{} // closed to let it read on
	total   atomic.Int64  // bytes read
}

func newPause(n int64) *pause {
	return &pause{n: n, reached: make(chan struct{}), release: make(chan struct{})}
}

type pauseKey struct{}

func withPause(ctx context.Context, p *pause) context.Context {
	return context.WithValue(ctx, pauseKey{}, p)
}

// pausingTransport wraps the response body of a request whose context holds
// a *pause.
func pausingTransport(rt http.RoundTripper) http.RoundTripper {
	return roundTripFunc(func(req *http.Request) (*http.Response, error) {
		resp, err := rt.RoundTrip(req)
		if ps, ok := req.Context().Value(pauseKey{}).(*pause); ok && err == nil && resp.StatusCode == http.StatusOK {
			resp.Body = &pausedBody{ReadCloser: resp.Body, p: ps}
		}
		return resp, err
	})
}

type pausedBody struct {
	io.ReadCloser
	p    *pause
	done bool
}

func (b *pausedBody) Read(p []byte) (int, error) {
	if !b.done {
		if left := b.p.n - b.p.total.Load(); left <= 0 {
			b.done = true
			b.p.once.Do(func() { close(b.p.reached) })
			<-b.p.release
		} else if int64(len(p)) > left {
			p = p[:left]
		}
	}
	n, err := b.ReadCloser.Read(p)
	b.p.total.Add(int64(n))
	return n, err
}
