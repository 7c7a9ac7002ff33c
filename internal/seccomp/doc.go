// Package seccomp builds and installs the seccomp filter that keeps a
// sandboxed command from pushing input into the terminal it was started
// from.
//
// ioctl(fd, TIOCSTI, &c) queues c on a terminal's input as if it had been
// typed, so a command that shares the invoking terminal can queue a shell
// command line that runs, outside the sandbox, once agentbox exits. The
// kernel refuses TIOCSTI only when the sysctl dev.tty.legacy_tiocsti is 0
// (Linux 6.2 and later), and even then not to a caller with CAP_SYS_ADMIN.
// TIOCLINUX's TIOCL_PASTESEL does the same on a virtual console (without
// CAP_SYS_ADMIN before Linux 6.7). The filter answers both requests with EPERM, whatever the sysctl
// says, and lets every other system call and every other ioctl through:
// window size (TIOCSWINSZ, TIOCGWINSZ), job control (TIOCSPGRP, TIOCGPGRP)
// and raw mode (TCSETS, TCSETSW, TCSETSF) keep working.
//
// The program is classic BPF written here in Go: no libseccomp, no cgo. It
// compares only the low 32 bits of the request argument, because the kernel's
// ioctl takes the request as an unsigned int and drops the high half: a filter
// comparing 64 bits would let TIOCSTI|1<<32 through.
//
// Every system-call ABI a task of this build can use is covered:
//
//   - amd64: the x86-64 ABI, the x32 ABI (numbers with bit 0x40000000 set,
//     reported under AUDIT_ARCH_X86_64; its ioctl is 514) and the i386 ABI
//     (int 0x80 or a 32-bit binary, reported as AUDIT_ARCH_I386; its ioctl
//     is 54). Both x86-64 numbers, 16 and 514, are checked with and without
//     the x32 bit.
//   - arm64: the AArch64 ABI (ioctl 29) and the AArch32 compat ABI
//     (AUDIT_ARCH_ARM, ioctl 54).
//
// A foreign ABI is filtered like the native one: its ioctl with TIOCSTI or
// TIOCLINUX gets EPERM, everything else is allowed, so 32-bit programs keep
// running. Any other seccomp_data.arch cannot come from a kernel that runs
// this build; should it appear, the filter kills the process
// (SECCOMP_RET_KILL_PROCESS) rather than guess the meaning of its numbers.
// It does not answer EPERM there: a task whose every call fails, exit_group
// included, would spin forever.
//
// It is not a general system-call policy, not a replacement for Landlock or
// namespaces, and does not stop a command from writing to a terminal, only
// from queueing input on one. It does not stop io_uring, which has no
// operation that reaches a terminal's ioctl.
//
// Use, on the init side, on the thread that will fork the command:
//
//	runtime.LockOSThread() // seccomp filters are per thread; children inherit the forking thread's
//	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
//		return fmt.Errorf("prctl(PR_SET_NO_NEW_PRIVS): %w", err)
//	}
//	if err := seccomp.InstallTTYGuard(); err != nil {
//		return err
//	}
//	// os.StartProcess from this goroutine: the command inherits the filter.
//
// A failure reads, for example,
//
//	seccomp(SECCOMP_SET_MODE_FILTER): permission denied: the thread has no no_new_privs and no CAP_SYS_ADMIN; call prctl(PR_SET_NO_NEW_PRIVS, 1) on the same locked thread first
package seccomp
