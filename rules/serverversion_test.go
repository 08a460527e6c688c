package rules_test

import (
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/util/version"

	"github.com/mvpctl/mvpctl/rules"
)

// serverVersionPatterns reads the one table of preferApiServerVersion values
// that validation, the proxy and the CRD's schema must agree on.
func serverVersionPatterns(t *testing.T) (valid, invalid []string) {
	t.Helper()
	data, err := os.ReadFile("../testdata/server-version-patterns.json")
	if err != nil {
		t.Fatal(err)
	}
	var table struct{ Valid, Invalid []string }
	if err := json.Unmarshal(data, &table); err != nil {
		t.Fatal(err)
	}
	if len(table.Valid) == 0 || len(table.Invalid) == 0 {
		t.Fatal("empty table")
	}
	return table.Valid, table.Invalid
}

func routingRules(pattern string) []byte {
	return fmt.Appendf(nil, `apiVersion: mvp.k8s.io/v1
kind: TransformationRules
metadata: {name: x}
spec:
  apiRoutingRules:
  - {apiGroup: apps, resource: "*", preferApiServerVersion: %q}
`, pattern)
}

func TestParseServerVersionPattern_AgreesWithValidate(t *testing.T) {
	valid, invalid := serverVersionPatterns(t)
	for _, tc := range []struct {
		patterns []string
		valid    bool
	}{{valid, true}, {invalid, false}} {
		for _, s := range tc.patterns {
			_, parseErr := rules.ParseServerVersionPattern(s)
			_, validateErr := rules.ParseAll(rules.Source{Name: "x.yaml", Data: routingRules(s)})
			if (parseErr == nil) != tc.valid || (validateErr == nil) != tc.valid {
				t.Errorf("%q: want valid=%v; ParseServerVersionPattern: %v; Validate: %v", s, tc.valid, parseErr, validateErr)
			}
		}
	}
}

func TestParseServerVersionPattern_ErrorSaysWhy(t *testing.T) {
	for s, want := range map[string]string{
		"v1.32.z":                      "want v1.32.y (or .x, .*), v1.32, v1.32.4, >=1.32 or >=v1.32.4",
		">=" + strings.Repeat(" ", 99): "longer than 64 characters",
	} {
		_, err := rules.ParseServerVersionPattern(s)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("ParseServerVersionPattern(%q) = %v, want an error containing %q", s, err, want)
		}
	}
}

func TestServerVersionPattern_Match(t *testing.T) {
	tests := []struct {
		pattern string
		server  string
		want    bool
	}{
		{"v1.32.y", "v1.32.0", true},
		{"v1.32.y", "v1.32.9", true},
		{"v1.32.x", "v1.32.4", true},
		{"v1.32.*", "v1.32.4", true},
		{"v1.32.*", "v1.33.0", false},
		{"v1.32.y", "v1.33.0", false},
		{"v1.32.y", "v1.31.9", false},
		{"v1.32", "v1.32.7", true},
		{"v1.32", "v2.32.7", false},
		{"v1.32.4", "v1.32.4", true},
		{"v1.32.4", "v1.32.5", false},
		{"v1.32.4", "v1.32.4-rc.1+abcdef", true},
		{">=1.32", "v1.32.0", true},
		{">=1.32", "v1.31.99", false},
		{">=1.32", "v1.40.1", true},
		{">=1.32.x", "v1.32.0", true},
		{">=1.32.x", "v1.31.99", false},
		{">=v1.32.*", "v2.0.0", true},
		{">=v1.32.4", "v1.32.3", false},
		{">=v1.32.4", "v1.32.4", true},
		{">=v1.32.4", "v1.33.0", true},
		{">= v1.36", "v1.36.3", true},
		{"1.36.y", "v1.36.3", true},
		{"v1.36.3", "v1.36.3-rc.0", true},
	}
	for _, tt := range tests {
		t.Run(tt.pattern+"/"+tt.server, func(t *testing.T) {
			p, err := rules.ParseServerVersionPattern(tt.pattern)
			if err != nil {
				t.Fatal(err)
			}
			if got := p.Match(version.MustParseGeneric(tt.server)); got != tt.want {
				t.Errorf("%q.Match(%q) = %v, want %v", tt.pattern, tt.server, got, tt.want)
			}
		})
	}
}

func TestServerVersionPattern_UnknownServerNeverMatches(t *testing.T) {
	p, err := rules.ParseServerVersionPattern(">=1.0")
	if err != nil {
		t.Fatal(err)
	}
	if p.Match(nil) {
		t.Error("a server of unknown version matched")
	}
	if (rules.ServerVersionPattern{}).Match(version.MustParseGeneric("v1.36.3")) {
		t.Error("the zero pattern matched")
	}
}
