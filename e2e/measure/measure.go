// Package measure runs commands as processes of their own and reports what
// each one cost, from the kernel's accounting of the child: wall time, CPU
// time (user + system) and peak resident memory. Benchmarks of mvpctl's
// binary against other tools use it so that both sides are measured the same
// way, in the same run.
package measure

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strings"
	"syscall"
	"time"
)

// Cmd is one process to run.
type Cmd struct {
	// Path is the program; Args its arguments (without the program name).
	Path string
	Args []string
	// Env is added to the environment of this process.
	Env []string
	// Stdin is the file read as standard input; zero means none.
	Stdin string
	// Timeout bounds the process; zero means a minute.
	Timeout time.Duration
	// OutputLimit bounds what is kept of standard output and standard error
	// each; the rest is read and dropped. Zero means 64 MiB.
	OutputLimit int
}

// Result is what a process did and cost.
type Result struct {
	// Wall is the time from start to exit; CPU the user and system time of
	// the process and the children it waited for.
	Wall, CPU time.Duration
	// MaxRSS is the peak resident set size in bytes.
	MaxRSS int64
	// ExitCode is the process's exit status.
	ExitCode int
	// Stdout and Stderr are what it wrote, up to Cmd.OutputLimit; Truncated
	// says that more was dropped.
	Stdout, Stderr []byte
	Truncated      bool
}

// String is the command line for messages.
func (c Cmd) String() string { return strings.Join(append([]string{c.Path}, c.Args...), " ") }

// Run runs c and waits for it. A process that exits with a non-zero status
// is a Result, not an error; one that could not start, was killed or ran out
// of time is an error.
func Run(ctx context.Context, c Cmd) (Result, error) {
	timeout := c.Timeout
	if timeout == 0 {
		timeout = time.Minute
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, c.Path, c.Args...)
	cmd.WaitDelay = time.Second // a child left holding the output does not hold up Run
	cmd.Env = append(os.Environ(), c.Env...)
	if c.Stdin != "" {
		f, err := os.Open(c.Stdin)
		if err != nil {
			return Result{}, err
		}
		defer f.Close()
		cmd.Stdin = f
	}
	limit := c.OutputLimit
	if limit == 0 {
		limit = 64 << 20
	}
	stdout, stderr := &capped{limit: limit}, &capped{limit: limit}
	cmd.Stdout, cmd.Stderr = stdout, stderr
	start := time.Now()
	err := cmd.Run()
	res := Result{Wall: time.Since(start), Stdout: stdout.buf.Bytes(), Stderr: stderr.buf.Bytes(),
		Truncated: stdout.dropped || stderr.dropped}
	if ps := cmd.ProcessState; ps != nil {
		res.CPU = ps.UserTime() + ps.SystemTime()
		if ru, ok := ps.SysUsage().(*syscall.Rusage); ok {
			res.MaxRSS = ru.Maxrss
			if runtime.GOOS != "darwin" {
				res.MaxRSS *= 1024 // kilobytes but on macOS
			}
		}
		res.ExitCode = ps.ExitCode()
	}
	var exit *exec.ExitError
	switch {
	case ctx.Err() != nil:
		return res, fmt.Errorf("%s: %w after %s", c, ctx.Err(), timeout)
	case errors.As(err, &exit) && exit.Exited():
		return res, nil
	case err != nil:
		return res, fmt.Errorf("%s: %w", c, err)
	}
	return res, nil
}

// capped keeps the first limit bytes written to it and drops the rest.
type capped struct {
	buf     bytes.Buffer
	limit   int
	dropped bool
}

func (w *capped) Write(p []byte) (int, error) {
	if room := w.limit - w.buf.Len(); room < len(p) {
		w.dropped = true
		w.buf.Write(p[:max(room, 0)])
		return len(p), nil
	}
	return w.buf.Write(p)
}

var _ io.Writer = (*capped)(nil)

// Interleave runs rounds rounds of every variant, calling run(round,
// variant). Each round starts with the next variant in turn, so that no
// variant always runs first (on a cold page cache) or right after another.
func Interleave(ctx context.Context, rounds, variants int, run func(round, variant int) error) error {
	for r := range rounds {
		for i := range variants {
			if err := ctx.Err(); err != nil {
				return err
			}
			if err := run(r, (r+i)%variants); err != nil {
				return err
			}
		}
	}
	return nil
}

// Stats summarises samples: their median and range.
type Stats struct{ Median, Min, Max float64 }

// Summarise returns the median, minimum and maximum of xs (zero for none).
func Summarise(xs []float64) Stats {
	if len(xs) == 0 {
		return Stats{}
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	m := s[len(s)/2]
	if len(s)%2 == 0 {
		m = (s[len(s)/2-1] + s[len(s)/2]) / 2
	}
	return Stats{Median: m, Min: s[0], Max: s[len(s)-1]}
}

// Ratios divides a[i] by b[i]: the per-round ratios of two variants
// measured in the same rounds. Rounds where b is zero are left out.
func Ratios(a, b []float64) []float64 {
	var out []float64
	for i := range min(len(a), len(b)) {
		if b[i] != 0 {
			out = append(out, a[i]/b[i])
		}
	}
	return out
}

// LoadAverage returns the machine's 1, 5 and 15 minute load averages as
// /proc/loadavg has them ("" when it cannot be read).
func LoadAverage() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return ""
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return ""
	}
	return strings.Join(f[:3], " ")
}
