// Command gendocs writes mvpctl's command-line reference (docs/cli.md) from
// its cobra commands; `make docs` runs it through go generate.
package main

import (
	"bytes"
	"flag"
	"fmt"
	"os"

	"github.com/mvpctl/mvpctl/cmd/mvpctl/cli"
)

func main() {
	out := flag.String("o", "", "file to write; default: standard output")
	flag.Parse()
	var b bytes.Buffer
	if err := cli.WriteReference(&b); err != nil {
		fmt.Fprintln(os.Stderr, "gendocs:", err)
		os.Exit(1)
	}
	if *out == "" {
		os.Stdout.Write(b.Bytes())
		return
	}
	if err := os.WriteFile(*out, b.Bytes(), 0o644); err != nil {
		fmt.Fprintln(os.Stderr, "gendocs:", err)
		os.Exit(1)
	}
}
