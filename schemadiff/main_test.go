package schemadiff_test

import (
	"errors"
	"flag"
)

var update = flag.Bool("update", false, "rewrite golden files in testdata/schemadiff")

func errorsAs(err error, target any) bool { return errors.As(err, target) }
