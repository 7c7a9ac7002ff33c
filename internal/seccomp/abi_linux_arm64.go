package seccomp

import "golang.org/x/sys/unix"

// The ABIs an arm64 kernel reports in seccomp_data.arch for a task.
const (
	nativeArch = unix.AUDIT_ARCH_AARCH64
	compatArch = unix.AUDIT_ARCH_ARM

	// compatIoctl is ioctl in arch/arm/tools/syscall.tbl (EABI), the
	// table of AArch32 tasks on an arm64 kernel.
	compatIoctl = 54
)

// nativeIoctls are the numbers that run ioctl under AUDIT_ARCH_AARCH64
// (include/uapi/asm-generic/unistd.h).
var nativeIoctls = []uint32{unix.SYS_IOCTL}

// nrMask is ANDed with the system-call number before comparing: arm64 has no
// ABI bit in the number, so nothing is masked.
const nrMask = ^uint32(0)
