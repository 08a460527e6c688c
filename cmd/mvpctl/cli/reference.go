package cli

//go:generate go run ./gendocs -o ../../../docs/cli.md

import (
	"bytes"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/cobra/doc"
	"github.com/spf13/pflag"
	"k8s.io/client-go/util/homedir"
)

// WriteReference writes the command-line reference (docs/cli.md): every
// command's synopsis, usage, examples and flags, from the command tree, in
// one Markdown file.
func WriteReference(w io.Writer) error {
	root := newRootCmd("mvpctl", "mvpctl")
	root.DisableAutoGenTag = true
	var buf bytes.Buffer
	buf.WriteString("# mvpctl command reference\n\n" +
		"<!-- Generated from the commands by `make docs` (go generate ./cmd/mvpctl/cli); do not edit. -->\n\n")
	for _, c := range availableCommands(root) {
		fmt.Fprintf(&buf, "- [%s](%s) - %s\n", c.CommandPath(), anchor(c.CommandPath()), c.Short)
	}
	buf.WriteString("\n")
	for _, c := range availableCommands(root) {
		portableDefaults(c)
		c.DisableAutoGenTag = true
		if err := doc.GenMarkdownCustom(c, &buf, fileLink); err != nil {
			return err
		}
		buf.WriteString("\n")
	}
	_, err := w.Write(bytes.TrimRight(buf.Bytes(), "\n"))
	if err == nil {
		_, err = io.WriteString(w, "\n")
	}
	return err
}

// availableCommands is c and every command below it that help lists, in
// order.
func availableCommands(c *cobra.Command) []*cobra.Command {
	out := []*cobra.Command{c}
	for _, sub := range c.Commands() {
		if sub.IsAvailableCommand() && !sub.IsAdditionalHelpTopicCommand() {
			out = append(out, availableCommands(sub)...)
		}
	}
	return out
}

// fileLink turns cobra/doc's per-command file names (mvpctl_rules_apply.md)
// into anchors of the one file.
func fileLink(name string) string {
	return anchor(strings.ReplaceAll(strings.TrimSuffix(name, ".md"), "_", " "))
}

// anchor is GitHub's anchor of a "## mvpctl rules apply" heading.
func anchor(heading string) string {
	return "#" + strings.ReplaceAll(strings.ToLower(heading), " ", "-")
}

// portableDefaults writes defaults under the home directory (kubectl's
// --cache-dir) as $HOME, so that the reference does not depend on who
// generates it.
func portableDefaults(c *cobra.Command) {
	home := homedir.HomeDir()
	if home == "" {
		return
	}
	fix := func(f *pflag.Flag) {
		if strings.HasPrefix(f.DefValue, home) {
			f.DefValue = "$HOME" + strings.TrimPrefix(f.DefValue, home)
		}
	}
	c.LocalFlags().VisitAll(fix)
	c.InheritedFlags().VisitAll(fix)
}
