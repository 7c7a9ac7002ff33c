package fserr

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"syscall"
	"testing"
)

func TestPathErrorString(t *testing.T) {
	tests := []struct {
		name string
		err  *PathError
		want string
	}{
		{
			name: "another user's directory",
			err: &PathError{What: "session root", Path: "/tmp/agentbox-1000", UID: 1000,
				Stat:   &Seen{Kind: "directory", Owner: 1002, Mode: 0o777},
				Reason: "refusing a directory another user controls", Remedy: "remove it or pass --root DIR",
				Err: ErrUnsafe},
			want: "session root /tmp/agentbox-1000: a directory owned by uid 1002, mode 0777 (you are uid 1000): refusing a directory another user controls; remove it or pass --root DIR",
		},
		{
			name: "symbolic link",
			err: &PathError{What: "session root", Path: "/tmp/agentbox-1000", UID: 1000,
				Stat:   &Seen{Kind: "symbolic link", Owner: 1002, Mode: 0o777},
				Reason: "refusing a symbolic link", Remedy: "remove it or pass --root DIR", Err: ErrUnsafe},
			want: "session root /tmp/agentbox-1000: a symbolic link owned by uid 1002, mode 0777 (you are uid 1000): refusing a symbolic link; remove it or pass --root DIR",
		},
		{
			name: "errno, nothing seen",
			err: &PathError{What: "session root", Path: "/home/a/.local/state/agentbox", UID: 1000,
				Err: os.NewSyscallError("mkdirat", syscall.EACCES), Remedy: "make the parent writable or pass --root DIR"},
			want: "session root /home/a/.local/state/agentbox: mkdirat: permission denied (you are uid 1000); make the parent writable or pass --root DIR",
		},
		{
			name: "seen and errno",
			err: &PathError{What: "session root", Path: "/r", UID: 1000,
				Stat: &Seen{Kind: "directory", Owner: 0, Mode: 0o700},
				Err:  os.NewSyscallError("openat", syscall.EACCES), Reason: "cannot open it", Remedy: "pass --root DIR"},
			want: "session root /r: a directory owned by uid 0, mode 0700: openat: permission denied (you are uid 1000): cannot open it; pass --root DIR",
		},
		{
			name: "sticky and setuid bits are printed",
			err: &PathError{What: "parent directory", Path: "/tmp", UID: 0,
				Stat: &Seen{Kind: "directory", Owner: 0, Mode: 0o1777}},
			want: "parent directory /tmp: a directory owned by uid 0, mode 1777 (you are uid 0)",
		},
		{
			name: "article before a vowel",
			err:  &PathError{Path: "/x", UID: -1, Stat: &Seen{Kind: "unknown type", Owner: 5, Mode: 0o4755}},
			want: "/x: an unknown type owned by uid 5, mode 4755",
		},
		{
			name: "wrapped sentinel is printed",
			err:  &PathError{What: "state file", Path: "/s", UID: 7, Err: fmt.Errorf("%w: extra", ErrUnsafe)},
			want: "state file /s: unsafe path: extra (you are uid 7)",
		},
		{
			name: "reason without seen or errno",
			err:  &PathError{What: "session root", Path: "rel", UID: 1000, Reason: "--root is not an absolute path", Remedy: "pass an absolute path"},
			want: "session root rel (you are uid 1000): --root is not an absolute path; pass an absolute path",
		},
		{
			name: "path only",
			err:  &PathError{Path: "/p", UID: -1},
			want: "/p",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.err.Error(); got != tt.want {
				t.Errorf("Error() = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestPathErrorUnwrap(t *testing.T) {
	tests := []struct {
		name       string
		err        error
		unsafe     bool
		target     error
		wantTarget bool
	}{
		{"sentinel", &PathError{Path: "/p", Err: ErrUnsafe}, true, nil, false},
		{"wrapped sentinel", &PathError{Path: "/p", Err: fmt.Errorf("x: %w", ErrUnsafe)}, true, nil, false},
		{"errno", &PathError{Path: "/p", Err: os.NewSyscallError("mkdirat", syscall.EACCES)}, false, syscall.EACCES, true},
		{"errno is fs.ErrPermission", &PathError{Path: "/p", Err: os.NewSyscallError("mkdirat", syscall.EACCES)}, false, fs.ErrPermission, true},
		{"nil", &PathError{Path: "/p"}, false, syscall.EACCES, false},
		{"wrapped PathError", fmt.Errorf("ctx: %w", &PathError{Path: "/p", Err: ErrUnsafe}), true, nil, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := errors.Is(tt.err, ErrUnsafe); got != tt.unsafe {
				t.Errorf("errors.Is(%v, ErrUnsafe) = %v, want %v", tt.err, got, tt.unsafe)
			}
			if tt.target != nil {
				if got := errors.Is(tt.err, tt.target); got != tt.wantTarget {
					t.Errorf("errors.Is(%v, %v) = %v, want %v", tt.err, tt.target, got, tt.wantTarget)
				}
			}
			var pe *PathError
			if !errors.As(tt.err, &pe) {
				t.Errorf("errors.As(%v, *PathError) = false, want true", tt.err)
			}
		})
	}
}

func TestKind(t *testing.T) {
	tests := []struct {
		mode uint32
		want string
	}{
		{0o040000 | 0o755, "directory"},
		{0o120000 | 0o777, "symbolic link"},
		{0o100000 | 0o644, "regular file"},
		{0o010000 | 0o600, "FIFO"},
		{0o140000 | 0o755, "socket"},
		{0o020000 | 0o666, "character device"},
		{0o060000 | 0o660, "block device"},
		{0o755, "unknown type"},
	}
	for _, tt := range tests {
		if got := Kind(tt.mode); got != tt.want {
			t.Errorf("Kind(%#o) = %q, want %q", tt.mode, got, tt.want)
		}
	}
}
