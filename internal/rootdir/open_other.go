//go:build !linux

package rootdir

import (
	"errors"
	"fmt"
)

// HomeUsable always reports false: agentbox runs on Linux only.
func HomeUsable(home string, uid int) bool { return false }

// HomeOwned is false outside Linux.
func HomeOwned(home string, uid int) bool { return false }

// Open always fails: agentbox runs on Linux only.
func Open(c Choice, uid int) (*Root, error) {
	return nil, fmt.Errorf("rootdir: opening session root %s needs Linux: %w", c.Path, errors.ErrUnsupported)
}

// Close does nothing: Open never succeeds here.
func (r *Root) Close() error { return nil }
