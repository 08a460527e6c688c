package cli

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
)

// fakeRoot writes files (path relative to the root → content) under a
// temporary directory standing for /.
func fakeRoot(t *testing.T, files map[string]string) string {
	t.Helper()
	root := t.TempDir()
	for name, content := range files {
		p := filepath.Join(root, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

func TestCgroupCPULimit(t *testing.T) {
	const (
		v1Mount = "30 25 0:27 / /sys/fs/cgroup/cpu,cpuacct rw,nosuid shared:12 - cgroup cgroup rw,cpu,cpuacct\n"
		v2Mount = "29 25 0:26 / /sys/fs/cgroup rw,nosuid shared:4 - cgroup2 cgroup2 rw,nsdelegate\n"
		other   = "22 1 8:1 / / rw,relatime shared:1 - ext4 /dev/sda1 rw\n"
	)
	for _, tc := range []struct {
		name  string
		files map[string]string
		want  float64
		ok    bool
	}{
		{"v1, the lowest of the cgroup and its parents", map[string]string{
			"proc/self/cgroup":    "5:memory:/kubepods/pod1/c1\n4:cpu,cpuacct:/kubepods/pod1/c1\n0::/\n",
			"proc/self/mountinfo": other + v1Mount,
			"sys/fs/cgroup/cpu,cpuacct/kubepods/pod1/c1/cpu.cfs_quota_us":  "50000\n",
			"sys/fs/cgroup/cpu,cpuacct/kubepods/pod1/c1/cpu.cfs_period_us": "100000\n",
			"sys/fs/cgroup/cpu,cpuacct/kubepods/pod1/cpu.cfs_quota_us":     "200000\n",
			"sys/fs/cgroup/cpu,cpuacct/kubepods/pod1/cpu.cfs_period_us":    "100000\n",
			"sys/fs/cgroup/cpu,cpuacct/cpu.cfs_quota_us":                   "-1\n",
			"sys/fs/cgroup/cpu,cpuacct/cpu.cfs_period_us":                  "100000\n",
		}, 0.5, true},
		{"v1 without a quota", map[string]string{
			"proc/self/cgroup":                            "4:cpu,cpuacct:/\n",
			"proc/self/mountinfo":                         v1Mount,
			"sys/fs/cgroup/cpu,cpuacct/cpu.cfs_quota_us":  "-1\n",
			"sys/fs/cgroup/cpu,cpuacct/cpu.cfs_period_us": "100000\n",
		}, 0, false},
		{"v1 mounted from the container's own cgroup", map[string]string{
			"proc/self/cgroup":                            "4:cpu,cpuacct:/docker/abc\n",
			"proc/self/mountinfo":                         "30 25 0:27 /docker/abc /sys/fs/cgroup/cpu,cpuacct ro - cgroup cgroup rw,cpuacct,cpu\n",
			"sys/fs/cgroup/cpu,cpuacct/cpu.cfs_quota_us":  "100000\n",
			"sys/fs/cgroup/cpu,cpuacct/cpu.cfs_period_us": "100000\n",
		}, 1, true},
		{"v2, the parent's limit", map[string]string{
			"proc/self/cgroup":                       "0::/kubepods/pod1/c1\n",
			"proc/self/mountinfo":                    other + v2Mount,
			"sys/fs/cgroup/kubepods/pod1/c1/cpu.max": "max 100000\n",
			"sys/fs/cgroup/kubepods/pod1/cpu.max":    "150000 100000\n",
		}, 1.5, true},
		{"v2 in a cgroup namespace", map[string]string{
			"proc/self/cgroup":      "0::/\n",
			"proc/self/mountinfo":   v2Mount,
			"sys/fs/cgroup/cpu.max": "100000 100000\n",
		}, 1, true},
		{"v2 without a limit", map[string]string{
			"proc/self/cgroup":      "0::/\n",
			"proc/self/mountinfo":   v2Mount,
			"sys/fs/cgroup/cpu.max": "max 100000\n",
		}, 0, false},
		{"hybrid: the v1 cpu controller", map[string]string{
			"proc/self/cgroup":                              "4:cpu,cpuacct:/q\n0::/\n",
			"proc/self/mountinfo":                           v2Mount + v1Mount,
			"sys/fs/cgroup/cpu,cpuacct/q/cpu.cfs_quota_us":  "25000\n",
			"sys/fs/cgroup/cpu,cpuacct/q/cpu.cfs_period_us": "100000\n",
		}, 0.25, true},
		{"no cgroup", map[string]string{
			"proc/self/mountinfo": other,
		}, 0, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := cgroupCPULimit(fakeRoot(t, tc.files))
			if got != tc.want || ok != tc.ok {
				t.Errorf("cgroupCPULimit = %v, %v; want %v, %v", got, ok, tc.want, tc.ok)
			}
		})
	}
}

func TestFollowCPULimit(t *testing.T) {
	env, prev := os.Getenv("GOMAXPROCS"), runtime.GOMAXPROCS(0)
	t.Cleanup(func() {
		if env != "" {
			runtime.GOMAXPROCS(prev)
		} else {
			runtime.SetDefaultGOMAXPROCS()
		}
	})
	t.Setenv("GOMAXPROCS", "")
	runtime.SetDefaultGOMAXPROCS()
	def := runtime.GOMAXPROCS(0)

	var cpus atomic.Value // float64; 0: no limit
	cpus.Store(0.5)
	limit := func() (float64, bool) { c := cpus.Load().(float64); return c, c > 0 }
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	followCPULimit(ctx, slog.New(slog.DiscardHandler), 5*time.Millisecond, limit)
	if n := runtime.GOMAXPROCS(0); n != 1 {
		t.Fatalf("GOMAXPROCS = %d under a limit of 0.5 CPU, want 1", n)
	}
	cpus.Store(0.0) // the limit was lifted
	waitUntil(t, func() bool { return runtime.GOMAXPROCS(0) == def })
	cpus.Store(1.0)
	waitUntil(t, func() bool { return runtime.GOMAXPROCS(0) == 1 })
}

func TestFollowCPULimit_GOMAXPROCSWins(t *testing.T) {
	t.Setenv("GOMAXPROCS", "2")
	prev := runtime.GOMAXPROCS(0)
	followCPULimit(t.Context(), slog.New(slog.DiscardHandler), time.Hour, func() (float64, bool) { return 0.5, true })
	if n := runtime.GOMAXPROCS(0); n != prev {
		t.Errorf("GOMAXPROCS = %d with the GOMAXPROCS variable set, want it left at %d", n, prev)
	}
}

// waitUntil polls cond for up to 10 seconds.
func waitUntil(t *testing.T, cond func() bool) {
	t.Helper()
	err := wait.PollUntilContextTimeout(t.Context(), 5*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
		return cond(), nil
	})
	if err != nil {
		t.Fatal("condition not met within 10s")
	}
}
