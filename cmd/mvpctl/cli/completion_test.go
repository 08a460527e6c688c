package cli

import (
	"bytes"
	"strings"
	"testing"
)

func TestCompletion_Shells(t *testing.T) {
	for shell, want := range map[string]string{
		"bash":       "__start_mvpctl",
		"zsh":        "#compdef mvpctl",
		"fish":       "complete -c mvpctl",
		"powershell": "Register-ArgumentCompleter",
	} {
		code, out, errOut := run(t, "", "completion", shell)
		if code != 0 || !strings.Contains(out, want) {
			t.Errorf("completion %s: exit %d, stderr %q, output lacks %q", shell, code, errOut, want)
		}
	}
	if code, _, errOut := run(t, "", "completion", "tcsh"); code != exitUsage || !strings.Contains(errOut, "tcsh") {
		t.Errorf("completion tcsh: exit %d, %q", code, errOut)
	}
	// The completion engine itself lists the rules subcommands.
	if code, out, _ := run(t, "", "__complete", "rules", ""); code != 0 || !strings.Contains(out, "apply") || !strings.Contains(out, "status") {
		t.Errorf("__complete rules: exit %d\n%s", code, out)
	}
}

// Installed as kubectl-mvp, usage lines say `kubectl mvp`.
func TestKubectlPlugin_Name(t *testing.T) {
	var out, errOut bytes.Buffer
	code := runWithIn([]string{"/usr/local/bin/kubectl-mvp", "rules", "apply", "--help"}, strings.NewReader(""), &out, &errOut)
	if code != 0 || !strings.Contains(out.String(), "kubectl mvp rules apply") {
		t.Fatalf("exit %d:\n%s%s", code, out.String(), errOut.String())
	}
}
