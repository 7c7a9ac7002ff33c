//go:build linux

package tests

import (
	"fmt"
	"os"
	"runtime"
	"slices"
	"strings"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// The helpers of the restricted-host tests (restricted_test.go), dispatched
// from helperMain. Each installs a seccomp filter that makes this process and
// everything it starts see the kernel of a restricted host, then executes its
// arguments (args[0] an absolute path) with this environment minus the
// helper's variable.

// restrictedHelper runs the restricted-host helper called name with the
// arguments after the helper binary's name, and returns its exit status.
func restrictedHelper(name string, args []string) int {
	switch name {
	case "seccomp-nouserns-exec":
		return seccompExec(name, noUsernsFilter(), checkNoUserns, args)
	case "seccomp-nomount-exec":
		return seccompExec(name, noMountFilter(), checkFiltered, args)
	}
	fmt.Fprintf(os.Stderr, "abtest-helper: unknown restricted-host helper %q\n", name)
	return 2
}

const (
	bpfLd   = unix.BPF_LD | unix.BPF_W | unix.BPF_ABS
	bpfJeq  = unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K
	bpfJset = unix.BPF_JMP | unix.BPF_JSET | unix.BPF_K
	bpfRet  = unix.BPF_RET | unix.BPF_K

	// Offsets in struct seccomp_data.
	offNr   = 0
	offArch = 4
	// The low 32 bits of args[0] on a little-endian machine (amd64, arm64),
	// where every CLONE_NEW* flag lives.
	offArg0Lo = 16

	retAllow = unix.SECCOMP_RET_ALLOW
)

func retErrno(e syscall.Errno) uint32 { return unix.SECCOMP_RET_ERRNO | uint32(e) }

// noUsernsFilter is what Docker's default seccomp profile does to user
// namespaces: clone(2) and unshare(2) with CLONE_NEWUSER fail with EPERM,
// and clone3(2), whose flags live in memory a classic BPF filter cannot
// read, fails with ENOSYS, so that callers (Go's os/exec among them) fall
// back to clone(2).
func noUsernsFilter() []unix.SockFilter {
	return []unix.SockFilter{
		/* 0 */ {Code: bpfLd, K: offNr},
		/* 1 */ {Code: bpfJeq, K: unix.SYS_CLONE3, Jt: 5}, // → 7
		/* 2 */ {Code: bpfJeq, K: unix.SYS_CLONE, Jt: 1}, // → 4
		/* 3 */ {Code: bpfJeq, K: unix.SYS_UNSHARE, Jf: 2}, // → 4, else 6
		/* 4 */ {Code: bpfLd, K: offArg0Lo},
		/* 5 */ {Code: bpfJset, K: unix.CLONE_NEWUSER, Jt: 2}, // → 8
		/* 6 */ {Code: bpfRet, K: retAllow},
		/* 7 */ {Code: bpfRet, K: retErrno(unix.ENOSYS)},
		/* 8 */ {Code: bpfRet, K: retErrno(unix.EPERM)},
	}
}

// noMountFilter makes every system call that mounts or changes a mount fail
// with EPERM, as inside a user namespace that Ubuntu's AppArmor restriction
// (kernel.apparmor_restrict_unprivileged_userns=1) left without
// capabilities: the namespaces are created, the first mount is refused.
func noMountFilter() []unix.SockFilter {
	nrs := []uint32{unix.SYS_MOUNT, unix.SYS_MOUNT_SETATTR, unix.SYS_OPEN_TREE, unix.SYS_MOVE_MOUNT,
		unix.SYS_FSOPEN, unix.SYS_FSCONFIG, unix.SYS_FSMOUNT, unix.SYS_PIVOT_ROOT, unix.SYS_UMOUNT2}
	n := len(nrs)
	prog := []unix.SockFilter{{Code: bpfLd, K: offNr}}
	for i, nr := range nrs {
		// Instruction 1+i jumps to the EPERM return at 1+n+1.
		prog = append(prog, unix.SockFilter{Code: bpfJeq, K: nr, Jt: uint8(n - i)})
	}
	return append(prog,
		unix.SockFilter{Code: bpfRet, K: retAllow},
		unix.SockFilter{Code: bpfRet, K: retErrno(unix.EPERM)})
}

// seccompExec installs body behind a check of the architecture (a system
// call of another ABI is allowed: its numbers differ), on every thread
// (SECCOMP_FILTER_FLAG_TSYNC) after no_new_privs, which an unprivileged
// process needs to install a filter; checks with check that the filter is
// in force; and executes args.
func seccompExec(name string, body []unix.SockFilter, check func() error, args []string) int {
	fail := func(format string, a ...any) int {
		fmt.Fprintf(os.Stderr, name+": "+format+"\n", a...)
		return 2
	}
	if len(args) == 0 {
		return fail("no command")
	}
	runtime.LockOSThread()
	var arch uint32
	switch runtime.GOARCH {
	case "amd64":
		arch = unix.AUDIT_ARCH_X86_64
	case "arm64":
		arch = unix.AUDIT_ARCH_AARCH64
	default:
		return fail("unsupported architecture %s", runtime.GOARCH)
	}
	prog := append([]unix.SockFilter{
		{Code: bpfLd, K: offArch},
		{Code: bpfJeq, K: arch, Jt: 1},
		{Code: bpfRet, K: retAllow},
	}, body...)
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return fail("prctl(PR_SET_NO_NEW_PRIVS): %v", err)
	}
	fprog := unix.SockFprog{Len: uint16(len(prog)), Filter: &prog[0]}
	if _, _, e := unix.Syscall(unix.SYS_SECCOMP, unix.SECCOMP_SET_MODE_FILTER, unix.SECCOMP_FILTER_FLAG_TSYNC, uintptr(unsafe.Pointer(&fprog))); e != 0 {
		return fail("seccomp(SECCOMP_SET_MODE_FILTER, SECCOMP_FILTER_FLAG_TSYNC): %v", e)
	}
	if err := check(); err != nil {
		return fail("the filter is not in force: %v", err)
	}
	env := slices.DeleteFunc(os.Environ(), func(kv string) bool { return strings.HasPrefix(kv, helperEnv+"=") })
	err := syscall.Exec(args[0], args, env)
	return fail("execve %s: %v", args[0], err)
}

// checkFiltered checks that this process runs under a seccomp filter.
func checkFiltered() error {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return err
	}
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "Seccomp:"); ok {
			if v = strings.TrimSpace(v); v != "2" {
				return fmt.Errorf("/proc/self/status has Seccomp: %s, want 2", v)
			}
			return nil
		}
	}
	return fmt.Errorf("/proc/self/status has no Seccomp line")
}

// checkNoUserns checks the answers of the filtered calls, none of which can
// change this process: unshare(CLONE_NEWUSER) in a multithreaded process
// (every Go program) is EINVAL without the filter, and clone3 with no
// arguments is EFAULT or EINVAL.
func checkNoUserns() error {
	if err := checkFiltered(); err != nil {
		return err
	}
	if _, _, e := unix.RawSyscall(unix.SYS_UNSHARE, unix.CLONE_NEWUSER, 0, 0); e != unix.EPERM {
		return fmt.Errorf("unshare(CLONE_NEWUSER) answers %v, want EPERM", e)
	}
	if _, _, e := unix.RawSyscall(unix.SYS_CLONE3, 0, 0, 0); e != unix.ENOSYS {
		return fmt.Errorf("clone3 answers %v, want ENOSYS", e)
	}
	return nil
}
