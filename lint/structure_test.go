package lint

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/tools/txtar"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/mvpctl/mvpctl/rules"
)

func TestStructureIDs_EveryOrigin(t *testing.T) {
	for _, o := range rules.Origins {
		id, ok := structureIDs[o]
		if !ok {
			t.Errorf("origin %q has no check ID", o)
			continue
		}
		if _, ok := Checks[id]; !ok {
			t.Errorf("origin %q maps to unknown check %q", o, id)
		}
	}
	if len(structureIDs) != len(rules.Origins) {
		t.Errorf("%d origins mapped, rules has %d", len(structureIDs), len(rules.Origins))
	}
}

// The ID comes from the error's origin: a reworded message keeps its ID.
func TestClassify_ByOriginNotMessage(t *testing.T) {
	for _, tc := range []struct {
		err  *field.Error
		want string
	}{
		{field.Invalid(field.NewPath("spec", "apiMigrationRules").Index(0).Child("resource"), "x", "holds a list").WithOrigin(rules.OriginWrongType), IDWrongType},
		{field.Forbidden(field.NewPath("spec", "colour"), "no such field").WithOrigin(rules.OriginUnknownField), IDUnknownField},
		{field.Invalid(field.NewPath("spec", "apiMigrationRules").Index(0).Child("transformations").Index(1).Child("forward"), ".x |", "bad").WithOrigin(rules.OriginJQUndefined), IDJQUndefined},
		{field.Required(field.NewPath("spec"), "").WithOrigin(rules.OriginHeader), IDInvalidHeader},
		{field.Invalid(field.NewPath("spec", "apiMigrationRules").Index(0).Child("toVersion"), "v1", "equals fromVersion").WithOrigin(rules.OriginSameVersion), IDSameVersion},
		{field.Invalid(field.NewPath("spec", "x"), "y", "must be a string"), IDInvalidField},
	} {
		if got := classify(tc.err); got != tc.want {
			t.Errorf("classify(%v, origin %q) = %s, want %s", tc.err, tc.err.Origin, got, tc.want)
		}
	}
}

// Every decoding and validation error of the golden cases carries an origin.
func TestStructureErrors_HaveOrigins(t *testing.T) {
	files, err := filepath.Glob("../testdata/lint/*.txtar")
	if err != nil || len(files) == 0 {
		t.Fatalf("no cases: %v", err)
	}
	seen := map[string]bool{}
	for _, file := range files {
		ar, err := txtar.ParseFile(file)
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range ar.Files {
			if !strings.HasSuffix(f.Name, ".yaml") || strings.Contains(f.Name, "schema") || strings.HasPrefix(f.Name, "examples") {
				continue
			}
			set, err := rules.Parse(f.Name, f.Data)
			var errs rules.ErrorList
			if err != nil && !errors.As(err, &errs) {
				t.Fatalf("%s: %v", file, err)
			}
			if set != nil {
				errs = append(errs, set.Validate()...)
			}
			for _, e := range errs {
				if _, ok := structureIDs[e.Field.Origin]; !ok {
					t.Errorf("%s: %v: origin %q", filepath.Base(file), e, e.Field.Origin)
				}
				seen[e.Field.Origin] = true
			}
		}
	}
	if len(seen) < 15 {
		t.Errorf("the golden cases make errors of only %d origins", len(seen))
	}
}
