package cli

import (
	"log/slog"
	"os"
	"runtime/debug"
)

// defaultGCPercent is the proxy's garbage collection target. Its live heap
// is small and bounded (rules, discovery, buffers with limits), while
// converting an emulated list or watch makes garbage in proportion to the
// objects, so with Go's default of 100 the collector runs every few
// megabytes. Against a real kube-apiserver, 400 instead of 100 took 22% off
// the proxy's CPU per emulated watch and 19% per emulated LIST
// (BENCHMARKS.md, "Version emulation"), for a heap of at most five times
// what is live.
const defaultGCPercent = 400

// setGCPercent sets the garbage collector's target unless the GOGC
// environment variable already did.
func setGCPercent(log *slog.Logger, percent int) {
	if os.Getenv("GOGC") != "" {
		return
	}
	if old := debug.SetGCPercent(percent); old != percent {
		log.Debug("garbage collection target set", "percent", percent)
	}
}
