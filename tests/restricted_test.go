//go:build linux

package tests

import (
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentbox/agentbox/internal/testenv"
)

// The restricted-host tests (DESIGN.md section 8): when this host does not
// let agentbox create its namespaces, or lets it create them but not mount,
// agentbox exits 125 before running the command, names the cause it
// detected and prints the remedy. Each restriction is simulated for the
// agentbox process only, never for the host: a sysctl of a user namespace
// made for the test, or a seccomp filter installed by a helper that then
// executes agentbox.

// wantSetupRefusal checks that agentbox refused to start the command: status 125,
// nothing on stdout (the command prints "ran"), stderr containing every one
// of wants, and no session left under root.
func wantSetupRefusal(t *testing.T, what string, r result, root string, wants ...string) {
	t.Helper()
	wantCode(t, what, r, 125)
	if len(r.stdout) != 0 {
		t.Errorf("%s: the command ran: stdout %q", what, r.stdout)
	}
	msg := string(r.stderr)
	for _, want := range wants {
		if !strings.Contains(msg, want) {
			t.Errorf("%s: stderr %q does not say %q", what, msg, want)
		}
	}
	if !strings.HasPrefix(msg, "agentbox: ") {
		t.Errorf("%s: stderr %q does not start with \"agentbox: \"", what, msg)
	}
	if exists(t, root) {
		if ids := sessionIDs(t, root); len(ids) != 0 {
			t.Errorf("%s: sessions %q left under %s", what, ids, root)
		}
	}
}

// TestMaxUserNamespacesZero runs agentbox in a user namespace whose
// user.max_user_namespaces is 0 (the limit is per user namespace, and the
// namespace's root may lower it): clone with CLONE_NEWUSER fails with
// ENOSPC, as on a host where the administrator set the sysctl to 0.
func TestMaxUserNamespacesZero(t *testing.T) {
	t.Parallel()
	a, _ := users(t)
	unshare := testenv.RequireCommand(t, "unshare", "util-linux")
	p := a.project(t)
	root := filepath.Join(p, "root")
	// Inside, agentbox runs as uid 0 of the new namespace (a's uid on the
	// host); its session root and project directory are a's.
	cmd := a.Cmd(unshare, "-Urm", "/bin/sh", "-c",
		`echo 0 > /proc/sys/user/max_user_namespaces || exit 98
[ "$(cat /proc/sys/user/max_user_namespaces)" = 0 ] || exit 98
exec "$@"`,
		"sh", agentboxBin, "--root", root, "--", "sh", "-c", "echo ran")
	cmd.Dir = p
	r := run(t, cmd)
	if r.code == 98 {
		t.Fatalf("cannot set user.max_user_namespaces=0 in a new user namespace (Linux ≥ 4.9 lets its root): %v", r)
	}
	wantSetupRefusal(t, "agentbox with user.max_user_namespaces=0", r, root,
		"cannot create the sandbox's namespaces", "no space left on device",
		"user.max_user_namespaces = 0", "sysctl -w user.max_user_namespaces=15000",
		// Probe saw that agentbox runs in a user namespace that is not
		// the host's: raising the limit there alone may not do.
		"nested user namespace")
}

// TestContainerSeccomp runs agentbox under a seccomp filter like a container
// runtime's default profile (Docker's): clone and unshare with
// CLONE_NEWUSER fail with EPERM and clone3 with ENOSYS. Go's os/exec starts
// the init stage with clone(2) (strace: clone(...CLONE_NEWUSER...)), and would
// fall back to it from clone3. Root is refused as well: the filter applies
// whatever the credentials.
func TestContainerSeccomp(t *testing.T) {
	t.Parallel()
	a, _ := users(t)
	for _, u := range []user{a, rootUser} {
		t.Run(u.Name, func(t *testing.T) {
			t.Parallel()
			p := u.project(t)
			root := filepath.Join(p, "root")
			r := run(t, u.helperExec(p, "seccomp-nouserns-exec", agentboxBin, "--root", root, "--", "sh", "-c", "echo ran"))
			wantSetupRefusal(t, "agentbox under a container's seccomp filter", r, root,
				"cannot create the sandbox's namespaces", "operation not permitted",
				"seccomp filter forbids creating user namespaces", "seccomp profile", "CLONE_NEWUSER")
		})
	}
}

// TestMountRefused runs agentbox where the namespaces are created but every
// mount fails with EPERM, which is what Ubuntu's AppArmor restriction of
// unprivileged user namespaces looks like to agentbox (simulated with a
// seccomp filter, since the test cannot rely on AppArmor): the init stage's
// first mount fails, and agentbox names it.
func TestMountRefused(t *testing.T) {
	t.Parallel()
	a, _ := users(t)
	p := a.project(t)
	root := filepath.Join(p, "root")
	r := run(t, a.helperExec(p, "seccomp-nomount-exec", agentboxBin, "--root", root, "--", "sh", "-c", "echo ran"))
	wantSetupRefusal(t, "agentbox where mounts are refused", r, root,
		"mount", "operation not permitted", "user namespaces unavailable", "may not mount", "remedy: ", "AppArmor")
}

// helperExec returns a command that runs the test binary as the helper
// called name, as u, from dir, with args.
func (u user) helperExec(dir, name string, args ...string) *exec.Cmd {
	var cmd *exec.Cmd
	if u.UID == 0 {
		cmd = exec.Command(helperBin, args...)
		cmd.Env = []string{"HOME=/root", "USER=root", "LOGNAME=root", "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"}
	} else {
		cmd = u.Cmd(helperBin, args...)
	}
	cmd.Dir = dir
	cmd.Env = mergeEnv(cmd.Env, []string{helperEnv + "=" + name})
	cmd.WaitDelay = 10 * time.Second
	return cmd
}
