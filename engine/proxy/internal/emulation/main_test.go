package emulation

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package when a goroutine outlives its tests: the
// goroutines that convert lists and watches (pipeBody) must end with the
// response they convert.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}
