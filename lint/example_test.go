package lint_test

import (
	"context"
	"fmt"
	"os"

	"github.com/mvpctl/mvpctl/lint"
	"github.com/mvpctl/mvpctl/rules"
)

func ExampleRun() {
	src := rules.Source{Name: "rules.yaml", Data: []byte(`apiVersion: mvp.k8s.io/v1
kind: TransformationRules
metadata: {name: example}
spec:
  apiMigrationRules:
  - apiGroup: example.com
    resource: widgets
    fromVersion: v1alpha1
    toVersion: v1
    transformations:
    - {path: spec.timeout, action: rename, targetPath: spec.tmp}
    - {path: spec.tmp, action: rename, targetPath: spec.timeoutSeconds}
`)}
	res, err := lint.Run(context.Background(), []rules.Source{src}, lint.Options{})
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, f := range res.Findings {
		fmt.Printf("%s %s %s\n", f.Pos, f.ID, f.Field)
	}
	_ = lint.Write(os.Stdout, res, lint.FormatText, lint.ToolInfo{})
	// Output:
	// rules.yaml:11:56 rename-chain spec.apiMigrationRules[0].transformations[0].targetPath
	// rules.yaml:11:56: warning rename-chain: spec.timeout is renamed to spec.tmp, which transformations[1] renames again to spec.timeoutSeconds: rename spec.timeout to spec.timeoutSeconds directly
	//     11 |     - {path: spec.timeout, action: rename, targetPath: spec.tmp}
	//                                                                 ^
	// 0 errors, 1 warnings, 0 infos in 1 migration rules
}
