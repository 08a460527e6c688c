package lint_test

import (
	"bytes"
	"context"
	"flag"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"golang.org/x/tools/txtar"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/mvpctl/mvpctl/engine"
	"github.com/mvpctl/mvpctl/lint"
	"github.com/mvpctl/mvpctl/rules"
	"github.com/mvpctl/mvpctl/rules/builtin"
	"github.com/mvpctl/mvpctl/schemadiff"
)

var update = flag.Bool("update", false, "rewrite golden sections in testdata/lint")

// TestGolden runs the cases of testdata/lint. A case holds rules files
// (sections named *.yaml that are not schemas or examples), optional
// schemas (from-schema.yaml, to-schema.yaml: CRDs or OpenAPI), optional
// examples (examples.yaml), an optional options section (samples=N,
// seed=N, disable=ID) and the expected text output (out/text).
func TestGolden(t *testing.T) {
	files, err := filepath.Glob("../testdata/lint/*.txtar")
	if err != nil || len(files) == 0 {
		t.Fatalf("no cases: %v", err)
	}
	for _, file := range files {
		t.Run(strings.TrimSuffix(filepath.Base(file), ".txtar"), func(t *testing.T) {
			ar, err := txtar.ParseFile(file)
			if err != nil {
				t.Fatal(err)
			}
			got := runCase(t, ar)
			want, _ := section(ar, "out/text")
			if diff := cmp.Diff(string(want), got); diff != "" {
				if *update {
					setSection(ar, "out/text", got)
					if err := os.WriteFile(file, txtar.Format(ar), 0o666); err != nil {
						t.Fatal(err)
					}
					return
				}
				t.Errorf("out/text (-want +got):\n%s", diff)
			}
		})
	}
}

func runCase(t *testing.T, ar *txtar.Archive) string {
	t.Helper()
	dir := t.TempDir()
	var opts lint.Options
	var sources []rules.Source
	for _, f := range ar.Files {
		switch {
		case strings.HasPrefix(f.Name, "out/"):
		case f.Name == "options":
			for _, kv := range strings.Fields(string(f.Data)) {
				k, v, _ := strings.Cut(kv, "=")
				switch k {
				case "samples":
					opts.Samples, _ = strconv.Atoi(v)
				case "seed":
					opts.Seed, _ = strconv.ParseUint(v, 10, 64)
				case "disable":
					opts.Disable = strings.Split(v, ",")
				default:
					t.Fatalf("unknown option %q", k)
				}
			}
		case f.Name == "from-schema.yaml" || f.Name == "to-schema.yaml":
			p := filepath.Join(dir, f.Name)
			if err := os.WriteFile(p, f.Data, 0o644); err != nil {
				t.Fatal(err)
			}
			spec, err := schemadiff.Load(context.Background(), p)
			if err != nil {
				t.Fatal(err)
			}
			if f.Name == "from-schema.yaml" {
				opts.From = spec
			} else {
				opts.To = spec
			}
		case f.Name == "examples.yaml":
			docs, err := engine.ReadDocuments(f.Name, bytes.NewReader(f.Data))
			if err != nil {
				t.Fatal(err)
			}
			for _, d := range docs {
				opts.Examples = append(opts.Examples, lint.Example{Name: d.Source, Object: d.Object})
			}
		default:
			sources = append(sources, rules.Source{Name: f.Name, Data: f.Data})
		}
	}
	res, err := lint.Run(context.Background(), sources, opts)
	if err != nil {
		return "error: " + err.Error() + "\n"
	}
	var b bytes.Buffer
	if err := lint.Write(&b, res, lint.FormatText, lint.ToolInfo{}); err != nil {
		t.Fatal(err)
	}
	return strings.ReplaceAll(b.String(), dir+string(filepath.Separator), "")
}

func section(ar *txtar.Archive, name string) ([]byte, bool) {
	for _, f := range ar.Files {
		if f.Name == name {
			return f.Data, true
		}
	}
	return nil, false
}

func setSection(ar *txtar.Archive, name, data string) {
	for i := range ar.Files {
		if ar.Files[i].Name == name {
			ar.Files[i].Data = []byte(data)
			return
		}
	}
	ar.Files = append(ar.Files, txtar.File{Name: name, Data: []byte(data)})
}

// TestChecks_Documented: every check has a golden case that triggers it
// (executor-mismatch, which no rules can provoke while the executors agree,
// is covered by TestCompareExecutors; program-compile guards against
// compiler bugs, and no known rule provokes one since jq comments ending in
// a backslash were fixed) and an entry in docs/lint.md.
func TestChecks_Documented(t *testing.T) {
	doc, err := os.ReadFile("../docs/lint.md")
	if err != nil {
		t.Fatal(err)
	}
	var golden strings.Builder
	files, _ := filepath.Glob("../testdata/lint/*.txtar")
	for _, f := range files {
		ar, err := txtar.ParseFile(f)
		if err != nil {
			t.Fatal(err)
		}
		out, _ := section(ar, "out/text")
		golden.Write(out)
	}
	for _, id := range lint.CheckIDs {
		if !strings.Contains(string(doc), "### "+id+"\n") {
			t.Errorf("docs/lint.md has no section for %s", id)
		}
		c := lint.Checks[id]
		if !strings.Contains(string(doc), "| "+c.Severity.String()+" |") {
			t.Errorf("docs/lint.md: severity of %s", id)
		}
		if id == lint.IDExecutorMismatch || id == lint.IDProgramCompile {
			continue
		}
		if !strings.Contains(golden.String(), " "+id+": ") {
			t.Errorf("no golden case in testdata/lint triggers %s", id)
		}
	}
}

// TestGeneratedRules lints what generate-rules drafts for real Kubernetes
// releases, with samples: the warnings are the draft's TODOs, plus the one
// gap the draft leaves that the schemas show (listed with its reason), and
// every round trip holds.
func TestGeneratedRules(t *testing.T) {
	known := map[string]string{
		// v1beta1 defaulted conversionReviewVersions to ["v1beta1"]; v1
		// requires it without a default, and the draft writes no default.
		"apiextensions.k8s.io/v1 CustomResourceDefinition requires spec.conversion.webhook.conversionReviewVersions": "v1.22",
	}
	for _, pair := range [][2]string{{"v1.21.0-swagger.json.gz", "v1.22.0-swagger.json.gz"}, {"v1.24.0-swagger.json.gz", "v1.25.0-swagger.json.gz"}, {"v1.35.4-v3", "v1.36.3-v3"}} {
		t.Run(pair[1], func(t *testing.T) {
			ctx := context.Background()
			old, err := schemadiff.Load(ctx, "../testdata/schemadiff/k8s/"+pair[0])
			if err != nil {
				t.Fatal(err)
			}
			nw, err := schemadiff.Load(ctx, "../testdata/schemadiff/k8s/"+pair[1])
			if err != nil {
				t.Fatal(err)
			}
			// Every version pair, and a few samples through each rule.
			draft := schemadiff.DraftRules(schemadiff.Diff(old, nw, schemadiff.Options{AllVersions: true}), schemadiff.DraftOptions{})
			res, err := lint.Run(ctx, []rules.Source{{Name: "generated.yaml", Data: draft.YAML()}}, lint.Options{From: old, To: nw, Samples: 5, Seed: 1})
			if err != nil {
				t.Fatal(err)
			}
			todos := 0
			for _, f := range res.Findings {
				switch {
				case f.ID == lint.IDTODO:
					todos++
				case f.Severity == lint.Info && (f.ID == lint.IDFieldDropped || f.ID == lint.IDDefaultAdded || f.ID == lint.IDLossyModify || f.ID == lint.IDLossyJQ):
				default:
					explained := false
					for prefix := range known {
						explained = explained || strings.HasPrefix(f.Message, prefix)
					}
					if !explained {
						t.Errorf("unexpected finding: %s: %s %s: %s", f.Pos, f.Severity, f.ID, f.Message)
					}
				}
			}
			if todos != len(draft.TODOs) || todos == 0 {
				t.Errorf("%d todo findings, want the draft's %d TODOs", todos, len(draft.TODOs))
			}
			if res.Samples == 0 {
				t.Error("no samples were round-tripped")
			}
		})
	}
}

// TestRealRules_Examples round-trips the objects of testdata/oracle (inputs
// of real Kubernetes conversions, both versions) through the built-in rules
// (rules/builtin, linted as one set): no round-trip check may fire. All the
// objects go to one run, which compiles the rules once.
func TestRealRules_Examples(t *testing.T) {
	files, _ := filepath.Glob("../testdata/oracle/*/in/*.json")
	if len(files) == 0 {
		t.Skip("no oracle cases")
	}
	var opts lint.Options
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		docs, err := engine.ReadDocuments(f, bytes.NewReader(b))
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range docs {
			av, _ := d.Object["apiVersion"].(string)
			kind, _ := d.Object["kind"].(string)
			if gv, err := schema.ParseGroupVersion(av); err != nil || !builtin.Converts(gv.WithKind(kind)) {
				t.Errorf("%s: no built-in rule converts %s %s", f, av, kind)
			}
			opts.Examples = append(opts.Examples, lint.Example{Name: d.Source, Object: d.Object})
		}
	}
	res, err := lint.Run(context.Background(), builtin.Sources(), opts)
	if err != nil {
		t.Fatal(err)
	}
	if res.Samples < len(opts.Examples) {
		t.Errorf("%d objects round-tripped, want at least the %d examples", res.Samples, len(opts.Examples))
	}
	for _, f := range res.Findings {
		if f.Severity >= lint.Warning {
			t.Errorf("%s: %s %s: %s", f.Pos, f.Severity, f.ID, f.Message)
		}
	}
}
