package cli

import (
	"strings"
	"testing"
)

// Go type names never reach users: a document that is not an object says
// what it is.
func TestConvert_DocumentThatIsNotAnObject(t *testing.T) {
	for in, want := range map[string]string{
		"[1, 2]":                          "<stdin>:1: the document is a list, not an object",
		"apiVersion: v1\n---\n- a\n- b\n": "<stdin>:3: the document is a list, not an object",
		"42\n":                            "<stdin>:1: the document is a number, not an object",
		"\"text\"":                        "<stdin>:1: the document is a string, not an object",
	} {
		code, _, errOut := run(t, in, "convert", "-f", "-", "--rules", seedRules, "--output-version", "v1")
		if code != exitUsage || !strings.Contains(errOut, want) || strings.Contains(errOut, "interface") || strings.Contains(errOut, "json.") {
			t.Errorf("%q: exit %d, stderr %q; want %q", in, code, errOut, want)
		}
	}
}

// A type conversion that fails names the field of the input, not only
// where the value was moved to.
func TestConvert_TypeConversionErrorNamesInputPath(t *testing.T) {
	rules := writeFile(t, "rules.yaml", `apiVersion: mvp.k8s.io/v1
kind: TransformationRules
metadata: {name: r}
spec:
  apiMigrationRules:
  - apiGroup: myapps.example.com
    resource: customresources
    fromVersion: v1alpha1
    toVersion: v1beta1
    transformations:
    - {path: spec.config.legacyTimeout, action: rename, targetPath: spec.config.requestTimeoutSeconds, type: integer}
`)
	in := "apiVersion: myapps.example.com/v1alpha1\nkind: CustomResource\nmetadata: {name: a}\nspec: {config: {legacyTimeout: soon}}\n"
	for _, engine := range []string{"native", "jq"} {
		code, _, errOut := run(t, in, "convert", "-f", "-", "--rules", rules, "--output-version", "myapps.example.com/v1beta1", "--engine", engine)
		if code != exitFailure || !strings.Contains(errOut, "renamed from spec.config.legacyTimeout") {
			t.Errorf("--engine %s: exit %d, stderr %q", engine, code, errOut)
		}
	}
}
