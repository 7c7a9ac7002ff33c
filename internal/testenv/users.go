//go:build linux

package testenv

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
)

// User is a real, non-root account the integration tests run agentbox as.
type User struct {
	Name     string
	UID, GID int
	Home     string
}

// Names of the two test users. They are ordinary accounts with a home under
// /home and /bin/sh as shell; they are kept between runs (creating them is
// the slow part) and reused when they already exist.
const (
	UserA = "abtest-a"
	UserB = "abtest-b"
)

var (
	usersOnce sync.Once
	usersA    User
	usersB    User
	usersErr  error
)

// Users returns the two test users, creating them the first time it is
// called in this process when they do not exist yet (useradd -m -s /bin/sh).
// It needs root; without root it skips (or fails under AGENTBOX_TEST_REQUIRE=1)
// through RequireRoot.
//
// Postcondition: both users exist, have distinct non-zero uids and gids, and
// own an existing home directory.
func Users(t testing.TB) (a, b User) {
	t.Helper()
	RequireRoot(t)
	usersOnce.Do(func() {
		if usersA, usersErr = ensureUser(UserA); usersErr != nil {
			return
		}
		usersB, usersErr = ensureUser(UserB)
		if usersErr == nil && (usersA.UID == usersB.UID || usersA.GID == usersB.GID) {
			usersErr = fmt.Errorf("test users %s and %s share uid %d/%d or gid %d/%d: fix /etc/passwd",
				usersA.Name, usersB.Name, usersA.UID, usersB.UID, usersA.GID, usersB.GID)
		}
	})
	if usersErr != nil {
		t.Fatalf("test users: %v", usersErr)
	}
	return usersA, usersB
}

// ensureUser looks name up and creates it when it is missing. A useradd that
// fails because another process created the user meanwhile (exit status 9)
// is not an error: the lookup after it decides.
func ensureUser(name string) (User, error) {
	if _, err := user.Lookup(name); err != nil {
		var unknown user.UnknownUserError
		if !errors.As(err, &unknown) {
			return User{}, fmt.Errorf("look up user %s: %w", name, err)
		}
		useradd, err := exec.LookPath("useradd")
		if err != nil {
			return User{}, fmt.Errorf("create user %s: %w (apt-get install passwd)", name, err)
		}
		out, err := exec.Command(useradd, "-m", "-s", "/bin/sh", name).CombinedOutput()
		var ee *exec.ExitError
		if err != nil && !(errors.As(err, &ee) && ee.ExitCode() == 9) {
			return User{}, fmt.Errorf("useradd -m -s /bin/sh %s: %w: %s", name, err, strings.TrimSpace(string(out)))
		}
	}
	pw, err := user.Lookup(name)
	if err != nil {
		return User{}, fmt.Errorf("look up user %s after useradd: %w", name, err)
	}
	u := User{Name: name, Home: pw.HomeDir}
	if u.UID, err = strconv.Atoi(pw.Uid); err != nil {
		return User{}, fmt.Errorf("user %s: uid %q: %w", name, pw.Uid, err)
	}
	if u.GID, err = strconv.Atoi(pw.Gid); err != nil {
		return User{}, fmt.Errorf("user %s: gid %q: %w", name, pw.Gid, err)
	}
	if u.UID == 0 || u.GID == 0 {
		return User{}, fmt.Errorf("user %s has uid %d gid %d: the test users must not be root", name, u.UID, u.GID)
	}
	if u.Home == "" || !strings.HasPrefix(u.Home, "/home/") {
		return User{}, fmt.Errorf("user %s has home %q, want one under /home: userdel -r %s and run again", name, u.Home, name)
	}
	// A home removed since the user was created (by hand, or a previous
	// run's cleanup gone wrong) is made again, as useradd -m would.
	if err := os.Mkdir(u.Home, 0o750); err != nil && !errors.Is(err, os.ErrExist) {
		return User{}, fmt.Errorf("user %s: mkdir home %s: %w", name, u.Home, err)
	}
	var st syscall.Stat_t
	if err := syscall.Lstat(u.Home, &st); err != nil {
		return User{}, fmt.Errorf("user %s: lstat home %s: %w", name, u.Home, err)
	}
	if st.Mode&syscall.S_IFMT != syscall.S_IFDIR {
		return User{}, fmt.Errorf("user %s: home %s is not a directory (mode %o)", name, u.Home, st.Mode)
	}
	if int(st.Uid) != u.UID || int(st.Gid) != u.GID {
		if err := os.Lchown(u.Home, u.UID, u.GID); err != nil {
			return User{}, fmt.Errorf("user %s: chown home %s: %w", name, u.Home, err)
		}
	}
	return u, nil
}

// Cmd returns a command that runs as u: uid and gid u's, no supplementary
// groups, in u's home, with a clean environment (HOME, USER, LOGNAME and
// PATH=/usr/local/bin:/usr/bin:/bin only). name is looked up in the test
// process's PATH, as exec.Command does.
func (u User) Cmd(name string, args ...string) *exec.Cmd {
	cmd := exec.Command(name, args...)
	cmd.SysProcAttr = &syscall.SysProcAttr{
		Credential: &syscall.Credential{Uid: uint32(u.UID), Gid: uint32(u.GID), Groups: []uint32{}},
	}
	cmd.Env = u.Env()
	cmd.Dir = u.Home
	return cmd
}

// Env returns the clean environment Cmd gives u's commands.
func (u User) Env() []string {
	return []string{
		"HOME=" + u.Home,
		"USER=" + u.Name,
		"LOGNAME=" + u.Name,
		"PATH=/usr/local/bin:/usr/bin:/bin",
	}
}

// RequireUserns needs u to be able to create user and mount namespaces: it
// runs `unshare -Urm true` as u (root can create them where an ordinary user
// cannot, so RequireUserns from a root test process would prove nothing).
func (u User) RequireUserns(t testing.TB) {
	t.Helper()
	path := RequireCommand(t, "unshare", "util-linux")
	out, err := u.Cmd(path, "-Urm", "true").CombinedOutput()
	if err != nil {
		missing(t, "user and mount namespaces for uid "+strconv.Itoa(u.UID), strings.TrimSpace(fmt.Sprintf("%v %s", err, out)),
			"sysctl -w user.max_user_namespaces=15000 (and kernel.unprivileged_userns_clone=1 on Debian kernels that have it; on Ubuntu ≥ 24.04 allow userns in AppArmor); see README troubleshooting")
	}
}
