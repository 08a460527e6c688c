package lint

import (
	"encoding/json"
	"fmt"
	"io"
	"path/filepath"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/mvpctl/mvpctl/rules"
)

// Format is an output format of [Write].
type Format string

// The output formats.
const (
	FormatText   Format = "text"
	FormatJSON   Format = "json"
	FormatGitHub Format = "github"
	FormatSARIF  Format = "sarif"
)

// Formats lists the output formats.
var Formats = []Format{FormatText, FormatJSON, FormatGitHub, FormatSARIF}

// ToolInfo names the tool in SARIF output.
type ToolInfo struct {
	// Name is the SARIF driver's name; empty means mvpctl lint.
	Name    string
	Version string
	// InformationURI is the tool's home page; DocsURI the base of the
	// per-check help links (docs/lint.md).
	InformationURI, DocsURI string
	// Checks are the checks the findings' IDs name, in documentation order,
	// for a tool other than lint that writes its findings with [Write];
	// nil means lint's own ([CheckIDs]).
	Checks []*Check
}

// Write renders a result.
func Write(w io.Writer, res *Result, format Format, tool ToolInfo) error {
	switch format {
	case FormatText:
		return writeText(w, res)
	case FormatJSON:
		return writeJSON(w, res)
	case FormatGitHub:
		return writeGitHub(w, res)
	case FormatSARIF:
		return writeSARIF(w, res, tool)
	}
	return fmt.Errorf("unknown output format %q", format)
}

// writeText prints file:line:col: severity ID: message, the source line and
// a caret under the column, as compilers do.
func writeText(w io.Writer, res *Result) error {
	var b strings.Builder
	for _, f := range res.Findings {
		fmt.Fprintf(&b, "%s: %s %s: %s\n", f.Pos, f.Severity, f.ID, f.Message)
		if f.SourceLine != "" && f.Pos.Line > 0 {
			e := &rules.Error{Pos: f.Pos, SourceLine: f.SourceLine, Field: &field.Error{}}
			b.WriteString(strings.TrimPrefix(e.Caret(), e.Error()+"\n"))
			b.WriteByte('\n')
		}
	}
	counts := map[Severity]int{}
	for _, f := range res.Findings {
		counts[f.Severity]++
	}
	if len(res.Findings) > 0 {
		fmt.Fprintf(&b, "%d errors, %d warnings, %d infos in %d migration rules", counts[Error], counts[Warning], counts[Info], res.MigrationRules)
		if res.Samples > 0 {
			fmt.Fprintf(&b, " (%d objects round-tripped)", res.Samples)
		}
		b.WriteByte('\n')
	}
	_, err := io.WriteString(w, b.String())
	return err
}

type jsonFinding struct {
	ID       string         `json:"id"`
	Severity string         `json:"severity"`
	Category Category       `json:"category"`
	File     string         `json:"file"`
	Line     int            `json:"line"`
	Column   int            `json:"column"`
	Field    string         `json:"field,omitempty"`
	Rule     string         `json:"rule,omitempty"`
	Message  string         `json:"message"`
	Example  map[string]any `json:"example,omitempty"`
}

type jsonResult struct {
	Findings       []jsonFinding  `json:"findings"`
	Summary        map[string]int `json:"summary"`
	MigrationRules int            `json:"migrationRules"`
	Samples        int            `json:"samples,omitempty"`
}

func writeJSON(w io.Writer, res *Result) error {
	out := jsonResult{Findings: []jsonFinding{}, Summary: map[string]int{"error": 0, "warning": 0, "info": 0}, MigrationRules: res.MigrationRules, Samples: res.Samples}
	for _, f := range res.Findings {
		out.Findings = append(out.Findings, jsonFinding{ID: f.ID, Severity: f.Severity.String(), Category: CheckFor(f.ID).Category, File: f.Pos.File, Line: f.Pos.Line, Column: f.Pos.Col, Field: f.Field, Rule: f.Rule, Message: f.Message, Example: f.Example})
		out.Summary[f.Severity.String()]++
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	return enc.Encode(out)
}

// writeGitHub prints GitHub Actions workflow commands, which the runner turns
// into annotations on the pull request's files.
func writeGitHub(w io.Writer, res *Result) error {
	var b strings.Builder
	for _, f := range res.Findings {
		level := map[Severity]string{Error: "error", Warning: "warning", Info: "notice"}[f.Severity]
		fmt.Fprintf(&b, "::%s file=%s,line=%d,col=%d,title=%s::%s\n", level, ghProperty(filepath.ToSlash(f.Pos.File)), f.Pos.Line, f.Pos.Col, ghProperty(f.ID), ghData(f.Message))
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// ghData escapes a workflow command's message (actions/toolkit escapeData).
func ghData(s string) string {
	return strings.NewReplacer("%", "%25", "\r", "%0D", "\n", "%0A").Replace(s)
}

// ghProperty escapes a workflow command's property value (escapeProperty).
func ghProperty(s string) string {
	return strings.NewReplacer("%", "%25", "\r", "%0D", "\n", "%0A", ":", "%3A", ",", "%2C").Replace(s)
}
