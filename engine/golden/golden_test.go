package golden

import (
	"context"
	"flag"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the out/ sections of the golden cases")

// TestCases runs every case under testdata/cases with both executors.
func TestCases(t *testing.T) {
	files, err := Files("../../testdata/cases")
	if err != nil {
		t.Fatal(err)
	}
	if len(files) < 30 {
		t.Errorf("found %d cases, want at least 30", len(files))
	}
	for _, file := range files {
		name := strings.TrimSuffix(file[strings.LastIndex(file, "/")+1:], ".txtar")
		t.Run(name, func(t *testing.T) {
			res, err := RunFile(context.Background(), file, *update)
			if err != nil {
				t.Fatal(err)
			}
			for _, f := range res.Failures {
				t.Error(f)
			}
		})
	}
}
