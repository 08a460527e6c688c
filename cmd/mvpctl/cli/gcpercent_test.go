package cli

import (
	"log/slog"
	"runtime/debug"
	"testing"
)

// The proxy sets its garbage collection target, unless GOGC did.
func TestSetGCPercent(t *testing.T) {
	old := debug.SetGCPercent(100)
	defer debug.SetGCPercent(old)
	log := slog.New(slog.DiscardHandler)

	t.Setenv("GOGC", "")
	setGCPercent(log, 400)
	if got := debug.SetGCPercent(100); got != 400 {
		t.Errorf("without GOGC: target %d, want 400", got)
	}

	t.Setenv("GOGC", "150")
	debug.SetGCPercent(150) // as the runtime read it at start
	setGCPercent(log, 400)
	if got := debug.SetGCPercent(100); got != 150 {
		t.Errorf("with GOGC=150: target %d, want GOGC's 150", got)
	}
}
