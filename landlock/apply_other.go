//go:build !linux

package landlock

import (
	"errors"
	"fmt"
)

var errNotLinux = errors.New("landlock: Landlock is a Linux security module; this system has none")

// ABI is only implemented on Linux.
func ABI() (int, error) { return 0, errNotLinux }

// Apply enforces nothing outside Linux: Require fails with ErrUnsupported,
// BestEffort and Off return a Plan that says nothing is enforced.
func Apply(p Policy) (Plan, error) { return Check(p) }

// Check returns the Plan Apply would enforce: nothing, outside Linux.
func Check(p Policy) (Plan, error) {
	c, err := compile(p, 0)
	if err != nil && errors.Is(err, ErrUnsupported) {
		err = fmt.Errorf("%w (%w)", err, errNotLinux)
	}
	return c.plan, err
}
