package proxy

import (
	"testing"

	"k8s.io/apimachinery/pkg/util/version"
)

func TestVersionPattern_Matches(t *testing.T) {
	tests := []struct {
		pattern string
		server  string
		want    bool
	}{
		{"v1.32.y", "v1.32.0", true},
		{"v1.32.y", "v1.32.9", true},
		{"v1.32.x", "v1.32.4", true},
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
		{">=v1.32.4", "v1.32.3", false},
		{">=v1.32.4", "v1.32.4", true},
		{">=v1.32.4", "v1.33.0", true},
		{">= v1.36", "v1.36.3", true},
		{"1.36.y", "v1.36.3", true},
	}
	for _, tt := range tests {
		t.Run(tt.pattern+"/"+tt.server, func(t *testing.T) {
			p, err := ParseVersionPattern(tt.pattern)
			if err != nil {
				t.Fatal(err)
			}
			if got := p.Matches(version.MustParseGeneric(tt.server)); got != tt.want {
				t.Errorf("%q.Matches(%q) = %v, want %v", tt.pattern, tt.server, got, tt.want)
			}
		})
	}
}

func TestVersionPattern_MatchesUnknownServer(t *testing.T) {
	p, err := ParseVersionPattern(">=1.0")
	if err != nil {
		t.Fatal(err)
	}
	if p.Matches(nil) {
		t.Error("a server of unknown version matched")
	}
}

func TestParseVersionPattern_Invalid(t *testing.T) {
	for _, s := range []string{"", "v1", "latest", "v1.32.z", ">=v1.32.y", "v1..3", "v1.32.4.5", "v1.-1"} {
		if _, err := ParseVersionPattern(s); err == nil {
			t.Errorf("ParseVersionPattern(%q) succeeded, want an error", s)
		}
	}
}
