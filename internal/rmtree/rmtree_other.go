//go:build !linux

package rmtree

import "errors"

// errUnsupported is returned everywhere but Linux: the removal depends on
// openat2, fchmodat2 with AT_EMPTY_PATH, O_PATH and linux_dirent64.
var errUnsupported = errors.New("descriptor-based removal is implemented only for Linux")

// RemoveAt is not implemented on this system.
func RemoveAt(dirfd int, name string) error {
	return &Error{Op: "rmtree", Path: name, Err: errUnsupported}
}

// RemoveContents is not implemented on this system.
func RemoveContents(dirfd int) error {
	return &Error{Op: "rmtree", Path: ".", Err: errUnsupported}
}

// Usage is not implemented on this system.
func Usage(dirfd int, name string) (bytes int64, entries int64, err error) {
	return 0, 0, &Error{Op: "rmtree", Path: name, Err: errUnsupported}
}
