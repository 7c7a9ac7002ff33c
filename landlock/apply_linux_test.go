//go:build linux

package landlock

// Apply is irreversible, so every test here that calls it runs its body in
// a child: the test re-runs the test binary with -test.run naming itself
// and childEnv set, and the child, seeing childEnv, takes the other branch
// (go-landlock's lltest does the same). The parent prepares the fixtures,
// which the child must not create with t.TempDir: the child could not
// remove them once restricted.

import (
	"bytes"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"
	"unsafe"

	"github.com/agentbox/agentbox/internal/testenv"
	"golang.org/x/sys/unix"
)

const (
	childEnv = "AGENTBOX_LANDLOCK_TEST_CHILD" // name of the test the child runs
	dirEnv   = "AGENTBOX_LANDLOCK_TEST_DIR"   // fixture directory made by the parent
	sockEnv  = "AGENTBOX_LANDLOCK_TEST_SOCK"  // abstract socket the parent listens on
)

// inChild reports whether this process is the child that runs t's body.
// inChild reports whether this is the child run of t. In the child it locks
// the test goroutine to its thread: Apply restricts the calling thread only.
func inChild(t *testing.T) bool {
	if os.Getenv(childEnv) != t.Name() {
		return false
	}
	runtime.LockOSThread()
	return true
}

// runChild runs t's body in a child with env added, and fails t with the
// child's output unless the child ran t and t passed there.
func runChild(t *testing.T, env ...string) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^"+regexp.QuoteMeta(t.Name())+"$", "-test.v", "-test.count=1")
	cmd.Env = append(append(os.Environ(), childEnv+"="+t.Name()), env...)
	out, err := cmd.CombinedOutput()
	if err != nil || !bytes.Contains(out, []byte("--- PASS: "+t.Name())) {
		t.Fatalf("child running %s: %v\n%s", t.Name(), err, out)
	}
}

// requireLandlockABI skips t (fails it under AGENTBOX_TEST_REQUIRE=1) when
// the kernel's Landlock ABI, as Apply reads it, is below want.
func requireLandlockABI(t *testing.T, want int) {
	t.Helper()
	abi, err := kernelABI()
	if abi == 0 {
		testenv.RequireLandlock(t)
		t.Fatalf("the kernel reports a Landlock ABI, but Apply's probe says: %v", err)
	}
	testenv.RequireLandlockABI(t, abi, want, fmt.Sprintf("%v; needs Linux >= %s", err, minKernel[want]))
}

// fixture is the directory tree of the filesystem tests: A is granted, B is
// not; B/secret is the sentinel that must never change.
type fixture struct{ dir string }

func (f fixture) a(name string) string { return filepath.Join(f.dir, "A", name) }
func (f fixture) b(name string) string { return filepath.Join(f.dir, "B", name) }

const secret = "sentinel: must not change\n"

func makeFixture(t *testing.T) fixture {
	t.Helper()
	f := fixture{t.TempDir()}
	for _, d := range []string{"A", "B"} {
		if err := os.Mkdir(filepath.Join(f.dir, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for name, data := range map[string]string{
		f.b("secret"): secret, f.b("granted.txt"): "granted\n", f.a("moveme"): "x", f.a("linkme"): "x", f.a("within"): "x",
	} {
		if err := os.WriteFile(name, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink(f.b("secret"), f.a("link-to-secret")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(f.dir, "B"), f.a("link-to-B")); err != nil {
		t.Fatal(err)
	}
	return f
}

// sentinelState is what must not change about B/secret.
func sentinelState(t *testing.T, f fixture) string {
	t.Helper()
	fi, err := os.Lstat(f.b("secret"))
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(f.b("secret"))
	if err != nil {
		t.Fatal(err)
	}
	return fmt.Sprintf("%q mode %v mtime %v", data, fi.Mode(), fi.ModTime().UnixNano())
}

// policy is the policy of the filesystem tests: write A and one file of B,
// a missing path (skipped), /dev/null and /dev/full; not /dev/zero.
func (f fixture) policy(mode Mode, scopes bool) Policy {
	return Policy{
		Mode: mode,
		Write: []Rule{
			{Path: filepath.Join(f.dir, "A"), Source: "test dir A"},
			{Path: f.b("granted.txt"), IsFile: true, Source: "test file rule"},
			{Path: filepath.Join(f.dir, "missing", "dir"), Source: "test missing"},
		},
		Devices: []Rule{{Path: "/dev/null", Source: "test device"}, {Path: "/dev/full", Source: "test device"}},
		Scopes:  scopes,
	}
}

func wantErrno(t *testing.T, what string, err error, want ...syscall.Errno) {
	t.Helper()
	for _, w := range want {
		if errors.Is(err, w) {
			return
		}
	}
	t.Errorf("%s = %v, want %v", what, err, want)
}

func wantOK(t *testing.T, what string, err error) {
	t.Helper()
	if err != nil {
		t.Errorf("%s = %v, want success", what, err)
	}
}

func writeFile(name string, flag int) error {
	fd, err := os.OpenFile(name, os.O_WRONLY|flag, 0o644)
	if err != nil {
		return err
	}
	_, err = fd.Write([]byte("written\n"))
	if cerr := fd.Close(); err == nil {
		err = cerr
	}
	return err
}

func TestApplyFilesystem(t *testing.T) {
	if !inChild(t) {
		requireLandlockABI(t, 5)
		testenv.RequireCommand(t, "sh", "dash")
		f := makeFixture(t)
		before := sentinelState(t, f)
		runChild(t, dirEnv+"="+f.dir)
		if after := sentinelState(t, f); after != before {
			t.Errorf("B/secret changed: %s, was %s", after, before)
		}
		return
	}
	f := fixture{os.Getenv(dirEnv)}

	// Apply restricts the calling thread only: threads that exist before it
	// stay outside the domain (init's signal relay depends on it). Park
	// goroutines on their own locked OS threads now, test them after.
	const nthreads = 4
	start, done := make(chan struct{}), make(chan error)
	for i := range nthreads {
		go func() {
			runtime.LockOSThread()
			<-start
			done <- writeFile(f.b(fmt.Sprintf("from-thread-%d", i)), os.O_CREATE)
		}()
	}

	plan, err := Apply(f.policy(Require, false))
	if err != nil {
		t.Fatalf("Apply = %v", err)
	}
	if !plan.Enforced || len(plan.Unenforced) != 0 || !slices.Equal(plan.Handled, allFS) {
		t.Fatalf("Apply = %+v, want all of %v handled", plan, allFS)
	}
	t.Log(plan.Summary())

	// Granted: A, the file rule, the devices.
	wantOK(t, "create A/new", writeFile(f.a("new"), os.O_CREATE))
	wantOK(t, "mkdir A/sub", os.Mkdir(f.a("sub"), 0o755))
	wantOK(t, "rename A/within → A/sub/within (refer inside A)", os.Rename(f.a("within"), f.a("sub/within")))
	wantOK(t, "symlink in A", os.Symlink("target", f.a("sym")))
	wantOK(t, "mkfifo in A", unix.Mkfifo(f.a("fifo"), 0o644))
	wantOK(t, "remove A/new", os.Remove(f.a("new")))
	wantOK(t, "write B/granted.txt (file rule)", writeFile(f.b("granted.txt"), os.O_TRUNC))
	wantOK(t, "truncate B/granted.txt (file rule)", os.Truncate(f.b("granted.txt"), 0))
	// A shell's `>/dev/null` opens with O_WRONLY|O_CREAT|O_TRUNC.
	wantOK(t, "open /dev/null O_WRONLY|O_CREAT|O_TRUNC", writeFile("/dev/null", os.O_CREATE|os.O_TRUNC))

	// Denied: everything else that writes.
	wantErrno(t, "create B/new", writeFile(f.b("new"), os.O_CREATE), unix.EACCES)
	wantErrno(t, "write B/secret through symlink A/link-to-secret", writeFile(f.a("link-to-secret"), 0), unix.EACCES)
	wantErrno(t, "create through directory symlink A/link-to-B/new", writeFile(f.a("link-to-B/new"), os.O_CREATE), unix.EACCES)
	wantErrno(t, "rename A/moveme → B/moveme", os.Rename(f.a("moveme"), f.b("moveme")), unix.EXDEV, unix.EACCES)
	wantErrno(t, "link A/linkme → B/linkme", os.Link(f.a("linkme"), f.b("linkme")), unix.EXDEV, unix.EACCES)
	wantErrno(t, "truncate B/secret", os.Truncate(f.b("secret"), 0), unix.EACCES)
	wantErrno(t, "open B/secret O_TRUNC", writeFile(f.b("secret"), os.O_TRUNC), unix.EACCES)
	wantErrno(t, "remove B/secret", os.Remove(f.b("secret")), unix.EACCES)
	wantErrno(t, "mkdir B/sub", os.Mkdir(f.b("sub"), 0o755), unix.EACCES)
	wantErrno(t, "symlink in B", os.Symlink("target", f.b("sym")), unix.EACCES)
	wantErrno(t, "mkfifo in B", unix.Mkfifo(f.b("fifo"), 0o644), unix.EACCES)
	wantErrno(t, "open /dev/zero O_WRONLY (not a granted device)", writeFile("/dev/zero", 0), unix.EACCES)

	// Not handled: reading, listing, executing.
	if data, err := os.ReadFile(f.b("secret")); err != nil || string(data) != secret {
		t.Errorf("read B/secret = %q, %v, want %q", data, err, secret)
	}
	if _, err := os.ReadDir(filepath.Join(f.dir, "B")); err != nil {
		t.Errorf("list B = %v, want success", err)
	}

	// ioctl_dev: a device opened now answers ioctls only when granted.
	// /dev/null has no TIOCGWINSZ (ENOTTY); on /dev/zero, not granted,
	// Landlock refuses before the driver is asked (EACCES).
	for dev, want := range map[string]syscall.Errno{"/dev/null": unix.ENOTTY, "/dev/zero": unix.EACCES} {
		fd, err := unix.Open(dev, unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if err != nil {
			t.Errorf("open %s O_RDONLY = %v, want success (reads are not handled)", dev, err)
			continue
		}
		_, err = unix.IoctlGetWinsize(fd, unix.TIOCGWINSZ)
		wantErrno(t, "ioctl("+dev+", TIOCGWINSZ)", err, want)
		unix.Close(fd)
	}

	close(start)
	for i := range nthreads {
		wantOK(t, fmt.Sprintf("create B/from-thread-%d on another thread (outside the domain by design)", i), <-done)
	}

	// A child process inherits the domain: the shell's redirects.
	sh := func(script string) error { return exec.Command("sh", "-c", script).Run() }
	wantOK(t, "sh: echo >/dev/null", sh("echo x >/dev/null"))
	wantOK(t, "sh: echo >A/from-sh", sh("echo x >"+f.a("from-sh")))
	if err := sh("echo x >" + f.b("from-sh")); err == nil {
		t.Errorf("sh: echo >B/from-sh succeeded, want failure")
	}
	if _, err := os.Lstat(f.b("from-sh")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("lstat B/from-sh = %v, want ENOENT", err)
	}
}

// TestApplyRuleKinds: a file rule on a directory fails before anything is
// enforced; a directory rule on a file grants that file.
func TestApplyRuleKinds(t *testing.T) {
	if !inChild(t) {
		requireLandlockABI(t, 5)
		runChild(t, dirEnv+"="+makeFixture(t).dir)
		return
	}
	f := fixture{os.Getenv(dirEnv)}
	bad := f.policy(Require, false)
	bad.Write = append(bad.Write, Rule{Path: filepath.Join(f.dir, "B"), IsFile: true, Source: "dir as file"})
	if _, err := Apply(bad); !errors.Is(err, ErrInvalidRule) || !strings.Contains(err.Error(), "dir as file") {
		t.Errorf("Apply(directory B as a file) = %v, want ErrInvalidRule naming the source", err)
	}
	wantOK(t, "create B/new after the refused Apply", writeFile(f.b("new"), os.O_CREATE))

	p := f.policy(Require, false)
	p.Write[1].IsFile = false // B/granted.txt, a file, as a directory rule
	if _, err := Apply(p); err != nil {
		t.Fatalf("Apply(file B/granted.txt as a directory rule) = %v", err)
	}
	wantOK(t, "write B/granted.txt", writeFile(f.b("granted.txt"), os.O_TRUNC))
	wantErrno(t, "create B/new2", writeFile(f.b("new2"), os.O_CREATE), unix.EACCES)
}

// TestApplyOffThenBestEffort: Off enforces nothing; BestEffort on a kernel
// with the whole ABI enforces all of it.
func TestApplyOffThenBestEffort(t *testing.T) {
	if !inChild(t) {
		requireLandlockABI(t, MinABI)
		runChild(t, dirEnv+"="+makeFixture(t).dir)
		return
	}
	f := fixture{os.Getenv(dirEnv)}
	plan, err := Apply(f.policy(Off, true))
	if err != nil || plan.Enforced || len(plan.Handled) != 0 || len(plan.Unenforced) != len(allFS)+len(allScopes) {
		t.Fatalf("Apply(Off) = %+v, %v, want nothing enforced, everything listed", plan, err)
	}
	wantOK(t, "create B/new after Apply(Off)", writeFile(f.b("new"), os.O_CREATE))

	plan, err = Apply(f.policy(BestEffort, true))
	if err != nil || !plan.Enforced || len(plan.Unenforced) != 0 {
		t.Fatalf("Apply(BestEffort) = %+v, %v, want everything enforced", plan, err)
	}
	wantErrno(t, "create B/new2 after Apply(BestEffort)", writeFile(f.b("new2"), os.O_CREATE), unix.EACCES)
}

// listenAbstract listens on a fresh abstract unix socket for the child.
func listenAbstract(t *testing.T) string {
	t.Helper()
	name := fmt.Sprintf("@agentbox-landlock-test-%d-%d", os.Getpid(), time.Now().UnixNano())
	l, err := net.Listen("unix", name)
	if err != nil {
		t.Fatalf("listen unix %s: %v", name, err)
	}
	t.Cleanup(func() { l.Close() })
	return name
}

// TestApplyScopes: with Scopes the child can no longer signal its parent or
// reach its abstract socket, but still signals and connects inside its own
// domain (itself and what it starts afterwards).
func TestApplyScopes(t *testing.T) {
	if !inChild(t) {
		requireLandlockABI(t, 6)
		testenv.RequireCommand(t, "sleep", "coreutils")
		runChild(t, dirEnv+"="+makeFixture(t).dir, sockEnv+"="+listenAbstract(t))
		return
	}
	f, sock := fixture{os.Getenv(dirEnv)}, os.Getenv(sockEnv)
	plan, err := Apply(f.policy(Require, true))
	if err != nil {
		t.Fatalf("Apply = %v", err)
	}
	if !slices.Contains(plan.Handled, "scope:signal") || !slices.Contains(plan.Handled, "scope:abstract_unix_socket") {
		t.Fatalf("Apply = %+v, want both scopes handled", plan)
	}

	wantErrno(t, "kill(parent, 0)", unix.Kill(os.Getppid(), 0), unix.EPERM)
	c, err := net.Dial("unix", sock)
	if err == nil {
		c.Close()
	}
	wantErrno(t, "connect to the parent's abstract socket "+sock, err, unix.EPERM)

	wantOK(t, "kill(self, 0)", unix.Kill(os.Getpid(), 0))
	own := sock + "-child"
	l, err := net.Listen("unix", own)
	if err != nil {
		t.Fatalf("listen unix %s after Apply = %v", own, err)
	}
	defer l.Close()
	c, err = net.Dial("unix", own)
	wantOK(t, "connect to an abstract socket of the same domain", err)
	if err == nil {
		c.Close()
	}
	cmd := exec.Command("sleep", "60")
	if err := cmd.Start(); err != nil {
		t.Fatalf("start sleep = %v", err)
	}
	wantOK(t, "SIGKILL a process started after Apply", cmd.Process.Kill())
	cmd.Wait()
}

// TestApplyNoScopes: without Scopes, signals and abstract sockets outside
// stay reachable: the scopes are what denies them above.
func TestApplyNoScopes(t *testing.T) {
	if !inChild(t) {
		requireLandlockABI(t, 5)
		runChild(t, dirEnv+"="+makeFixture(t).dir, sockEnv+"="+listenAbstract(t))
		return
	}
	f, sock := fixture{os.Getenv(dirEnv)}, os.Getenv(sockEnv)
	plan, err := Apply(f.policy(Require, false))
	if err != nil || slices.ContainsFunc(plan.Handled, func(h string) bool { return strings.HasPrefix(h, "scope:") }) {
		t.Fatalf("Apply = %+v, %v, want no scope handled", plan, err)
	}
	wantOK(t, "kill(parent, 0)", unix.Kill(os.Getppid(), 0))
	c, err := net.Dial("unix", sock)
	wantOK(t, "connect to the parent's abstract socket", err)
	if err == nil {
		c.Close()
	}
}

// hideLandlock makes landlock_create_ruleset fail with ENOSYS on every
// thread, as on a kernel built without Landlock. seccomp(2) with
// SECCOMP_FILTER_FLAG_TSYNC, not prctl(PR_SET_SECCOMP): the filter must
// cover every thread, since ABI and go-landlock may run on any of them.
// A Go binary makes native system calls only, so the filter need not
// check seccomp_data.arch.
func hideLandlock(t *testing.T) {
	t.Helper()
	filter := []unix.SockFilter{
		{Code: unix.BPF_LD | unix.BPF_W | unix.BPF_ABS, K: 0}, // seccomp_data.nr
		{Code: unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K, K: unix.SYS_LANDLOCK_CREATE_RULESET, Jt: 0, Jf: 1},
		{Code: unix.BPF_RET | unix.BPF_K, K: unix.SECCOMP_RET_ERRNO | uint32(unix.ENOSYS)},
		{Code: unix.BPF_RET | unix.BPF_K, K: unix.SECCOMP_RET_ALLOW},
	}
	prog := unix.SockFprog{Len: uint16(len(filter)), Filter: &filter[0]}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	// Installing a filter needs no_new_privs (or CAP_SYS_ADMIN) on the
	// calling thread; TSYNC then sets it on the others.
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		t.Fatalf("prctl(PR_SET_NO_NEW_PRIVS) = %v", err)
	}
	r, _, e := unix.Syscall(unix.SYS_SECCOMP, unix.SECCOMP_SET_MODE_FILTER, unix.SECCOMP_FILTER_FLAG_TSYNC, uintptr(unsafe.Pointer(&prog)))
	runtime.KeepAlive(filter)
	if e != 0 || r != 0 {
		t.Fatalf("seccomp(SECCOMP_SET_MODE_FILTER, TSYNC) = %d, %v", r, e)
	}
}

// TestApplyUnavailable simulates a kernel without Landlock: Require fails
// with ErrUnsupported and the probe's errno, BestEffort and Off enforce
// nothing and say so. It needs no Landlock at all.
func TestApplyUnavailable(t *testing.T) {
	if !inChild(t) {
		runChild(t, dirEnv+"="+makeFixture(t).dir)
		return
	}
	f := fixture{os.Getenv(dirEnv)}
	hideLandlock(t)

	if abi, err := ABI(); abi != 0 || !errors.Is(err, unix.ENOSYS) {
		t.Errorf("ABI() = %d, %v, want 0, ENOSYS", abi, err)
	}
	for name, fn := range map[string]func(Policy) (Plan, error){"Check": Check, "Apply": Apply} {
		plan, err := fn(f.policy(Require, true))
		if !errors.Is(err, ErrUnsupported) || !errors.Is(err, unix.ENOSYS) || !strings.Contains(err.Error(), "--landlock=best-effort") {
			t.Errorf("%s(Require) = %+v, %v, want ErrUnsupported wrapping ENOSYS with a remedy", name, plan, err)
		}
	}
	for _, mode := range []Mode{BestEffort, Off} {
		plan, err := Apply(f.policy(mode, true))
		if err != nil || plan.Enforced || plan.ABI != 0 || len(plan.Unenforced) != len(allFS)+len(allScopes) {
			t.Errorf("Apply(%s) = %+v, %v, want nothing enforced and everything listed", mode, plan, err)
		}
		if s := plan.Summary(); !strings.Contains(s, "nothing enforced") {
			t.Errorf("Apply(%s).Summary() = %q, want it to say nothing is enforced", mode, s)
		}
	}
	wantOK(t, "create B/new with nothing enforced", writeFile(f.b("new"), os.O_CREATE))
}

// TestCheck: Check enforces nothing, so it runs in the test process; it
// compiles for the ABI Apply would read.
func TestCheck(t *testing.T) {
	requireLandlockABI(t, 1)
	abi, _ := kernelABI()
	for _, mode := range Modes {
		for _, scopes := range []bool{false, true} {
			p := Policy{Mode: mode, Scopes: scopes, Write: []Rule{{Path: "/nonexistent/is/fine", Source: "test"}}}
			got, err := Check(p)
			want, werr := Compile(p, abi)
			if !plansEqual(got, want) || (err == nil) != (werr == nil) {
				t.Errorf("Check(%s, scopes %v) = %+v, %v, want Compile(ABI %d) = %+v, %v", mode, scopes, got, err, abi, want, werr)
			}
		}
	}
	if _, err := Check(Policy{Write: []Rule{{Path: "relative", Source: "test"}}}); !errors.Is(err, ErrInvalidRule) {
		t.Errorf("Check(relative rule) = %v, want ErrInvalidRule", err)
	}
	if err := os.WriteFile(filepath.Join(t.TempDir(), "still-writable"), nil, 0o644); err != nil {
		t.Errorf("write after Check = %v: Check must not enforce", err)
	}
}
