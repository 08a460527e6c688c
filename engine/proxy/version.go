package proxy

import (
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/util/version"
)

// VersionPattern selects kube-apiserver versions, as written in an
// apiRoutingRule's preferApiServerVersion: v1.32.y, v1.32.x and v1.32 match
// every patch of 1.32; v1.32.4 matches that patch only; >=1.32 and >=v1.32.4
// match that version and every later one. Pre-release and build suffixes of
// a server's version are ignored, so v1.36.3-rc.0+abc counts as 1.36.3.
type VersionPattern struct {
	raw      string
	min      *version.Version
	atLeast  bool
	hasPatch bool
}

// ParseVersionPattern parses a preferApiServerVersion value.
func ParseVersionPattern(s string) (VersionPattern, error) {
	p := VersionPattern{raw: s}
	rest := strings.TrimSpace(s)
	if r, ok := strings.CutPrefix(rest, ">="); ok {
		p.atLeast = true
		rest = strings.TrimSpace(r)
	}
	rest = strings.TrimPrefix(rest, "v")
	parts := strings.Split(rest, ".")
	switch {
	case len(parts) == 3 && (parts[2] == "x" || parts[2] == "y"):
		if p.atLeast {
			return VersionPattern{}, fmt.Errorf("invalid server version pattern %q: >= takes a version, not a wildcard", s)
		}
		parts = parts[:2]
	case len(parts) == 3:
		p.hasPatch = true
	case len(parts) == 2:
	default:
		return VersionPattern{}, fmt.Errorf("invalid server version pattern %q: want v1.32.y, v1.32, v1.32.4, >=1.32 or >=v1.32.4", s)
	}
	for _, c := range parts {
		if c == "" || strings.Trim(c, "0123456789") != "" {
			return VersionPattern{}, fmt.Errorf("invalid server version pattern %q: %q is not a number", s, c)
		}
	}
	v, err := version.ParseGeneric(strings.Join(parts, "."))
	if err != nil {
		return VersionPattern{}, fmt.Errorf("invalid server version pattern %q: %w", s, err)
	}
	p.min = v
	return p, nil
}

// String returns the pattern as written.
func (p VersionPattern) String() string { return p.raw }

// Matches reports whether a server of version v is selected. A nil v (the
// server's version is not known yet) never matches.
func (p VersionPattern) Matches(v *version.Version) bool {
	if v == nil || p.min == nil {
		return false
	}
	// Compare release numbers only: a pre-release of 1.36.3 is a 1.36.3 server.
	rel := version.MajorMinor(v.Major(), v.Minor()).WithPatch(v.Patch())
	if p.atLeast {
		if !p.hasPatch {
			rel = version.MajorMinor(v.Major(), v.Minor())
		}
		return rel.AtLeast(p.min)
	}
	if v.Major() != p.min.Major() || v.Minor() != p.min.Minor() {
		return false
	}
	return !p.hasPatch || v.Patch() == p.min.Patch()
}
