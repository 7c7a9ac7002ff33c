// Package remedy maps what agentbox observed when it could not build a
// sandbox to the cause and what the user can do about it. The table is pure:
// the facts are gathered by Probe (from /proc) and each row is unit-tested.
package remedy

import (
	"errors"
	"fmt"
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
	Binary                  string
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
	switch {
	case stage == Clone && errno == syscall.ENOSPC && f.MaxUserNamespaces == 0:
		return Cause{"user namespaces are disabled (user.max_user_namespaces = 0)",
			"enable them as root: sysctl -w user.max_user_namespaces=15000 (persist it in /etc/sysctl.d/)", true}
	case stage == Clone && errno == syscall.ENOSPC:
		return Cause{fmt.Sprintf("the limit on user namespaces is exhausted (user.max_user_namespaces = %d)", f.MaxUserNamespaces),
			"raise it as root: sysctl -w user.max_user_namespaces=15000, or end other sandboxes", true}
	case stage == Clone && errno == syscall.EPERM && f.UnprivilegedUsernsClone == 0:
		return Cause{"unprivileged user namespaces are disabled (kernel.unprivileged_userns_clone = 0)",
			"enable them as root: sysctl -w kernel.unprivileged_userns_clone=1 (persist it in /etc/sysctl.d/)", true}
	case stage == Clone && errno == syscall.EPERM && f.Seccomp == 2:
		return Cause{"a seccomp filter forbids creating user namespaces (this usually means a container with the default profile)",
			"run the container with a seccomp profile that allows clone/unshare with CLONE_NEWUSER (e.g. docker run --security-opt seccomp=unconfined), or run agentbox on the host", true}
	case stage == Clone && errno == syscall.EPERM:
		return Cause{"the kernel refused to create a user namespace (EPERM)",
			"check the sysctls kernel.unprivileged_userns_clone and user.max_user_namespaces, and any LSM (AppArmor, SELinux) or seccomp policy applied to agentbox", true}
	case stage == Clone && errno == syscall.EINVAL:
		return Cause{"the kernel does not support the namespaces agentbox needs (EINVAL)",
			"use a kernel built with CONFIG_USER_NS, CONFIG_PID_NS and mount namespaces", true}
	case stage == Mount && errno == syscall.EPERM && f.AppArmorRestrictUserns == 1:
		return Cause{"AppArmor restricts unprivileged user namespaces (kernel.apparmor_restrict_unprivileged_userns = 1): the namespace was created but may not mount",
			"install an AppArmor profile for this binary as root, in /etc/apparmor.d/agentbox:\n\n" + AppArmorProfile(f.Binary) +
				"\nthen: apparmor_parser -r /etc/apparmor.d/agentbox", true}
	case stage == Mount && errno == syscall.EPERM:
		return Cause{"the new namespace may not mount (EPERM)",
			"an LSM (AppArmor, SELinux) or a container runtime restricts mounts in user namespaces; allow user namespaces for this binary", true}
	}
	if stage == Clone {
		return Cause{"the sandbox's init process could not be started", "check the error above (memory, process or file limits: ulimit -u, ulimit -n)", false}
	}
	return Cause{"the sandbox's mounts could not be set up", "check that /tmp, /var/tmp, /dev/shm and the session root exist and are directories on this host", false}
}

// AppArmorProfile is the profile that lets the agentbox binary at path use
// user namespaces on Ubuntu ≥ 23.10.
func AppArmorProfile(path string) string {
	if path == "" {
		path = "/usr/local/bin/agentbox"
	}
	return fmt.Sprintf("abi <abi/4.0>,\ninclude <tunables/global>\nprofile agentbox %s flags=(unconfined) {\n  userns,\n}\n", path)
}
