//go:build linux

package remedy

import (
	"os"
	"strconv"
	"strings"
)

// Probe reads the host facts from /proc.
func Probe() Facts {
	f := Facts{
		MaxUserNamespaces:       ReadInt("/proc/sys/user/max_user_namespaces"),
		UnprivilegedUsernsClone: ReadInt("/proc/sys/kernel/unprivileged_userns_clone"),
		AppArmorRestrictUserns:  ReadInt("/proc/sys/kernel/apparmor_restrict_unprivileged_userns"),
		Seccomp:                 -1,
	}
	f.NestedUserns = nestedUserns()
	f.Binary, _ = os.Executable()
	if b, err := os.ReadFile("/proc/self/status"); err == nil {
		for _, l := range strings.Split(string(b), "\n") {
			if v, ok := strings.CutPrefix(l, "Seccomp:"); ok {
				if n, err := strconv.Atoi(strings.TrimSpace(v)); err == nil {
					f.Seccomp = n
				}
			}
		}
	}
	return f
}

// ReadInt reads a /proc or /sys file holding one integer; -1 when it is
// missing or unreadable (never 0, which would read as a setting).
func ReadInt(path string) int {
	b, err := os.ReadFile(path)
	if err != nil {
		return -1
	}
	n, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		return -1
	}
	return n
}

// nestedUserns reads /proc/self/uid_map: the initial user namespace maps
// every id to itself ("0 0 4294967295"), any other one does not. It returns
// 1 for a nested namespace, 0 for the initial one and -1 when unknown.
func nestedUserns() int {
	b, err := os.ReadFile("/proc/self/uid_map")
	if err != nil {
		return -1
	}
	if f := strings.Fields(string(b)); len(f) == 3 && f[0] == "0" && f[1] == "0" && f[2] == "4294967295" {
		return 0
	}
	return 1
}
