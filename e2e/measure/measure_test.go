package measure

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"
)

// Each round starts with the next variant.
func TestInterleave(t *testing.T) {
	var order []string
	err := Interleave(context.Background(), 3, 3, func(round, variant int) error {
		order = append(order, fmt.Sprintf("%d:%d", round, variant))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"0:0", "0:1", "0:2", "1:1", "1:2", "1:0", "2:2", "2:0", "2:1"}
	if !slices.Equal(order, want) {
		t.Errorf("order = %q, want %q", order, want)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := Interleave(ctx, 1, 1, func(int, int) error { return nil }); err == nil {
		t.Error("Interleave ran with a cancelled context")
	}
}

func TestSummariseAndRatios(t *testing.T) {
	if s := Summarise([]float64{3, 1, 2}); s != (Stats{Median: 2, Min: 1, Max: 3}) {
		t.Errorf("odd: %+v", s)
	}
	if s := Summarise([]float64{4, 1, 2, 3}); s != (Stats{Median: 2.5, Min: 1, Max: 4}) {
		t.Errorf("even: %+v", s)
	}
	if s := Summarise(nil); s != (Stats{}) {
		t.Errorf("none: %+v", s)
	}
	if r := Ratios([]float64{2, 3, 4}, []float64{1, 0}); !slices.Equal(r, []float64{2}) {
		t.Errorf("Ratios = %v", r)
	}
}

// Run reports the exit status and CPU of a process, keeps at most the
// limit of its output, and fails on a process that outlives its timeout.
func TestRun(t *testing.T) {
	res, err := Run(context.Background(), Cmd{Path: "/bin/sh", Args: []string{"-c", "printf 0123456789; echo err >&2; exit 3"}, OutputLimit: 4})
	if err != nil {
		t.Fatal(err)
	}
	if res.ExitCode != 3 || string(res.Stdout) != "0123" || !res.Truncated || string(res.Stderr) != "err\n" {
		t.Errorf("Run = exit %d, stdout %q, truncated %v, stderr %q", res.ExitCode, res.Stdout, res.Truncated, res.Stderr)
	}
	if res.MaxRSS <= 0 || res.Wall <= 0 {
		t.Errorf("Run measured wall %v, peak RSS %d", res.Wall, res.MaxRSS)
	}
	_, err = Run(context.Background(), Cmd{Path: "/bin/sh", Args: []string{"-c", "exec sleep 10"}, Timeout: 50 * time.Millisecond})
	if err == nil || !strings.Contains(err.Error(), "deadline exceeded") {
		t.Errorf("Run past the timeout: %v", err)
	}
}
