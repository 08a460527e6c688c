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

// A swap in the middle of traffic fails no request: each request converts
// with the set it started with, and both sets emulate the version.
func TestSetRules_SwapUnderLoad(t *testing.T) {
	p, url, _ := emulationProxy(t, servedObjectHandler)
	convs := []*engine.Converter{proxytest.SeedConverter(t), proxytest.SeedConverter(t)}
	obj := url + "/apis/myapps.example.com/v1alpha1/namespaces/ns/customresources/a"
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	var requests atomic.Int64
	errs := make(chan error, 4)
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil && requests.Add(1) <= 2000 {
				resp, err := http.Get(obj)
				if err != nil {
					errs <- err
					return
				}
				body, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), `"legacyTimeout":30`) {
					errs <- fmt.Errorf("%d %s", resp.StatusCode, body)
					return
				}
			}
		}()
	}
	swaps := 0
	deadline := time.After(5 * time.Second)
loop:
	for requests.Load() < 2000 {
		select {
		case <-deadline:
			break loop
		case err := <-errs:
			t.Fatalf("after %d swaps: %v", swaps, err)
		default:
		}
		if err := p.SetRules(Rules{Converter: convs[swaps%2]}); err != nil {
			t.Fatal(err)
		}
		swaps++
		time.Sleep(time.Millisecond)
	}
	cancel()
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Errorf("after %d swaps: %v", swaps, err)
	}
	if swaps < 10 {
		t.Errorf("only %d swaps happened during the load", swaps)
	}
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
	ended := make(chan error, 1)
	go func() {
		_, err := io.Copy(io.Discard, resp.Body)
		ended <- err
	}()
	select {
	case err := <-ended:
		t.Fatalf("the watch ended before the proxy stopped: %v", err)
	case <-time.After(100 * time.Millisecond):
	}
	stop()
	select {
	case <-ended:
	case <-time.After(10 * time.Second):
		t.Fatal("the watch is still open 10s after the proxy stopped")
	}
}
