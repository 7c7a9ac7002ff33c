// Package testenv holds the helpers that decide whether a test can run here.
//
// A test may skip only through a RequireX helper. Each prints what is missing,
// the value it saw and how to enable it. With AGENTBOX_TEST_REQUIRE=1 (set by
// .ci/run) a missing requirement fails the test instead of skipping it, so CI
// can never pass by skipping the tests that matter (bubblewrap's
// BWRAP_MUST_WORK).
package testenv

import (
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// Strict reports whether missing requirements fail instead of skip.
func Strict() bool { return os.Getenv("AGENTBOX_TEST_REQUIRE") == "1" }

// missing skips or fails t with a message naming the requirement, the value
// seen and the way to enable it.
func missing(t testing.TB, what, seen, remedy string) {
	t.Helper()
	msg := fmt.Sprintf("requirement not met: %s (seen: %s); to enable: %s", what, seen, remedy)
	if Strict() {
		t.Fatal(msg + " [AGENTBOX_TEST_REQUIRE=1: failing instead of skipping]")
	}
	t.Skip(msg)
}

// RequireRoot needs the test process to run as uid 0 (to mount, or to create
// test users).
func RequireRoot(t testing.TB) {
	t.Helper()
	if os.Geteuid() != 0 {
		missing(t, "running as root", fmt.Sprintf("euid %d", os.Geteuid()), "run the tests as root (sudo go test ./...), as .ci/run does")
	}
}

// RequireUserns needs unprivileged user namespaces with mount support: it
// runs `unshare -Urm true` as the current user.
func RequireUserns(t testing.TB) {
	t.Helper()
	out, err := exec.Command("unshare", "-Urm", "true").CombinedOutput()
	if err != nil {
		missing(t, "user and mount namespaces", strings.TrimSpace(fmt.Sprintf("%v %s", err, out)),
			"sysctl -w user.max_user_namespaces=15000 (and kernel.unprivileged_userns_clone=1 on Debian kernels that have it); see README troubleshooting")
	}
}

// RequireCommand needs an executable on PATH.
func RequireCommand(t testing.TB, name, pkg string) string {
	t.Helper()
	p, err := exec.LookPath(name)
	if err != nil {
		missing(t, "command "+name, err.Error(), "apt-get install "+pkg)
	}
	return p
}

// RequireLandlock needs a kernel with Landlock enabled: it asks the kernel
// for its Landlock ABI (landlock_create_ruleset with the VERSION flag).
func RequireLandlock(t testing.TB) {
	t.Helper()
	const createRulesetVersion = 1 << 0
	v, _, e := unix.Syscall(unix.SYS_LANDLOCK_CREATE_RULESET, 0, 0, createRulesetVersion)
	if e != 0 {
		missing(t, "Landlock", fmt.Sprintf("landlock_create_ruleset: %v (ABI %d)", e, v), "use Linux ≥ 6.12 booted with lsm=...,landlock (CONFIG_SECURITY_LANDLOCK=y)")
	}
}

// RequireLandlockABI needs Landlock ABI want or newer; have is the ABI the
// caller read (its own probe knows errata the raw version call does not).
func RequireLandlockABI(t testing.TB, have, want int, detail string) {
	t.Helper()
	if have < want {
		missing(t, fmt.Sprintf("Landlock ABI >= %d", want), fmt.Sprintf("ABI %d, %s", have, detail), "boot a newer Linux with landlock in lsm=... (ABI 5: 6.10, ABI 6: 6.12)")
	}
}
