package cli

import (
	"errors"
	"fmt"
	"io"

	"github.com/mvpctl/mvpctl/rules"
)

// rulesError prints rule file problems with positions and caret lines and
// returns the usage exit code; other errors are returned as input errors.
func rulesError(stderr io.Writer, err error) error {
	var el rules.ErrorList
	if errors.As(err, &el) {
		fmt.Fprintln(stderr, rules.FormatError(err))
		return &silentError{code: exitUsage}
	}
	return inputError(err)
}
