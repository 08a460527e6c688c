// Command gen writes the TransformationRules CustomResourceDefinition
// manifest; `go generate ./rules/crd` runs it.
package main

import (
	"flag"
	"fmt"
	"os"

	"github.com/mvpctl/mvpctl/rules/crd"
)

func main() {
	types := flag.String("types", "rules", "directory of package rules, for the doc comments")
	out := flag.String("o", "-", "output file; - for standard output")
	flag.Parse()
	if err := run(*types, *out); err != nil {
		fmt.Fprintln(os.Stderr, "gen:", err)
		os.Exit(1)
	}
}

func run(types, out string) error {
	docs, err := crd.LoadDocs(types)
	if err != nil {
		return err
	}
	data, err := crd.YAML(docs)
	if err != nil {
		return err
	}
	if out == "-" {
		_, err = os.Stdout.Write(data)
		return err
	}
	return os.WriteFile(out, data, 0o644)
}
