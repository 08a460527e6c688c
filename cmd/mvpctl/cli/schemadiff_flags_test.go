package cli

import "flag"

var updateSchemadiff = flag.Bool("update-schemadiff", false, "rewrite the out/ sections of testdata/schemadiff/cli")
