//go:build !linux || !(amd64 || arm64)

package seccomp

import (
	"errors"
	"fmt"
)

// InstallTTYGuard always fails here: the filter is written for the system-call
// numbers and seccomp_data layout of Linux on amd64 and arm64.
func InstallTTYGuard() error {
	return fmt.Errorf("seccomp: the TIOCSTI guard needs Linux on amd64 or arm64: %w", errors.ErrUnsupported)
}
