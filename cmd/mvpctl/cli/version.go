package cli

import (
	"encoding/json"
	"fmt"
	"io"
	"runtime"
	"runtime/debug"

	"github.com/spf13/cobra"
	"sigs.k8s.io/yaml"
)

// Set by the Makefile through -ldflags.
var (
	version = ""
	commit  = ""
)

// versionInfo is what `mvpctl version -o json|yaml` prints.
type versionInfo struct {
	Version   string `json:"version"`
	Commit    string `json:"commit"`
	GoVersion string `json:"goVersion"`
	Platform  string `json:"platform"`
}

func currentVersion() versionInfo {
	v, c := version, commit
	if info, ok := debug.ReadBuildInfo(); ok && v == "" && info.Main.Version != "" && info.Main.Version != "(devel)" {
		v = info.Main.Version // set by go install module@version
	}
	if v == "" {
		v = "dev"
	}
	if c == "" {
		c = "unknown"
	}
	return versionInfo{Version: v, Commit: c, GoVersion: runtime.Version(), Platform: runtime.GOOS + "/" + runtime.GOARCH}
}

// versionString is the one line that `mvpctl version` and `mvpctl
// --version` print.
func versionString() string {
	v := currentVersion()
	return fmt.Sprintf("mvpctl %s (commit %s, %s %s)", v.Version, v.Commit, v.GoVersion, v.Platform)
}

func newVersionCmd() *cobra.Command {
	var output string
	cmd := &cobra.Command{
		Use:   "version",
		Short: "Print the mvpctl version, commit and Go version",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return printVersion(cmd.OutOrStdout(), output)
		},
	}
	cmd.Flags().StringVarP(&output, "output", "o", "", "output format: (empty) for one line, json or yaml")
	registerCompletion(cmd, "output", completeWords("json", "yaml"))
	return cmd
}

func printVersion(w io.Writer, output string) error {
	var data []byte
	var err error
	switch output {
	case "":
		_, err = fmt.Fprintln(w, versionString())
		return err
	case "json":
		data, err = json.MarshalIndent(currentVersion(), "", "  ")
		data = append(data, '\n')
	case "yaml":
		data, err = yaml.Marshal(currentVersion())
	default:
		return usageErrorf("--output %q: want json or yaml", output)
	}
	if err != nil {
		return failure(err)
	}
	_, err = w.Write(data)
	return err
}
