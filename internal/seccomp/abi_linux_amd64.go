package seccomp

import "golang.org/x/sys/unix"

// The ABIs an amd64 kernel reports in seccomp_data.arch for a task.
const (
	nativeArch = unix.AUDIT_ARCH_X86_64
	compatArch = unix.AUDIT_ARCH_I386

	// compatIoctl is ioctl in arch/x86/entry/syscalls/syscall_32.tbl.
	compatIoctl = 54

	// x32SyscallBit is __X32_SYSCALL_BIT: x32 calls arrive as
	// AUDIT_ARCH_X86_64 with this bit set in the number. The filter clears
	// it before comparing, so 16, 514, 16|bit and 514|bit are all checked,
	// whichever of them a given kernel accepts as ioctl (older kernels,
	// with one table for both ABIs, ran x32's 512-547 even without the
	// bit).
	x32SyscallBit = 0x40000000
)

// nativeIoctls are the numbers, after clearing x32SyscallBit, that run ioctl
// under AUDIT_ARCH_X86_64: 16 (x86-64) and 514 (x32's compat_sys_ioctl), as
// in arch/x86/entry/syscalls/syscall_64.tbl.
var nativeIoctls = []uint32{unix.SYS_IOCTL, 514}

// nrMask is ANDed with the system-call number before comparing.
const nrMask = ^uint32(x32SyscallBit)
