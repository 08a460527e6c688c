// Command mvpctl converts Kubernetes objects between API versions with
// TransformationRules, drafts and checks those rules, and proxies a
// mixed-version control plane.
package main

import (
	"os"

	"github.com/mvpctl/mvpctl/cmd/mvpctl/cli"
)

func main() {
	os.Exit(cli.Run(os.Args, os.Stdout, os.Stderr))
}
