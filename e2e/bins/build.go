package bins

import (
	"bytes"
	"context"
	"debug/buildinfo"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/debug"
	"slices"
	"strings"
	"syscall"
	"time"
)

// BuildOptions says what [Build] builds and where.
type BuildOptions struct {
	// SourceDir is the e2e/build directory holding the pinned build modules
	// (etcd/<version>/ and kubernetes/<version>/). Required.
	SourceDir string
	// Cache is the binary cache root. Zero means [CacheDir].
	Cache string
	// EtcdVersion is the etcd to build. Zero means [DefaultEtcdVersion].
	EtcdVersion string
	// Versions are the Kubernetes versions to build the Kubernetes
	// components for. Nil means [DefaultVersions].
	Versions []string
	// Components are the components to build: [Etcd] and, for each of
	// Versions, [KubeAPIServer], [Kubectl] or [KubectlConvert]. Nil means
	// [DefaultComponents].
	Components []string
	// Force rebuilds binaries that are already in the cache.
	Force bool
	// Go is the go command to run. Zero means "go" from PATH.
	Go string
	// Out receives progress lines. Nil means io.Discard.
	Out io.Writer
	// Progress is how often a running step reports that it is still
	// running. Zero means 30s.
	Progress time.Duration
}

// target is one binary to build.
type target struct {
	component string
	version   string
	dir       string // build module directory
	pkg       string // package to build, relative to the build module
	ldflags   string
}

// Build builds every missing binary named by opts, one at a time, printing
// each step and how long it took. It stops at the first failure.
func Build(ctx context.Context, opts BuildOptions) error {
	if opts.SourceDir == "" {
		return errors.New("bins: BuildOptions.SourceDir is required")
	}
	if opts.Cache == "" {
		c, err := CacheDir()
		if err != nil {
			return err
		}
		opts.Cache = c
	}
	if opts.EtcdVersion == "" {
		opts.EtcdVersion = DefaultEtcdVersion
	}
	if opts.Versions == nil {
		opts.Versions = DefaultVersions
	}
	if opts.Components == nil {
		opts.Components = DefaultComponents
	}
	if opts.Go == "" {
		opts.Go = "go"
	}
	if opts.Out == nil {
		opts.Out = io.Discard
	}
	if opts.Progress == 0 {
		opts.Progress = 30 * time.Second
	}
	b := &builder{opts: opts}
	targets, err := targetsOf(opts)
	if err != nil {
		return err
	}

	start := time.Now()
	built := 0
	for _, t := range targets {
		out := Path(opts.Cache, t.component, t.version)
		if _, err := os.Stat(out); err == nil && !opts.Force {
			b.logf("%s %s: present in %s", t.component, t.version, out)
			continue
		}
		if _, err := os.Stat(filepath.Join(t.dir, "go.mod")); err != nil {
			return fmt.Errorf("no build module for %s %s: %w (add one under %s)", t.component, t.version, err, opts.SourceDir)
		}
		if err := b.build(ctx, t, out); err != nil {
			return fmt.Errorf("building %s %s: %w", t.component, t.version, err)
		}
		built++
	}
	if built > 0 {
		var ru syscall.Rusage
		_ = syscall.Getrusage(syscall.RUSAGE_CHILDREN, &ru)
		b.logf("built %d binaries in %s (largest build process: %d MiB RSS)", built, since(start), ru.Maxrss/1024)
	}
	return nil
}

// targetsOf lists the binaries opts names: etcd first, then each version's
// Kubernetes components in a fixed order.
func targetsOf(opts BuildOptions) ([]target, error) {
	want := map[string]bool{}
	for _, c := range opts.Components {
		if c != Etcd && !slices.Contains(kubernetesComponents, c) {
			return nil, fmt.Errorf("unknown component %q: want %s or one of %s", c, Etcd, strings.Join(kubernetesComponents, ", "))
		}
		want[c] = true
	}
	var targets []target
	if want[Etcd] {
		targets = append(targets, target{
			component: Etcd,
			version:   opts.EtcdVersion,
			dir:       filepath.Join(opts.SourceDir, "etcd", opts.EtcdVersion),
			pkg:       ".",
		})
	}
	for _, v := range opts.Versions {
		dir := filepath.Join(opts.SourceDir, "kubernetes", v)
		for _, c := range kubernetesComponents {
			if want[c] {
				targets = append(targets, target{component: c, version: v, dir: dir, pkg: "k8s.io/kubernetes/cmd/" + c})
			}
		}
	}
	return targets, nil
}

type builder struct {
	opts BuildOptions
	// downloaded records the build modules whose dependencies are fetched.
	downloaded map[string]bool
}

func (b *builder) logf(format string, args ...any) {
	fmt.Fprintf(b.opts.Out, "e2e-bins: "+format+"\n", args...)
}

func (b *builder) build(ctx context.Context, t target, out string) error {
	name := t.component + " " + t.version
	if !b.downloaded[t.dir] {
		if err := b.step(ctx, name, "download modules", t.dir, "mod", "download"); err != nil {
			return err
		}
		if b.downloaded == nil {
			b.downloaded = map[string]bool{}
		}
		b.downloaded[t.dir] = true
	}
	ldflags := ""
	if t.component != Etcd {
		var err error
		if ldflags, err = b.versionLDFlags(ctx, t); err != nil {
			return err
		}
	}
	if err := os.MkdirAll(filepath.Dir(out), 0o755); err != nil {
		return err
	}
	tmp := out + ".tmp"
	defer os.Remove(tmp)
	if err := b.step(ctx, name, "compile", t.dir,
		"build", "-trimpath", "-buildvcs=false", "-ldflags", ldflags, "-o", tmp, t.pkg); err != nil {
		return err
	}
	if err := verify(ctx, t, tmp); err != nil {
		return err
	}
	if err := os.Rename(tmp, out); err != nil {
		return err
	}
	b.logf("%s: installed %s", name, out)
	return nil
}

// verify refuses a binary that does not run or reports another version: it
// must not be cached under this version. kubectl-convert prints no version,
// so its module's build information says which k8s.io/kubernetes it is.
func verify(ctx context.Context, t target, bin string) error {
	var args []string
	switch t.component {
	case Etcd:
		return nil
	case Kubectl:
		args = []string{"version", "--client"}
	case KubectlConvert:
		args = []string{"--help"}
	default:
		args = []string{"--version"}
	}
	got, err := exec.CommandContext(ctx, bin, args...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("%s %s: %v: %s", bin, strings.Join(args, " "), err, got)
	}
	if t.component == KubectlConvert {
		return verifyModule(bin, "k8s.io/kubernetes", t.version)
	}
	if !strings.Contains(string(got), t.version) {
		return fmt.Errorf("%s reports %q, want %s", t.component, strings.TrimSpace(string(got)), t.version)
	}
	return nil
}

// verifyModule checks that bin was built from module path at version.
func verifyModule(bin, path, version string) error {
	info, err := buildinfo.ReadFile(bin)
	if err != nil {
		return err
	}
	if err := moduleIn(info, path, version); err != nil {
		return fmt.Errorf("%s: %w", bin, err)
	}
	return nil
}

// moduleIn checks that info names module path at version, as its main
// module (a command built from a dependency's package, such as
// k8s.io/kubernetes/cmd/kubectl-convert, has that module as main) or as a
// dependency.
func moduleIn(info *debug.BuildInfo, path, version string) error {
	for _, d := range append([]*debug.Module{&info.Main}, info.Deps...) {
		if d.Path == path {
			if d.Version != version {
				return fmt.Errorf("built with %s %s, want %s", path, d.Version, version)
			}
			return nil
		}
	}
	return fmt.Errorf("not built with %s", path)
}

// step runs one go command in dir, reporting its start, that it is still
// running every Progress, and its duration.
func (b *builder) step(ctx context.Context, name, what, dir string, args ...string) error {
	b.logf("%s: %s ...", name, what)
	start := time.Now()
	cmd := exec.CommandContext(ctx, b.opts.Go, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOFLAGS=-mod=readonly")
	var stderr bytes.Buffer
	cmd.Stdout = b.opts.Out
	cmd.Stderr = io.MultiWriter(&stderr, prefixWriter{b.opts.Out})
	if err := cmd.Start(); err != nil {
		return err
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	tick := time.NewTicker(b.opts.Progress)
	defer tick.Stop()
	for {
		select {
		case err := <-done:
			if err != nil {
				return fmt.Errorf("go %s: %w", strings.Join(args, " "), err)
			}
			b.logf("%s: %s done in %s", name, what, since(start))
			return nil
		case <-tick.C:
			b.logf("%s: %s still running (%s)", name, what, since(start))
		}
	}
}

// versionLDFlags stamps the version packages the way Kubernetes' release
// build does (hack/lib/version.sh), so that /version and --version tell the
// truth. The commit and date come from the module proxy's record of the tag.
func (b *builder) versionLDFlags(ctx context.Context, t target) (string, error) {
	cmd := exec.CommandContext(ctx, b.opts.Go, "mod", "download", "-json", "k8s.io/kubernetes@"+t.version)
	cmd.Dir = t.dir
	cmd.Env = append(os.Environ(), "GOFLAGS=-mod=readonly")
	raw, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("go mod download -json k8s.io/kubernetes@%s: %w", t.version, err)
	}
	var mod struct {
		Version string
		Time    time.Time
		Info    string
		Origin  struct{ Hash string }
	}
	if err := json.Unmarshal(raw, &mod); err != nil {
		return "", err
	}
	// The download summary has neither the tag's time nor always its
	// origin; the .info file has the time, and the commit when the proxy
	// served one.
	if mod.Info != "" {
		info, err := os.ReadFile(mod.Info)
		if err != nil {
			return "", err
		}
		if err := json.Unmarshal(info, &mod); err != nil {
			return "", fmt.Errorf("%s: %w", mod.Info, err)
		}
	}
	major, minor, err := majorMinor(t.version)
	if err != nil {
		return "", err
	}
	vars := [][2]string{
		{"gitVersion", t.version},
		{"gitMajor", major},
		{"gitMinor", minor},
		{"gitTreeState", "clean"},
	}
	if mod.Origin.Hash != "" {
		vars = append(vars, [2]string{"gitCommit", mod.Origin.Hash})
	}
	if !mod.Time.IsZero() {
		vars = append(vars, [2]string{"buildDate", mod.Time.UTC().Format(time.RFC3339)})
	}
	var flags []string
	for _, pkg := range []string{"k8s.io/component-base/version", "k8s.io/client-go/pkg/version"} {
		for _, v := range vars {
			flags = append(flags, fmt.Sprintf("-X %s.%s=%s", pkg, v[0], v[1]))
		}
	}
	return strings.Join(flags, " "), nil
}

// majorMinor splits "v1.35.4" into "1" and "35".
func majorMinor(version string) (string, string, error) {
	parts := strings.SplitN(strings.TrimPrefix(version, "v"), ".", 3)
	if len(parts) != 3 || !strings.HasPrefix(version, "v") {
		return "", "", fmt.Errorf("version %q is not of the form v1.35.4", version)
	}
	return parts[0], parts[1], nil
}

func since(t time.Time) time.Duration {
	return time.Since(t).Round(time.Second)
}

// prefixWriter indents the go command's own output under the step line.
type prefixWriter struct{ w io.Writer }

func (p prefixWriter) Write(b []byte) (int, error) {
	for _, line := range strings.SplitAfter(string(b), "\n") {
		if line == "" {
			continue
		}
		if _, err := io.WriteString(p.w, "    "+line); err != nil {
			return 0, err
		}
	}
	return len(b), nil
}
