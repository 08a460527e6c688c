package cli

import (
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// TestLayout_ImportsGoOneWay holds the module to the picture in README's
// Layout: rules and manifest import nothing else of mvpctl's, engine and
// schemadiff build on rules (engine's golden harness reads files with
// manifest), lint on engine and schemadiff, and only cmd takes
// everything. An import against it compiles (no cycle need form), so the
// compiler alone would not notice the drift.
func TestLayout_ImportsGoOneWay(t *testing.T) {
	const module = "github.com/mvpctl/mvpctl/"
	// allowed lists, per top-level package, the top-level packages it may
	// import besides its own subpackages.
	allowed := map[string][]string{
		"rules":      nil,
		"manifest":   nil,
		"engine":     {"rules", "manifest"},
		"schemadiff": {"rules"},
		"scan":       {"rules", "manifest", "engine"},
		"lint":       {"rules", "engine", "schemadiff"},
		"webhook":    {"rules", "engine", "manifest"},
		"cmd":        {"rules", "engine", "schemadiff", "lint", "scan", "manifest", "webhook"},
	}
	cmd := exec.Command("go", "list", "-f", `{{.ImportPath}}{{range .Imports}} {{.}}{{end}}`, module+"...")
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	top := func(pkg string) string { return strings.Split(strings.TrimPrefix(pkg, module), "/")[0] }
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		fields := strings.Fields(line)
		from := top(fields[0])
		may, known := allowed[from]
		if !known {
			t.Errorf("%s: a top-level package the layout does not place", fields[0])
			continue
		}
		for _, imp := range fields[1:] {
			if !strings.HasPrefix(imp, module) {
				continue
			}
			if to := top(imp); to != from && !slices.Contains(may, to) {
				t.Errorf("%s imports %s: %s may import only %v of mvpctl's", fields[0], imp, from, may)
			}
		}
	}
}
