package lint

import (
	"encoding/json"
	"io"
	"path/filepath"
	"strings"
)

// SARIF 2.1.0 (OASIS), the subset code scanning services read.

// SARIFSchema is the $schema of the SARIF documents Write produces.
const SARIFSchema = "https://json.schemastore.org/sarif-2.1.0.json"

type sarifLog struct {
	Schema  string     `json:"$schema"`
	Version string     `json:"version"`
	Runs    []sarifRun `json:"runs"`
}

type sarifRun struct {
	Tool    sarifTool     `json:"tool"`
	Results []sarifResult `json:"results"`
}

type sarifTool struct {
	Driver sarifDriver `json:"driver"`
}

type sarifDriver struct {
	Name           string      `json:"name"`
	Version        string      `json:"version,omitempty"`
	InformationURI string      `json:"informationUri,omitempty"`
	Rules          []sarifRule `json:"rules"`
}

type sarifRule struct {
	ID                   string          `json:"id"`
	Name                 string          `json:"name"`
	ShortDescription     sarifMessage    `json:"shortDescription"`
	HelpURI              string          `json:"helpUri,omitempty"`
	DefaultConfiguration sarifRuleConfig `json:"defaultConfiguration"`
	Properties           map[string]any  `json:"properties,omitempty"`
}

type sarifRuleConfig struct {
	Level string `json:"level"`
}

type sarifMessage struct {
	Text string `json:"text"`
}

type sarifResult struct {
	RuleID    string          `json:"ruleId"`
	RuleIndex int             `json:"ruleIndex"`
	Level     string          `json:"level"`
	Message   sarifMessage    `json:"message"`
	Locations []sarifLocation `json:"locations"`
}

type sarifLocation struct {
	PhysicalLocation sarifPhysical `json:"physicalLocation"`
}

type sarifPhysical struct {
	ArtifactLocation sarifArtifact `json:"artifactLocation"`
	Region           *sarifRegion  `json:"region,omitempty"`
}

type sarifArtifact struct {
	URI string `json:"uri"`
}

type sarifRegion struct {
	StartLine   int           `json:"startLine"`
	StartColumn int           `json:"startColumn,omitempty"`
	Snippet     *sarifMessage `json:"snippet,omitempty"`
}

func sarifLevel(s Severity) string {
	switch s {
	case Error:
		return "error"
	case Warning:
		return "warning"
	}
	return "note"
}

func writeSARIF(w io.Writer, res *Result, tool ToolInfo) error {
	name, checks := tool.Name, tool.Checks
	if name == "" {
		name = "mvpctl lint"
	}
	if checks == nil {
		for _, id := range CheckIDs {
			checks = append(checks, Checks[id])
		}
	}
	driver := sarifDriver{Name: name, Version: tool.Version, InformationURI: tool.InformationURI}
	index := map[string]int{}
	for i, c := range checks {
		id := c.ID
		index[id] = i
		rule := sarifRule{ID: id, Name: ruleName(id), ShortDescription: sarifMessage{Text: c.Summary}, DefaultConfiguration: sarifRuleConfig{Level: sarifLevel(c.Severity)}, Properties: map[string]any{"category": string(c.Category)}}
		if tool.DocsURI != "" {
			rule.HelpURI = tool.DocsURI + "#" + id
		}
		driver.Rules = append(driver.Rules, rule)
	}
	run := sarifRun{Tool: sarifTool{Driver: driver}, Results: []sarifResult{}}
	for _, f := range res.Findings {
		r := sarifResult{RuleID: f.ID, RuleIndex: index[f.ID], Level: sarifLevel(f.Severity), Message: sarifMessage{Text: f.Message}}
		loc := sarifLocation{PhysicalLocation: sarifPhysical{ArtifactLocation: sarifArtifact{URI: sarifURI(f.Pos.File)}}}
		if f.Pos.Line > 0 {
			loc.PhysicalLocation.Region = &sarifRegion{StartLine: f.Pos.Line, StartColumn: f.Pos.Col}
			if f.SourceLine != "" {
				loc.PhysicalLocation.Region.Snippet = &sarifMessage{Text: f.SourceLine}
			}
		}
		r.Locations = []sarifLocation{loc}
		run.Results = append(run.Results, r)
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	return enc.Encode(sarifLog{Schema: SARIFSchema, Version: "2.1.0", Runs: []sarifRun{run}})
}

// sarifURI makes a relative URI reference of a file name (forward slashes,
// spaces and other reserved characters escaped).
func sarifURI(file string) string {
	s := strings.NewReplacer("%", "%25", " ", "%20", "#", "%23", "?", "%3F").Replace(filepath.ToSlash(file))
	if filepath.IsAbs(file) {
		if !strings.HasPrefix(s, "/") {
			s = "/" + s // C:/x → /C:/x
		}
		return "file://" + s
	}
	return s
}

// ruleName turns a kebab-case ID into the PascalCase name SARIF viewers show.
func ruleName(id string) string {
	var b strings.Builder
	for _, part := range strings.Split(id, "-") {
		if part == "" {
			continue
		}
		b.WriteString(strings.ToUpper(part[:1]) + part[1:])
	}
	return b.String()
}
