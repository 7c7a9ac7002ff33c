//go:build linux

package landlock

import (
	"golang.org/x/sys/unix"
)

// ABI returns the Landlock ABI version the kernel supports, or an error
// (EOPNOTSUPP when Landlock is built in but disabled, ENOSYS when absent).
func ABI() (int, error) {
	const createRulesetVersion = 1 << 0 // LANDLOCK_CREATE_RULESET_VERSION
	v, _, e := unix.Syscall(unix.SYS_LANDLOCK_CREATE_RULESET, 0, 0, createRulesetVersion)
	if e != 0 {
		return 0, e
	}
	return int(v), nil
}
