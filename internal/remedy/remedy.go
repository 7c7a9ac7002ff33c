// Package remedy maps what agentbox observed when it could not build a
// sandbox to the cause and what the user can do about it. The table is pure:
// the facts are gathered by Probe (from /proc) and each row is unit-tested.
package remedy

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"syscall"
)

// Stage is where the failure happened.
type Stage int

const (
	// Clone: creating the user, mount and PID namespaces.
	Clone Stage = iota
	// Mount: mounting inside the new namespaces.
	Mount
)

// Facts are the host settings that explain namespace failures. A value of
// -1 means the setting does not exist on this kernel or could not be read.
type Facts struct {
	MaxUserNamespaces       int // /proc/sys/user/max_user_namespaces
	UnprivilegedUsernsClone int // /proc/sys/kernel/unprivileged_userns_clone (Debian, older Ubuntu)
	AppArmorRestrictUserns  int // /proc/sys/kernel/apparmor_restrict_unprivileged_userns (Ubuntu ≥ 23.10)
	Seccomp                 int // "Seccomp:" of /proc/self/status: 0 none, 1 strict, 2 filter
	// NestedUserns is 1 when this process runs in a user namespace other
	// than the initial one (a container's, or another sandbox's): limits and
	// policies of the enclosing namespaces then apply too, and only their
	// owners can change them. 0 in the initial namespace, -1 unknown.
	NestedUserns int
	Binary       string
}

// Cause is one diagnosis: what is wrong and how to fix it.
type Cause struct {
	Cause  string
	Remedy string
	// Userns is true when the cause is that this host does not let
	// agentbox use user namespaces (callers then wrap ErrUsernsUnavailable).
	Userns bool
}

func (c Cause) String() string { return c.Cause + "; " + c.Remedy }

// ErrUsernsUnavailable is wrapped by errors that mean this host does not let
// agentbox create its namespaces.
var ErrUsernsUnavailable = errors.New("user namespaces unavailable")

// Diagnose returns the likely cause of err at stage, given the host facts.
func Diagnose(stage Stage, err error, f Facts) Cause {
	var errno syscall.Errno
	errors.As(err, &errno)
	// Inside a nested user namespace the limits of every enclosing one
	// apply as well (the kernel checks each level), and a sysctl set here
	// cannot lift them.
	nested := ""
	if f.NestedUserns == 1 {
		nested = "; agentbox runs in a nested user namespace (a container's or another sandbox's): the limit of every enclosing user namespace applies too, so raise it there as well (on the host, or in the container's configuration)"
	}
	switch {
	case stage == Clone && errno == syscall.ENOSPC && f.MaxUserNamespaces == 0:
		return Cause{"user namespaces are disabled (user.max_user_namespaces = 0)",
			"enable them as root: sysctl -w user.max_user_namespaces=15000 (persist it in /etc/sysctl.d/)" + nested, true}
	case stage == Clone && errno == syscall.ENOSPC:
		return Cause{fmt.Sprintf("the limit on user namespaces is exhausted (user.max_user_namespaces = %d)", f.MaxUserNamespaces),
			"raise it as root: sysctl -w user.max_user_namespaces=15000, or end other sandboxes" + nested, true}
	case stage == Clone && errno == syscall.EPERM && f.UnprivilegedUsernsClone == 0:
		return Cause{"unprivileged user namespaces are disabled (kernel.unprivileged_userns_clone = 0)",
			"enable them as root: sysctl -w kernel.unprivileged_userns_clone=1 (persist it in /etc/sysctl.d/)", true}
	case stage == Clone && errno == syscall.EPERM && f.Seccomp == 2:
		return Cause{"a seccomp filter forbids creating user namespaces (this usually means a container with the default profile)",
			"run the container with a seccomp profile that allows clone/unshare with CLONE_NEWUSER (e.g. docker run --security-opt seccomp=unconfined), or run agentbox on the host", true}
	case stage == Clone && errno == syscall.EPERM && f.AppArmorRestrictUserns == 1:
		// Ubuntu's unprivileged_userns profile normally lets the clone
		// succeed and denies capabilities inside; a profile with
		// "deny userns" (or a stricter policy) refuses the clone itself.
		return Cause{"AppArmor restricts unprivileged user namespaces (kernel.apparmor_restrict_unprivileged_userns = 1)",
			appArmorRemedy(f.Binary), true}
	case stage == Clone && errno == syscall.EPERM:
		return Cause{"the kernel refused to create a user namespace (EPERM)",
			"check, as root: sysctl kernel.unprivileged_userns_clone (Debian: must be 1), sysctl kernel.apparmor_restrict_unprivileged_userns (Ubuntu ≥ 23.10: 1 needs an AppArmor profile for agentbox), sysctl user.max_user_namespaces (must be > 0), and any SELinux or seccomp policy applied to agentbox (Seccomp: in /proc/self/status)", true}
	case stage == Clone && errno == syscall.EINVAL:
		return Cause{"the kernel does not support the namespaces agentbox needs (EINVAL)",
			"use a kernel built with CONFIG_USER_NS, CONFIG_PID_NS and mount namespaces", true}
	case stage == Mount && errno == syscall.EPERM && f.AppArmorRestrictUserns == 1:
		return Cause{"AppArmor restricts unprivileged user namespaces (kernel.apparmor_restrict_unprivileged_userns = 1): the namespace was created but may not mount",
			appArmorRemedy(f.Binary), true}
	case stage == Mount && errno == syscall.EPERM && f.Seccomp == 2:
		return Cause{"the new namespace may not mount (EPERM), and a seccomp filter applies to agentbox (this usually means a container)",
			"run the container with a seccomp profile that allows mount, mount_setattr, open_tree, move_mount, fsopen, fsconfig and fsmount (e.g. docker run --security-opt seccomp=unconfined), or run agentbox on the host; otherwise an LSM (AppArmor, SELinux) policy forbids it", true}
	case stage == Mount && errno == syscall.EPERM:
		return Cause{"the new namespace may not mount (EPERM)",
			"an LSM policy restricts user namespaces: on Ubuntu ≥ 23.10 (kernel.apparmor_restrict_unprivileged_userns = 1) install an AppArmor profile for it (profile agentbox " + binaryOrDefault(f.Binary) + " flags=(unconfined) { userns, }, see the README's troubleshooting); under SELinux allow user namespaces for its domain; in a container, allow mount in its seccomp profile", true}
	}
	if stage == Clone {
		return Cause{"the sandbox's init process could not be started", "check the error above (memory, process or file limits: ulimit -u, ulimit -n)", false}
	}
	return Cause{"the sandbox's mounts could not be set up", "check that /tmp, /var/tmp, /dev/shm and the session root exist and are directories on this host", false}
}

// appArmorRemedy tells how to install AppArmorProfile(binary).
func appArmorRemedy(binary string) string {
	return "install an AppArmor profile for this binary as root, in /etc/apparmor.d/agentbox:\n\n" + AppArmorProfile(binary) +
		"\nthen: apparmor_parser -r /etc/apparmor.d/agentbox"
}

// defaultBinary is where the profile points when the binary's path is
// unknown.
const defaultBinary = "/usr/local/bin/agentbox"

func binaryOrDefault(path string) string {
	if path == "" {
		return defaultBinary
	}
	return path
}

// AppArmorProfile is the profile that lets the agentbox binary at path use
// user namespaces on Ubuntu ≥ 23.10. AppArmor attaches a profile by the
// binary's resolved path (what os.Executable returns on Linux); a path with
// blanks or quotes is written as a quoted string, as apparmor_parser needs.
func AppArmorProfile(path string) string {
	path = binaryOrDefault(path)
	if strings.ContainsAny(path, " \t\n\"\\#") {
		path = strconv.Quote(path)
	}
	return fmt.Sprintf("abi <abi/4.0>,\ninclude <tunables/global>\nprofile agentbox %s flags=(unconfined) {\n  userns,\n}\n", path)
}
