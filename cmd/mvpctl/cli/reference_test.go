package cli

import (
	"bytes"
	"os"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// docs/cli.md is generated from the commands; `make docs` rewrites it.
func TestReference_IsCurrent(t *testing.T) {
	want, err := os.ReadFile("../../../docs/cli.md")
	if err != nil {
		t.Fatal(err)
	}
	var got bytes.Buffer
	if err := WriteReference(&got); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(string(want), got.String()); diff != "" {
		t.Errorf("docs/cli.md is out of date; run make docs (-docs/cli.md +generated):\n%s", diff)
	}
}
