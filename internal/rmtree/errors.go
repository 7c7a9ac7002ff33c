package rmtree

import "errors"

// ErrCrossDevice is wrapped by the *Error reported for a directory inside the
// tree that is a mount point or lives on another filesystem. Removal leaves
// that subtree in place: emptying it would delete files that are not part of
// the tree, and the final rmdir would fail with EBUSY anyway.
var ErrCrossDevice = errors.New("refusing to cross into another filesystem")

// Error reports the system call that failed, on which entry and why.
type Error struct {
	Op   string // the system call as the kernel names it: "unlinkat", "openat2", "fchmod", "getdents64"...
	Path string // relative to the starting dirfd, e.g. "tmp/a/b"; "." for that directory itself
	Err  error  // the errno, or ErrCrossDevice, possibly wrapped with detail
}

// Error formats the error as "OP PATH: ERR", e.g.
// "unlinkat tmp/a/b: permission denied".
func (e *Error) Error() string { return e.Op + " " + e.Path + ": " + e.Err.Error() }

// Unwrap returns Err, so that errors.Is sees the errno or ErrCrossDevice.
func (e *Error) Unwrap() error { return e.Err }
