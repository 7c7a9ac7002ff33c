//go:build linux

package rootdir

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"

	"golang.org/x/sys/unix"

	"github.com/agentbox/agentbox/internal/fserr"
)

// HomeUsable reports whether home can hold the default session root: it is
// non-empty, absolute, and (following symbolic links) a directory owned by
// uid that the calling process may write (access(2) W_OK, which checks the
// real uid: the wrapper is not setuid, so that is the caller).
//
// A failed check reads as "not usable". That is safe here only because the
// answer merely chooses the fallback, and Open verifies the fallback strictly.
func HomeUsable(home string, uid int) bool {
	return HomeOwned(home, uid) && unix.Access(home, unix.W_OK) == nil
}

// HomeOwned reports whether home is an absolute, clean path naming a
// directory owned by uid: one that policies may name paths relative to
// (~/.ssh to hide, a profile's ~/.config/agent to grant), writable or not.
// Inside a sandbox the home directory is on a read-only mount, and a nested
// session must still hide and grant what the enclosing one did.
func HomeOwned(home string, uid int) bool {
	if !plainAbs(home) {
		return false
	}
	var st unix.Stat_t
	if err := unix.Stat(home, &st); err != nil {
		return false
	}
	return st.Mode&unix.S_IFMT == unix.S_IFDIR && int(st.Uid) == uid
}

// Open creates the session root c.Path if it is missing, verifies it for
// uid, and returns it open.
//
// Every check is made on the object Open holds a descriptor to, and every
// step is relative to the descriptor of the step before, so a racing rename
// of a path component cannot make Open accept one object and use another:
//
//  1. Open the parent with O_PATH|O_DIRECTORY (symbolic links in the
//     ancestors are followed: they are the user's). With c.MakeParents,
//     missing ancestors are made from the deepest existing one down, each
//     mkdirat(fd, name, 0700) then openat(fd, name, O_NOFOLLOW) relative to
//     the one above.
//  2. fstat the parent: it must be owned by uid or root, and if group or
//     others can write it, it must have the sticky bit; otherwise another
//     user could rename the root away and put their own in its place.
//  3. mkdirat(parent, base, 0700); EEXIST is fine. mkdirat never follows a
//     symbolic link in the last component.
//  4. openat(parent, base, O_PATH|O_NOFOLLOW) and fstat that descriptor. An
//     O_PATH open does not open the object itself, so a FIFO cannot block
//     it, and with O_NOFOLLOW a symbolic link is opened as the link: fstat
//     then reports exactly what sits at the name, owner and mode included.
//  5. It must be a directory owned by uid with mode&077 == 0.
//  6. Reopen it as openat(pathfd, ".", O_RDONLY|O_DIRECTORY): "." of a
//     directory descriptor is that directory, now open for getdents and as a
//     dirfd for everything below it.
//
// The directories Open creates get their final mode in mkdirat itself.
// The kernel applies the umask to it, and a umask can only remove bits: group
// and other bits can never appear, but a umask with owner bits (0700, say)
// would leave a directory its owner cannot enter. Only in that case, and only
// on a directory Open has just created and verified as the caller's, Open
// sets 0700 through its descriptor (fchmodat(fd, "", AT_EMPTY_PATH), or
// chmod of /proc/self/fd/N before Linux 6.6). An existing root is never
// changed.
//
// A refusal writes nothing inside the refused object. Errors are
// *fserr.PathError; refusals because of owner, mode or kind wrap
// ErrUnsafeRoot.
func Open(c Choice, uid int) (*Root, error) {
	if !plainAbs(c.Path) || filepath.Clean(c.Path) != c.Path || c.Path == "/" {
		return nil, fmt.Errorf("rootdir: session root %q is not an absolute, clean path below /", c.Path)
	}
	parent, base := filepath.Dir(c.Path), filepath.Base(c.Path)

	pfd, err := openParent(c, uid)
	if err != nil {
		return nil, err
	}
	defer unix.Close(pfd)

	var pst unix.Stat_t
	if err := unix.Fstat(pfd, &pst); err != nil {
		return nil, &fserr.PathError{What: "parent directory", Path: parent, UID: uid,
			Err: os.NewSyscallError("fstat", err), Reason: "needed for the session root " + c.Path,
			Remedy: remedy(probOther, remedyArgs{Path: parent, Root: c.Path, UID: uid, Source: c.Source})}
	}
	pseen := fserr.SeenFromStat(&pst)
	if p, reason, ok := judgeParent(pseen, uid, c.Path); !ok {
		return nil, &fserr.PathError{What: "parent directory", Path: parent, UID: uid, Stat: pseen,
			Err: ErrUnsafeRoot, Reason: reason,
			Remedy: remedy(p, remedyArgs{Path: parent, Root: c.Path, UID: uid, Source: c.Source})}
	}

	created := false
	mkErr := unix.Mkdirat(pfd, base, 0o700)
	if mkErr == nil {
		created = true
	} else if mkErr == unix.EEXIST {
		mkErr = nil
	}
	// On any other mkdirat error, look anyway: a root that already exists
	// may be usable even where mkdirat cannot create (a read-only parent).

	fail := func(p problem, seen *fserr.Seen, err error, reason string) error {
		return &fserr.PathError{What: what, Path: c.Path, UID: uid, Stat: seen, Err: err, Reason: reason,
			Remedy: remedy(p, remedyArgs{Path: c.Path, UID: uid, Source: c.Source})}
	}

	pathfd, err := unix.Openat(pfd, base, unix.O_PATH|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		if mkErr != nil && err == unix.ENOENT {
			p := probOther
			if mkErr == unix.EACCES || mkErr == unix.EPERM {
				p = probCreateDenied
			}
			return nil, fail(p, nil, os.NewSyscallError("mkdirat", mkErr), "")
		}
		p := probOther
		if err == unix.ENOENT {
			p = probRaced
		}
		return nil, fail(p, nil, os.NewSyscallError("openat", err), "")
	}
	defer unix.Close(pathfd)

	var st unix.Stat_t
	if err := unix.Fstat(pathfd, &st); err != nil {
		return nil, fail(probOther, nil, os.NewSyscallError("fstat", err), "")
	}
	seen := fserr.SeenFromStat(&st)
	if p, reason, ok := judgeRoot(seen, uid); !ok {
		return nil, fail(p, seen, ErrUnsafeRoot, reason)
	}

	if created && st.Mode&0o700 != 0o700 {
		if err := chmodFD(pathfd, 0o700); err != nil {
			return nil, fail(probOther, seen, err, "cannot give the new directory mode 0700 (the umask removed owner bits)")
		}
		if err := unix.Fstat(pathfd, &st); err != nil {
			return nil, fail(probOther, nil, os.NewSyscallError("fstat", err), "")
		}
		seen = fserr.SeenFromStat(&st)
	}

	fd, err := unix.Openat(pathfd, ".", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		p := probOther
		if err == unix.EACCES {
			p = probOwnMode // the caller's own directory without owner read/search bits
		}
		return nil, fail(p, seen, os.NewSyscallError("openat", err), "")
	}
	return &Root{Path: c.Path, FD: fd, Dev: uint64(st.Dev), Ino: uint64(st.Ino), Source: c.Source, Created: created}, nil
}

// Close closes the root's descriptor. It may be called more than once.
func (r *Root) Close() error {
	if r == nil || r.FD < 0 {
		return nil
	}
	err := unix.Close(r.FD)
	r.FD = -1
	if err != nil {
		return os.NewSyscallError("close", err)
	}
	return nil
}

// openPathFlags open a directory to walk through, not to read.
const openPathFlags = unix.O_PATH | unix.O_DIRECTORY | unix.O_CLOEXEC

// openParent returns an O_PATH descriptor of filepath.Dir(c.Path), creating
// missing ancestors (0700) when c.MakeParents.
func openParent(c Choice, uid int) (int, error) {
	parent := filepath.Dir(c.Path)
	fd, err := unix.Open(parent, openPathFlags, 0)
	if err == nil {
		return fd, nil
	}
	if err != unix.ENOENT || !c.MakeParents {
		p := probOther
		if err == unix.ENOENT {
			p = probParentMissing
		}
		return -1, &fserr.PathError{What: "parent directory", Path: parent, UID: uid,
			Err: os.NewSyscallError("openat", err), Reason: "needed for the session root " + c.Path,
			Remedy: remedy(p, remedyArgs{Path: parent, Root: c.Path, UID: uid, Source: c.Source})}
	}

	// Find the deepest ancestor that exists. "/" always does.
	var missing []string // innermost first
	dir := parent
	for {
		missing = append(missing, filepath.Base(dir))
		dir = filepath.Dir(dir)
		fd, err = unix.Open(dir, openPathFlags, 0)
		if err == nil {
			break
		}
		if err != unix.ENOENT || dir == "/" {
			return -1, &fserr.PathError{What: "parent directory", Path: dir, UID: uid,
				Err: os.NewSyscallError("openat", err), Reason: "needed for the session root " + c.Path,
				Remedy: remedy(probOther, remedyArgs{Path: dir, Root: c.Path, UID: uid, Source: c.Source})}
		}
	}

	// Create the missing ones from the outside in, each relative to the
	// descriptor of the one above it.
	for i := len(missing) - 1; i >= 0; i-- {
		name := missing[i]
		p := filepath.Join(dir, name)
		fail := func(pr problem, seen *fserr.Seen, err error) error {
			unix.Close(fd)
			return &fserr.PathError{What: "parent directory", Path: p, UID: uid, Stat: seen, Err: err,
				Reason: "needed for the session root " + c.Path,
				Remedy: remedy(pr, remedyArgs{Path: p, Root: c.Path, UID: uid, Source: c.Source})}
		}
		flags := openPathFlags
		created := false
		switch err := unix.Mkdirat(fd, name, 0o700); err {
		case nil:
			// Ours: do not follow whatever may have replaced it since.
			created = true
			flags |= unix.O_NOFOLLOW
		case unix.EEXIST:
			// Made meanwhile by someone else (another agentbox of this
			// user, most likely): an ancestor like any other, followed.
		case unix.EACCES, unix.EPERM:
			return -1, fail(probCreateDenied, nil, os.NewSyscallError("mkdirat", err))
		default:
			return -1, fail(probOther, nil, os.NewSyscallError("mkdirat", err))
		}
		nfd, err := unix.Openat(fd, name, flags, 0)
		if err != nil {
			return -1, fail(probRaced, nil, os.NewSyscallError("openat", err))
		}
		unix.Close(fd)
		fd, dir = nfd, p
		if !created {
			continue
		}
		var st unix.Stat_t
		if err := unix.Fstat(fd, &st); err != nil {
			return -1, fail(probOther, nil, os.NewSyscallError("fstat", err))
		}
		seen := fserr.SeenFromStat(&st)
		if pr, reason, ok := judgeRoot(seen, uid); !ok {
			unix.Close(fd)
			return -1, &fserr.PathError{What: "parent directory", Path: p, UID: uid, Stat: seen,
				Err: ErrUnsafeRoot, Reason: reason + " (agentbox had just created it)",
				Remedy: remedy(pr, remedyArgs{Path: p, Root: c.Path, UID: uid, Source: c.Source})}
		}
		if st.Mode&0o700 != 0o700 {
			if err := chmodFD(fd, 0o700); err != nil {
				return -1, fail(probOther, seen, err)
			}
		}
	}
	return fd, nil
}

// chmodFD sets the mode of the object fd (which may be an O_PATH
// descriptor) refers to, without a path lookup: fchmodat(fd, "",
// AT_EMPTY_PATH) needs Linux 6.6 (fchmodat2); before it, chmod of the
// /proc/self/fd magic link reaches the same object.
func chmodFD(fd int, mode uint32) error {
	err := unix.Fchmodat(fd, "", mode, unix.AT_EMPTY_PATH)
	if err == nil {
		return nil
	}
	if !errors.Is(err, unix.ENOSYS) && !errors.Is(err, unix.EOPNOTSUPP) && !errors.Is(err, unix.EINVAL) {
		return os.NewSyscallError("fchmodat2", err)
	}
	if err := unix.Chmod("/proc/self/fd/"+strconv.Itoa(fd), mode); err != nil {
		return os.NewSyscallError("fchmodat", err)
	}
	return nil
}
