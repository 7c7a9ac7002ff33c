package doctor

import (
	"fmt"
	"path/filepath"
	"strings"

	"github.com/agentbox/agentbox/internal/remedy"
	"github.com/agentbox/agentbox/internal/units"
	"github.com/agentbox/agentbox/landlock"
)

// Status is how one finding came out.
type Status string

const (
	// StatusOK: this part gives agentbox's full guarantee.
	StatusOK Status = "ok"
	// StatusWarn: agentbox runs, but with a weaker guarantee or a risk the
	// user should remove.
	StatusWarn Status = "warn"
	// StatusFail: agentbox cannot run (with its default settings).
	StatusFail Status = "fail"
)

// Finding is one line of the report.
type Finding struct {
	Name   string `json:"name"`
	Status Status `json:"status"`
	Detail string `json:"detail"`
	Remedy string `json:"remedy"` // empty when Status is ok
}

// Names of the findings, in report order.
const (
	NameNamespaces = "namespaces"
	NameLandlock   = "landlock"
	NameSeccomp    = "seccomp"
	NameNesting    = "nesting"
	NameRoot       = "session root"
	NameTmp        = "/tmp"
	NameSymlinks   = "fs.protected_symlinks"
	NameTIOCSTI    = "dev.tty.legacy_tiocsti"
	NameRuntimeDir = "XDG_RUNTIME_DIR"
	NameBinary     = "binary"
)

// Facts is everything Evaluate decides from. Integer settings read from
// /proc are -1 when the file does not exist or could not be read.
type Facts struct {
	UID int

	// Sandbox is the probe run of /bin/true in a real sandbox.
	Sandbox SandboxFacts
	// Userns are the sysctls that explain namespace failures (Seccomp and
	// Binary included), as remedy.Probe reads them.
	Userns remedy.Facts

	// Cgo is true when this binary was built with CGO_ENABLED=1: its init
	// stage cannot drop capabilities on every thread (Go's
	// syscall.AllThreadsSyscall returns ENOTSUP under cgo).
	Cgo bool

	Landlock LandlockFacts

	// Seccomp is "Seccomp:" of /proc/self/status (0 none, 1 strict, 2
	// filter), SeccompFilters "Seccomp_filters:", NoNewPrivs "NoNewPrivs:".
	Seccomp, SeccompFilters, NoNewPrivs int

	Nesting NestingFacts
	Root    RootFacts

	// TmpMode is the permission bits of /tmp (with the sticky bit), TmpErr
	// why it could not be read, TmpIsDir whether it is a directory.
	TmpMode  uint32
	TmpIsDir bool
	TmpErr   string

	ProtectedSymlinks int // /proc/sys/fs/protected_symlinks
	LegacyTIOCSTI     int // /proc/sys/dev/tty/legacy_tiocsti

	RuntimeDir RuntimeDirFacts
	Binary     BinaryFacts
}

// SandboxFacts is the outcome of the probe run.
type SandboxFacts struct {
	Err     string // the error sandbox.Run returned; "" when the run worked
	Skipped string // why the probe could not be attempted; "" when it ran
	Code    int    // /bin/true's exit status when it ran
}

// LandlockFacts is the kernel's Landlock and what the default policy gets.
type LandlockFacts struct {
	ABI    int    // landlock.ABI(); 0 with ABIErr
	ABIErr string // why the ABI could not be read
	// Summary is Plan.Summary() of landlock.Check on the policy agentbox
	// would use from the probe directory; CheckErr its error.
	Summary    string
	Unenforced []string
	Enforced   bool
	Mode       landlock.Mode
	CheckErr   string
}

// NestingFacts are hints that agentbox itself runs confined.
type NestingFacts struct {
	Container       string // "docker", "podman", "cgroup <path>" or ""
	AgentboxSession string // AGENTBOX_SESSION of the environment
	PID1Agentbox    bool   // /proc/1/cmdline is agentbox's init stage
	NestSocket      string // AGENTBOX_NEST, when it names a socket
}

// RootFacts describe the session root.
type RootFacts struct {
	Path, Source string
	Err          string // why it could not be opened or verified
	Owner        int
	Mode         uint32
	FreeBytes    uint64 // available to the user (statfs f_bavail)
	StatfsErr    string
	Sessions     int // sessions under it
	Live         int // of which a wrapper holds the lock
	Abandoned    int // of which no wrapper holds the lock (kept ones excluded)
	ListErr      string
}

// RuntimeDirFacts describe the host's XDG_RUNTIME_DIR.
type RuntimeDirFacts struct {
	Set   bool
	Path  string
	Err   string // lstat error
	IsDir bool
	Owner int
	Mode  uint32 // permission bits
}

// BinaryFacts describe where the agentbox binary sits.
type BinaryFacts struct {
	Path     string // os.Executable, symlinks resolved
	Err      string
	Owner    int
	Mode     uint32
	DirOwner int
	DirMode  uint32
	Home     string // the caller's usable home, or ""
	WorkDir  string // the current working directory, or ""
}

// MinFreeBytes is the free space below which the session root is a warning:
// agents unpack packages and caches into their /tmp, which lives there.
const MinFreeBytes = 1 << 30

// Evaluate turns facts into the report, one finding per Name, in order.
// It is pure.
func Evaluate(f Facts) []Finding {
	return []Finding{
		namespaces(f),
		landlockFinding(f.Landlock),
		seccompFinding(f),
		nesting(f),
		root(f.Root),
		tmp(f),
		symlinks(f.ProtectedSymlinks),
		tiocsti(f.LegacyTIOCSTI),
		runtimeDir(f.RuntimeDir, f.UID),
		binary(f.Binary, f.UID),
	}
}

// OK reports whether agentbox can run with its full guarantees: every
// finding is ok.
func OK(fs []Finding) bool {
	for _, f := range fs {
		if f.Status != StatusOK {
			return false
		}
	}
	return true
}

func ok(name, detail string) Finding { return Finding{Name: name, Status: StatusOK, Detail: detail} }
func warn(name, detail, remedy string) Finding {
	return Finding{Name: name, Status: StatusWarn, Detail: detail, Remedy: remedy}
}
func fail(name, detail, remedy string) Finding {
	return Finding{Name: name, Status: StatusFail, Detail: detail, Remedy: remedy}
}

func sysctl(v int) string {
	if v < 0 {
		return "absent"
	}
	return fmt.Sprint(v)
}

func namespaces(f Facts) Finding {
	u := f.Userns
	sys := fmt.Sprintf("user.max_user_namespaces=%s, kernel.unprivileged_userns_clone=%s, kernel.apparmor_restrict_unprivileged_userns=%s",
		sysctl(u.MaxUserNamespaces), sysctl(u.UnprivilegedUsernsClone), sysctl(u.AppArmorRestrictUserns))
	switch {
	case f.Sandbox.Skipped != "":
		return fail(NameNamespaces, "sandbox probe not run: "+f.Sandbox.Skipped+" ("+sys+")",
			"set HOME or XDG_STATE_HOME to a directory you own, so that the probe has a private place to run from")
	case f.Sandbox.Err == "" && f.Sandbox.Code != 0:
		return fail(NameNamespaces, fmt.Sprintf("sandbox probe: /bin/true exited with status %d (%s)", f.Sandbox.Code, sys),
			"run agentbox -v -- /bin/true to see what the sandbox reports")
	case f.Sandbox.Err == "":
		return ok(NameNamespaces, "user, mount and PID namespaces work: a sandbox ran /bin/true ("+sys+")")
	}
	detail := "sandbox probe: " + f.Sandbox.Err + " (" + sys + ")"
	switch {
	case f.Cgo:
		return fail(NameNamespaces, detail+"; this binary was built with cgo", "rebuild agentbox with CGO_ENABLED=0: under cgo Go cannot change the capabilities of every thread (syscall.AllThreadsSyscall returns ENOTSUP)")
	case u.MaxUserNamespaces == 0:
		return fail(NameNamespaces, detail, "enable user namespaces as root: sysctl -w user.max_user_namespaces=15000 (persist it in /etc/sysctl.d/)")
	case u.UnprivilegedUsernsClone == 0:
		return fail(NameNamespaces, detail, "enable them as root: sysctl -w kernel.unprivileged_userns_clone=1 (persist it in /etc/sysctl.d/)")
	case u.AppArmorRestrictUserns == 1:
		return fail(NameNamespaces, detail, "install an AppArmor profile for this binary as root, in /etc/apparmor.d/agentbox:\n"+
			remedy.AppArmorProfile(u.Binary)+"then: apparmor_parser -r /etc/apparmor.d/agentbox")
	case u.Seccomp == 2:
		return fail(NameNamespaces, detail, "a seccomp filter confines agentbox (a container's default profile?): allow clone/unshare with CLONE_NEWUSER, or run agentbox on the host")
	}
	return fail(NameNamespaces, detail, "follow the remedy in the message; run agentbox -v -- /bin/true for more")
}

func landlockFinding(l LandlockFacts) Finding {
	const upgrade = "run on Linux >= 6.12 with Landlock enabled (CONFIG_SECURITY_LANDLOCK=y and landlock in lsm= on the kernel command line)"
	detail := l.Summary
	if l.ABIErr != "" {
		detail += " (landlock_create_ruleset: " + l.ABIErr + ")"
	}
	switch {
	case l.CheckErr != "":
		abi := fmt.Sprintf("ABI %d", l.ABI)
		if l.ABIErr != "" {
			abi = "unavailable (" + l.ABIErr + ")"
		}
		return fail(NameLandlock, abi+": "+l.CheckErr, upgrade+", or pass --landlock=best-effort")
	case l.Mode == landlock.Off:
		return warn(NameLandlock, detail, "remove landlock = \"off\" from your config, or stop passing --landlock=off: the sandbox can then write wherever file permissions allow")
	case !l.Enforced:
		return fail(NameLandlock, detail, upgrade)
	case len(l.Unenforced) > 0:
		return warn(NameLandlock, detail, upgrade+", to enforce "+strings.Join(l.Unenforced, ", "))
	case l.ABI < landlock.MinABI:
		return warn(NameLandlock, fmt.Sprintf("%s; below ABI %d, which agentbox needs for all its rights", detail, landlock.MinABI), upgrade)
	}
	return ok(NameLandlock, detail)
}

func seccompFinding(f Facts) Finding {
	nnp := "no_new_privs not set"
	if f.NoNewPrivs == 1 {
		nnp = "no_new_privs already set by a parent (the sandbox sets it anyway)"
	}
	switch f.Seccomp {
	case 0:
		return ok(NameSeccomp, "no seccomp filter on agentbox; "+nnp)
	case 1:
		return fail(NameSeccomp, "agentbox runs in seccomp strict mode; "+nnp, "run agentbox outside the program that set seccomp strict mode")
	case 2:
		return ok(NameSeccomp, fmt.Sprintf("%d seccomp filter(s) on agentbox, inherited by the sandbox (the namespace probe shows whether they allow it); %s", f.SeccompFilters, nnp))
	}
	return warn(NameSeccomp, "the Seccomp: line of /proc/self/status could not be read; "+nnp, "mount /proc (agentbox needs it)")
}

func nesting(f Facts) Finding {
	n := f.Nesting
	switch {
	case n.AgentboxSession != "" && n.NestSocket != "":
		return ok(NameNesting, "inside agentbox session "+n.AgentboxSession+": nested sessions are built by its init (AGENTBOX_NEST="+n.NestSocket+
			"); each gets its own /tmp, and the enclosing session's write policy still applies")
	case n.AgentboxSession != "" || n.PID1Agentbox:
		why := "AGENTBOX_SESSION=" + n.AgentboxSession
		if n.PID1Agentbox {
			why = "PID 1 is agentbox's init stage"
		}
		return warn(NameNesting, "inside another agentbox session ("+why+") that offers no nest socket (AGENTBOX_NEST): its Landlock domain forbids the mounts a nested session needs",
			"run the outer session with this version of agentbox, run agentbox outside the other session, or run the command directly in it: it already has a private /tmp")
	}
	var hints []string
	if n.Container != "" {
		hints = append(hints, "inside a container ("+n.Container+")")
	}
	if f.Seccomp == 2 || f.NoNewPrivs == 1 {
		hints = append(hints, "confined by another sandbox (seccomp filter or no_new_privs)")
	}
	if len(hints) == 0 {
		return ok(NameNesting, "not inside a container or another sandbox")
	}
	return ok(NameNesting, strings.Join(hints, "; ")+": its restrictions add to agentbox's")
}

func root(r RootFacts) Finding {
	if r.Err != "" {
		return fail(NameRoot, r.Err, "follow the remedy in the message, or pass --root DIR (or set AGENTBOX_ROOT) to a directory you own, mode 0700")
	}
	detail := fmt.Sprintf("%s (from %s), owner uid %d, mode %04o", r.Path, r.Source, r.Owner, r.Mode)
	if r.StatfsErr == "" {
		detail += ", " + units.Bytes(r.FreeBytes, " ") + " free"
	}
	if r.ListErr == "" {
		detail += fmt.Sprintf(", %d session(s): %d live, %d abandoned", r.Sessions, r.Live, r.Abandoned)
	}
	switch {
	case r.StatfsErr != "":
		return warn(NameRoot, detail+"; statfs: "+r.StatfsErr, "check the file system of the session root")
	case r.ListErr != "":
		return warn(NameRoot, detail+"; listing: "+r.ListErr, "check the session root's permissions (it must be yours, mode 0700)")
	case r.FreeBytes < MinFreeBytes:
		return warn(NameRoot, detail+": little space for the sessions' /tmp", "free space there (agentbox clean removes abandoned sessions), or pass --root DIR on a larger file system")
	case r.Abandoned > 0:
		return ok(NameRoot, detail+" (the next start, or agentbox clean, removes abandoned ones)")
	}
	return ok(NameRoot, detail)
}

func tmp(f Facts) Finding {
	const fix = "as root: chmod 1777 /tmp"
	switch {
	case f.TmpErr != "":
		return warn(NameTmp, "lstat /tmp: "+f.TmpErr, "create /tmp as root: mkdir -m 1777 /tmp")
	case !f.TmpIsDir:
		return warn(NameTmp, "/tmp is not a directory", "as root: replace it with a directory, mode 1777")
	case f.TmpMode&0o1000 == 0 && f.TmpMode&0o002 != 0:
		return warn(NameTmp, fmt.Sprintf("mode %04o: world-writable without the sticky bit, so any user may delete or rename anyone's files there (agentbox's fallback session root included)", f.TmpMode), fix)
	}
	return ok(NameTmp, fmt.Sprintf("mode %04o", f.TmpMode))
}

func symlinks(v int) Finding {
	const fix = "as root: sysctl -w fs.protected_symlinks=1 (persist it in /etc/sysctl.d/)"
	switch v {
	case 1:
		return ok(NameSymlinks, "1: symlinks in sticky world-writable directories are followed only by their owner")
	case -1:
		return warn(NameSymlinks, "could not be read", "check that /proc is mounted, then "+fix)
	}
	return warn(NameSymlinks, fmt.Sprintf("%d: a symlink another user plants in the host's /tmp is followed by your programs outside agentbox (CWE-377)", v), fix)
}

func tiocsti(v int) Finding {
	switch v {
	case 0:
		return ok(NameTIOCSTI, "0: the kernel refuses TIOCSTI to unprivileged programs; agentbox's seccomp filter refuses it in the sandbox too")
	case 1:
		return ok(NameTIOCSTI, "1: the kernel allows TIOCSTI (typing into a terminal), but agentbox's seccomp filter refuses it in the sandbox; set it to 0 to protect programs run outside agentbox too")
	}
	return ok(NameTIOCSTI, "absent (kernel before 6.2: TIOCSTI always allowed); agentbox's seccomp filter refuses it in the sandbox")
}

func runtimeDir(r RuntimeDirFacts, uid int) Finding {
	const fix = "log in through a session manager that creates it (pam_systemd), or unset XDG_RUNTIME_DIR: the sandbox gets its own either way"
	switch {
	case !r.Set:
		return ok(NameRuntimeDir, "unset; the sandbox gets its own")
	case !filepath.IsAbs(r.Path):
		return warn(NameRuntimeDir, fmt.Sprintf("%q is not an absolute path", r.Path), fix)
	case r.Err != "":
		return warn(NameRuntimeDir, r.Path+": "+r.Err, fix)
	case !r.IsDir:
		return warn(NameRuntimeDir, r.Path+": not a directory", fix)
	case r.Owner != uid:
		return warn(NameRuntimeDir, fmt.Sprintf("%s: owned by uid %d, mode %04o (you are uid %d)", r.Path, r.Owner, r.Mode, uid), fix)
	case r.Mode != 0o700:
		return warn(NameRuntimeDir, fmt.Sprintf("%s: mode %04o, want 0700 (other users may reach your sockets there)", r.Path, r.Mode), "chmod 0700 "+r.Path)
	}
	return ok(NameRuntimeDir, fmt.Sprintf("%s: owner uid %d, mode 0700; hidden in the sandbox, which gets its own", r.Path, uid))
}

// within reports whether p is dir or below it, on a separator boundary.
func within(p, dir string) bool {
	if dir == "" {
		return false
	}
	rel, err := filepath.Rel(dir, p)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, "../")
}

func binary(b BinaryFacts, uid int) Finding {
	const fix = "install it root-owned where you cannot write, e.g. as root: install -m 0755 agentbox /usr/local/bin/"
	if b.Err != "" {
		return warn(NameBinary, "os.Executable: "+b.Err, fix)
	}
	dir := filepath.Dir(b.Path)
	var why []string
	if uid != 0 && b.Owner == uid {
		why = append(why, fmt.Sprintf("the file is yours (uid %d)", uid))
	}
	if b.Mode&0o022 != 0 {
		why = append(why, fmt.Sprintf("the file is mode %04o", b.Mode))
	}
	if uid != 0 && b.DirOwner == uid {
		why = append(why, fmt.Sprintf("its directory %s is yours", dir))
	}
	if b.DirMode&0o022 != 0 && b.DirMode&0o1000 == 0 {
		why = append(why, fmt.Sprintf("its directory %s is mode %04o", dir, b.DirMode))
	}
	// agentbox refuses / (and the home and its ancestors) as working
	// directory, so neither grants the sandbox the binary's directory.
	if b.Home != "/" && within(b.Path, b.Home) {
		why = append(why, "it is in your home "+b.Home)
	}
	if b.WorkDir != "/" && within(b.Path, b.WorkDir) {
		why = append(why, "it is in the working directory "+b.WorkDir)
	}
	if len(why) > 0 {
		return warn(NameBinary, b.Path+": a sandboxed command could replace it ("+strings.Join(why, "; ")+"), and the next agentbox would run its code outside the sandbox", fix)
	}
	return ok(NameBinary, fmt.Sprintf("%s: owner uid %d, mode %04o, directory owner uid %d, mode %04o", b.Path, b.Owner, b.Mode, b.DirOwner, b.DirMode))
}
