package proxy

import (
	"encoding/json"
	"net/url"
	"os"
	"testing"

	"github.com/mvpctl/mvpctl/rules"
)

// The proxy starts with exactly the preferApiServerVersion values that
// validation (and the CRD's schema) accept: the table of testdata is shared
// with rules' and the CRD's tests.
func TestNew_ServerVersionPatterns(t *testing.T) {
	data, err := os.ReadFile("../../testdata/server-version-patterns.json")
	if err != nil {
		t.Fatal(err)
	}
	var table struct{ Valid, Invalid []string }
	if err := json.Unmarshal(data, &table); err != nil {
		t.Fatal(err)
	}
	backend := Backend{Name: "b", URL: &url.URL{Scheme: "https", Host: "127.0.0.1:1"}}
	for _, tc := range []struct {
		patterns []string
		valid    bool
	}{{table.Valid, true}, {table.Invalid, false}} {
		for _, s := range tc.patterns {
			_, err := New(Options{Backends: []Backend{backend}, Rules: Rules{Routing: []rules.RoutingRule{{Resource: "*", PreferAPIServerVersion: s}}}})
			if (err == nil) != tc.valid {
				t.Errorf("%q: want valid=%v, New says %v", s, tc.valid, err)
			}
		}
	}
}
