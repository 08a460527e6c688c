package cli

import (
	"log/slog"
	"os"
	"runtime/debug"
)

// defaultGCPercent is the proxy's garbage collection target. Its live heap
// is small and bounded (rules, discovery, buffers with limits), while
// converting an emulated list or watch makes garbage in proportion to the
// objects: with Go's default of 100 the collector ran every few megabytes
// and took a fifth of the proxy's CPU on an emulated watch. At 400 the
// proxy used 22% less CPU on it and kept up with the pass-through event
// rate (BENCHMARKS.md, "Emulation"), for a heap of at most five times what
// is live.
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
