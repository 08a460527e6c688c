package cli

import (
	"fmt"
	"os"
	"time"

	"go.uber.org/goleak"
)

// leakCheckEnv set to 1 makes mvpctl check, when a command has finished
// successfully, that none of its goroutines is left (the e2e suite sets it
// for `mvpctl proxy`, whose Serve must leave nothing behind): any goroutine
// still there after leakCheckTimeout is printed with its stack and the exit
// code is 1. A debugging aid, not a documented setting.
const leakCheckEnv = "MVPCTL_DEBUG_LEAK_CHECK"

// leakCheckTimeout is how long goroutines that are winding down (pollers
// whose request was cancelled, connections being closed) may take.
var leakCheckTimeout = 5 * time.Second

// checkGoroutineLeaks runs the check of leakCheckEnv; without it, it does
// nothing.
func checkGoroutineLeaks() error {
	if os.Getenv(leakCheckEnv) != "1" {
		return nil
	}
	deadline := time.Now().Add(leakCheckTimeout)
	for {
		// klog's flush daemon is started by importing client-go and runs
		// for the life of the process.
		err := goleak.Find(goleak.IgnoreTopFunction("k8s.io/klog/v2.(*flushDaemon).run"))
		if err == nil {
			return nil
		}
		if time.Now().After(deadline) {
			return failure(fmt.Errorf("%s: goroutines left %s after the command finished: %w", leakCheckEnv, leakCheckTimeout, err))
		}
		time.Sleep(100 * time.Millisecond)
	}
}
