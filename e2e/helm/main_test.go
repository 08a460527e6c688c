// Package helm_test proves mvpctl helm repair with the Helm SDK on a real
// kube-apiserver: a release record whose manifest uses removed API
// versions makes the SDK's upgrade fail; after the repair the upgrade and a
// rollback work.
package helm_test

import (
	"strconv"
	"testing"

	"github.com/mvpctl/mvpctl/e2e/framework"
)

func TestMain(m *testing.M) { framework.Main(m) }

func itoa(i int) string { return strconv.Itoa(i) }
