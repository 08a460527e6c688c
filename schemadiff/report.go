package schemadiff

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strings"
)

// ReportFormat is an output format of [WriteReport].
type ReportFormat string

// The report formats.
const (
	ReportText     ReportFormat = "text"
	ReportJSON     ReportFormat = "json"
	ReportMarkdown ReportFormat = "markdown"
)

// ReportFormats lists the supported formats.
var ReportFormats = []ReportFormat{ReportText, ReportJSON, ReportMarkdown}

// WriteReport writes the change report per kind in the given format.
func WriteReport(w io.Writer, r *Report, format ReportFormat) error {
	switch format {
	case ReportJSON:
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		enc.SetEscapeHTML(false)
		return enc.Encode(r)
	case ReportMarkdown:
		_, err := w.Write(markdownReport(r))
		return err
	case ReportText, "":
		_, err := w.Write(textReport(r))
		return err
	}
	return fmt.Errorf("unknown report format %q", format)
}

// change is one line of a kind's report.
type change struct {
	what, path, detail string
}

func changes(d *SchemaDiff) []change {
	var out []change
	for _, s := range d.steps {
		switch {
		case s.move != nil:
			m := s.move
			what := "moved"
			if m.Split {
				what = "split"
			} else if parentOf(m.From.Path) == parentOf(m.To.Path) {
				what = "renamed"
			}
			detail := fmt.Sprintf("→ %s (confidence %.2f: %s)", m.To.Path, m.Confidence, strings.Join(m.Evidence, ", "))
			if m.From.Type != m.To.Type {
				detail = fmt.Sprintf("→ %s, %s → %s (confidence %.2f: %s)", m.To.Path, m.From.Type, m.To.Type, m.Confidence, strings.Join(m.Evidence, ", "))
			}
			out = append(out, change{what, m.From.Path, detail})
		case s.deleted != nil:
			out = append(out, change{"deleted", s.deleted.Path, fieldSummary(s.deleted)})
		case s.added != nil:
			out = append(out, change{"added", s.added.Path, fieldSummary(s.added)})
		case s.mod != nil:
			for _, line := range modLines(s.mod) {
				p := s.mod.Path
				if s.mod.OldPath != "" {
					p = s.mod.OldPath + " (now " + s.mod.Path + ")"
				}
				out = append(out, change{"changed", p, line})
			}
		}
	}
	for _, sh := range d.Shared {
		out = append(out, change{"shared", sh.Path, sh.Summary() + " (no rule)"})
	}
	return out
}

func parentOf(p string) string {
	if i := strings.LastIndexAny(p, ".["); i >= 0 {
		return p[:i]
	}
	return ""
}

func fieldSummary(f *Field) string {
	var parts []string
	parts = append(parts, f.Type)
	if f.Format != "" {
		parts = append(parts, "format "+f.Format)
	}
	if f.Required {
		parts = append(parts, "required")
	}
	if f.Default != "" {
		parts = append(parts, "default "+f.Default)
	}
	if len(f.Enum) > 0 {
		parts = append(parts, "enum "+strings.Join(f.Enum, "|"))
	}
	return strings.Join(parts, ", ")
}

func modLines(fd *FieldDiff) []string {
	var out []string
	add := func(what string, d *ValueDiff) {
		if d != nil {
			out = append(out, fmt.Sprintf("%s %v → %v", what, orNoneAny(d.From), orNoneAny(d.To)))
		}
	}
	add("type", fd.Type)
	add("format", fd.Format)
	add("required", fd.Required)
	if fd.Default != nil {
		out = append(out, fmt.Sprintf("default %s → %s", orNone(fd.old.Default), orNone(fd.new.Default)))
	}
	if e := fd.Enum; e != nil {
		if len(e.Added) > 0 {
			out = append(out, "enum added "+strings.Join(e.Added, ", "))
		}
		if len(e.Deleted) > 0 {
			out = append(out, "enum removed "+strings.Join(e.Deleted, ", "))
		}
	}
	add("nullable", fd.Nullable)
	add("x-kubernetes-list-type", fd.ListType)
	add("x-kubernetes-list-map-keys", fd.ListMapKeys)
	add("x-kubernetes-map-type", fd.MapType)
	add("x-kubernetes-preserve-unknown-fields", fd.Preserve)
	add("x-kubernetes-embedded-resource", fd.Embedded)
	return out
}

func side(d DumpInfo) string {
	s := d.Source
	if d.Version != "" {
		s += " (" + d.Version + ")"
	}
	return fmt.Sprintf("%s, %s, %d kinds", s, d.Format, d.Kinds)
}

func migrationTitle(m *Migration) string {
	return fmt.Sprintf("%s %s → %s (%s, %s)", m.From.Kind, m.From.GroupVersion(), m.To.GroupVersion(), m.FromResource, m.Reason)
}

func textReport(r *Report) []byte {
	var b bytes.Buffer
	fmt.Fprintf(&b, "old: %s\nnew: %s\n", side(r.Old), side(r.New))
	fmt.Fprintf(&b, "kinds: %d deleted, %d added, %d kept; %d to migrate\n", len(r.Kinds.Deleted), len(r.Kinds.Added), len(r.Kinds.Kept), len(r.Migrations))
	for _, x := range []struct {
		title string
		gvks  []GVK
	}{{"deleted", r.Kinds.Deleted}, {"added", r.Kinds.Added}} {
		if len(x.gvks) == 0 {
			continue
		}
		fmt.Fprintf(&b, "\n%s:\n", x.title)
		for _, g := range x.gvks {
			fmt.Fprintf(&b, "  %s\n", g)
		}
	}
	for _, m := range r.Migrations {
		fmt.Fprintf(&b, "\n%s\n", migrationTitle(m))
		cs := changes(m.Schema)
		if len(cs) == 0 {
			b.WriteString("  no schema changes\n")
		}
		for _, c := range cs {
			fmt.Fprintf(&b, "  %-8s %s: %s\n", c.what, c.path, c.detail)
		}
	}
	return b.Bytes()
}

func mdEscape(s string) string { return strings.ReplaceAll(s, "|", `\|`) }

func markdownReport(r *Report) []byte {
	var b bytes.Buffer
	b.WriteString("# API changes\n\n")
	fmt.Fprintf(&b, "- old: %s\n- new: %s\n- kinds: %d deleted, %d added, %d kept; %d to migrate\n", side(r.Old), side(r.New), len(r.Kinds.Deleted), len(r.Kinds.Added), len(r.Kinds.Kept), len(r.Migrations))
	for _, x := range []struct {
		title string
		gvks  []GVK
	}{{"Deleted kinds", r.Kinds.Deleted}, {"Added kinds", r.Kinds.Added}} {
		if len(x.gvks) == 0 {
			continue
		}
		fmt.Fprintf(&b, "\n## %s\n\n", x.title)
		for _, g := range x.gvks {
			fmt.Fprintf(&b, "- `%s`\n", g)
		}
	}
	for _, m := range r.Migrations {
		fmt.Fprintf(&b, "\n## %s\n\n", mdEscape(migrationTitle(m)))
		cs := changes(m.Schema)
		if len(cs) == 0 {
			b.WriteString("No schema changes.\n")
			continue
		}
		b.WriteString("| change | field | detail |\n| --- | --- | --- |\n")
		for _, c := range cs {
			fmt.Fprintf(&b, "| %s | `%s` | %s |\n", c.what, mdEscape(c.path), mdEscape(c.detail))
		}
	}
	return b.Bytes()
}

// WriteDraftReport writes what generate-rules drafted and what is left to
// review, as Markdown.
func WriteDraftReport(w io.Writer, r *Report, d *Draft) error {
	var b bytes.Buffer
	b.WriteString("# generate-rules report\n\n")
	fmt.Fprintf(&b, "- from: %s\n- to: %s\n", side(r.Old), side(r.New))
	var n int
	for _, mr := range d.Rules.Spec.APIMigrationRules {
		n += len(mr.Transformations)
	}
	fmt.Fprintf(&b, "- %d migration rules, %d transformations, %d TODOs, %d notes\n", len(d.Rules.Spec.APIMigrationRules), n, len(d.TODOs), len(d.Notes))
	for i, mr := range d.Rules.Spec.APIMigrationRules {
		fmt.Fprintf(&b, "\n## %s\n\n", mdEscape(mr.ID()))
		fmt.Fprintf(&b, "%d transformations drafted.\n", len(mr.Transformations))
		var todos []TODO
		for _, t := range d.TODOs {
			if t.Rule == i {
				todos = append(todos, t)
			}
		}
		if len(todos) > 0 {
			b.WriteString("\nTODO:\n\n")
			for _, t := range todos {
				fmt.Fprintf(&b, "- **%s** `%s`: %s", t.Kind, mdEscape(t.Path), mdEscape(oneLine(t.Message)))
				if len(t.Suggestion) > 0 {
					b.WriteString(" (a suggestion is commented out in the rules)")
				}
				b.WriteString("\n")
			}
		}
		var notes []Note
		for _, nt := range d.Notes {
			if nt.Rule == i {
				notes = append(notes, nt)
			}
		}
		if len(notes) > 0 {
			b.WriteString("\nNotes:\n\n")
			for _, nt := range notes {
				if nt.Path != "" {
					fmt.Fprintf(&b, "- `%s`: %s\n", mdEscape(nt.Path), mdEscape(nt.Message))
				} else {
					fmt.Fprintf(&b, "- %s\n", mdEscape(nt.Message))
				}
			}
		}
	}
	_, err := w.Write(b.Bytes())
	return err
}
