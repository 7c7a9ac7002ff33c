//go:build linux

package profile

import (
	"errors"
	"fmt"
	"io"
	"os"

	"golang.org/x/sys/unix"

	"github.com/agentbox/agentbox/internal/fserr"
)

// readTrusted reads the profile or config file at path (what says which, for
// messages). It returns an error wrapping fs.ErrNotExist when there is no
// such file.
//
// A profile widens what the sandbox may do, so it must be the user's own
// word: the file (after following symbolic links, which dotfile managers
// use) must be a regular file owned by the caller or root, not writable by
// others, and writable by its group only when that group is the caller's own
// primary group (distributions with user private groups create files 0664).
// Anyone else who could write it could grant the agent anything.
//
// O_NONBLOCK keeps a FIFO planted at the path from blocking the open; the
// checks use fstat on the descriptor that is then read, never an earlier
// stat of the name.
func readTrusted(what, path string) ([]byte, error) {
	uid, gid := os.Getuid(), os.Getgid()
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, &fserr.PathError{What: what, Path: path, UID: uid, Err: os.NewSyscallError("open", err)}
	}
	f := os.NewFile(uintptr(fd), path)
	defer f.Close()
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return nil, &fserr.PathError{What: what, Path: path, UID: uid, Err: os.NewSyscallError("fstat", err)}
	}
	seen := fserr.SeenFromStat(&st)
	refuse := func(reason, remedy string) error {
		return &fserr.PathError{What: what, Path: path, UID: uid, Stat: seen, Err: fserr.ErrUnsafe, Reason: reason, Remedy: remedy}
	}
	switch {
	case st.Mode&unix.S_IFMT != unix.S_IFREG:
		return nil, refuse("not a regular file", "replace it with a regular file")
	case int(st.Uid) != uid && st.Uid != 0:
		return nil, refuse("refusing a file another user controls: it could grant the sandbox anything",
			fmt.Sprintf("copy it to a file you own (cp %s %s.new && mv %s.new %s)", path, path, path, path))
	case st.Mode&0o002 != 0:
		return nil, refuse("refusing a file every user can write: it could grant the sandbox anything",
			"chmod o-w "+path)
	case st.Mode&0o020 != 0 && int(st.Gid) != gid:
		return nil, refuse(fmt.Sprintf("refusing a file group %d can write: it could grant the sandbox anything", st.Gid),
			"chmod g-w "+path)
	}
	data, err := io.ReadAll(io.LimitReader(f, maxFileSize+1))
	if err != nil {
		return nil, &fserr.PathError{What: what, Path: path, UID: uid, Err: err}
	}
	if len(data) > maxFileSize {
		return nil, &fserr.PathError{What: what, Path: path, UID: -1, Stat: seen,
			Err: errors.New("larger than 1 MiB"), Remedy: "a profile lists paths; check that this is the file you meant"}
	}
	return data, nil
}
