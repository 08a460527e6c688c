package cli

import (
	"strings"
	"testing"
	"time"
)

func TestCheckGoroutineLeaks(t *testing.T) {
	stop := make(chan struct{})
	defer close(stop)
	go leftBehind(stop)

	t.Setenv(leakCheckEnv, "")
	if err := checkGoroutineLeaks(); err != nil {
		t.Errorf("without %s: %v, want no check", leakCheckEnv, err)
	}

	t.Setenv(leakCheckEnv, "1")
	defer func(d time.Duration) { leakCheckTimeout = d }(leakCheckTimeout)
	leakCheckTimeout = 200 * time.Millisecond
	err := checkGoroutineLeaks()
	if err == nil || !strings.Contains(err.Error(), "leftBehind") || exitCode(err) != exitFailure {
		t.Errorf("with a goroutine left: %v (exit %d), want it named, exit %d", err, exitCode(err), exitFailure)
	}
}

func leftBehind(stop chan struct{}) { <-stop }
