package sandbox

import (
	"errors"
	"fmt"
)

// Exit statuses, as env(1) and docker run use them.
const (
	ExitSetup      = 125 // agentbox itself failed (usage errors included)
	ExitCannotExec = 126 // the command was found but could not be executed
	ExitNotFound   = 127 // the command was not found
)

// Error is an error with the exit status agentbox exits with.
type Error struct {
	Code int
	Err  error
}

func (e *Error) Error() string { return e.Err.Error() }
func (e *Error) Unwrap() error { return e.Err }

// ExitCode returns the exit status for err: its *Error code, else 125.
func ExitCode(err error) int {
	var e *Error
	if errors.As(err, &e) {
		return e.Code
	}
	return ExitSetup
}

func errorf(code int, format string, a ...any) error {
	return &Error{Code: code, Err: fmt.Errorf(format, a...)}
}
