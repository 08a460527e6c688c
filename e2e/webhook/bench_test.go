package webhook_test

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	certutil "k8s.io/client-go/util/cert"

	"github.com/mvpctl/mvpctl/e2e/framework"
)

// benchEnv turns the benchmark on; it is not part of the e2e run.
const benchEnv = "MVPCTL_E2E_BENCH_WEBHOOK"

// Kubernetes' CRD scalability target: LISTs of 1,500 custom resources of
// about 2 KB, with a p99 of at most 1 s through a conversion webhook.
const (
	benchObjects  = 1500
	benchListsPer = 10  // LISTs per webhook per round
	benchGetsPer  = 300 // GETs per webhook per round
)

// benchRounds is the number of interleaved rounds (at least 5);
// MVPCTL_E2E_BENCH_ROUNDS overrides.
func benchRounds(t *testing.T) int {
	if s := os.Getenv("MVPCTL_E2E_BENCH_ROUNDS"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 {
			t.Fatalf("MVPCTL_E2E_BENCH_ROUNDS=%q", s)
		}
		return n
	}
	return 6
}

// convWebhook is one of the two webhooks compared: how to point the CRD
// at it and how to tell that the apiserver calls it.
type convWebhook struct {
	name     string
	proc     *process
	url      string
	caBundle []byte
	requests func(t testing.TB) float64 // conversion requests it has served

	lists, gets        []time.Duration
	listCPU, getCPU    time.Duration
	listObjs, getsDone int
	reviewsPerList     float64
}

// startBaseline builds and runs the controller-runtime webhook of
// crbaseline/ with a certificate for 127.0.0.1 from client-go's
// certificate helper.
func startBaseline(t *testing.T, kubeconfig string) *convWebhook {
	t.Helper()
	dir := t.TempDir()
	bin := filepath.Join(dir, "crbaseline")
	build := exec.CommandContext(t.Context(), "go", "build", "-o", bin, "./crbaseline")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build ./crbaseline: %v\n%s", err, out)
	}
	certPEM, keyPEM, err := certutil.GenerateSelfSignedCertKey("127.0.0.1", []net.IP{net.ParseIP("127.0.0.1")}, nil)
	if err != nil {
		t.Fatal(err)
	}
	certDir := filepath.Join(dir, "certs")
	if err := os.MkdirAll(certDir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(certDir, "tls.crt"), certPEM, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(certDir, "tls.key"), keyPEM, 0o600); err != nil {
		t.Fatal(err)
	}
	port, mport, hport := freePort(t), freePort(t), freePort(t)
	p := newProcess(t, t, "crbaseline", bin,
		"--webhook-host", "127.0.0.1", "--webhook-port", strconv.Itoa(port), "--webhook-cert-dir", certDir,
		"--metrics-bind-address", "127.0.0.1:"+strconv.Itoa(mport),
		"--health-probe-bind-address", "127.0.0.1:"+strconv.Itoa(hport))
	p.env = []string{"KUBECONFIG=" + kubeconfig}
	p.start(t)
	eventually(t, 60*time.Second, "the controller-runtime webhook's /readyz", func() (bool, error) {
		if p.exited() {
			t.Fatalf("crbaseline exited: %v\n%s", p.err, p.tail(4000))
		}
		resp, err := http.Get("http://127.0.0.1:" + strconv.Itoa(hport) + "/readyz")
		if err != nil {
			return false, err
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK, fmt.Errorf("%s", resp.Status)
	})
	metrics := "http://127.0.0.1:" + strconv.Itoa(mport) + "/metrics"
	return &convWebhook{
		name: "controller-runtime", proc: p, caBundle: certPEM,
		url: "https://127.0.0.1:" + strconv.Itoa(port) + "/convert",
		requests: func(t testing.TB) float64 {
			return metricValue(t, metrics, `controller_runtime_webhook_requests_total{code="200",webhook="/convert"}`)
		},
	}
}

// benchWidget is a Widget in v1 of about 2 KB, as Kubernetes' CRD
// scalability target has them.
func benchWidget(i int) map[string]any {
	r := rand.New(rand.NewPCG(uint64(i), 1))
	payload := make([]byte, 1500)
	for j := range payload {
		payload[j] = "abcdefghijklmnopqrstuvwxyz0123456789"[r.IntN(36)]
	}
	tiers := []string{"small", "medium", "large"}
	spec := map[string]any{
		"replicas":  i % 7,
		"config":    map[string]any{"timeoutSeconds": 30 + i%60},
		"tier":      tiers[i%3],
		"container": map[string]any{"image": fmt.Sprintf("registry.example/widget:%d.%d", i%5, i%11)},
		"payload":   string(payload),
		"tags":      []any{"bench", fmt.Sprintf("shard-%d", i%16), fmt.Sprintf("index-%d", i)},
	}
	if i%2 == 0 {
		spec["paused"] = true
	}
	obj := widget(fmt.Sprintf("bench-%04d", i), "v1", spec)
	obj["metadata"].(map[string]any)["labels"].(map[string]any)["bench"] = "true"
	return obj
}

// TestWebhook_Benchmark compares mvpctl webhook with a controller-runtime
// conversion webhook (hand-written hub/spoke functions) on one apiserver,
// one CRD and the same 1,500 objects: LISTs and GETs in v1alpha1 (stored
// as v1, so every object is converted, two rules for mvpctl), in
// interleaved rounds, with each webhook's CPU time per converted object.
func TestWebhook_Benchmark(t *testing.T) {
	if os.Getenv(benchEnv) != "1" {
		t.Skipf("set %s=1 to run the conversion webhook benchmark", benchEnv)
	}
	rounds := benchRounds(t)
	kubeCacheDir = t.TempDir()
	defer func() { kubeCacheDir = "" }()
	// Without the watch cache every LIST reads etcd and converts what it
	// read; with it, a LIST in v1alpha1 is served from that version's
	// cache, filled (and converted) once per write, and no LIST reaches a
	// webhook.
	// MVPCTL_E2E_BENCH_WATCH_CACHE=1 keeps kube-apiserver's default.
	var extra []string
	watchCache := os.Getenv("MVPCTL_E2E_BENCH_WATCH_CACHE") == "1"
	if !watchCache {
		extra = []string{"--watch-cache=false"}
	}
	cp := framework.Start(t, framework.Options{Versions: []string{serverVersion}, ExtraArgs: extra})
	kc := cp.Server(0).Kubeconfig
	cfg := cp.Server(0).RESTConfig()
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	mustKubectl(t, kc, "", "apply", "-f", crdFile)
	mustKubectl(t, kc, "", "wait", "--for=condition=Established", "--timeout=60s", "crd/"+crdName)

	mv := startWebhook(t, t, "")
	mvpctlWebhook := &convWebhook{
		name: "mvpctl", proc: mv.process, url: mv.URL, caBundle: mv.caPEM(t),
		requests: func(t testing.TB) float64 {
			return metricValue(t, mv.Metrics, `mvpctl_webhook_review_objects_count{`)
		},
	}
	baseline := startBaseline(t, kc)
	hooks := []*convWebhook{mvpctlWebhook, baseline}

	// The objects, in the stored version: creating them converts nothing.
	start := time.Now()
	work := make(chan int)
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for i := range work {
				obj := &unstructured.Unstructured{Object: benchWidget(i)}
				if _, err := dyn.Resource(gvr("v1")).Namespace(namespace).Create(t.Context(), obj, metav1.CreateOptions{}); err != nil {
					t.Errorf("create %d: %v", i, err)
				}
			}
		})
	}
	for i := range benchObjects {
		work <- i
	}
	close(work)
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}
	size := len(mustJSON(t, benchWidget(0)))
	t.Logf("%d objects of %d bytes created in %s", benchObjects, size, time.Since(start).Round(time.Millisecond))

	rc, err := rest.RESTClientFor(restConfigFor(cfg))
	if err != nil {
		t.Fatal(err)
	}
	listPath := "/apis/" + group + "/v1alpha1/namespaces/" + namespace + "/widgets"
	storedPath := "/apis/" + group + "/v1/namespaces/" + namespace + "/widgets"
	listAt := func(path string) ([]byte, time.Duration) {
		t.Helper()
		t0 := time.Now()
		body, err := rc.Get().AbsPath(path).Param("labelSelector", "bench=true").DoRaw(t.Context())
		d := time.Since(t0)
		if err != nil {
			t.Fatalf("LIST: %v", err)
		}
		return body, d
	}
	list := func() ([]byte, time.Duration) { return listAt(listPath) }
	get := func(i int) time.Duration {
		t.Helper()
		t0 := time.Now()
		_, err := rc.Get().AbsPath(listPath, fmt.Sprintf("bench-%04d", i)).DoRaw(t.Context())
		d := time.Since(t0)
		if err != nil {
			t.Fatalf("GET: %v", err)
		}
		return d
	}

	// The two webhooks must give the same objects (but for the annotation
	// each keeps its round-trip data in).
	results := map[string]map[string]any{}
	for _, h := range hooks {
		switchTo(t, kc, h, hooks)
		body, _ := list()
		results[h.name] = benchSpecs(t, body)
	}
	if diff := cmp.Diff(results["controller-runtime"], results["mvpctl"]); diff != "" {
		t.Fatalf("the two webhooks convert differently (-controller-runtime +mvpctl):\n%s", diff)
	}

	r := rand.New(rand.NewPCG(7, 7))
	var stored []time.Duration // LISTs in v1, the stored version: no conversion
	for round := range rounds {
		for range 3 {
			_, d := listAt(storedPath)
			stored = append(stored, d)
		}
		order := hooks
		if round%2 == 1 {
			order = []*convWebhook{hooks[1], hooks[0]}
		}
		for _, h := range order {
			switchTo(t, kc, h, hooks)
			list() // warm up: the new CRD handler's caches and connections
			cpu0, reviews0 := h.proc.cpuTime(t), h.requests(t)
			for range benchListsPer {
				_, d := list()
				h.lists = append(h.lists, d)
			}
			cpu1, reviews1 := h.proc.cpuTime(t), h.requests(t)
			h.reviewsPerList = (reviews1 - reviews0) / benchListsPer
			for range benchGetsPer {
				h.gets = append(h.gets, get(r.IntN(benchObjects)))
			}
			cpu2 := h.proc.cpuTime(t)
			h.listCPU += cpu1 - cpu0
			h.getCPU += cpu2 - cpu1
			h.listObjs += benchListsPer * benchObjects
			h.getsDone += benchGetsPer
		}
	}

	var b strings.Builder
	fmt.Fprintf(&b, "kube-apiserver %s, watch cache %v; %d rounds; per webhook %d LISTs of %d objects (%d B each) and %d GETs, in v1alpha1 (stored: v1)\n\n",
		serverVersion, watchCache, rounds, rounds*benchListsPer, benchObjects, size, rounds*benchGetsPer)
	b.WriteString("| webhook | LIST p50 | LIST p99 | CPU per object (LIST) | GET p50 | GET p99 | CPU per GET |\n|---|---:|---:|---:|---:|---:|---:|\n")
	for _, h := range hooks {
		fmt.Fprintf(&b, "| %s | %s | %s | %.1f µs | %s | %s | %.0f µs |\n", h.name,
			ms(percentile(h.lists, 50)), ms(percentile(h.lists, 99)),
			float64(h.listCPU.Microseconds())/float64(h.listObjs),
			ms(percentile(h.gets, 50)), ms(percentile(h.gets, 99)),
			float64(h.getCPU.Microseconds())/float64(h.getsDone))
	}
	fmt.Fprintf(&b, "| none (LIST in v1, the stored version) | %s | %s | | | | |\n", ms(percentile(stored, 50)), ms(percentile(stored, 99)))
	m, c := hooks[0], hooks[1]
	fmt.Fprintf(&b, "\nmvpctl / controller-runtime: LIST p50 %.2f×, LIST p99 %.2f×, CPU per object (LIST) %.2f×, GET p50 %.2f×, CPU per GET %.2f×\n",
		ratio(percentile(m.lists, 50), percentile(c.lists, 50)), ratio(percentile(m.lists, 99), percentile(c.lists, 99)),
		ratio(m.listCPU, c.listCPU), ratio(percentile(m.gets, 50), percentile(c.gets, 50)), ratio(m.getCPU, c.getCPU))
	fmt.Fprintf(&b, "conversion requests per LIST: mvpctl %.0f, controller-runtime %.0f\n", m.reviewsPerList, c.reviewsPerList)
	t.Log("\n" + b.String())
	if p99 := percentile(m.lists, 99); p99 > time.Second {
		// Reported, not asserted: a loaded machine is not the target's.
		t.Logf("mvpctl's LIST p99 %s is above Kubernetes' 1 s target for 1,500 objects", p99)
	}
}

// restConfigFor is cfg for raw requests: JSON, no rate limit.
func restConfigFor(cfg *rest.Config) *rest.Config {
	c := rest.CopyConfig(cfg)
	c.GroupVersion = &schema.GroupVersion{Group: group, Version: "v1alpha1"}
	c.APIPath = "/apis"
	c.NegotiatedSerializer = scheme.Codecs.WithoutConversion()
	c.QPS, c.Burst = -1, 0
	return c
}

// switchTo points the CRD's conversion at h and waits until the apiserver
// converts through h alone: three GETs in a row counted by h and by no
// other webhook.
func switchTo(t *testing.T, kc string, h *convWebhook, all []*convWebhook) {
	t.Helper()
	patch := map[string]any{"spec": map[string]any{"conversion": map[string]any{"strategy": "Webhook", "webhook": map[string]any{
		"conversionReviewVersions": []string{"v1"},
		"clientConfig":             map[string]any{"url": h.url, "caBundle": h.caBundle},
	}}}}
	mustKubectl(t, kc, "", "patch", "crd", crdName, "--type", "merge", "-p", mustJSON(t, patch))
	others := func() float64 {
		sum := 0.0
		for _, o := range all {
			if o != h {
				sum += o.requests(t)
			}
		}
		return sum
	}
	inARow := 0
	eventually(t, 60*time.Second, "the apiserver to convert through "+h.name, func() (bool, error) {
		mine, theirs := h.requests(t), others()
		out, err := kubectl(t, kc, "", "get", "widgets.v1alpha1."+group, "bench-0000", "-n", namespace, "-o", "name")
		if err != nil {
			inARow = 0
			return false, err
		}
		if h.requests(t) > mine && others() == theirs {
			inARow++
		} else {
			inARow = 0
		}
		return inARow >= 3, fmt.Errorf("%s: %d in a row", strings.TrimSpace(out), inARow)
	})
}

// benchSpecs are the specs of a LIST's items by name, with the annotations
// other than each webhook's round-trip data.
func benchSpecs(t *testing.T, body []byte) map[string]any {
	t.Helper()
	var l unstructured.UnstructuredList
	if err := json.Unmarshal(body, &l); err != nil {
		t.Fatal(err)
	}
	if len(l.Items) != benchObjects {
		t.Fatalf("LIST: %d items, want %d", len(l.Items), benchObjects)
	}
	out := map[string]any{}
	for _, item := range l.Items {
		if item.GetAPIVersion() != group+"/v1alpha1" {
			t.Fatalf("LIST: an item in %s", item.GetAPIVersion())
		}
		ann := item.GetAnnotations()
		delete(ann, roundTripAnnotation)
		delete(ann, "example.com/conversion-data")
		out[item.GetName()] = map[string]any{"spec": item.Object["spec"], "annotations": ann, "labels": item.GetLabels()}
	}
	return out
}

func percentile(ds []time.Duration, p int) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	if len(s) == 0 {
		return 0
	}
	i := (len(s)*p + 99) / 100
	return s[min(max(i-1, 0), len(s)-1)]
}

func ratio(a, b time.Duration) float64 { return float64(a) / float64(b) }

func ms(d time.Duration) string { return fmt.Sprintf("%.1f ms", float64(d.Microseconds())/1000) }
