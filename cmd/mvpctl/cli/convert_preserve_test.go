package cli

import (
	"os"
	"strings"
	"testing"

	"github.com/mvpctl/mvpctl/manifest"
)

const mixedBundle = "../../../testdata/convert/mixed-bundle.yaml"

// contentDocs splits a stream and keeps the documents that hold more than
// comments.
func contentDocs(t *testing.T, data string) []manifest.Document {
	t.Helper()
	docs, err := manifest.Split([]byte(data))
	if err != nil {
		t.Fatal(err)
	}
	var out []manifest.Document
	for _, d := range docs {
		if !d.Blank() {
			out = append(out, d)
		}
	}
	return out
}

// A bundle that mixes Ingress, CronJob, PodDisruptionBudget and ConfigMap,
// converted to the new version of one group: that group's object is
// converted (under the comments above it), and every other document is
// written byte for byte as it was, comments, quoting and key order
// included.
func TestConvert_MixedBundleOtherGroupsByteForByte(t *testing.T) {
	data, err := os.ReadFile(mixedBundle)
	if err != nil {
		t.Fatal(err)
	}
	in := contentDocs(t, string(data))
	for i, target := range []string{"networking.k8s.io/v1", "batch/v1", "policy/v1"} {
		t.Run(strings.Split(target, "/")[0], func(t *testing.T) {
			code, out, errOut := run(t, "", "convert", "-f", mixedBundle, "--output-version", target)
			if code != 0 || errOut != "" {
				t.Fatalf("exit %d, stderr:\n%s", code, errOut)
			}
			got := contentDocs(t, out)
			if len(got) != len(in) {
				t.Fatalf("%d documents, want %d:\n%s", len(got), len(in), out)
			}
			for j := range in {
				if j == i {
					if !strings.Contains(string(got[j].Text), "apiVersion: "+target+"\n") {
						t.Errorf("document %d is not converted to %s:\n%s", j+1, target, got[j].Text)
					}
					if head := string(in[j].Head()); !strings.HasPrefix(string(got[j].Text), head) {
						t.Errorf("document %d lost the comments above it (%q):\n%s", j+1, head, got[j].Text)
					}
					continue
				}
				if string(got[j].Text) != string(in[j].Text) {
					t.Errorf("document %d changed:\n--- in\n%s--- out\n%s", j+1, in[j].Text, got[j].Text)
				}
			}
		})
	}
}

// A document that needs no change is written as it was even when it is the
// only one, and a JSON document that needs no change is written as YAML
// (-o yaml), as before.
func TestConvert_UnchangedDocumentAsWritten(t *testing.T) {
	const in = "# settings\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: s}\ndata: {on: \"yes\"}"
	code, out, errOut := run(t, in, "convert", "-f", "-", "--output-version", "networking.k8s.io/v1")
	if code != 0 || out != in+"\n" {
		t.Errorf("exit %d, stderr %q, output:\n%q\nwant the input", code, errOut, out)
	}
	code, out, _ = run(t, `{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "s"}}`, "convert", "-f", "-", "--output-version", "networking.k8s.io/v1")
	if code != 0 || out != "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: s\n" {
		t.Errorf("JSON input: exit %d, output:\n%s", code, out)
	}
}
