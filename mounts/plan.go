package mounts

import (
	"fmt"
	"path/filepath"
)

// Kind is the kind of a mount operation.
type Kind int

const (
	// Slave makes every mount below Target a slave: host mount events still
	// propagate in, the sandbox's never propagate out.
	Slave Kind = iota
	// Bind binds Source over Target recursively, then remounts it with Flags
	// added to the flags the kernel locked on it (a bind ignores MS_NOSUID,
	// MS_NODEV and MS_RDONLY; only a remount applies them).
	Bind
	// Tmpfs mounts a new tmpfs on Target with Flags and Data.
	Tmpfs
	// Proc mounts a new proc instance (of the caller's PID namespace) on Target.
	Proc
	// Mkdir creates the directory Target with Mode (inside a tmpfs made earlier in the plan).
	Mkdir
	// ReadOnly remounts the mount at Target read-only, keeping its other flags.
	ReadOnly
	// Stage opens the tmpfs just mounted over the session root by its real
	// path (Target) and makes in it the empty directory and empty file that
	// Hide binds, and the directory StageProc mounts on.
	Stage
	// Hide covers Target, when it exists, with the staged empty directory or
	// empty file (read-only); a missing Target is skipped.
	Hide
	// BindRO binds Target onto itself read-only; a missing Target is skipped.
	BindRO
	// Seal makes the staging tmpfs (Target, the session root) read-only and
	// mode 0: the sandbox sees an empty directory it cannot open.
	Seal
	// ReadOnlyTree makes every mount at and below Target read-only
	// (mount_setattr AT_RECURSIVE): Landlock (ABI ≤ 7) does not cover chmod,
	// chown, utimes or xattrs, a read-only mount does (EROFS).
	ReadOnlyTree
	// BindRW binds Target onto itself and makes that mount writable again;
	// a missing Target is skipped.
	BindRW
	// StageProc mounts a spare proc instance on the mode-0 directory that
	// Stage made in the staging tmpfs, where the sandbox cannot reach it. It is there for
	// nested sandboxes: the kernel lets a user namespace mount a new proc
	// only if its mount namespace already holds one with nothing mounted
	// over its contents (mount_too_revealing), and /proc here has
	// read-only binds over /proc/sys and others.
	StageProc
)

var kindNames = [...]string{"slave", "bind", "tmpfs", "proc", "mkdir", "readonly", "stage", "hide", "bind-ro", "seal", "readonly-tree", "bind-rw", "stage-proc"}

func (k Kind) String() string {
	if int(k) < len(kindNames) {
		return kindNames[k]
	}
	return fmt.Sprintf("Kind(%d)", int(k))
}

// Flags a plan may ask for; names match mount(2).
const (
	NoSuid = 1 << iota
	NoDev
	NoExec
	RdOnly
)

// Op is one step of a plan.
type Op struct {
	Kind   Kind
	Source string
	Target string
	Flags  int    // NoSuid|NoDev|NoExec
	Data   string // tmpfs options
	Mode   uint32 // Mkdir
	// Name says what Source (for a bind) or Target (for the hidden root)
	// is, for messages: the /proc/self/fd paths mean nothing to a user.
	Name string
}

func (o Op) String() string {
	s := o.Kind.String() + " " + o.Target
	if o.Source != "" {
		s = o.Kind.String() + " " + o.Source + " → " + o.Target
	}
	if o.Name != "" {
		s += " [" + o.Name + "]"
	}
	if o.Data != "" {
		s += " (" + o.Data + ")"
	}
	return s
}

// ProcReadOnly are the parts of the sandbox's /proc made read-only.
var ProcReadOnly = []string{"/proc/sys", "/proc/sysrq-trigger", "/proc/irq", "/proc/bus", "/proc/fs"}

// Config says what the sandbox's mount namespace must look like.
type Config struct {
	// TmpSource, VarTmpSource and RunSource are the session's tmp/, var-tmp/
	// and run/ directories, normally as /proc/self/fd/N magic links so that
	// the object the wrapper verified is the object bound.
	TmpSource, VarTmpSource, RunSource string
	// RootHide is the session root as a path the mount can reach (again
	// /proc/self/fd/N); it is covered by an empty read-only tmpfs so the
	// sandbox cannot reach other sessions.
	RootHide string
	// Names of the four above for messages (the session's real paths).
	TmpName, VarTmpName, RunName, RootName string
	// VarTmp is true when /var/tmp exists on the host.
	VarTmp bool
	// RootPath is the session root's real path: the staging tmpfs over it
	// is opened by this path right after it is mounted, before /tmp is
	// covered (the fallback root lives under /tmp).
	RootPath string
	// Hide lists paths to cover with an empty read-only directory or file.
	Hide []string
	// ReadOnly lists paths to make read-only (bound onto themselves).
	ReadOnly []string
	// ReadOnlyRoot makes the whole tree read-only except Writable and the
	// session's own mounts.
	ReadOnlyRoot bool
	// Writable lists the paths that stay writable under ReadOnlyRoot.
	Writable []string
	// RunUser is true when /run/user exists: it is covered by a read-only
	// tmpfs that holds only /run/user/UID, the session's run/. Otherwise the
	// runtime directory is a directory inside the private /tmp.
	RunUser bool
	UID     int
	// DevShm is true when /dev/shm exists; it gets a private tmpfs.
	DevShm bool
}

// RuntimeDir returns the runtime directory's path inside the sandbox.
func (c Config) RuntimeDir() string {
	if c.RunUser {
		return fmt.Sprintf("/run/user/%d", c.UID)
	}
	return fmt.Sprintf("/tmp/.agentbox-run-%d", c.UID)
}

func absClean(what, p string) error {
	if p == "" || !filepath.IsAbs(p) || filepath.Clean(p) != p {
		return fmt.Errorf("mount plan: %s %q is not an absolute clean path", what, p)
	}
	return nil
}

// Plan returns the ordered operations for c. Order matters: the tree is made
// a slave first; the session's directories are bound while the host /proc
// still resolves their /proc/self/fd sources; the session root is hidden
// after its subdirectories were bound (the binds keep working); the new
// /proc comes last.
func Plan(c Config) ([]Op, error) {
	for _, p := range []struct{ what, v string }{
		{"tmp source", c.TmpSource}, {"var-tmp source", c.VarTmpSource}, {"run source", c.RunSource},
		{"session root", c.RootHide},
	} {
		if err := absClean(p.what, p.v); err != nil {
			return nil, err
		}
	}
	if c.RootHide == "/" {
		return nil, fmt.Errorf("mount plan: session root %q", c.RootHide)
	}
	if err := absClean("session root path", c.RootPath); err != nil || c.RootPath == "/" {
		return nil, fmt.Errorf("mount plan: session root path %q", c.RootPath)
	}
	for _, p := range c.Writable {
		if err := absClean("writable path", p); err != nil || p == "/" {
			return nil, fmt.Errorf("mount plan: writable path %q", p)
		}
	}
	for _, list := range [][]string{c.Hide, c.ReadOnly} {
		for _, p := range list {
			if err := absClean("path", p); err != nil {
				return nil, err
			}
			if p == "/" || under(p, "/proc") || under(p, "/tmp") || under(p, "/var/tmp") || under(p, "/dev/shm") || p == c.RootPath || under(p, c.RootPath) {
				return nil, fmt.Errorf("mount plan: cannot hide or protect %q: it is /, under /proc, the session's own directories or the session root", p)
			}
		}
	}
	if c.UID < 0 {
		return nil, fmt.Errorf("mount plan: invalid uid %d", c.UID)
	}
	rd := c.RuntimeDir()
	ops := []Op{
		{Kind: Slave, Target: "/"},
		// The root is covered first, writable, so that it can stage the
		// empty objects Hide binds; Seal closes it at the end.
		{Kind: Tmpfs, Target: c.RootHide, Flags: NoSuid | NoDev | NoExec, Data: "mode=0700,size=16k,nr_inodes=8", Name: c.RootName},
		{Kind: Stage, Target: c.RootPath},
	}
	if c.ReadOnlyRoot {
		// Before the session's mounts, which are new mounts and stay
		// writable; the writable paths are bound again and reopened.
		ops = append(ops, Op{Kind: ReadOnlyTree, Target: "/"})
		for _, p := range c.Writable {
			if p == "/tmp" || p == "/var/tmp" || p == "/dev/shm" || p == c.RuntimeDir() || under(p, "/dev") || under(p, "/proc") {
				continue // mounted below, or a device (I/O to a device node ignores MS_RDONLY)
			}
			ops = append(ops, Op{Kind: BindRW, Target: p})
		}
	}
	// After ReadOnlyTree, which would make it read-only: a nested
	// sandbox's /proc could then only be read-only too.
	ops = append(ops, Op{Kind: StageProc, Target: c.RootPath, Flags: NoSuid | NoDev | NoExec})
	ops = append(ops, Op{Kind: Bind, Source: c.TmpSource, Target: "/tmp", Flags: NoSuid | NoDev, Name: c.TmpName})
	if c.VarTmp {
		ops = append(ops, Op{Kind: Bind, Source: c.VarTmpSource, Target: "/var/tmp", Flags: NoSuid | NoDev, Name: c.VarTmpName})
	}
	if c.RunUser {
		ops = append(ops,
			Op{Kind: Tmpfs, Target: "/run/user", Flags: NoSuid | NoDev | NoExec, Data: "mode=0755,size=16k,nr_inodes=16"},
			Op{Kind: Mkdir, Target: rd, Mode: 0o700},
			Op{Kind: Bind, Source: c.RunSource, Target: rd, Flags: NoSuid | NoDev, Name: c.RunName},
			Op{Kind: ReadOnly, Target: "/run/user"},
		)
	} else {
		// A mount point in the private /tmp: the sandbox cannot remove it
		// (EBUSY) nor unmount it (no capabilities).
		ops = append(ops,
			Op{Kind: Mkdir, Target: rd, Mode: 0o700},
			Op{Kind: Bind, Source: c.RunSource, Target: rd, Flags: NoSuid | NoDev, Name: c.RunName},
		)
	}
	for _, p := range c.Hide {
		ops = append(ops, Op{Kind: Hide, Target: p})
	}
	for _, p := range c.ReadOnly {
		ops = append(ops, Op{Kind: BindRO, Target: p})
	}
	ops = append(ops, Op{Kind: Seal, Target: c.RootPath, Name: c.RootName})
	if c.DevShm {
		ops = append(ops, Op{Kind: Tmpfs, Target: "/dev/shm", Flags: NoSuid | NoDev, Data: "mode=1777"})
	}
	ops = append(ops, Op{Kind: Proc, Target: "/proc", Flags: NoSuid | NoDev | NoExec})
	// What in /proc acts on the host, not on the sandbox's processes, is
	// read-only (as container runtimes do): a caller who is root is uid 0
	// inside too, and uid 0 may write many of /proc/sys's files by file
	// permissions alone, capabilities or not.
	for _, p := range ProcReadOnly {
		ops = append(ops, Op{Kind: BindRO, Target: p})
	}
	return ops, nil
}

// under reports whether p is inside dir, on a separator boundary.
func under(p, dir string) bool {
	if dir == "/" {
		return true
	}
	return len(p) > len(dir) && p[:len(dir)] == dir && p[len(dir)] == '/' || p == dir
}
