package framework

import (
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"testing"
)

// Main runs the tests of a package that starts control planes; call it from
// TestMain:
//
//	func TestMain(m *testing.M) { framework.Main(m) }
//
// On SIGINT or SIGTERM (Ctrl-C, a CI cancel) it kills every etcd and
// kube-apiserver the package started and removes their temporary
// directories before exiting; after the tests it kills any a test left
// running. A test binary killed outright (SIGKILL, or
// `go test -timeout`) takes its children with it through the
// parent-death signal each child is started with.
func Main(m *testing.M) {
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	go func() {
		sig := <-sigs
		fmt.Fprintf(os.Stderr, "framework: %v: killing the control plane processes\n", sig)
		killAll(true)
		os.Exit(130)
	}()
	code := m.Run()
	killAll(false)
	os.Exit(code)
}
