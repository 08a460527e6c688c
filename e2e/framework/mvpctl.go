package framework

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sync"
	"testing"
)

var (
	mvpctlOnce sync.Once
	mvpctlBin  string
	mvpctlErr  error
)

// Mvpctl builds the mvpctl binary of this checkout once per test binary and
// returns its path, so that tests run mvpctl as users do: a separate process.
func Mvpctl(t testing.TB) string {
	t.Helper()
	mvpctlOnce.Do(func() {
		_, here, _, ok := runtime.Caller(0)
		if !ok {
			mvpctlErr = fmt.Errorf("cannot locate the mvpctl checkout")
			return
		}
		root := filepath.Join(filepath.Dir(here), "..", "..")
		dir, err := os.MkdirTemp("", "mvpctl-e2e-bin-")
		if err != nil {
			mvpctlErr = err
			return
		}
		mvpctlBin = filepath.Join(dir, "mvpctl")
		cmd := exec.Command("go", "build", "-o", mvpctlBin, "./cmd/mvpctl")
		cmd.Dir = root
		if out, err := cmd.CombinedOutput(); err != nil {
			mvpctlErr = fmt.Errorf("go build ./cmd/mvpctl: %v\n%s", err, out)
		}
	})
	if mvpctlErr != nil {
		t.Fatal(mvpctlErr)
	}
	return mvpctlBin
}
