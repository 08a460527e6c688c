package proxy_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilnet "k8s.io/apimachinery/pkg/util/net"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	certutil "k8s.io/client-go/util/cert"
	"k8s.io/client-go/util/retry"

	"github.com/mvpctl/mvpctl/e2e/framework"
)

// clusterRules is the seed rules as a TransformationRules object; label,
// when set, is added to every object the old client reads (and removed
// from what it writes), so that a client can tell which generation
// converted its answer.
func clusterRules(t *testing.T, label, forward string) string {
	t.Helper()
	s := strings.Replace(readTestdata(t, seedRulesFile), "metadata: {name: upgrade-v1.31-to-v1.32}", "metadata: {name: seed}", 1)
	if label != "" {
		s += fmt.Sprintf("    - {action: jq, forward: 'del(.metadata.labels.rules)', reverse: '.metadata.labels.rules = %q'}\n", label)
	}
	if forward != "" {
		s += fmt.Sprintf("    - {action: jq, forward: %q, reverse: \".\"}\n", forward)
	}
	return s
}

// servingCert writes one serving certificate for 127.0.0.1, shared by
// proxy replicas behind one address as a Deployment's pods share a Secret.
func servingCert(t *testing.T) (certFile, keyFile string) {
	t.Helper()
	certPEM, keyPEM, err := certutil.GenerateSelfSignedCertKey("127.0.0.1", []net.IP{net.ParseIP("127.0.0.1")}, []string{"localhost"})
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	certFile, keyFile = filepath.Join(dir, "tls.crt"), filepath.Join(dir, "tls.key")
	if err := os.WriteFile(certFile, certPEM, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(keyFile, keyPEM, 0o600); err != nil {
		t.Fatal(err)
	}
	return certFile, keyFile
}

// TestProxy_RulesFromCluster runs two proxy replicas with
// --rules-from-cluster against one kube-apiserver: a TransformationRules
// object created with kubectl is served within 2 seconds, an edit takes
// effect under load without a failed request, a broken edit is rejected
// while the previous rules keep serving, the replicas answer alike, and
// killing one of them behind a load balancer loses no request that a client
// retries as Kubernetes clients do.
func TestProxy_RulesFromCluster(t *testing.T) {
	cp := framework.Start(t, framework.Options{Versions: []string{newVersion}})
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Minute)
	defer cancel()
	direct := cp.Server(0).Kubeconfig
	dir := t.TempDir()
	crdFile := testdataPath(t, crdV1beta1OnlyFile)
	for _, args := range [][]string{
		{"apply", "-f", "../../deploy/crd/transformationrules.mvp.k8s.io.yaml", "-f", crdFile},
		{"wait", "--for=condition=Established", "crd/transformationrules.mvp.k8s.io", "crd/customresources.myapps.example.com", "--timeout=60s"},
	} {
		if out, err := kubectl(t, ctx, direct, args...); err != nil {
			t.Fatalf("kubectl %v: %v\n%s", args, err, out)
		}
	}
	apply := func(t *testing.T, doc string) {
		t.Helper()
		f := filepath.Join(dir, "rules.yaml")
		if err := os.WriteFile(f, []byte(doc), 0o644); err != nil {
			t.Fatal(err)
		}
		if out, err := kubectl(t, ctx, direct, "apply", "-f", f); err != nil {
			t.Fatalf("kubectl apply: %v\n%s", err, out)
		}
	}
	obj := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "myapps.example.com/v1beta1", "kind": "CustomResource",
		"metadata": map[string]any{"name": "one", "namespace": "default"},
		"spec":     map[string]any{"stateManagement": "stateless", "config": map[string]any{"requestTimeoutSeconds": int64(30)}},
	}}
	if _, err := dynamic.NewForConfigOrDie(cp.Server(0).RESTConfig()).Resource(crV1beta1).Namespace("default").Create(ctx, obj, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	cert, key := servingCert(t)
	replicas := []*proxyProcess{
		startProxy(t, cp, "--rules-from-cluster", "--tls-cert-file", cert, "--tls-private-key-file", key),
		startProxy(t, cp, "--rules-from-cluster", "--tls-cert-file", cert, "--tls-private-key-file", key),
	}
	clients := make([]dynamic.ResourceInterface, len(replicas))
	for i, p := range replicas {
		clients[i] = dynamic.NewForConfigOrDie(p.tokenConfig(cp)).Resource(crV1alpha1).Namespace("default")
	}
	// label reads the object as v1alpha1 through replica i: the rules label,
	// or an error.
	label := func(i int) (string, error) {
		got, err := clients[i].Get(ctx, "one", metav1.GetOptions{})
		if err != nil {
			return "", err
		}
		if v, _, _ := unstructured.NestedInt64(got.Object, "spec", "config", "legacyTimeout"); v != 30 {
			return "", fmt.Errorf("not converted: %v", got.Object["spec"])
		}
		return got.GetLabels()["rules"], nil
	}
	for i := range replicas {
		if _, err := label(i); !apierrors.IsNotFound(err) {
			t.Fatalf("replica %d before any rules: %v, want 404 (nobody serves v1alpha1)", i, err)
		}
	}

	t.Run("created object is served", func(t *testing.T) {
		apply(t, clusterRules(t, "", ""))
		applied := time.Now()
		for i := range replicas {
			waitUntil(t, fmt.Sprintf("replica %d to emulate v1alpha1", i), func() bool {
				_, err := label(i)
				return err == nil
			})
			t.Logf("replica %d emulates v1alpha1 %s after kubectl apply returned", i, time.Since(applied).Round(time.Millisecond))
		}
	})

	t.Run("edit under load fails no request", func(t *testing.T) {
		// Four clients per replica read through the edit. Each request's
		// answer is from the old generation or the new one, never an error,
		// and once a client saw the new one it never sees the old again.
		var requests, failures, sawOld, sawNew, clientsOnNew atomic.Int64
		errs := make(chan error, 16)
		loadCtx, stop := context.WithCancel(ctx)
		defer stop()
		var wg sync.WaitGroup
		for i := range replicas {
			for range 4 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					seenNew := false
					for loadCtx.Err() == nil && requests.Add(1) <= 20000 {
						l, err := label(i)
						switch {
						case err != nil && loadCtx.Err() != nil:
							return
						case err != nil:
							failures.Add(1)
							select {
							case errs <- fmt.Errorf("replica %d: %w", i, err):
							default:
							}
						case l == "v2":
							if !seenNew {
								clientsOnNew.Add(1)
							}
							seenNew = true
							sawNew.Add(1)
						case seenNew:
							failures.Add(1)
							errs <- fmt.Errorf("replica %d: the old rules answered after the new ones had", i)
						default:
							sawOld.Add(1)
						}
					}
				}()
			}
		}
		clients := int64(4 * len(replicas))
		waitUntil(t, "answers of the old rules", func() bool { return sawOld.Load() >= clients })
		apply(t, clusterRules(t, "v2", ""))
		applied := time.Now()
		for i := range replicas {
			waitUntil(t, fmt.Sprintf("replica %d to serve the edit", i), func() bool {
				l, _ := label(i)
				return l == "v2"
			})
		}
		t.Logf("edit active on both replicas %s after kubectl apply returned", time.Since(applied).Round(time.Millisecond))
		waitUntil(t, "every client to see the edit", func() bool { return clientsOnNew.Load() == clients })
		stop()
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Error(err)
		}
		t.Logf("%d requests during the edit: %d answered by the old rules, %d by the new, %d failed", sawOld.Load()+sawNew.Load()+failures.Load(), sawOld.Load(), sawNew.Load(), failures.Load())
		if sawOld.Load() == 0 || sawNew.Load() == 0 {
			t.Errorf("the load did not span the edit: %d old, %d new answers", sawOld.Load(), sawNew.Load())
		}
	})

	t.Run("broken edit is rejected, the previous rules serve", func(t *testing.T) {
		apply(t, clusterRules(t, "v2", ".spec |"))
		var msg string
		for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
			out, err := kubectl(t, ctx, direct, "get", "transformationrules", "seed", "-o", `jsonpath={.status.conditions[?(@.type=="Ready")].status}:{.status.conditions[?(@.type=="Ready")].message}`)
			if err == nil && strings.HasPrefix(out, "False:") {
				msg = out
				break
			}
		}
		if !strings.Contains(msg, "spec.apiMigrationRules[0].transformations[3].forward") {
			t.Fatalf("Ready condition after a broken edit: %q, want False naming spec.apiMigrationRules[0].transformations[3].forward", msg)
		}
		for i := range replicas {
			if l, err := label(i); err != nil || l != "v2" {
				t.Errorf("replica %d after the broken edit: label %q, %v; want the previous rules (v2)", i, l, err)
			}
		}
	})

	t.Run("replicas answer alike", func(t *testing.T) {
		for _, path := range []string{
			"/apis/myapps.example.com/v1alpha1/namespaces/default/customresources/one",
			"/apis/myapps.example.com/v1alpha1/namespaces/default/customresources",
			"/apis/myapps.example.com",
			"/apis/myapps.example.com/v1alpha1",
		} {
			var bodies [][]byte
			for _, p := range replicas {
				cfg := p.tokenConfig(cp)
				hc, err := rest.HTTPClientFor(cfg)
				if err != nil {
					t.Fatal(err)
				}
				resp, err := hc.Get(cfg.Host + path)
				if err != nil {
					t.Fatalf("%s: %v", path, err)
				}
				b, err := io.ReadAll(resp.Body)
				resp.Body.Close()
				if err != nil || resp.StatusCode != http.StatusOK {
					t.Fatalf("%s: %d %v %s", path, resp.StatusCode, err, b)
				}
				bodies = append(bodies, b)
			}
			if !bytes.Equal(bodies[0], bodies[1]) {
				t.Errorf("%s differs between the replicas:\n%s\n%s", path, bodies[0], bodies[1])
			}
		}
	})

	t.Run("killing a replica loses no retried request", func(t *testing.T) {
		lb := newRoundRobin(t, replicas[0].URL, replicas[1].URL)
		cfg := replicas[0].tokenConfig(cp)
		cfg.Host = "https://" + lb
		cli := dynamic.NewForConfigOrDie(cfg).Resource(crV1alpha1).Namespace("default")
		var requests, retried, failed atomic.Int64
		loadCtx, stop := context.WithCancel(ctx)
		defer stop()
		var wg sync.WaitGroup
		errs := make(chan error, 8)
		for w := range 4 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for n := 0; loadCtx.Err() == nil && n < 2000; n++ {
					requests.Add(1)
					attempts := 0
					// Kubernetes clients retry a GET that failed on the
					// connection, and an update conflicts rather than
					// applying twice (resourceVersion precondition).
					err := retry.OnError(retry.DefaultBackoff, func(err error) bool {
						attempts++
						return utilnet.IsConnectionReset(err) || utilnet.IsConnectionRefused(err) || errors.Is(err, io.EOF) ||
							errors.Is(err, io.ErrUnexpectedEOF) || utilnet.IsProbableEOF(err) || apierrors.IsConflict(err) ||
							apierrors.IsServiceUnavailable(err) || strings.Contains(err.Error(), "client connection lost")
					}, func() error {
						got, err := cli.Get(loadCtx, "one", metav1.GetOptions{})
						if err != nil || w > 0 {
							return err
						}
						unstructured.SetNestedField(got.Object, fmt.Sprint(n), "metadata", "annotations", "writer")
						_, err = cli.Update(loadCtx, got, metav1.UpdateOptions{})
						return err
					})
					if attempts > 0 {
						retried.Add(1)
					}
					if err != nil && loadCtx.Err() == nil {
						failed.Add(1)
						select {
						case errs <- err:
						default:
						}
					}
				}
			}()
		}
		waitUntil(t, "load through both replicas", func() bool { return requests.Load() >= 100 })
		replicas[1].kill()
		killed := time.Now()
		atKill := requests.Load()
		waitUntil(t, "requests after the kill", func() bool { return requests.Load() >= atKill+400 })
		stop()
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Errorf("a request failed after its retries: %v", err)
		}
		t.Logf("%d requests through two replicas, one killed %s before the end: %d retried, %d failed",
			requests.Load(), time.Since(killed).Round(time.Millisecond), retried.Load(), failed.Load())
		replicas[1].restart(t)
		replicas[1].waitReady(t, 1)
	})
}

// roundRobin is a TCP load balancer in front of proxy replicas, as a
// Service is: each connection goes to the next replica that accepts it.
type roundRobin struct {
	ln       net.Listener
	backends []string
	next     atomic.Uint64
	mu       sync.Mutex
	conns    map[net.Conn]bool // client connections, closed at the end
}

func newRoundRobin(t *testing.T, urls ...string) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	lb := &roundRobin{ln: ln, conns: map[net.Conn]bool{}}
	for _, u := range urls {
		lb.backends = append(lb.backends, strings.TrimPrefix(u, "https://"))
	}
	var wg sync.WaitGroup
	t.Cleanup(func() {
		ln.Close()
		lb.mu.Lock()
		for c := range lb.conns {
			c.Close()
		}
		lb.mu.Unlock()
		wg.Wait()
	})
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				lb.serve(c)
			}()
		}
	}()
	return ln.Addr().String()
}

func (lb *roundRobin) serve(c net.Conn) {
	lb.mu.Lock()
	lb.conns[c] = true
	lb.mu.Unlock()
	defer func() {
		c.Close()
		lb.mu.Lock()
		delete(lb.conns, c)
		lb.mu.Unlock()
	}()
	var up net.Conn
	for range lb.backends {
		addr := lb.backends[lb.next.Add(1)%uint64(len(lb.backends))]
		var err error
		if up, err = net.DialTimeout("tcp", addr, time.Second); err == nil {
			break
		}
	}
	if up == nil {
		return
	}
	defer up.Close()
	done := make(chan struct{}, 2)
	go func() { io.Copy(up, c); up.(*net.TCPConn).CloseWrite(); done <- struct{}{} }()
	go func() { io.Copy(c, up); c.(*net.TCPConn).CloseWrite(); done <- struct{}{} }()
	<-done
	<-done
}

// waitUntil polls cond until it holds, for a minute at most.
func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	err := wait.PollUntilContextTimeout(t.Context(), 5*time.Millisecond, time.Minute, true, func(context.Context) (bool, error) {
		return cond(), nil
	})
	if err != nil {
		t.Fatalf("waiting for %s: %v", what, err)
	}
}
