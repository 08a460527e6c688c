package framework

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mvpctl/mvpctl/e2e/bins"
)

// Options configures a control plane.
type Options struct {
	// Versions are the kube-apiserver versions to start, one server each,
	// in this order. Nil means [bins.DefaultVersions].
	Versions []string
	// PeerProxy turns upstream's own mixed-version proxy (feature gate
	// UnknownVersionInteroperabilityProxy, with its peer flags) on. False
	// turns the feature gate explicitly off, whatever the version's
	// default is.
	PeerProxy bool
	// EtcdVersion is the etcd to run. Zero means [bins.DefaultEtcdVersion].
	EtcdVersion string
	// ExtraArgs are appended to every kube-apiserver's flags (later flags
	// win).
	ExtraArgs []string
	// VersionArgs are appended, after ExtraArgs, to the flags of the
	// servers of one version: e.g. a beta API that only the old release of
	// a rolling upgrade is configured to serve. Nil means none.
	VersionArgs map[string][]string
	// StartTimeout bounds the start of etcd and of each server. Zero means
	// 2 minutes.
	StartTimeout time.Duration
	// StopGracePeriod is how long a server stopped by Replace or Stop may
	// take to exit after SIGTERM before it is killed. Zero means 10s.
	StopGracePeriod time.Duration
	// Dir holds the PKI, kubeconfigs, etcd data and logs. Zero means a new
	// temporary directory, removed by Stop unless the test failed.
	Dir string
}

// ControlPlane is etcd and a set of kube-apiservers sharing it, on
// 127.0.0.1.
type ControlPlane struct {
	// PKI holds the CA, the admin client certificate and the token every
	// server accepts.
	PKI *PKI
	// Dir is the control plane's directory (see Options.Dir).
	Dir string
	// EtcdURL is the shared etcd's client URL.
	EtcdURL string

	opts    Options
	ownDir  bool
	etcd    *etcd
	isolate bool

	mu         sync.Mutex
	servers    []*Server
	generation []int
	stopped    bool
}

// Start starts a control plane for a test and stops it when the test ends
// (t.Cleanup). If the test failed, the directory with every server's log is
// kept and its path and the end of each log are written to the test log.
// It calls t.Fatal if the control plane cannot start; a binary missing from
// the cache is reported with how to build it.
func Start(t testing.TB, opts Options) *ControlPlane {
	t.Helper()
	ctx := t.Context()
	cp, err := StartContext(ctx, opts)
	if err != nil {
		t.Fatalf("starting control plane: %v", err)
	}
	t.Cleanup(func() {
		cp.mu.Lock()
		running := !cp.stopped
		cp.mu.Unlock()
		if running {
			t.Log(cp.MemoryReport())
		}
		failed := t.Failed()
		if failed {
			cp.mu.Lock()
			for _, s := range cp.servers {
				t.Logf("end of %s:\n%s", s.LogPath, tailFile(s.LogPath, 30))
			}
			cp.mu.Unlock()
		}
		cp.stop(!failed)
		if failed && cp.ownDir {
			t.Logf("control plane logs kept in %s", cp.Dir)
		}
	})
	for _, s := range cp.Servers() {
		t.Logf("server %d: kube-apiserver %s at %s, ready in %s, kubeconfig %s",
			s.Index, s.Version, s.URL, s.ReadyAfter.Round(time.Millisecond), s.Kubeconfig)
	}
	return cp
}

// StartContext starts a control plane outside a test; the caller must call
// [ControlPlane.Stop]. ctx bounds the start only.
func StartContext(ctx context.Context, opts Options) (cp *ControlPlane, err error) {
	if opts.Versions == nil {
		opts.Versions = bins.DefaultVersions
	}
	if opts.EtcdVersion == "" {
		opts.EtcdVersion = bins.DefaultEtcdVersion
	}
	if opts.StartTimeout == 0 {
		opts.StartTimeout = 2 * time.Minute
	}
	if opts.StopGracePeriod == 0 {
		opts.StopGracePeriod = 10 * time.Second
	}
	// Find every binary before starting anything.
	etcdBin, err := bins.Find(bins.Etcd, opts.EtcdVersion)
	if err != nil {
		return nil, err
	}
	serverBins := make([]string, len(opts.Versions))
	for i, v := range opts.Versions {
		if serverBins[i], err = bins.Find(bins.KubeAPIServer, v); err != nil {
			return nil, err
		}
	}

	cp = &ControlPlane{opts: opts, Dir: opts.Dir, isolate: os.Geteuid() == 0}
	if cp.Dir == "" {
		if cp.Dir, err = os.MkdirTemp("", "mvpctl-e2e-"); err != nil {
			return nil, err
		}
		cp.ownDir = true
		registerDir(cp.Dir, true)
	} else if err := os.MkdirAll(cp.Dir, 0o755); err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			cp.stop(false)
			err = fmt.Errorf("%w (logs in %s)", err, cp.Dir)
		}
	}()
	if cp.PKI, err = NewPKI(filepath.Join(cp.Dir, "pki")); err != nil {
		return cp, err
	}

	ectx, cancel := context.WithTimeout(ctx, opts.StartTimeout)
	cp.etcd, err = startEtcd(ectx, etcdBin, cp.Dir)
	cancel()
	if err != nil {
		return cp, err
	}
	cp.EtcdURL = cp.etcd.url

	// Start the servers concurrently, as a real control plane comes up.
	cp.servers = make([]*Server, len(opts.Versions))
	cp.generation = make([]int, len(opts.Versions))
	errs := make([]error, len(opts.Versions))
	var wg sync.WaitGroup
	for i, v := range opts.Versions {
		wg.Go(func() {
			sctx, cancel := context.WithTimeout(ctx, opts.StartTimeout)
			defer cancel()
			cp.servers[i], errs[i] = startServer(sctx, cp.spec(i, v, serverBins[i], 0))
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return cp, err
	}
	return cp, nil
}

func (cp *ControlPlane) spec(i int, version, bin string, port int) serverSpec {
	return serverSpec{
		index:      i,
		version:    version,
		bin:        bin,
		port:       port,
		dir:        cp.Dir,
		etcdURL:    cp.etcd.url,
		pki:        cp.PKI,
		peerProxy:  cp.opts.PeerProxy,
		isolate:    cp.isolate,
		extraArgs:  append(slices.Clip(cp.opts.ExtraArgs), cp.opts.VersionArgs[version]...),
		generation: cp.generation[i],
	}
}

// Server returns the server at index i as it is now.
func (cp *ControlPlane) Server(i int) *Server {
	cp.mu.Lock()
	defer cp.mu.Unlock()
	return cp.servers[i]
}

// Servers returns every server as it is now, by index.
func (cp *ControlPlane) Servers() []*Server {
	cp.mu.Lock()
	defer cp.mu.Unlock()
	return append([]*Server(nil), cp.servers...)
}

// Replace is one step of a rolling upgrade (or downgrade): it stops server
// i (SIGTERM, then SIGKILL after Options.StopGracePeriod) and starts a
// kube-apiserver of version on the same port, with the same hostname and
// kubeconfig, and waits until it is ready. The other servers keep serving
// throughout. It returns the new server.
func (cp *ControlPlane) Replace(ctx context.Context, i int, version string) (*Server, error) {
	bin, err := bins.Find(bins.KubeAPIServer, version)
	if err != nil {
		return nil, err
	}
	cp.mu.Lock()
	if cp.stopped {
		cp.mu.Unlock()
		return nil, errors.New("control plane is stopped")
	}
	if i < 0 || i >= len(cp.servers) {
		cp.mu.Unlock()
		return nil, fmt.Errorf("no server %d (have %d)", i, len(cp.servers))
	}
	old := cp.servers[i]
	cp.generation[i]++
	spec := cp.spec(i, version, bin, old.Port)
	cp.mu.Unlock()

	old.proc.stop(cp.opts.StopGracePeriod)
	sctx, cancel := context.WithTimeout(ctx, cp.opts.StartTimeout)
	defer cancel()
	s, err := startServer(sctx, spec)
	if err != nil {
		return nil, fmt.Errorf("replacing server %d (%s) with %s: %w", i, old.Version, version, err)
	}
	cp.mu.Lock()
	defer cp.mu.Unlock()
	if cp.stopped {
		s.proc.stop(0)
		return nil, errors.New("control plane stopped during Replace")
	}
	cp.servers[i] = s
	return s, nil
}

// MemoryReport describes the peak resident memory of etcd and of each
// running server so far, and their sum.
func (cp *ControlPlane) MemoryReport() string {
	const mib = 1 << 20
	total := cp.etcd.proc.peakRSS()
	var b strings.Builder
	fmt.Fprintf(&b, "peak RSS: etcd %d MiB", total/mib)
	for _, s := range cp.Servers() {
		rss := s.PeakRSS()
		total += rss
		fmt.Fprintf(&b, ", server %d (%s) %d MiB", s.Index, s.Version, rss/mib)
	}
	fmt.Fprintf(&b, "; sum %d MiB", total/mib)
	return b.String()
}

// Stop stops every server, then etcd, and removes the control plane's
// directory if Start created it. It is safe to call more than once.
func (cp *ControlPlane) Stop() {
	cp.stop(true)
}

func (cp *ControlPlane) stop(removeDir bool) {
	cp.mu.Lock()
	if cp.stopped {
		cp.mu.Unlock()
		return
	}
	cp.stopped = true
	servers := append([]*Server(nil), cp.servers...)
	cp.mu.Unlock()

	var wg sync.WaitGroup
	for _, s := range servers {
		if s != nil {
			wg.Go(func() { s.proc.stop(cp.opts.StopGracePeriod) })
		}
	}
	wg.Wait()
	if cp.etcd != nil {
		cp.etcd.proc.stop(cp.opts.StopGracePeriod)
	}
	if cp.ownDir {
		registerDir(cp.Dir, false)
		if removeDir {
			os.RemoveAll(cp.Dir)
		} else {
			// Keep the logs and the PKI, not the etcd data.
			matches, _ := filepath.Glob(filepath.Join(cp.Dir, "etcd-data-*"))
			for _, m := range matches {
				os.RemoveAll(m)
			}
		}
	}
}
