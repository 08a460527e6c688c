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

// runAs executes mvpctl in-process under another executable name.
func runAs(t *testing.T, program string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errOut bytes.Buffer
	code = runWithIn(append([]string{program}, args...), strings.NewReader(""), &out, &errOut)
	return code, out.String(), errOut.String()
}

// Installed as kubectl-mvp, every usage line, error hint and example names
// `kubectl mvp`, never `kubectl` alone (another real command), and the
// completion script is for kubectl-mvp, not a replacement of kubectl's.
func TestKubectlPlugin_Name(t *testing.T) {
	const plugin = "/usr/local/bin/kubectl-mvp"
	code, out, errOut := runAs(t, plugin, "rules", "apply", "--help")
	if code != 0 || !strings.Contains(out, "kubectl mvp rules apply") {
		t.Fatalf("exit %d:\n%s%s", code, out, errOut)
	}
	code, out, _ = runAs(t, plugin, "convert", "--help")
	if code != 0 || !strings.Contains(out, "Usage:\n  kubectl mvp convert -f FILE") || !strings.Contains(out, "  kubectl mvp convert -f ingress.yaml") {
		t.Errorf("convert --help: exit %d:\n%s", code, out)
	}
	if strings.Contains(out, "\n  kubectl convert") || strings.Contains(out, "mvpctl convert") {
		t.Errorf("convert --help names another command:\n%s", out)
	}
	code, _, errOut = runAs(t, plugin, "convert", "--no-such-flag")
	if code != exitUsage || !strings.Contains(errOut, "See 'kubectl mvp convert --help'.") {
		t.Errorf("bad flag: exit %d, stderr %q", code, errOut)
	}
	code, _, errOut = runAs(t, plugin, "no-such-command")
	if code != exitUsage || !strings.HasPrefix(errOut, "kubectl mvp: ") {
		t.Errorf("unknown command: exit %d, stderr %q", code, errOut)
	}
	for shell, want := range map[string]string{
		"bash": "__start_kubectl-mvp kubectl-mvp",
		"zsh":  "#compdef kubectl-mvp",
		"fish": "complete -c kubectl-mvp",
	} {
		code, out, _ := runAs(t, plugin, "completion", shell)
		if code != 0 || !strings.Contains(out, want) {
			t.Errorf("completion %s: exit %d, script lacks %q", shell, code, want)
		}
		if strings.Contains(out, "#compdef kubectl\n") || strings.Contains(out, "complete -c kubectl ") || strings.Contains(out, " kubectl\n") {
			t.Errorf("completion %s completes kubectl itself:\n%s", shell, out)
		}
	}
}

// kubectl completes `kubectl mvp ...` by running kubectl_complete-mvp with
// the arguments: it is mvpctl __complete.
func TestKubectlPlugin_CompletionHelper(t *testing.T) {
	code, out, errOut := runAs(t, "/usr/local/bin/kubectl_complete-mvp", "rules", "")
	if code != 0 || !strings.Contains(out, "apply") || !strings.Contains(out, "status") || !strings.Contains(out, ":4") {
		t.Errorf("exit %d, stderr %q, completions:\n%s", code, errOut, out)
	}
}
