//go:build !linux

package sandbox

import (
	"errors"

	"github.com/agentbox/agentbox/internal/rootdir"
)

var errLinux = errors.New("agentbox needs Linux (user, mount and PID namespaces, Landlock)")

// IsInit is false outside Linux.
func IsInit() bool { return false }

// IsDegraded is false outside Linux.
func IsDegraded() bool { return false }

// InitMain is only implemented on Linux.
func InitMain() int { return ExitSetup }

// DegradedMain is only implemented on Linux.
func DegradedMain() int { return ExitSetup }

// Run is only implemented on Linux.
func Run(cfg Config) (Result, error) { return Result{}, &Error{Code: ExitSetup, Err: errLinux} }

// OpenRoot is only implemented on Linux.
func OpenRoot(flag string, vars []string) (*rootdir.Root, error) { return nil, errLinux }

// IsNestRun is false outside Linux.
func IsNestRun() bool { return false }

// NestRunMain is only implemented on Linux.
func NestRunMain() int { return ExitSetup }
