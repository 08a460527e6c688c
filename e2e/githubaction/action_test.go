// Package githubaction_test runs the GitHub Action's script
// (deploy/github-action/run.sh) as the runner would, with GITHUB_* and
// INPUT_* variables, and checks its outputs and the SARIF it writes; and
// checks that action.yml declares what it uses.
package githubaction_test

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/yaml"
)

func root(t *testing.T) string {
	_, here, _, ok := runtime.Caller(0)
	if !ok {
		t.Fatal("cannot locate the checkout")
	}
	return filepath.Join(filepath.Dir(here), "..", "..")
}

const ingress = `apiVersion: v1
kind: Service
metadata: {name: shop}
spec: {ports: [{port: 80}]}
---
apiVersion: extensions/v1beta1
kind: Ingress
metadata: {name: shop}
spec:
  backend: {serviceName: shop, servicePort: 80}
`

type step struct {
	stdout  string
	outputs map[string]string
	code    int
}

// runStep runs run.sh in workspace with the runner's variables.
func runStep(t *testing.T, workspace string, env ...string) step {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Minute)
	defer cancel()
	outFile := filepath.Join(t.TempDir(), "github_output")
	cmd := exec.CommandContext(ctx, "bash", filepath.Join(root(t), "deploy/github-action/run.sh"))
	cmd.Env = append(os.Environ(), "GITHUB_ACTION_PATH="+root(t), "GITHUB_WORKSPACE="+workspace, "GITHUB_OUTPUT="+outFile)
	cmd.Env = append(cmd.Env, env...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	s := step{stdout: out.String(), outputs: map[string]string{}}
	if exit, ok := err.(*exec.ExitError); ok {
		s.code = exit.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	data, _ := os.ReadFile(outFile)
	for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		if k, v, ok := strings.Cut(line, "="); ok {
			s.outputs[k] = v
		}
	}
	return s
}

func workspace(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, data := range files {
		path := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// sarif is what GitHub code scanning requires of SARIF 2.1.0.
type sarif struct {
	Schema  string `json:"$schema"`
	Version string `json:"version"`
	Runs    []struct {
		Tool struct {
			Driver struct {
				Name  string `json:"name"`
				Rules []struct {
					ID string `json:"id"`
				} `json:"rules"`
			} `json:"driver"`
		} `json:"tool"`
		Results []struct {
			RuleID    string `json:"ruleId"`
			RuleIndex int    `json:"ruleIndex"`
			Level     string `json:"level"`
			Message   struct {
				Text string `json:"text"`
			} `json:"message"`
			Locations []struct {
				PhysicalLocation struct {
					ArtifactLocation struct {
						URI string `json:"uri"`
					} `json:"artifactLocation"`
					Region struct {
						StartLine int `json:"startLine"`
					} `json:"region"`
				} `json:"physicalLocation"`
			} `json:"locations"`
		} `json:"results"`
	} `json:"runs"`
}

func readSARIF(t *testing.T, path string) sarif {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var s sarif
	dec := json.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(&s); err != nil {
		t.Fatalf("%s: %v\n%s", path, err, data)
	}
	if s.Version != "2.1.0" || !strings.Contains(s.Schema, "sarif-2.1.0") || len(s.Runs) != 1 || s.Runs[0].Tool.Driver.Name == "" {
		t.Fatalf("%s: not a SARIF 2.1.0 log of one run:\n%s", path, data)
	}
	run := s.Runs[0]
	for _, r := range run.Results {
		if r.RuleIndex < 0 || r.RuleIndex >= len(run.Tool.Driver.Rules) || run.Tool.Driver.Rules[r.RuleIndex].ID != r.RuleID ||
			r.Message.Text == "" || len(r.Locations) != 1 || r.Locations[0].PhysicalLocation.ArtifactLocation.URI == "" {
			t.Errorf("%s: result %+v", path, r)
		}
		switch r.Level {
		case "error", "warning", "note":
		default:
			t.Errorf("%s: level %q", path, r.Level)
		}
	}
	return s
}

// TestAction_Step runs the step as a runner would: first building mvpctl
// from the action's checkout, then with that binary as MVPCTL_BIN.
func TestAction_Step(t *testing.T) {
	ws := workspace(t, map[string]string{"manifests/shop.yaml": ingress, "manifests/values.yaml": "replicas: 2\n"})
	runnerTemp := t.TempDir()
	s := runStep(t, ws, "RUNNER_TEMP="+runnerTemp, "INPUT_COMMAND=scan", "INPUT_ARGS=-R -f manifests --kubernetes-version v1.36", "INPUT_SARIF_FILE=reports/scan.sarif", "MVPCTL_VERSION=v9.9.9-action")
	if s.code != 0 || s.outputs["exit-code"] != "1" || s.outputs["findings"] != "1" || s.outputs["sarif-file"] != "reports/scan.sarif" {
		t.Fatalf("exit %d, outputs %v\n%s", s.code, s.outputs, s.stdout)
	}
	if !strings.Contains(s.stdout, "v9.9.9-action") {
		t.Errorf("the binary does not report the action's version:\n%s", s.stdout)
	}
	if !regexp.MustCompile(`(?m)^::error file=manifests/shop.yaml,line=6`).MatchString(s.stdout) {
		t.Errorf("no annotation at the Ingress:\n%s", s.stdout)
	}
	log := readSARIF(t, filepath.Join(ws, "reports/scan.sarif"))
	res := log.Runs[0].Results
	if len(res) != 1 || res[0].RuleID != "removed-api" || res[0].Level != "error" ||
		res[0].Locations[0].PhysicalLocation.ArtifactLocation.URI != "manifests/shop.yaml" || res[0].Locations[0].PhysicalLocation.Region.StartLine != 6 {
		t.Errorf("results %+v", res)
	}

	bin := "MVPCTL_BIN=" + filepath.Join(runnerTemp, "mvpctl-action", "mvpctl")
	ws = workspace(t, map[string]string{"rules/widgets.yaml": `apiVersion: mvp.k8s.io/v1
kind: TransformationRules
metadata: {name: widgets}
spec:
  apiMigrationRules:
  - {apiGroup: example.com, resource: widgets, fromVersion: v1alpha1, toVersion: v1,
     transformations: [{path: spec.size, action: rename, targetPath: spec.replicas}]}
`})
	s = runStep(t, ws, bin, "INPUT_COMMAND=lint", "INPUT_ARGS=rules/")
	if s.code != 0 || s.outputs["exit-code"] != "0" || s.outputs["findings"] != "0" || s.outputs["sarif-file"] != "mvpctl.sarif" {
		t.Fatalf("lint: exit %d, outputs %v\n%s", s.code, s.outputs, s.stdout)
	}
	readSARIF(t, filepath.Join(ws, "mvpctl.sarif"))

	// Input that cannot be read: exit-code 2, for action.yml to fail on.
	s = runStep(t, ws, bin, "INPUT_COMMAND=scan", "INPUT_ARGS=-f missing/")
	if s.code != 0 || s.outputs["exit-code"] != "2" || !strings.Contains(s.stdout, "::error::mvpctl scan -f missing/ could not run") {
		t.Errorf("missing input: exit %d, outputs %v\n%s", s.code, s.outputs, s.stdout)
	}
	if s = runStep(t, ws, bin, "INPUT_COMMAND=convert"); s.code != 2 || !strings.Contains(s.stdout, "must be scan or lint") {
		t.Errorf("unknown command: exit %d\n%s", s.code, s.stdout)
	}
}

// TestAction_Metadata checks action.yml: a composite action whose steps
// use only the inputs it declares and the script that exists.
func TestAction_Metadata(t *testing.T) {
	data, err := os.ReadFile(filepath.Join(root(t), "action.yml"))
	if err != nil {
		t.Fatal(err)
	}
	var action struct {
		Name   string
		Inputs map[string]struct{ Default string }
		Runs   struct {
			Using string
			Steps []map[string]any
		}
	}
	if err := yaml.Unmarshal(data, &action); err != nil {
		t.Fatal(err)
	}
	if action.Runs.Using != "composite" || len(action.Runs.Steps) == 0 {
		t.Fatalf("runs: %+v", action.Runs)
	}
	for _, m := range regexp.MustCompile(`inputs\.([a-z-]+)`).FindAllStringSubmatch(string(data), -1) {
		if _, ok := action.Inputs[m[1]]; !ok {
			t.Errorf("action.yml uses inputs.%s, which it does not declare", m[1])
		}
	}
	if !strings.Contains(string(data), "$GITHUB_ACTION_PATH/deploy/github-action/run.sh") {
		t.Errorf("action.yml does not run deploy/github-action/run.sh")
	}
	if _, err := os.Stat(filepath.Join(root(t), "deploy/github-action/run.sh")); err != nil {
		t.Error(err)
	}
}
