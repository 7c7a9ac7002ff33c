//go:build linux

package rmtree

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"unsafe"

	"golang.org/x/sys/unix"
)

const (
	// maxOpenDirs caps the directory descriptors one walk holds. Deeper
	// than that, the descriptor of the shallowest open ancestor is closed
	// and later reopened through ".." of its child, so depth costs memory
	// (one small frame per level), never descriptors (RLIMIT_NOFILE is
	// often 1024, and the caller has its own).
	maxOpenDirs = 64

	// direntBufSize is the getdents64 buffer of one open directory: about
	// a thousand short names per system call. Only open frames hold one.
	direntBufSize = 32 << 10

	// maxPasses is how many times one directory is listed at most: the
	// first pass, and one rescan when rmdir says ENOTEMPTY (entries were
	// created while it was being emptied).
	maxPasses = 2
)

// linux_dirent64: d_ino u64, d_off s64, d_reclen u16, d_type u8, d_name
// NUL-terminated and padded to d_reclen.
const (
	direntReclen = 16
	direntType   = 18
	direntName   = 19
)

var (
	errTreeChanged = errors.New("the tree changed under us")
	errBadDirent   = errors.New("malformed linux_dirent64 record")
)

var bufPool = sync.Pool{New: func() any { b := make([]byte, direntBufSize); return &b }}

// openat2State caches whether openat2 works here: 0 not known yet, 1 yes,
// 2 no (kernel before 5.6, or a seccomp filter that answers ENOSYS or EPERM).
var openat2State atomic.Int32

// options tunes a walk; the exported functions use the zero value. Tests
// lower maxOpen to force the close-and-reopen path, turn openat2 off to
// exercise the st_dev check alone, and hook in to change the tree mid-walk.
type options struct {
	maxOpen      int               // directory descriptor cap; maxOpenDirs when 0
	noOpenat2    bool              // use openat even where openat2 works
	beforeEntry  func(path string) // called before each listed entry is handled
	beforeReopen func(path string) // called before a closed ancestor is reopened through ".."
	beforeRmdir  func(path string) // called before a directory emptied is removed
	peak         *int              // receives the most directory descriptors held at once
}

// frame is one directory on the walk's stack.
type frame struct {
	fd         int    // -1 while closed to stay under the descriptor cap
	name       string // entry name in the parent; "" for RemoveContents' own directory
	dev, ino   uint64 // identity when entered, checked when reopened through ".."
	buf        *[]byte
	pending    []byte // dirents read but not handled yet
	eof        bool
	pos        int64 // directory offset saved when fd was closed; -1 if unknown
	passes     int
	incomplete bool                // something below is left in place: do not rmdir
	skip       map[string]struct{} // children left in place, never visited again
}

// walker is the state of one RemoveAt, RemoveContents or Usage call. Open
// frames are always frames[low:], closed ones frames[:low].
type walker struct {
	options
	base    int    // the caller's dirfd: parent of frames[0] in RemoveAt and Usage
	dev     uint64 // st_dev of base: the only device the walk acts on
	openat2 bool
	frames  []frame
	low     int
	open    int // frame descriptors held, plus transient ones
	err     error
}

func newWalker(dirfd int, o options) (*walker, error) {
	var st unix.Stat_t
	if err := unix.Fstat(dirfd, &st); err != nil {
		return nil, &Error{Op: "fstat", Path: ".", Err: err}
	}
	if o.maxOpen == 0 {
		o.maxOpen = maxOpenDirs
	}
	// A frame is closed only when a deeper one is open, and the top two
	// are always needed (the directory being listed and its parent for
	// rmdir), so fewer than two would thrash.
	o.maxOpen = max(o.maxOpen, 2)
	return &walker{options: o, base: dirfd, dev: st.Dev, openat2: !o.noOpenat2 && haveOpenat2(dirfd)}, nil
}

// haveOpenat2 reports whether openat2 can be used. The probe opens "." of
// dirfd with O_PATH, which no permission check refuses, so ENOSYS or EPERM
// can only come from an old kernel or a seccomp filter.
func haveOpenat2(dirfd int) bool {
	switch openat2State.Load() {
	case 1:
		return true
	case 2:
		return false
	}
	fd, err := unix.Openat2(dirfd, ".", &unix.OpenHow{Flags: unix.O_PATH | unix.O_CLOEXEC, Resolve: unix.RESOLVE_NO_XDEV})
	switch err {
	case nil:
		unix.Close(fd)
		openat2State.Store(1)
		return true
	case unix.ENOSYS, unix.EPERM:
		openat2State.Store(2)
	}
	return false
}

// RemoveAt removes the entry name inside the directory open at dirfd,
// recursively when it is a directory. A missing entry is not an error. It
// never follows a symbolic link (a link is unlinked, its target untouched),
// never descends into a directory whose st_dev differs from dirfd's (that
// yields an *Error wrapping ErrCrossDevice and that subtree is left in
// place), and makes directories it must enter or empty usable again (mode
// 000 or 500 set by the tree's author) by changing the mode through the
// descriptor it opened, never through a path.
//
// Where openat2 exists (Linux >= 5.6) a mount point of the same filesystem
// (a bind mount, same st_dev) is refused the same way, by RESOLVE_NO_XDEV.
// name must be a single path component. dirfd itself must let the caller
// remove entries (its mode is never changed). Every failure is an *Error;
// after one, the walk goes on with the siblings and returns the first.
func RemoveAt(dirfd int, name string) error { return removeAt(dirfd, name, options{}) }

// RemoveContents removes everything inside the directory open at dirfd,
// keeping the directory itself. When that directory lacks read, write or
// search permission for its owner, they are added, through a descriptor.
func RemoveContents(dirfd int) error { return removeContents(dirfd, options{}) }

// Usage returns the bytes (st_blocks*512) and the number of entries of the
// tree at name inside dirfd, without following links or crossing devices
// (entries on other devices are not counted). Unreadable directories are
// counted as far as they can be read without changing anything; no mode
// changes.
//
// entries counts name itself and every entry below it, each hard link once;
// bytes counts each inode once. A missing name is an error here (there is
// nothing to measure); an entry that vanishes during the walk is not. On an
// error the counts are those gathered so far.
func Usage(dirfd int, name string) (bytes int64, entries int64, err error) {
	return usage(dirfd, name, options{})
}

func checkName(name string) error {
	if name == "" || name == "." || name == ".." || strings.IndexByte(name, '/') >= 0 || strings.IndexByte(name, 0) >= 0 {
		// unlinkat would follow symbolic links in the leading components
		// of a longer path: only the last one is covered by O_NOFOLLOW.
		return &Error{Op: "unlinkat", Path: name, Err: fmt.Errorf("%w: want one path component, not \"\", \".\", \"..\" or a name with \"/\"", unix.EINVAL)}
	}
	return nil
}

func removeAt(dirfd int, name string, o options) error {
	if err := checkName(name); err != nil {
		return err
	}
	w, err := newWalker(dirfd, o)
	if err != nil {
		return err
	}
	defer w.closeAll()
	w.enter(-1, name)
	w.remove(false)
	return w.err
}

func removeContents(dirfd int, o options) error {
	w, err := newWalker(dirfd, o)
	if err != nil {
		return err
	}
	defer w.closeAll()
	// A descriptor of our own: the caller's may be O_PATH (no getdents64),
	// and its file offset and flock are left alone.
	fd, err := unix.Openat(dirfd, ".", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	op := "openat"
	if err == unix.EACCES {
		// Mode 000 (or 300) on the directory itself: no read permission to
		// open it for listing.
		var st unix.Stat_t
		if err = unix.Fstat(dirfd, &st); err != nil {
			return &Error{Op: "fstat", Path: ".", Err: err}
		}
		if op, err = chmodFD(dirfd, st.Mode&0o7777|0o700); err != nil {
			return &Error{Op: op, Path: ".", Err: explainStat(&st, err)}
		}
		fd, err = unix.Openat(dirfd, ".", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	}
	if err != nil {
		return &Error{Op: op, Path: ".", Err: err}
	}
	w.fdOpened()
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		w.closeFD(fd)
		return &Error{Op: "fstat", Path: ".", Err: err}
	}
	if err := fixMode(fd, &st); err != nil && err != unix.EPERM {
		w.closeFD(fd)
		return &Error{Op: "fchmod", Path: ".", Err: err}
	}
	w.push(frame{fd: fd, dev: st.Dev, ino: st.Ino, pos: -1})
	w.remove(true)
	return w.err
}

// remove empties the directories on the stack depth first, removing each
// once it is empty. keepRoot leaves frames[0] (RemoveContents' own
// directory) in place.
func (w *walker) remove(keepRoot bool) {
	for len(w.frames) > 0 {
		i := len(w.frames) - 1
		f := &w.frames[i]
		name, typ, err := w.next(f)
		if err != nil {
			w.fail(&Error{Op: "getdents64", Path: w.path(i, ""), Err: err})
			f.incomplete, f.eof, f.pending = true, true, nil
		}
		if name == nil {
			if !w.finishRemove(keepRoot) {
				return
			}
			continue
		}
		if w.beforeEntry != nil {
			w.beforeEntry(w.path(i, string(name)))
		}
		if typ != unix.DT_DIR && typ != unix.DT_UNKNOWN {
			// One system call per file: d_type says it is not a
			// directory; if it lied, unlinkat says EISDIR.
			err := unlinkatZ(f.fd, name, 0)
			if err == nil || err == unix.ENOENT {
				continue
			}
			if err != unix.EISDIR {
				w.failEntry(i, string(name), "unlinkat", explain(f.fd, string(name), err))
				continue
			}
		}
		w.enter(i, string(name))
	}
}

// enter opens the directory name inside frame pi (the caller's dirfd when
// pi < 0) and pushes it; an entry that turns out not to be a directory is
// unlinked instead.
func (w *walker) enter(pi int, name string) {
	parent := w.fdOf(pi)
	fd, op, err := w.openDir(parent, name, unix.O_RDONLY)
	if err == unix.EACCES {
		// Mode 000 or 300: no read permission on the directory.
		fd, op, err = w.openChmod(parent, name)
	}
	switch err {
	case nil:
	case unix.ENOENT:
		return
	case unix.ENOTDIR, unix.ELOOP:
		// O_DIRECTORY|O_NOFOLLOW refused it: a file, or a symbolic link
		// (to a directory or not). Unlink the entry itself; a link's
		// target is never reached.
		if err := unix.Unlinkat(parent, name, 0); err != nil && err != unix.ENOENT {
			w.failEntry(pi, name, "unlinkat", explain(parent, name, err))
		}
		return
	case unix.EXDEV:
		// openat2 RESOLVE_NO_XDEV: a mount point, even a bind mount of the
		// same filesystem, which st_dev cannot tell apart.
		w.failEntry(pi, name, op, fmt.Errorf("%w: a mount point (%w); unmount it, then remove again", ErrCrossDevice, unix.EXDEV))
		return
	default:
		w.failEntry(pi, name, op, err)
		return
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		w.closeFD(fd)
		w.failEntry(pi, name, "fstat", err)
		return
	}
	if st.Dev != w.dev {
		// Emptying it would delete another filesystem's files, and the
		// rmdir of the mount point would fail with EBUSY anyway.
		w.closeFD(fd)
		w.failEntry(pi, name, "fstat", w.crossDev(st.Dev))
		return
	}
	if err := fixMode(fd, &st); err != nil && err != unix.EPERM {
		w.closeFD(fd)
		w.failEntry(pi, name, "fchmod", err)
		return
	}
	w.push(frame{fd: fd, name: name, dev: st.Dev, ino: st.Ino, pos: -1})
}

// fixMode gives the owner rwx on the directory open at fd: unlinkat inside
// a directory needs write and search permission on it (mode 500 lists but
// cannot be emptied), getdents64 needs read. fchmod is allowed to the owner
// (or CAP_FOWNER) whatever the mode. EPERM (another user's directory) is
// not a failure for the caller: its group or other bits may still let us
// empty it, and if they do not, unlinkat says so about the entry.
func fixMode(fd int, st *unix.Stat_t) error {
	if st.Mode&0o700 == 0o700 {
		return nil
	}
	return unix.Fchmod(fd, st.Mode&0o7777|0o700)
}

// openChmod opens for listing a directory that refused O_RDONLY: it opens
// it O_PATH (which needs no permission on the directory itself), checks its
// device, adds owner rwx through that descriptor and reopens it through ".".
func (w *walker) openChmod(parent int, name string) (int, string, error) {
	pfd, op, err := w.openDir(parent, name, unix.O_PATH)
	if err != nil {
		return -1, op, err
	}
	defer w.closeFD(pfd)
	var st unix.Stat_t
	if err := unix.Fstat(pfd, &st); err != nil {
		return -1, "fstat", err
	}
	if st.Dev != w.dev {
		// Checked before the chmod: another filesystem's mode is not ours
		// to change.
		return -1, "fstat", w.crossDev(st.Dev)
	}
	if op, err := chmodFD(pfd, st.Mode&0o7777|0o700); err != nil {
		return -1, op, explainStat(&st, err)
	}
	fd, err := unix.Openat(pfd, ".", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err == nil {
		w.fdOpened()
	}
	return fd, "openat", err
}

// chmodFD changes the mode of the directory open at fd, which may be an
// O_PATH descriptor: fchmod refuses those (EBADF), fchmodat2 with
// AT_EMPTY_PATH accepts them since Linux 6.6. Before that, chmod of the
// /proc/self/fd magic link reaches the very inode the descriptor holds,
// whatever happened to its name.
func chmodFD(fd int, mode uint32) (op string, err error) {
	err = unix.Fchmodat(fd, "", mode, unix.AT_EMPTY_PATH)
	switch err {
	case unix.ENOSYS, unix.EOPNOTSUPP, unix.EINVAL:
	default:
		return "fchmodat2", err
	}
	if err := unix.Chmod(fmt.Sprintf("/proc/self/fd/%d", fd), mode); err != nil {
		if err == unix.ENOENT {
			// Not "vanished": there is no /proc to go through.
			return "fchmodat", fmt.Errorf("%w: /proc/self/fd is missing and fchmodat2 (Linux 6.6) is not available; mount /proc", err)
		}
		return "fchmodat", err
	}
	return "fchmodat", nil
}

// finishRemove handles the top frame once its listing is exhausted: rmdir,
// or a rescan when entries appeared meanwhile, then pop. It returns false
// when the walk must stop.
func (w *walker) finishRemove(keepRoot bool) bool {
	i := len(w.frames) - 1
	if i > 0 && w.frames[i-1].fd < 0 && !w.reopen(i-1) {
		return false
	}
	f := &w.frames[i]
	if !f.incomplete {
		if i == 0 && keepRoot {
			// No rmdir to say ENOTEMPTY for the directory that stays:
			// list it once more to catch entries created meanwhile.
			if f.passes+1 < maxPasses {
				w.rescan(i)
				return true
			}
		} else {
			if w.beforeRmdir != nil {
				w.beforeRmdir(w.path(i, ""))
			}
			err := unix.Unlinkat(w.fdOf(i-1), f.name, unix.AT_REMOVEDIR)
			switch {
			case err == unix.ENOTEMPTY && f.passes+1 < maxPasses:
				// Entries were created after they were listed.
				w.rescan(i)
				return true
			case err == nil, err == unix.ENOENT:
			default:
				w.failEntry(i-1, f.name, "unlinkat", explain(w.fdOf(i-1), f.name, err))
			}
		}
	}
	w.pop()
	return true
}

func (w *walker) rescan(i int) {
	f := &w.frames[i]
	f.passes++
	f.pending, f.eof = nil, false
	if _, err := unix.Seek(f.fd, 0, io.SeekStart); err != nil {
		w.fail(&Error{Op: "lseek", Path: w.path(i, ""), Err: err})
		f.incomplete, f.eof = true, true
	}
}

// usage walks the tree like remove, but top-down, changing nothing.
func usage(dirfd int, name string, o options) (int64, int64, error) {
	if err := checkName(name); err != nil {
		return 0, 0, err
	}
	w, err := newWalker(dirfd, o)
	if err != nil {
		return 0, 0, err
	}
	defer w.closeAll()
	c := counter{w: w}
	c.entry(-1, name, unix.DT_UNKNOWN)
	for len(w.frames) > 0 {
		i := len(w.frames) - 1
		f := &w.frames[i]
		name, typ, err := w.next(f)
		if err != nil {
			w.fail(&Error{Op: "getdents64", Path: w.path(i, ""), Err: err})
			f.eof, f.pending = true, nil
		}
		if name == nil {
			if i > 0 && w.frames[i-1].fd < 0 && !w.reopen(i-1) {
				break
			}
			w.pop()
			continue
		}
		if w.beforeEntry != nil {
			w.beforeEntry(w.path(i, string(name)))
		}
		c.entry(i, string(name), typ)
	}
	return c.bytes, c.entries, w.err
}

type counter struct {
	w              *walker
	bytes, entries int64
	seen           map[[2]uint64]struct{} // (dev, ino) of inodes with several links already counted
}

// entry counts the entry name of frame pi (the caller's dirfd when pi < 0)
// and pushes it when it is a directory that can be listed.
func (c *counter) entry(pi int, name string, typ uint8) {
	w := c.w
	parent := w.fdOf(pi)
	if typ == unix.DT_DIR || typ == unix.DT_UNKNOWN {
		fd, op, err := w.openDir(parent, name, unix.O_RDONLY)
		switch err {
		case nil:
			var st unix.Stat_t
			if err := unix.Fstat(fd, &st); err != nil {
				w.closeFD(fd)
				w.fail(&Error{Op: "fstat", Path: w.path(pi, name), Err: err})
				return
			}
			if st.Dev != w.dev {
				w.closeFD(fd)
				return
			}
			c.add(&st)
			w.push(frame{fd: fd, name: name, dev: st.Dev, ino: st.Ino, pos: -1})
			return
		case unix.EXDEV:
			// A mount point (openat2 RESOLVE_NO_XDEV): another
			// filesystem's root, not counted.
			return
		case unix.ENOENT:
			if pi < 0 {
				w.fail(&Error{Op: op, Path: name, Err: err})
			}
			return
		case unix.ENOTDIR, unix.ELOOP, unix.EACCES:
			// Not a directory, or one we may not list (mode 000 or 300):
			// counted from its parent, not entered, its mode left alone.
		default:
			w.fail(&Error{Op: op, Path: w.path(pi, name), Err: err})
			return
		}
	}
	var st unix.Stat_t
	err := unix.Fstatat(parent, name, &st, unix.AT_SYMLINK_NOFOLLOW)
	switch {
	case err == nil:
		if st.Dev == w.dev {
			c.add(&st)
		}
	case err == unix.EACCES && pi >= 0:
		// Listed by a parent we may read but not search (mode 400): the
		// name is known, its size is not.
		c.entries++
	case err == unix.ENOENT && pi >= 0:
	default:
		w.fail(&Error{Op: "newfstatat", Path: w.path(pi, name), Err: err})
	}
}

func (c *counter) add(st *unix.Stat_t) {
	c.entries++
	if st.Nlink > 1 && st.Mode&unix.S_IFMT != unix.S_IFDIR {
		k := [2]uint64{st.Dev, st.Ino}
		if _, ok := c.seen[k]; ok {
			return
		}
		if c.seen == nil {
			c.seen = make(map[[2]uint64]struct{})
		}
		c.seen[k] = struct{}{}
	}
	c.bytes += st.Blocks * 512
}

// openDir opens the directory name in parent without following a symbolic
// link there (ELOOP) and, with openat2, without crossing a mount point
// (EXDEV). It returns the system call's name for errors. Like every
// descriptor the walk opens, a new one is counted against the cap.
func (w *walker) openDir(parent int, name string, flags int) (int, string, error) {
	flags |= unix.O_DIRECTORY | unix.O_NOFOLLOW | unix.O_CLOEXEC
	fd, op, err := 0, "openat", error(nil)
	if w.openat2 {
		op = "openat2"
		fd, err = unix.Openat2(parent, name, &unix.OpenHow{Flags: uint64(flags), Resolve: unix.RESOLVE_NO_XDEV})
	} else {
		fd, err = unix.Openat(parent, name, flags, 0)
	}
	if err == nil {
		w.fdOpened()
	}
	return fd, op, err
}

// next returns the next entry of f other than "." and "..", and other than
// the children left in place. name aliases f's buffer, is followed there by
// its NUL, and is valid until the next call. At the end of the directory it
// returns a nil name.
func (w *walker) next(f *frame) (name []byte, typ uint8, err error) {
	for {
		for len(f.pending) > 0 {
			b := f.pending
			if len(b) < direntName+1 {
				return nil, 0, errBadDirent
			}
			reclen := int(binary.NativeEndian.Uint16(b[direntReclen:]))
			if reclen < direntName+1 || reclen > len(b) {
				return nil, 0, errBadDirent
			}
			n := bytes.IndexByte(b[direntName:reclen], 0)
			if n <= 0 {
				return nil, 0, errBadDirent
			}
			f.pending = b[reclen:]
			name = b[direntName : direntName+n]
			if (n == 1 && name[0] == '.') || (n == 2 && name[0] == '.' && name[1] == '.') {
				continue
			}
			if f.skip != nil {
				if _, ok := f.skip[string(name)]; ok {
					continue
				}
			}
			return name, b[direntType], nil
		}
		if f.eof {
			return nil, 0, nil
		}
		if f.buf == nil {
			f.buf = bufPool.Get().(*[]byte)
		}
		n, err := unix.Getdents(f.fd, *f.buf)
		if err == unix.ENOENT {
			// iterate_dir refuses a directory that was removed meanwhile
			// (IS_DEADDIR): nothing is left in it.
			err, n = nil, 0
		}
		if err != nil {
			return nil, 0, err
		}
		if n == 0 {
			f.eof = true
			return nil, 0, nil
		}
		f.pending = (*f.buf)[:n]
	}
}

// unlinkatZ is unlinkat(2) for a name that a dirent buffer already holds
// NUL-terminated: it spares the copy and allocation per file.
func unlinkatZ(dirfd int, name []byte, flags int) error {
	_, _, e := unix.Syscall(unix.SYS_UNLINKAT, uintptr(dirfd), uintptr(unsafe.Pointer(&name[0])), uintptr(flags))
	if e != 0 {
		return e
	}
	return nil
}

// push makes f the top of the stack; its descriptor is already counted.
// Past the cap, the shallowest open frame gives its descriptor up.
func (w *walker) push(f frame) {
	w.frames = append(w.frames, f)
	if w.open > w.maxOpen {
		w.closeLowest()
	}
}

// closeLowest closes the shallowest open frame, keeping what reopen needs:
// the directory offset (a getdents64 cookie that lseek accepts on a new
// open file description) and the entries already read, copied out of the
// pooled buffer.
func (w *walker) closeLowest() {
	f := &w.frames[w.low]
	f.pos = -1
	if pos, err := unix.Seek(f.fd, 0, io.SeekCurrent); err == nil {
		f.pos = pos
	}
	if len(f.pending) > 0 {
		f.pending = bytes.Clone(f.pending)
	}
	w.release(f)
	w.closeFD(f.fd)
	f.fd = -1
	w.low++
}

// reopen reopens the closed frame idx through ".." of its open child and
// checks it is still the directory entered: if the child was moved
// meanwhile, ".." is another directory, and the walk stops rather than
// empty it.
func (w *walker) reopen(idx int) bool {
	f, child := &w.frames[idx], &w.frames[idx+1]
	if w.beforeReopen != nil {
		w.beforeReopen(w.path(idx, ""))
	}
	fd, err := unix.Openat(child.fd, "..", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		w.fail(&Error{Op: "openat", Path: w.path(idx+1, ".."), Err: err})
		return false
	}
	w.fdOpened()
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		w.closeFD(fd)
		w.fail(&Error{Op: "fstat", Path: w.path(idx+1, ".."), Err: err})
		return false
	}
	if st.Dev != f.dev || st.Ino != f.ino {
		w.closeFD(fd)
		w.fail(&Error{Op: "openat", Path: w.path(idx+1, ".."), Err: fmt.Errorf(
			"%w: it is inode %d on device %d:%d, %s was inode %d on device %d:%d; stopped without removing more",
			errTreeChanged, st.Ino, unix.Major(st.Dev), unix.Minor(st.Dev), w.path(idx, ""), f.ino, unix.Major(f.dev), unix.Minor(f.dev))})
		return false
	}
	f.fd = fd
	w.low = idx
	if f.pos >= 0 {
		if _, err := unix.Seek(fd, f.pos, io.SeekStart); err == nil {
			return true
		}
	}
	// The offset is lost: list again from the start. Removed entries are
	// gone and those left in place are in f.skip, so none is handled twice.
	f.pending, f.eof = nil, false
	return true
}

// pop closes the top frame and drops it; a child left in place marks its
// parent incomplete.
func (w *walker) pop() {
	i := len(w.frames) - 1
	f := &w.frames[i]
	f.pending = nil
	w.release(f)
	if f.fd >= 0 {
		w.closeFD(f.fd)
	}
	if f.incomplete && i > 0 {
		w.markLeft(i-1, f.name)
	}
	w.frames[i] = frame{}
	w.frames = w.frames[:i]
	w.low = min(w.low, max(i-1, 0))
}

func (w *walker) closeAll() {
	for i := range w.frames {
		w.frames[i].pending = nil
		w.release(&w.frames[i])
		if w.frames[i].fd >= 0 {
			w.closeFD(w.frames[i].fd)
		}
	}
	w.frames = nil
}

// release returns f's dirent buffer to the pool; f.pending must not alias
// it any more.
func (w *walker) release(f *frame) {
	if f.buf != nil {
		bufPool.Put(f.buf)
		f.buf = nil
	}
}

func (w *walker) fdOpened() {
	w.open++
	if w.peak != nil {
		*w.peak = max(*w.peak, w.open)
	}
}

func (w *walker) closeFD(fd int) {
	unix.Close(fd)
	w.fdClosed()
}

func (w *walker) fdClosed() { w.open-- }

// fdOf is the descriptor of frame i, or the caller's for i < 0.
func (w *walker) fdOf(i int) int {
	if i < 0 {
		return w.base
	}
	return w.frames[i].fd
}

// path names entry name of frame i (frame i itself when name is ""),
// relative to the caller's dirfd. It is built only for errors and hooks.
func (w *walker) path(i int, name string) string {
	var b strings.Builder
	for j := 0; j <= i && j < len(w.frames); j++ {
		if w.frames[j].name == "" {
			continue
		}
		if b.Len() > 0 {
			b.WriteByte('/')
		}
		b.WriteString(w.frames[j].name)
	}
	if name != "" {
		if b.Len() > 0 {
			b.WriteByte('/')
		}
		b.WriteString(name)
	}
	if b.Len() == 0 {
		return "."
	}
	return b.String()
}

// fail records err; the first one recorded is returned.
func (w *walker) fail(err error) {
	if w.err == nil {
		w.err = err
	}
}

// failEntry records the failure of entry name of frame pi, which is left in
// place: its parent will not be removed, and a rescan skips it.
func (w *walker) failEntry(pi int, name, op string, err error) {
	w.fail(&Error{Op: op, Path: w.path(pi, name), Err: err})
	if pi >= 0 {
		w.markLeft(pi, name)
	}
}

func (w *walker) markLeft(i int, name string) {
	f := &w.frames[i]
	f.incomplete = true
	if f.skip == nil {
		f.skip = make(map[string]struct{})
	}
	f.skip[name] = struct{}{}
}

func (w *walker) crossDev(dev uint64) error {
	return fmt.Errorf("%w: on device %d:%d, the tree is on %d:%d; unmount it, then remove again",
		ErrCrossDevice, unix.Major(dev), unix.Minor(dev), unix.Major(w.dev), unix.Minor(w.dev))
}

// explain adds to a permission error from unlinkat(dirfd, name) what
// decided it. EACCES: write and search permission on the directory, which
// is not ours (ours had owner rwx added). EPERM: the sticky bit on the
// directory with an entry of another owner, or an immutable or append-only
// flag.
func explain(dirfd int, name string, err error) error {
	var dir, st unix.Stat_t
	switch {
	case err == unix.EACCES && unix.Fstat(dirfd, &dir) == nil:
		return fmt.Errorf("%w (its directory is owned by uid %d, mode %04o; you are uid %d): remove it as that user or as root",
			err, dir.Uid, dir.Mode&0o7777, os.Geteuid())
	case err == unix.EPERM && unix.Fstat(dirfd, &dir) == nil && unix.Fstatat(dirfd, name, &st, unix.AT_SYMLINK_NOFOLLOW) == nil:
		return fmt.Errorf("%w (owned by uid %d, mode %04o, in a directory of mode %04o; you are uid %d): remove it as its owner or as root, after clearing any immutable or append-only flag (lsattr)",
			err, st.Uid, st.Mode&0o7777, dir.Mode&0o7777, os.Geteuid())
	}
	return err
}

// explainStat adds to a refused chmod who owns the directory: only its
// owner (or CAP_FOWNER) may change its mode.
func explainStat(st *unix.Stat_t, err error) error {
	if err != unix.EPERM {
		return err
	}
	return fmt.Errorf("%w (owned by uid %d, mode %04o; you are uid %d): remove it as its owner or as root",
		err, st.Uid, st.Mode&0o7777, os.Geteuid())
}
