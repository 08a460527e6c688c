package rules

import (
	"fmt"
	"regexp"
	"strconv"

	"k8s.io/apimachinery/pkg/util/version"
)

// ServerVersionRegexp is the syntax of an apiRoutingRule's
// preferApiServerVersion: an optional ">=", an optional "v", major.minor,
// and an optional patch that is a number or a wildcard (x, y or *, all
// alike). Numbers have at most nine digits, so that every string it matches
// parses. The CRD's schema uses it as the field's pattern, so that the API
// server refuses exactly what validation refuses.
const ServerVersionRegexp = `^(>=\s*)?v?([0-9]{1,9})\.([0-9]{1,9})(\.([0-9]{1,9}|[xy*]))?$`

// MaxServerVersionPatternLength bounds a preferApiServerVersion value, which
// the regexp alone does not (any number of spaces may follow ">=").
const MaxServerVersionPatternLength = 64

var serverVersionRE = regexp.MustCompile(ServerVersionRegexp)

// serverVersionSyntax lists the forms of a server version pattern for messages.
const serverVersionSyntax = "v1.32.y (or .x, .*), v1.32, v1.32.4, >=1.32 or >=v1.32.4"

// ServerVersionPattern selects kube-apiserver versions, as written in an
// apiRoutingRule's preferApiServerVersion: v1.32.y, v1.32.x, v1.32.* and
// v1.32 match every patch of 1.32; v1.32.4 matches that patch only; >=1.32
// (also >=1.32.x) and >=v1.32.4 match that version and every later one.
// Pre-release and build suffixes of a server's version are ignored, so
// v1.36.3-rc.0+abc counts as 1.36.3.
type ServerVersionPattern struct {
	raw      string
	min      *version.Version
	atLeast  bool
	hasPatch bool
}

// ParseServerVersionPattern parses a preferApiServerVersion value. Validation
// and mvpctl proxy both use it, so that a pattern that validates routes.
func ParseServerVersionPattern(s string) (ServerVersionPattern, error) {
	if len(s) > MaxServerVersionPatternLength {
		return ServerVersionPattern{}, fmt.Errorf("invalid server version pattern: longer than %d characters", MaxServerVersionPatternLength)
	}
	m := serverVersionRE.FindStringSubmatch(s)
	if m == nil {
		return ServerVersionPattern{}, fmt.Errorf("invalid server version pattern %q: want %s", s, serverVersionSyntax)
	}
	p := ServerVersionPattern{raw: s, atLeast: m[1] != ""}
	major, minor := number(m[2]), number(m[3])
	p.min = version.MajorMinor(major, minor)
	if patch := m[5]; patch != "" && patch != "x" && patch != "y" && patch != "*" {
		p.hasPatch = true
		p.min = p.min.WithPatch(number(patch))
	}
	return p, nil
}

// number converts digits the pattern matched; nine digits always fit.
func number(digits string) uint {
	n, _ := strconv.ParseUint(digits, 10, 32)
	return uint(n)
}

// String returns the pattern as written.
func (p ServerVersionPattern) String() string { return p.raw }

// Match reports whether a server of version v is selected. A nil v (the
// server's version is not known yet) never matches, nor does the zero
// pattern.
func (p ServerVersionPattern) Match(v *version.Version) bool {
	if v == nil || p.min == nil {
		return false
	}
	// Compare release numbers only: a pre-release of 1.36.3 is a 1.36.3 server.
	rel := version.MajorMinor(v.Major(), v.Minor())
	if p.hasPatch {
		rel = rel.WithPatch(v.Patch())
	}
	if p.atLeast {
		return rel.AtLeast(p.min)
	}
	return rel.EqualTo(p.min)
}
