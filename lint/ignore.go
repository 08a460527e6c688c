package lint

import (
	"regexp"
	"strings"
)

// ignoreRE reads a suppression comment: "# mvpctl:ignore ID[,ID...] reason".
var ignoreRE = regexp.MustCompile(`(?:^|[ \t])#[ \t]*mvpctl:ignore[ \t]+([a-z0-9-]+(?:,[a-z0-9-]+)*)`)

// applyIgnores drops findings that a suppression comment names, on the
// finding's line or alone on the line above it. A suppression that
// suppresses nothing is left alone: the finding may come back.
func (l *linter) applyIgnores() {
	ignored := map[string]map[int]map[string]bool{} // file → line → IDs
	for file, lines := range l.sources {
		for i, line := range lines {
			if !strings.Contains(line, "mvpctl:ignore") {
				continue
			}
			m := ignoreRE.FindStringSubmatch(line)
			if m == nil {
				continue
			}
			if ignored[file] == nil {
				ignored[file] = map[int]map[string]bool{}
			}
			targets := []int{i + 1}
			if strings.HasPrefix(strings.TrimSpace(line), "#") {
				targets = append(targets, i+2) // a comment line covers the next line
			}
			for _, n := range targets {
				if ignored[file][n] == nil {
					ignored[file][n] = map[string]bool{}
				}
				for _, id := range strings.Split(m[1], ",") {
					ignored[file][n][id] = true
				}
			}
		}
	}
	if len(ignored) == 0 {
		return
	}
	kept := l.findings[:0]
	for _, f := range l.findings {
		if !ignored[f.Pos.File][f.Pos.Line][f.ID] {
			kept = append(kept, f)
		}
	}
	l.findings = kept
}
