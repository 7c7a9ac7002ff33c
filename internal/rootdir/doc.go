// Package rootdir chooses, creates and verifies the session root: the
// per-user directory under which agentbox keeps one directory per session.
//
// It is two steps. Select is pure: from the flag, the environment and whether
// the home directory is usable, it picks a path and says where it came from:
//
//	--root DIR, else AGENTBOX_ROOT, else $XDG_STATE_HOME/agentbox (absolute
//	values only, as the XDG spec says), else ~/.local/state/agentbox when
//	the home is usable, else /tmp/agentbox-<uid>.
//
// Open then makes the directory if it is missing (each component with mode
// 0700 in the mkdirat call itself) and verifies what it opened, through the
// descriptor it will keep, not through a path checked earlier: a real
// directory (not a symbolic link, FIFO or file), owned by the caller, with no
// group or other permission bits, inside a parent that no other user can
// rename it out of. It refuses anything else with a *fserr.PathError that
// names the path, the owner and mode seen, the caller's uid and a remedy,
// and that wraps ErrUnsafeRoot (which is fserr.ErrUnsafe itself) when the
// refusal is about owner, mode or kind. A refusal writes nothing inside the
// refused object.
//
// Everything below the root should then be reached relative to Root.FD
// (openat, mkdirat, unlinkat), never by joining Root.Path with a name: the
// path may have been swapped since Open checked it, the descriptor cannot.
//
// It is not for the session directories themselves, their state machine or
// their removal, and it never grants the sandbox access to the root.
//
// Use (in the wrapper, which has already set umask 077):
//
//	c, err := rootdir.Select(rootdir.Inputs{
//		Flag: flagRoot, EnvRoot: os.Getenv("AGENTBOX_ROOT"),
//		XDGStateHome: os.Getenv("XDG_STATE_HOME"), Home: home,
//		HomeUsable: rootdir.HomeUsable(home, uid), UID: uid, TempDir: "/tmp",
//	})
//	if err != nil {
//		return err // exit 125
//	}
//	root, err := rootdir.Open(c, uid)
//	if err != nil {
//		return err // exit 125; errors.Is(err, rootdir.ErrUnsafeRoot) for a refusal
//	}
//	defer root.Close()
package rootdir
