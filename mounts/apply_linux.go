//go:build linux

package mounts

import (
	"errors"
	"fmt"
	"os"
	"strings"

	"golang.org/x/sys/unix"
)

// Error is a failed mount operation. It names the operation, source,
// target, filesystem type, flags (by name) and the errno.
type Error struct {
	Op     Op
	Call   string // the syscall as the kernel names it: "mount", "mkdir", "statfs"
	FSType string
	Flags  uintptr
	Err    error
}

func (e *Error) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s %s", e.Call, e.Op.Kind)
	src, dst := e.Op.Source, e.Op.Target
	if e.Op.Name != "" && src != "" {
		src = e.Op.Name
	} else if e.Op.Name != "" {
		dst = e.Op.Name
	}
	if src != "" {
		fmt.Fprintf(&b, " %s", src)
	}
	fmt.Fprintf(&b, " on %s", dst)
	if e.FSType != "" {
		fmt.Fprintf(&b, " type %s", e.FSType)
	}
	if e.Flags != 0 {
		fmt.Fprintf(&b, " flags %s", FlagNames(e.Flags))
	}
	if e.Op.Data != "" {
		fmt.Fprintf(&b, " data %q", e.Op.Data)
	}
	fmt.Fprintf(&b, ": %v", e.Err)
	return b.String()
}

func (e *Error) Unwrap() error { return e.Err }

var flagNames = []struct {
	f    uintptr
	name string
}{
	{unix.MS_RDONLY, "MS_RDONLY"}, {unix.MS_NOSUID, "MS_NOSUID"}, {unix.MS_NODEV, "MS_NODEV"},
	{unix.MS_NOEXEC, "MS_NOEXEC"}, {unix.MS_REMOUNT, "MS_REMOUNT"}, {unix.MS_BIND, "MS_BIND"},
	{unix.MS_REC, "MS_REC"}, {unix.MS_SLAVE, "MS_SLAVE"}, {unix.MS_PRIVATE, "MS_PRIVATE"},
	{unix.MS_NOATIME, "MS_NOATIME"}, {unix.MS_NODIRATIME, "MS_NODIRATIME"}, {unix.MS_RELATIME, "MS_RELATIME"},
	{unix.MS_STRICTATIME, "MS_STRICTATIME"},
}

// FlagNames renders mount flags as "MS_BIND|MS_REC".
func FlagNames(f uintptr) string {
	var parts []string
	for _, n := range flagNames {
		if f&n.f != 0 {
			parts = append(parts, n.name)
			f &^= n.f
		}
	}
	if f != 0 {
		parts = append(parts, fmt.Sprintf("%#x", f))
	}
	return strings.Join(parts, "|")
}

func msFlags(f int) uintptr {
	var m uintptr
	if f&NoSuid != 0 {
		m |= unix.MS_NOSUID
	}
	if f&NoDev != 0 {
		m |= unix.MS_NODEV
	}
	if f&NoExec != 0 {
		m |= unix.MS_NOEXEC
	}
	if f&RdOnly != 0 {
		m |= unix.MS_RDONLY
	}
	return m
}

// lockedFlags returns the flags of the mount at target that a remount in a
// user namespace must keep: the kernel locks MS_RDONLY, MS_NOSUID, MS_NODEV,
// MS_NOEXEC and the atime flags of mounts copied from a more privileged
// namespace, and a remount that would clear one fails with EPERM.
func lockedFlags(target string) (uintptr, error) {
	var st unix.Statfs_t
	if err := unix.Statfs(target, &st); err != nil {
		return 0, err
	}
	var m uintptr
	for _, p := range []struct {
		st int64
		ms uintptr
	}{
		{unix.ST_RDONLY, unix.MS_RDONLY}, {unix.ST_NOSUID, unix.MS_NOSUID}, {unix.ST_NODEV, unix.MS_NODEV},
		{unix.ST_NOEXEC, unix.MS_NOEXEC}, {unix.ST_NOATIME, unix.MS_NOATIME}, {unix.ST_NODIRATIME, unix.MS_NODIRATIME},
		{unix.ST_RELATIME, unix.MS_RELATIME},
	} {
		if st.Flags&p.st != 0 {
			m |= p.ms
		}
	}
	return m, nil
}

func mount(op Op, src, fstype string, flags uintptr, data string) error {
	if err := unix.Mount(src, op.Target, fstype, flags, data); err != nil {
		return &Error{Op: op, Call: "mount", FSType: fstype, Flags: flags, Err: err}
	}
	return nil
}

func remount(op Op, add uintptr) error {
	locked, err := lockedFlags(op.Target)
	if err != nil {
		return &Error{Op: op, Call: "statfs", Err: err}
	}
	return mount(op, "", "", unix.MS_BIND|unix.MS_REMOUNT|locked|add, "")
}

// remountWritable remounts the mount at op.Target with add and without
// MS_RDONLY: a bind of a path made read-only by ReadOnlyTree copies that
// flag. When the kernel locked MS_RDONLY (the host mount itself is
// read-only) it stays read-only, as it is on the host.
func remountWritable(op Op, add uintptr) error {
	locked, err := lockedFlags(op.Target)
	if err != nil {
		return &Error{Op: op, Call: "statfs", Err: err}
	}
	err = mount(op, "", "", unix.MS_BIND|unix.MS_REMOUNT|(locked&^unix.MS_RDONLY)|add, "")
	if errors.Is(err, unix.EPERM) && locked&unix.MS_RDONLY != 0 {
		return mount(op, "", "", unix.MS_BIND|unix.MS_REMOUNT|locked|add, "")
	}
	return err
}

// Apply runs the plan in order. It must run in a mount namespace of its own
// with CAP_SYS_ADMIN there; it stops at the first failure.
func Apply(ops []Op) error {
	a := &applier{stage: -1, emptyDir: -1, emptyFile: -1, procDir: -1}
	defer a.close()
	for _, op := range ops {
		if err := a.apply(op); err != nil {
			return err
		}
	}
	return nil
}

// applier holds the staging tmpfs and the empty objects in it between ops.
type applier struct{ stage, emptyDir, emptyFile, procDir int }

func (a *applier) close() {
	for _, fd := range []int{a.stage, a.emptyDir, a.emptyFile, a.procDir} {
		if fd >= 0 {
			unix.Close(fd)
		}
	}
}

func fdPath(fd int) string { return fmt.Sprintf("/proc/self/fd/%d", fd) }

func (a *applier) apply(op Op) error {
	switch op.Kind {
	case Slave:
		return mount(op, "", "", unix.MS_REC|unix.MS_SLAVE, "")
	case Bind:
		if err := mount(op, op.Source, "", unix.MS_BIND|unix.MS_REC, ""); err != nil {
			return err
		}
		return remountWritable(op, msFlags(op.Flags))
	case ReadOnlyTree:
		attr := unix.MountAttr{Attr_set: unix.MOUNT_ATTR_RDONLY}
		if err := unix.MountSetattr(unix.AT_FDCWD, op.Target, unix.AT_RECURSIVE, &attr); err != nil {
			return &Error{Op: op, Call: "mount_setattr", Err: err}
		}
		return nil
	case BindRW:
		if _, err := os.Stat(op.Target); err != nil {
			if errors.Is(err, os.ErrNotExist) {
				return nil
			}
			return &Error{Op: op, Call: "stat", Err: err}
		}
		// MS_REC: the mounts below (the tmpfs that hides the session root,
		// when the root is inside a writable path) must come along, or the
		// new bind would show what they cover. They stay read-only; only
		// this mount becomes writable again.
		if err := mount(op, op.Target, "", unix.MS_BIND|unix.MS_REC, ""); err != nil {
			return err
		}
		return remountWritable(op, 0)
	case Tmpfs:
		return mount(op, "tmpfs", "tmpfs", msFlags(op.Flags), op.Data)
	case Proc:
		return mount(op, "proc", "proc", msFlags(op.Flags), "")
	case Mkdir:
		if err := unix.Mkdir(op.Target, op.Mode); err != nil && !errors.Is(err, unix.EEXIST) {
			return &Error{Op: op, Call: "mkdir", Err: err}
		}
		return nil
	case ReadOnly:
		return remount(op, unix.MS_RDONLY)
	case Stage:
		return a.doStage(op)
	case StageProc:
		if a.procDir < 0 {
			return &Error{Op: op, Call: "stage-proc", Err: errors.New("nothing staged")}
		}
		// Through the descriptor: a path would have to traverse the
		// mode-0 staging tmpfs, which init may not (no CAP_DAC_OVERRIDE).
		at := op
		at.Target = fdPath(a.procDir)
		return mount(at, "proc", "proc", msFlags(op.Flags), "")
	case Hide:
		return a.doHide(op)
	case BindRO:
		var st unix.Stat_t
		if err := unix.Stat(op.Target, &st); err != nil {
			if errors.Is(err, unix.ENOENT) {
				return nil
			}
			return &Error{Op: op, Call: "stat", Err: err}
		}
		if err := mount(op, op.Target, "", unix.MS_BIND|unix.MS_REC, ""); err != nil {
			return err
		}
		return remount(op, unix.MS_RDONLY)
	case Seal:
		if a.stage < 0 {
			return &Error{Op: op, Call: "seal", Err: errors.New("nothing staged")}
		}
		sealed := op
		sealed.Target = fdPath(a.stage)
		return remount(sealed, unix.MS_RDONLY|unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC)
	}
	return &Error{Op: op, Call: "apply", Err: fmt.Errorf("unknown operation kind %d", int(op.Kind))}
}

// doStage opens the tmpfs mounted over the session root (by path: a
// descriptor of the covered directory would name the directory below it)
// and creates an empty directory (0555) and an empty file (0444) in it.
func (a *applier) doStage(op Op) error {
	fd, err := unix.Open(op.Target, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return &Error{Op: op, Call: "open", Err: err}
	}
	var sf unix.Statfs_t
	if err := unix.Fstatfs(fd, &sf); err != nil || sf.Type != unix.TMPFS_MAGIC {
		unix.Close(fd)
		return &Error{Op: op, Call: "fstatfs", Err: fmt.Errorf("not the staging tmpfs (type %#x): %v", sf.Type, err)}
	}
	a.stage = fd
	if err := unix.Mkdirat(fd, "empty-dir", 0o555); err != nil {
		return &Error{Op: op, Call: "mkdirat", Err: err}
	}
	if a.emptyDir, err = unix.Openat(fd, "empty-dir", unix.O_PATH|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0); err != nil {
		return &Error{Op: op, Call: "openat", Err: err}
	}
	f, err := unix.Openat(fd, "empty-file", unix.O_CREAT|unix.O_EXCL|unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o444)
	if err != nil {
		return &Error{Op: op, Call: "openat", Err: err}
	}
	unix.Close(f)
	if a.emptyFile, err = unix.Openat(fd, "empty-file", unix.O_PATH|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0); err != nil {
		return &Error{Op: op, Call: "openat", Err: err}
	}
	// For StageProc. Mode 0 in a mode-0 tmpfs that Seal makes read-only:
	// without CAP_DAC_OVERRIDE (the command has none) nothing enters it.
	if err := unix.Mkdirat(fd, "proc", 0); err != nil {
		return &Error{Op: op, Call: "mkdirat", Err: err}
	}
	if a.procDir, err = unix.Openat(fd, "proc", unix.O_PATH|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0); err != nil {
		return &Error{Op: op, Call: "openat", Err: err}
	}
	// Mode 0 now: the tree may be read-only by the time Seal runs.
	if err := unix.Fchmod(fd, 0); err != nil {
		return &Error{Op: op, Call: "fchmod", Err: err}
	}
	return nil
}

// doHide covers Target with the staged empty directory or file, matching
// what is there (a socket or device is covered by the empty file).
func (a *applier) doHide(op Op) error {
	var st unix.Stat_t
	if err := unix.Stat(op.Target, &st); err != nil {
		if errors.Is(err, unix.ENOENT) || errors.Is(err, unix.ENOTDIR) {
			return nil // nothing to hide
		}
		return &Error{Op: op, Call: "stat", Err: err}
	}
	if a.emptyDir < 0 || a.emptyFile < 0 {
		return &Error{Op: op, Call: "hide", Err: errors.New("nothing staged")}
	}
	src := fdPath(a.emptyFile)
	if st.Mode&unix.S_IFMT == unix.S_IFDIR {
		src = fdPath(a.emptyDir)
	}
	bind := op
	bind.Source = src
	if err := mount(bind, src, "", unix.MS_BIND, ""); err != nil {
		return err
	}
	return remount(op, unix.MS_RDONLY|unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC)
}
