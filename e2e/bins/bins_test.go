package bins

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"runtime/debug"
	"strings"
	"testing"
)

func TestPath(t *testing.T) {
	for _, tc := range []struct{ component, version, want string }{
		{Etcd, "v3.6.16", "/c/etcd/v3.6.16/etcd"},
		{KubeAPIServer, "v1.35.4", "/c/kubernetes/v1.35.4/kube-apiserver"},
		{Kubectl, "v1.36.3", "/c/kubernetes/v1.36.3/kubectl"},
		{KubectlConvert, "v1.35.4", "/c/kubernetes/v1.35.4/kubectl-convert"},
	} {
		if got := Path("/c", tc.component, tc.version); got != tc.want {
			t.Errorf("Path(%q, %q) = %q, want %q", tc.component, tc.version, got, tc.want)
		}
	}
}

func TestMajorMinor(t *testing.T) {
	for _, tc := range []struct{ in, major, minor string }{
		{"v1.35.4", "1", "35"},
		{"v1.36.0-rc.1", "1", "36"},
		{"1.35.4", "", ""},
		{"v1.35", "", ""},
	} {
		major, minor, err := majorMinor(tc.in)
		if (err != nil) != (tc.major == "") || major != tc.major || minor != tc.minor {
			t.Errorf("majorMinor(%q) = %q, %q, %v; want %q, %q", tc.in, major, minor, err, tc.major, tc.minor)
		}
	}
}

// Present binaries are not rebuilt: with every target in the cache, Build
// runs no go command at all (Go points at a command that does not exist).
func TestBuild_SkipsPresent(t *testing.T) {
	cache := t.TempDir()
	for _, p := range []string{
		Path(cache, Etcd, DefaultEtcdVersion),
		Path(cache, KubeAPIServer, "v1.35.4"),
		Path(cache, Kubectl, "v1.35.4"),
	} {
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, nil, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	var out bytes.Buffer
	err := Build(context.Background(), BuildOptions{
		SourceDir: t.TempDir(),
		Cache:     cache,
		Versions:  []string{"v1.35.4"},
		Go:        filepath.Join(t.TempDir(), "no-go"),
		Out:       &out,
	})
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(out.String(), "present in"); n != 3 {
		t.Errorf("want 3 binaries reported present, got:\n%s", out.String())
	}
}

// Components selects what is built: kubectl-convert alone builds neither
// etcd nor the servers, and the defaults leave kubectl-convert out.
func TestBuild_Components(t *testing.T) {
	for _, tc := range []struct {
		components []string
		want       []string
	}{
		{nil, []string{"etcd v3.6.16", "kube-apiserver v1.35.4", "kubectl v1.35.4"}},
		{[]string{KubectlConvert}, []string{"kubectl-convert v1.35.4"}},
		{[]string{KubectlConvert, Etcd, Kubectl}, []string{"etcd v3.6.16", "kubectl v1.35.4", "kubectl-convert v1.35.4"}},
	} {
		cache := t.TempDir()
		for _, c := range []string{Etcd, KubeAPIServer, Kubectl, KubectlConvert} {
			v := "v1.35.4"
			if c == Etcd {
				v = DefaultEtcdVersion
			}
			p := Path(cache, c, v)
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(p, nil, 0o755); err != nil {
				t.Fatal(err)
			}
		}
		var out bytes.Buffer
		err := Build(context.Background(), BuildOptions{
			SourceDir:  t.TempDir(),
			Cache:      cache,
			Versions:   []string{"v1.35.4"},
			Components: tc.components,
			Go:         filepath.Join(t.TempDir(), "no-go"),
			Out:        &out,
		})
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, line := range strings.Split(strings.TrimSpace(out.String()), "\n") {
			name, _, _ := strings.Cut(strings.TrimPrefix(line, "e2e-bins: "), ":")
			got = append(got, name)
		}
		if strings.Join(got, ",") != strings.Join(tc.want, ",") {
			t.Errorf("components %q built %q, want %q", tc.components, got, tc.want)
		}
	}
}

func TestBuild_UnknownComponent(t *testing.T) {
	err := Build(context.Background(), BuildOptions{
		SourceDir:  t.TempDir(),
		Cache:      t.TempDir(),
		Components: []string{"kubelet"},
		Go:         filepath.Join(t.TempDir(), "no-go"),
	})
	if err == nil || !strings.Contains(err.Error(), `unknown component "kubelet"`) {
		t.Fatalf("err = %v, want unknown component", err)
	}
}

// The build modules' tools.go name every Kubernetes component, so that go
// mod tidy keeps what each needs in go.sum.
func TestBuildModules_ToolsNameComponents(t *testing.T) {
	for _, v := range DefaultVersions {
		tools, err := os.ReadFile(filepath.Join("..", "build", "kubernetes", v, "tools.go"))
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range kubernetesComponents {
			if !strings.Contains(string(tools), `_ "k8s.io/kubernetes/cmd/`+c+`"`) {
				t.Errorf("build module %s: tools.go does not import k8s.io/kubernetes/cmd/%s", v, c)
			}
		}
	}
}

// A missing kubectl-convert names the make target that builds it.
func TestNotBuiltError_Target(t *testing.T) {
	for c, want := range map[string]string{Kubectl: "make e2e-bins`", KubectlConvert: "make e2e-bins-convert`"} {
		err := &NotBuiltError{Path: Path("/c", c, "v1.35.4")}
		if !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want %s", c, err, want)
		}
	}
}

// moduleIn finds a module as the main module, which is k8s.io/kubernetes
// for a command built from its package, and among the dependencies.
func TestModuleIn(t *testing.T) {
	info := &debug.BuildInfo{
		Main: debug.Module{Path: "k8s.io/kubernetes", Version: "v1.35.4"},
		Deps: []*debug.Module{{Path: "k8s.io/api", Version: "v0.35.4"}},
	}
	for _, tc := range []struct{ path, version, err string }{
		{"k8s.io/kubernetes", "v1.35.4", ""},
		{"k8s.io/api", "v0.35.4", ""},
		{"k8s.io/kubernetes", "v1.36.3", "built with k8s.io/kubernetes v1.35.4, want v1.36.3"},
		{"k8s.io/client-go", "v0.35.4", "not built with k8s.io/client-go"},
	} {
		err := moduleIn(info, tc.path, tc.version)
		if (err == nil) != (tc.err == "") || err != nil && err.Error() != tc.err {
			t.Errorf("moduleIn(%s %s) = %v, want %q", tc.path, tc.version, err, tc.err)
		}
	}
}

// A version without a build module is an error that says where to add one.
func TestBuild_NoBuildModule(t *testing.T) {
	cache := t.TempDir()
	etcd := Path(cache, Etcd, DefaultEtcdVersion)
	if err := os.MkdirAll(filepath.Dir(etcd), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(etcd, nil, 0o755); err != nil {
		t.Fatal(err)
	}
	err := Build(context.Background(), BuildOptions{
		SourceDir: t.TempDir(),
		Cache:     cache,
		Versions:  []string{"v1.99.0"},
		Go:        filepath.Join(t.TempDir(), "no-go"),
	})
	if err == nil || !strings.Contains(err.Error(), "no build module for kube-apiserver v1.99.0") {
		t.Fatalf("err = %v, want no build module for kube-apiserver v1.99.0", err)
	}
}

// The committed build modules cover the default versions.
func TestBuildModules_CoverDefaults(t *testing.T) {
	dirs := []string{filepath.Join("..", "build", "etcd", DefaultEtcdVersion)}
	for _, v := range DefaultVersions {
		dirs = append(dirs, filepath.Join("..", "build", "kubernetes", v))
	}
	for _, d := range dirs {
		for _, f := range []string{"go.mod", "go.sum"} {
			if _, err := os.Stat(filepath.Join(d, f)); err != nil {
				t.Errorf("%v", err)
			}
		}
	}
	for _, v := range DefaultVersions {
		mod, err := os.ReadFile(filepath.Join("..", "build", "kubernetes", v, "go.mod"))
		if err != nil {
			continue
		}
		if !strings.Contains(string(mod), "require k8s.io/kubernetes "+v+"\n") {
			t.Errorf("build module for %s does not require k8s.io/kubernetes %s", v, v)
		}
		_, minor, _ := majorMinor(v)
		staging := "k8s.io/client-go => k8s.io/client-go v0." + minor + "." + strings.SplitN(v, ".", 3)[2]
		if !strings.Contains(string(mod), staging) {
			t.Errorf("build module for %s lacks %q", v, staging)
		}
	}
}
