package proxy

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mvpctl/mvpctl/engine"
	"github.com/mvpctl/mvpctl/engine/proxy/internal/proxytest"
	"github.com/mvpctl/mvpctl/rules"
)

func servedObjectHandler(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	io.WriteString(w, proxytest.ServedObject)
}

func TestSetRules_EmulationFollowsTheRules(t *testing.T) {
	p, url, _ := emulationProxy(t, servedObjectHandler)
	obj := url + "/apis/myapps.example.com/v1alpha1/namespaces/ns/customresources/a"
	emulatedInDiscovery := func() bool {
		_, _, body := proxytest.Do(t, nil, proxytest.NewRequest(t, http.MethodGet, url+"/apis/myapps.example.com", ""))
		return strings.Contains(string(body), `"v1alpha1"`)
	}
	if code, _, body := proxytest.Do(t, nil, proxytest.NewRequest(t, http.MethodGet, obj, "")); code != http.StatusOK || !strings.Contains(string(body), `"legacyTimeout":30`) {
		t.Fatalf("with the seed rules: %d %s", code, body)
	}
	if !emulatedInDiscovery() {
		t.Fatal("discovery does not list the emulated v1alpha1")
	}

	if err := p.SetRules(Rules{}); err != nil {
		t.Fatal(err)
	}
	if emulatedInDiscovery() {
		t.Error("discovery still lists v1alpha1 after the rules were removed")
	}
	// Nobody serves v1alpha1 now: the request goes to a backend, which
	// answers 404 as kube-apiserver does.
	if code, _, body := proxytest.Do(t, nil, proxytest.NewRequest(t, http.MethodGet, obj, "")); code != http.StatusNotFound {
		t.Errorf("without rules: %d %s, want 404 from the backend", code, body)
	}

	if err := p.SetRules(Rules{Converter: proxytest.SeedConverter(t)}); err != nil {
		t.Fatal(err)
	}
	if !emulatedInDiscovery() {
		t.Error("discovery does not list v1alpha1 after the rules came back")
	}
	if code, _, body := proxytest.Do(t, nil, proxytest.NewRequest(t, http.MethodGet, obj, "")); code != http.StatusOK || !strings.Contains(string(body), `"stateManagement":"ephemeral"`) {
		t.Errorf("rules restored: %d %s", code, body)
	}
}

func TestSetRules_RoutingRules(t *testing.T) {
	old := newFake(t, "old", "v1.35.4", "v1/configmaps")
	cur := newFake(t, "new", "v1.36.3", "v1/configmaps")
	p, srv := startProxy(t, Options{Rules: Rules{Routing: []rules.RoutingRule{{Resource: "configmaps", PreferAPIServerVersion: "v1.35.y"}}}}, old, cur)
	sendTo := func() string {
		before := old.hits.Load()
		if code, _, body := proxytest.Do(t, nil, proxytest.NewRequest(t, http.MethodGet, srv.URL+"/api/v1/namespaces/default/configmaps/x", "")); code != http.StatusOK {
			t.Fatalf("%d %s", code, body)
		}
		if old.hits.Load() > before {
			return "old"
		}
		return "new"
	}
	for range 5 {
		if got := sendTo(); got != "old" {
			t.Fatalf("preferring v1.35.y, the request went to %s", got)
		}
	}
	if err := p.SetRules(Rules{Routing: []rules.RoutingRule{{Resource: "configmaps", PreferAPIServerVersion: ">=1.36"}}}); err != nil {
		t.Fatal(err)
	}
	for range 5 {
		if got := sendTo(); got != "new" {
			t.Fatalf("preferring >=1.36, the request went to %s", got)
		}
	}
}

func TestSetRules_BadPatternKeepsTheActiveRules(t *testing.T) {
	p, url, _ := emulationProxy(t, servedObjectHandler)
	err := p.SetRules(Rules{Routing: []rules.RoutingRule{{Resource: "*", PreferAPIServerVersion: "latest"}}})
	if err == nil || !strings.Contains(err.Error(), "apiRoutingRules[0].preferApiServerVersion") {
		t.Fatalf("err = %v, want one naming apiRoutingRules[0].preferApiServerVersion", err)
	}
	if code, _, body := proxytest.Do(t, nil, proxytest.NewRequest(t, http.MethodGet, url+"/apis/myapps.example.com/v1alpha1/namespaces/ns/customresources/a", "")); code != http.StatusOK {
		t.Errorf("after a rejected SetRules: %d %s", code, body)
	}
}

// A swap in the middle of a request changes nothing for it: it converts
// with the set it started with. The backend swaps the rules while it
// answers, so every request meets a swap between its start and its
// conversion. The two sets give stateManagement different values, and the
// backend names the object after the set that was active, so that the
// answer shows which set converted it.
func TestSetRules_SwapUnderLoad(t *testing.T) {
	durable := strings.Replace(proxytest.SeedRules, "matchValue: ephemeral", "matchValue: durable", 1)
	convs := []*engine.Converter{proxytest.SeedConverter(t), proxytest.Converter(t, durable, engine.Options{})}
	want := []string{`"stateManagement":"ephemeral"`, `"stateManagement":"durable"`}
	var proxy atomic.Pointer[Proxy]
	var mu sync.Mutex
	active := 0 // the set the proxy started with: the seed's
	p, url, _ := emulationProxy(t, func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		was := active
		active = 1 - active
		if err := proxy.Load().SetRules(Rules{Converter: convs[active]}); err != nil {
			t.Errorf("SetRules: %v", err)
		}
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, strings.Replace(proxytest.ServedObject, `"name":"a"`, fmt.Sprintf(`"name":"set-%d"`, was), 1))
	})
	proxy.Store(p)
	obj := url + "/apis/myapps.example.com/v1alpha1/namespaces/ns/customresources/a"
	// One request at a time: each answer is converted by the set that was
	// active when it started.
	for range 20 {
		code, _, body := proxytest.Do(t, nil, proxytest.NewRequest(t, http.MethodGet, obj, ""))
		if code != http.StatusOK {
			t.Fatalf("%d %s", code, body)
		}
		set := 0
		if strings.Contains(string(body), `"name":"set-1"`) {
			set = 1
		}
		if !strings.Contains(string(body), want[set]) {
			t.Fatalf("converted by the other set: %s", body)
		}
	}
	// Four clients at once: every request also meets the others' swaps.
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for range 25 {
				if err := getConverted(obj); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
}

// getConverted GETs an emulated object and checks that it was converted.
// It does not end the test: it runs on goroutines of its own.
func getConverted(url string) error {
	resp, err := http.Get(url)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), `"legacyTimeout":30`) {
		return fmt.Errorf("%d %s", resp.StatusCode, body)
	}
	return nil
}

func TestHealth_ProxyAnswersLivezAndReadyz(t *testing.T) {
	f := newFake(t, "a", "v1.36.3", "v1/configmaps")
	_, srv := startProxy(t, Options{}, f)
	if code, _, body := proxytest.Do(t, nil, proxytest.NewRequest(t, http.MethodGet, srv.URL+"/livez", "")); code != http.StatusOK || string(body) != "ok" {
		t.Errorf("/livez: %d %q", code, body)
	}
	if code, _, body := proxytest.Do(t, nil, proxytest.NewRequest(t, http.MethodGet, srv.URL+"/readyz?verbose", "")); code != http.StatusOK || string(body) != "[+]ping ok\n[+]backends ok\n[+]shutdown ok\nreadyz check passed\n" {
		t.Errorf("/readyz?verbose: %d %q", code, body)
	}
	before := f.hits.Load()
	if code, _, _ := proxytest.Do(t, nil, proxytest.NewRequest(t, http.MethodGet, srv.URL+"/healthz", "")); code != http.StatusOK || f.hits.Load() != before+1 {
		t.Errorf("/healthz: %d, backend hits %d→%d; want it passed through", code, before, f.hits.Load())
	}

	f.notReady.Store(true)
	proxytest.Poll(t, "the backend not ready", func() bool {
		code, _, _ := proxytest.Do(t, nil, proxytest.NewRequest(t, http.MethodGet, srv.URL+"/readyz", ""))
		return code == http.StatusInternalServerError
	})
	code, _, body := proxytest.Do(t, nil, proxytest.NewRequest(t, http.MethodGet, srv.URL+"/readyz", ""))
	if want := "[+]ping ok\n[-]backends failed: none of 1 kube-apiservers is ready\n[+]shutdown ok\nreadyz check failed\n"; string(body) != want {
		t.Errorf("/readyz with no backend ready: %d %q, want %q", code, body, want)
	}
	if code, _, _ := proxytest.Do(t, nil, proxytest.NewRequest(t, http.MethodGet, srv.URL+"/livez", "")); code != http.StatusOK {
		t.Errorf("/livez with no backend ready: %d, want 200 (the process is fine)", code)
	}
}

func TestHealth_DrainFailsReadyzButServes(t *testing.T) {
	f := newFake(t, "a", "v1.36.3", "v1/configmaps")
	p, srv := startProxy(t, Options{}, f)
	p.Drain()
	code, _, body := proxytest.Do(t, nil, proxytest.NewRequest(t, http.MethodGet, srv.URL+"/readyz", ""))
	if want := "[+]ping ok\n[+]backends ok\n[-]shutdown failed: the proxy is shutting down\nreadyz check failed\n"; code != http.StatusInternalServerError || string(body) != want {
		t.Errorf("/readyz while draining: %d %q, want 500 %q", code, body, want)
	}
	if code, _, body := proxytest.Do(t, nil, proxytest.NewRequest(t, http.MethodGet, srv.URL+"/api/v1/namespaces/default/configmaps/x", "")); code != http.StatusOK {
		t.Errorf("a request while draining: %d %s, want it served", code, body)
	}
}

// A watch through the proxy ends when the proxy stops, so that shutting
// down does not wait for clients that would otherwise keep it open.
func TestStop_EndsWatches(t *testing.T) {
	f := newFake(t, "a", "v1.36.3", "v1/configmaps")
	f.setHandler(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"type":"ADDED","object":{"kind":"ConfigMap","apiVersion":"v1","metadata":{"name":"x"}}}`+"\n")
		w.(http.Flusher).Flush()
		<-r.Context().Done()
	})
	p, err := New(Options{Backends: []Backend{f.backend(t)}, HealthInterval: 20 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	p.Run(ctx)
	if err := p.WaitReady(t.Context()); err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(p)
	defer srv.Close()
	resp, err := http.Get(srv.URL + "/api/v1/namespaces/default/configmaps?watch=true")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	line, err := bufio.NewReader(resp.Body).ReadString('\n')
	if err != nil || !strings.Contains(line, `"ADDED"`) {
		t.Fatalf("first event: %q %v", line, err)
	}
	// The backend never ends the watch by itself: when it ends, the proxy
	// must have stopped first.
	var stopped atomic.Bool
	ended := make(chan bool, 1)
	go func() {
		_, _ = io.Copy(io.Discard, resp.Body)
		ended <- stopped.Load()
	}()
	stopped.Store(true)
	stop()
	select {
	case afterStop := <-ended:
		if !afterStop {
			t.Fatal("the watch ended before the proxy stopped")
		}
	case <-time.After(10 * time.Second): // a bound, not a measure
		t.Fatal("the watch is still open 10s after the proxy stopped")
	}
}
