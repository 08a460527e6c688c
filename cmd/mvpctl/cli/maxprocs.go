package cli

import (
	"bufio"
	"context"
	"errors"
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"time"
)

// followCPULimit sets GOMAXPROCS to 1 while the proxy's cgroup allows it at
// most one CPU, and gives it back to the Go runtime otherwise; it checks
// again every interval (a pod's limits can be resized in place) until ctx
// ends. A GOMAXPROCS environment variable turns it off. limit reports the
// limit in CPUs (ok false: none): cgroupCPULimit but in tests.
//
// Go's own default follows the CPU limit too, but never goes below 2. For
// the proxy, whose requests hop between several goroutines (the HTTP/2
// connection's reader and writer, the handler, the upstream connection's
// reader and writer), two Ps under a one-CPU quota mean threads waking each
// other and being throttled: in a one-CPU cgroup, GOMAXPROCS 1 took 5–36%
// off the CPU per request (GET and LIST; 21–29% measured side by side) at
// the same or higher throughput (BENCHMARKS.md, "Proxy overhead").
func followCPULimit(ctx context.Context, log *slog.Logger, interval time.Duration, limit func() (float64, bool)) {
	if os.Getenv("GOMAXPROCS") != "" {
		return
	}
	lowered := false
	apply := func() {
		cpus, ok := limit()
		switch {
		case ok && cpus <= 1:
			if runtime.GOMAXPROCS(0) != 1 {
				runtime.GOMAXPROCS(1)
				log.Info("GOMAXPROCS set to 1 for the CPU limit", "cpus", cpus)
			}
			lowered = true
		case lowered:
			runtime.SetDefaultGOMAXPROCS()
			lowered = false
			log.Info("GOMAXPROCS back to the Go runtime's default", "gomaxprocs", runtime.GOMAXPROCS(0))
		}
	}
	apply()
	go func() {
		t := time.NewTicker(interval)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				apply()
			}
		}
	}()
}

// cgroupCPULimit is the CPU bandwidth limit of this process's cgroup, in
// CPUs: the lowest quota/period of its cgroup and the cgroup's ancestors, as
// the Go runtime reads it, for cgroup v2 (cpu.max) and v1 (the cpu
// controller's cpu.cfs_quota_us and cpu.cfs_period_us). ok is false without
// a limit or a cgroup. root is "/" but for tests.
func cgroupCPULimit(root string) (limit float64, ok bool) {
	dir, v2, err := cpuCgroupDir(root)
	if err != nil {
		return 0, false
	}
	limit = math.Inf(1)
	mount := dir.mount
	for p := dir.path; ; p = filepath.Dir(p) {
		var l float64
		var has bool
		if v2 {
			l, has = readCPUMax(filepath.Join(p, "cpu.max"))
		} else {
			l, has = readCFSQuota(p)
		}
		if has && l < limit {
			limit = l
		}
		if p == mount || !strings.HasPrefix(p, mount) {
			break
		}
	}
	if math.IsInf(limit, 1) {
		return 0, false
	}
	return limit, true
}

type cgroupDir struct {
	path  string // the process's cgroup directory
	mount string // where its hierarchy is mounted: the walk up stops there
}

// cpuCgroupDir finds the directory of the process's CPU cgroup from
// /proc/self/cgroup and /proc/self/mountinfo.
func cpuCgroupDir(root string) (cgroupDir, bool, error) {
	cg, err := os.ReadFile(filepath.Join(root, "proc/self/cgroup"))
	if err != nil {
		return cgroupDir{}, false, err
	}
	var v1Path, v2Path string
	var hasV1, hasV2 bool
	for line := range strings.SplitSeq(strings.TrimSpace(string(cg)), "\n") {
		// hierarchy-ID:controller-list:cgroup-path
		parts := strings.SplitN(line, ":", 3)
		if len(parts) != 3 {
			continue
		}
		if parts[0] == "0" && parts[1] == "" {
			v2Path, hasV2 = parts[2], true
			continue
		}
		for c := range strings.SplitSeq(parts[1], ",") {
			if c == "cpu" {
				v1Path, hasV1 = parts[2], true
			}
		}
	}
	if !hasV1 && !hasV2 {
		return cgroupDir{}, false, errors.New("no cpu cgroup")
	}
	f, err := os.Open(filepath.Join(root, "proc/self/mountinfo"))
	if err != nil {
		return cgroupDir{}, false, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	var v2Dir cgroupDir
	foundV2 := false
	for sc.Scan() {
		// ID parent major:minor root mount-point options [optional...] - fstype source super-options
		pre, post, found := strings.Cut(sc.Text(), " - ")
		if !found {
			continue
		}
		fields, tail := strings.Fields(pre), strings.Fields(post)
		if len(fields) < 5 || len(tail) < 1 {
			continue
		}
		mountRoot, mountPoint := unescapeMountinfo(fields[3]), unescapeMountinfo(fields[4])
		switch {
		case tail[0] == "cgroup" && hasV1 && len(tail) >= 3 && hasOption(tail[2], "cpu"):
			if d, ok := cgroupPath(root, mountRoot, mountPoint, v1Path); ok {
				return d, false, nil
			}
		case tail[0] == "cgroup2" && hasV2 && !foundV2:
			if d, ok := cgroupPath(root, mountRoot, mountPoint, v2Path); ok {
				v2Dir, foundV2 = d, true
			}
		}
	}
	if foundV2 {
		return v2Dir, true, nil
	}
	return cgroupDir{}, false, errors.New("cpu cgroup not mounted")
}

// cgroupPath maps a cgroup path to a directory under a mount of its
// hierarchy whose root is mountRoot.
func cgroupPath(root, mountRoot, mountPoint, path string) (cgroupDir, bool) {
	rel, ok := strings.CutPrefix(path, mountRoot)
	if !ok || (rel != "" && mountRoot != "/" && !strings.HasPrefix(rel, "/")) {
		return cgroupDir{}, false
	}
	mount := filepath.Join(root, mountPoint)
	return cgroupDir{path: filepath.Join(mount, rel), mount: mount}, true
}

func hasOption(opts, name string) bool {
	for o := range strings.SplitSeq(opts, ",") {
		if o == name {
			return true
		}
	}
	return false
}

// unescapeMountinfo undoes mountinfo's octal escapes (\040 for a space).
func unescapeMountinfo(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			if n, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(n))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// readCPUMax reads cgroup v2's "QUOTA PERIOD" ("max PERIOD": no limit).
func readCPUMax(file string) (float64, bool) {
	data, err := os.ReadFile(file)
	if err != nil {
		return 0, false
	}
	f := strings.Fields(string(data))
	if len(f) != 2 || f[0] == "max" {
		return 0, false
	}
	return ratio(f[0], f[1])
}

// readCFSQuota reads cgroup v1's cpu.cfs_quota_us (-1: no limit) and
// cpu.cfs_period_us.
func readCFSQuota(dir string) (float64, bool) {
	q, err := os.ReadFile(filepath.Join(dir, "cpu.cfs_quota_us"))
	if err != nil {
		return 0, false
	}
	p, err := os.ReadFile(filepath.Join(dir, "cpu.cfs_period_us"))
	if err != nil {
		return 0, false
	}
	return ratio(strings.TrimSpace(string(q)), strings.TrimSpace(string(p)))
}

func ratio(quota, period string) (float64, bool) {
	q, err1 := strconv.ParseInt(quota, 10, 64)
	p, err2 := strconv.ParseInt(period, 10, 64)
	if err1 != nil || err2 != nil || q <= 0 || p <= 0 {
		return 0, false
	}
	return float64(q) / float64(p), true
}
