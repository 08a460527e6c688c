package proxy

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package when a goroutine outlives its tests: pollers,
// watch converters (pipeBody), upgraded connections and servers must all end
// with the context or connection that owns them. No goroutine is ignored;
// every test stops what it starts (t.Cleanup).
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}
