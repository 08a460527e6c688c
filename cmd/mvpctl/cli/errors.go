package cli

import (
	"errors"
	"fmt"
)

// Exit codes shared by every command.
const (
	exitOK      = 0
	exitFailure = 1 // a conversion, test or check failed
	exitUsage   = 2 // bad flags, arguments or unreadable input
)

// exitError carries the exit code of a failed command.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string { return e.err.Error() }
func (e *exitError) Unwrap() error { return e.err }

// ExitCode is the process exit code for the error.
func (e *exitError) ExitCode() int { return e.code }

// silentError is a failure whose details the command already printed.
type silentError struct{ code int }

func (e *silentError) Error() string { return fmt.Sprintf("exit status %d", e.code) }
func (e *silentError) ExitCode() int { return e.code }

// usageErrorf reports bad usage or unreadable input (exit 2).
func usageErrorf(format string, args ...any) error {
	return &exitError{code: exitUsage, err: fmt.Errorf(format, args...)}
}

// inputError wraps an error about the command's input (exit 2).
func inputError(err error) error {
	if err == nil {
		return nil
	}
	return &exitError{code: exitUsage, err: err}
}

// failure wraps an error about the work itself (exit 1).
func failure(err error) error {
	if err == nil {
		return nil
	}
	return &exitError{code: exitFailure, err: err}
}

func exitCode(err error) int {
	var coder interface{ ExitCode() int }
	if errors.As(err, &coder) {
		return coder.ExitCode()
	}
	return exitUsage
}
