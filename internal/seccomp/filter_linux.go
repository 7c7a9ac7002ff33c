//go:build linux && (amd64 || arm64)

package seccomp

import (
	"errors"
	"fmt"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Offsets into struct seccomp_data (include/uapi/linux/seccomp.h):
//
//	struct seccomp_data {
//		int   nr;                  //  0
//		__u32 arch;                //  4
//		__u64 instruction_pointer; //  8
//		__u64 args[6];             // 16
//	};
//
// Classic BPF loads 32-bit words in host byte order, and both supported
// targets are little endian, so the low word of args[1] is at 16+8*1.
const (
	offNr      = 0
	offArch    = 4
	offArg1Low = 16 + 8*1
)

// The instruction encodings the filter uses; the kernel's seccomp verifier
// (seccomp_check_filter) accepts each of them.
const (
	ldAbs = unix.BPF_LD | unix.BPF_W | unix.BPF_ABS
	andK  = unix.BPF_ALU | unix.BPF_AND | unix.BPF_K
	jeqK  = unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K
	retK  = unix.BPF_RET | unix.BPF_K
)

// The filter's three outcomes.
const (
	retAllow = unix.SECCOMP_RET_ALLOW
	retDeny  = unix.SECCOMP_RET_ERRNO | uint32(unix.EPERM)
	retKill  = unix.SECCOMP_RET_KILL_PROCESS
)

// label names an instruction that a conditional jump can target.
type label int

const (
	next    label = iota // not a label: fall through to the following instruction
	lCompat              // seccomp_data.arch is loaded and is not the native ABI
	lReq                 // the call is an ioctl: check the request
	lKill
	lDeny
	lAllow
)

// insn is one instruction before assembly: jumps name labels, not offsets.
type insn struct {
	at     label // the label this instruction carries, or next
	code   uint16
	k      uint32
	jt, jf label
}

// program is the filter in source form:
//
//	A = arch
//	if A != native: goto compat
//	A = nr & nrMask
//	if A is one of nativeIoctls: goto req; else allow
//	compat: if A != compatArch: kill
//	A = nr
//	if A == compatIoctl: goto req; else allow
//	req: A = low 32 bits of args[1]
//	if A == TIOCSTI or A == TIOCLINUX: EPERM; else allow
func program() []insn {
	p := []insn{
		{code: ldAbs, k: offArch},
		{code: jeqK, k: nativeArch, jf: lCompat},
		{code: ldAbs, k: offNr},
	}
	if nrMask != ^uint32(0) {
		p = append(p, insn{code: andK, k: nrMask})
	}
	for i, nr := range nativeIoctls {
		jf := next
		if i == len(nativeIoctls)-1 {
			jf = lAllow
		}
		p = append(p, insn{code: jeqK, k: nr, jt: lReq, jf: jf})
	}
	return append(p,
		insn{at: lCompat, code: jeqK, k: compatArch, jf: lKill},
		insn{code: ldAbs, k: offNr},
		insn{code: jeqK, k: compatIoctl, jt: lReq, jf: lAllow},
		insn{at: lReq, code: ldAbs, k: offArg1Low},
		insn{code: jeqK, k: unix.TIOCSTI, jt: lDeny},
		insn{code: jeqK, k: unix.TIOCLINUX, jt: lDeny, jf: lAllow},
		insn{at: lKill, code: retK, k: retKill},
		insn{at: lDeny, code: retK, k: retDeny},
		insn{at: lAllow, code: retK, k: retAllow},
	)
}

// assemble resolves labels into the forward offsets classic BPF jumps take.
// It panics on a label that is missing, behind the jump or out of reach: the
// source is a constant of this package, so that is a bug the tests catch.
func assemble(src []insn) []unix.SockFilter {
	pos := make(map[label]int)
	for i, in := range src {
		if in.at != next {
			pos[in.at] = i
		}
	}
	off := func(from int, to label) uint8 {
		if to == next {
			return 0
		}
		p, ok := pos[to]
		d := p - from - 1
		if !ok || d < 0 || d > 255 {
			panic(fmt.Sprintf("seccomp: instruction %d jumps to label %d at %d (found %v)", from, to, p, ok))
		}
		return uint8(d)
	}
	out := make([]unix.SockFilter, len(src))
	for i, in := range src {
		out[i] = unix.SockFilter{Code: in.code, Jt: off(i, in.jt), Jf: off(i, in.jf), K: in.k}
	}
	return out
}

// Filter returns the classic BPF program InstallTTYGuard installs: ioctl
// TIOCSTI and TIOCLINUX, on the native ABI and on the compat ABIs (x32 and
// i386 on amd64, AArch32 on arm64), return EPERM; every other call is
// allowed; a seccomp_data.arch no kernel running this build can report kills
// the process. Each call returns a new slice the caller may keep or change.
func Filter() []unix.SockFilter {
	return assemble(program())
}

// InstallTTYGuard installs Filter on the calling thread. seccomp filters
// belong to a thread, and a child inherits the filters of the thread that
// forked it, so the caller must hold runtime.LockOSThread from before this
// call until it has started the command from the same goroutine. The thread
// must have no_new_privs set (prctl(PR_SET_NO_NEW_PRIVS, 1)) or hold
// CAP_SYS_ADMIN. The filter cannot be removed: the thread, and every child it
// forks afterwards, keeps it for life.
func InstallTTYGuard() error {
	prog := Filter()
	fprog := unix.SockFprog{Len: uint16(len(prog)), Filter: &prog[0]}
	_, _, errno := unix.Syscall(unix.SYS_SECCOMP, unix.SECCOMP_SET_MODE_FILTER, 0, uintptr(unsafe.Pointer(&fprog)))
	if errno == 0 {
		return nil
	}
	op := "seccomp(SECCOMP_SET_MODE_FILTER)"
	if errno == unix.ENOSYS {
		// seccomp(2) arrived in Linux 3.17; prctl installs the same filter
		// on older kernels.
		op = "prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER)"
		_, _, errno = unix.Syscall6(unix.SYS_PRCTL, unix.PR_SET_SECCOMP, unix.SECCOMP_MODE_FILTER, uintptr(unsafe.Pointer(&fprog)), 0, 0, 0)
		if errno == 0 {
			return nil
		}
	}
	return installError(op, errno)
}

// installError names the call and the errno and, for the errnos a caller
// can fix, says how.
func installError(op string, errno unix.Errno) error {
	switch {
	case errors.Is(errno, unix.EACCES):
		return fmt.Errorf("%s: %w: the thread has no no_new_privs and no CAP_SYS_ADMIN; call prctl(PR_SET_NO_NEW_PRIVS, 1) on the same locked thread first", op, errno)
	case errors.Is(errno, unix.EINVAL), errors.Is(errno, unix.ENOSYS):
		return fmt.Errorf("%s: %w: the kernel has no seccomp filter support (or rejected the program); seccomp filters need a kernel built with CONFIG_SECCOMP=y and CONFIG_SECCOMP_FILTER=y", op, errno)
	case errors.Is(errno, unix.ENOMEM):
		return fmt.Errorf("%s: %w: the thread already carries the maximum of 32768 filter instructions", op, errno)
	}
	return fmt.Errorf("%s: %w", op, errno)
}
