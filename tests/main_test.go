//go:build linux

// Package tests holds the integration tests of the real agentbox binary.
//
// TestMain builds the binary once (CGO_ENABLED=0) into a root-owned, mode
// 0755 directory outside /tmp, so that the two test users can run it and so
// that no test's private /tmp hides it. Every test runs agentbox as one of
// the two real non-root users testenv.Users creates (the tests must run as
// root for that), with a clean environment, in a fresh project directory in
// that user's home. Fixtures that must be in the shared /tmp use unique
// names, or, for the fixed names under test, are made and removed by tests
// that do not run in parallel.
//
// Processes are never waited for by sleeping a guessed time: a command
// reports readiness by creating a file in its project directory, and the
// test polls for it with a bounded deadline.
package tests

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/agentbox/agentbox/internal/testenv"
)

var (
	// agentboxBin is the binary under test, built by TestMain.
	agentboxBin string
	// orchestratorBin is examples/orchestrator, built by TestMain.
	orchestratorBin string
	// suiteDir is a root-owned mode-0755 directory outside /tmp for the
	// binary and for fixtures that need a parent no test user controls.
	suiteDir string
	// helperBin is a copy of this test binary that the tests run, inside
	// the sandbox, as a helper command (see helperMain).
	helperBin string
	// mcpServerBin is examples/mcp/server, built by TestMain as the name
	// examples/mcp/.mcp.json runs (mcp_test.go).
	mcpServerBin string
	// setupErr is why TestMain could not prepare the suite; every test that
	// needs the binary fails with it.
	setupErr error
)

// lockPath serializes whole runs of this suite on one host: the test users,
// their homes and the fixed names in /tmp are shared by every run.
const lockPath = "/run/lock/agentbox-integration-tests.lock"

func TestMain(m *testing.M) {
	if h := os.Getenv(helperEnv); h != "" {
		os.Exit(helperMain(h))
	}
	flag.Parse()
	os.Exit(mainRun(m))
}

func mainRun(m *testing.M) int {
	if os.Geteuid() == 0 {
		unlock, err := lockSuite()
		if err != nil {
			fmt.Fprintf(os.Stderr, "tests: %v\n", err)
			return 2
		}
		defer unlock()
		dir, err := buildBinary()
		if dir != "" {
			suiteDir = dir
			defer os.RemoveAll(dir)
		}
		if err != nil {
			setupErr = err
		}
	} else {
		setupErr = errors.New("not built: the integration tests need root to create their users")
	}
	return m.Run()
}

// readSources reads every directory and Go source file of the module. The
// binary under test is built from them by a child process, which go test's
// result cache does not see; files the test process itself opens while the
// tests run (not in TestMain before m.Run) are part of the cache key, so a
// change to any of them reruns the tests instead of replaying a stale
// result.
func readSources() error {
	wd, err := os.Getwd()
	if err != nil {
		return err
	}
	return filepath.WalkDir(filepath.Dir(wd), func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		name := d.Name()
		if d.IsDir() {
			if p != filepath.Dir(wd) && (strings.HasPrefix(name, ".") || name == "testdata") {
				return filepath.SkipDir
			}
			return nil
		}
		if strings.HasSuffix(name, ".go") || name == "go.mod" || name == "go.sum" {
			_, err = os.ReadFile(p)
		}
		return err
	})
}

func lockSuite() (func(), error) {
	f, err := os.OpenFile(lockPath, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("lock %s: %w", lockPath, err)
	}
	for {
		err = syscall.Flock(int(f.Fd()), syscall.LOCK_EX)
		if err != syscall.EINTR {
			break
		}
	}
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("flock %s: %w", lockPath, err)
	}
	return func() { f.Close() }, nil
}

// buildBinary builds the module's main package (or copies the binary named
// by AGENTBOX_TEST_BINARY) and the example MCP server into a fresh directory
// /usr/local/lib/agentbox-test-*. It returns the directory even on error so
// that it can be removed.
func buildBinary() (string, error) {
	dir, err := os.MkdirTemp("/usr/local/lib", "agentbox-test-")
	if err != nil {
		return "", fmt.Errorf("scratch directory: %w", err)
	}
	if err := os.Chmod(dir, 0o755); err != nil {
		return dir, err
	}
	wd, err := os.Getwd()
	if err != nil {
		return dir, err
	}
	if err := copyHelper(dir); err != nil {
		return dir, err
	}
	server := filepath.Join(dir, "agentbox-mcp-example")
	if err := goBuild(filepath.Dir(wd), server, "./examples/mcp/server"); err != nil {
		return dir, err
	}
	mcpServerBin = server
	bin := filepath.Join(dir, "agentbox")
	orchestratorBin = filepath.Join(dir, "orchestrator")
	if err := goBuild(filepath.Dir(wd), orchestratorBin, "./examples/orchestrator"); err != nil {
		return dir, err
	}
	if prebuilt := os.Getenv("AGENTBOX_TEST_BINARY"); prebuilt != "" {
		// A binary built elsewhere (a release build, or a deliberately
		// broken one to check that the tests catch it), copied here so that
		// the test users can run it whatever its directory's permissions.
		b, err := os.ReadFile(prebuilt)
		if err != nil {
			return dir, fmt.Errorf("AGENTBOX_TEST_BINARY: %w", err)
		}
		if err := os.WriteFile(bin, b, 0o755); err != nil {
			return dir, err
		}
		agentboxBin = bin
		return dir, nil
	}
	if err := goBuild(filepath.Dir(wd), bin, "."); err != nil {
		return dir, err
	}
	agentboxBin = bin
	return dir, nil
}

// goBuild builds the package pkg of the module at root (the parent of
// tests/) into out, with CGO_ENABLED=0, and makes out mode 0755.
func goBuild(root, out, pkg string) error {
	goTool, err := exec.LookPath("go")
	if err != nil {
		goTool = filepath.Join(runtime.GOROOT(), "bin", "go")
	}
	cmd := exec.Command(goTool, "build", "-o", out, pkg)
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if b, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("go build %s: %v\n%s", pkg, err, b)
	}
	return os.Chmod(out, 0o755)
}

// copyHelper copies this test binary into dir, where the test users can run
// it (the original is under the build's directory in /tmp, which is neither
// readable by them nor visible inside the sandbox).
func copyHelper(dir string) error {
	self, err := os.Executable()
	if err != nil {
		return fmt.Errorf("helper: %w", err)
	}
	b, err := os.ReadFile(self)
	if err != nil {
		return fmt.Errorf("helper: %w", err)
	}
	p := filepath.Join(dir, "abtest-helper")
	if err := os.WriteFile(p, b, 0o755); err != nil {
		return fmt.Errorf("helper: %w", err)
	}
	helperBin = p
	return nil
}

var (
	sourcesOnce sync.Once
	sourcesErr  error
)

// user is a test user with the helpers the tests share.
type user struct{ testenv.User }

// users returns the two test users after checking that the suite is ready
// and that each may create user namespaces.
func users(t *testing.T) (a, b user) {
	t.Helper()
	sourcesOnce.Do(func() { sourcesErr = readSources() })
	if sourcesErr != nil {
		t.Fatalf("reading the module's sources: %v", sourcesErr)
	}
	ua, ub := testenv.Users(t)
	if setupErr != nil {
		t.Fatalf("suite setup: %v", setupErr)
	}
	ua.RequireUserns(t)
	ub.RequireUserns(t)
	return user{ua}, user{ub}
}

// rootUser is the test process itself, for the cases that run agentbox as
// root.
var rootUser = user{testenv.User{Name: "root", UID: 0, GID: 0, Home: "/root"}}

// cmdTimeout bounds every agentbox run: a hang fails the test instead of the
// whole suite.
const cmdTimeout = 60 * time.Second

// agentbox returns a command that runs the binary under test as u with args,
// in u's home, with u's clean environment plus env (NAME=VALUE entries that
// replace same-named ones). The root user runs it with uid 0 and no
// credential change.
func (u user) agentbox(env []string, args ...string) *exec.Cmd {
	var cmd *exec.Cmd
	if u.UID == 0 {
		cmd = exec.Command(agentboxBin, args...)
		cmd.Env = []string{"HOME=/root", "USER=root", "LOGNAME=root", "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"}
	} else {
		cmd = u.Cmd(agentboxBin, args...)
	}
	// agentbox refuses to run from the home directory (the sandbox could
	// write all of it): run from the user's work directory, which holds
	// every project of the tests, so commands may write into those.
	cmd.Dir = u.workDir()
	cmd.Env = mergeEnv(cmd.Env, env)
	cmd.WaitDelay = 10 * time.Second
	return cmd
}

// mergeEnv returns base with every entry of over replacing the same-named
// ones; an entry "NAME" without '=' removes NAME.
func mergeEnv(base, over []string) []string {
	out := append([]string(nil), base...)
	for _, kv := range over {
		name, _, hasValue := strings.Cut(kv, "=")
		keep := out[:0]
		for _, o := range out {
			if n, _, _ := strings.Cut(o, "="); n != name {
				keep = append(keep, o)
			}
		}
		out = keep
		if hasValue {
			out = append(out, kv)
		}
	}
	return out
}

// result is how one run of a command ended.
type result struct {
	stdout, stderr []byte
	code           int // exit status; -1 when it died of a signal
}

func (r result) String() string {
	return fmt.Sprintf("exit %d, stdout %q, stderr %q", r.code, clip(r.stdout), clip(r.stderr))
}

func clip(b []byte) string {
	const max = 2000
	if len(b) > max {
		return string(b[:max]) + fmt.Sprintf("…(%d bytes)", len(b))
	}
	return string(b)
}

// proc is a started command whose output is being collected.
type proc struct {
	cmd            *exec.Cmd
	stdout, stderr bytes.Buffer
	done           chan struct{}
	res            result
}

// start starts cmd with its output collected. A command still running when
// the test ends is killed (its sandbox dies with it).
func start(t *testing.T, cmd *exec.Cmd) *proc {
	t.Helper()
	p := &proc{cmd: cmd, done: make(chan struct{})}
	if cmd.Stdout == nil {
		cmd.Stdout = &p.stdout
	}
	if cmd.Stderr == nil {
		cmd.Stderr = &p.stderr
	}
	if err := cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", cmd, err)
	}
	var timedOut atomic.Bool
	timer := time.AfterFunc(cmdTimeout, func() {
		timedOut.Store(true)
		cmd.Process.Kill()
	})
	go func() {
		defer close(p.done)
		err := cmd.Wait()
		timer.Stop()
		p.res = result{stdout: p.stdout.Bytes(), stderr: p.stderr.Bytes(), code: cmd.ProcessState.ExitCode()}
		var ee *exec.ExitError
		if err != nil && !errors.As(err, &ee) {
			p.res.stderr = append(p.res.stderr, []byte("\n[test harness: "+err.Error()+"]")...)
		}
		if timedOut.Load() {
			p.res.stderr = append(p.res.stderr, []byte(fmt.Sprintf("\n[test harness: killed after %v]", cmdTimeout))...)
		}
	}()
	t.Cleanup(func() {
		select {
		case <-p.done:
		default:
			cmd.Process.Kill()
			<-p.done
		}
	})
	return p
}

// wait waits for the command to end and returns how it ended.
func (p *proc) wait() result {
	<-p.done
	return p.res
}

// exited reports whether the command has ended.
func (p *proc) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// run runs cmd to completion.
func run(t *testing.T, cmd *exec.Cmd) result {
	t.Helper()
	return start(t, cmd).wait()
}

// box runs agentbox as u with args and env (see agentbox).
func (u user) box(t *testing.T, env []string, args ...string) result {
	t.Helper()
	return run(t, u.agentbox(env, args...))
}

// sh runs a shell script as u, without agentbox, with args as $1...
func (u user) sh(t *testing.T, env []string, script string, args ...string) result {
	t.Helper()
	cmd := u.Cmd("/bin/sh", append([]string{"-c", script, "sh"}, args...)...)
	cmd.Env = mergeEnv(cmd.Env, env)
	return run(t, cmd)
}

// wantCode fails the test unless r ended with code.
func wantCode(t *testing.T, what string, r result, code int) {
	t.Helper()
	if r.code != code {
		t.Fatalf("%s: exit status %d, want %d (%v)", what, r.code, code, r)
	}
}

// workDir returns u's directory of test projects, ~/abtest-work (0700,
// owned by u), making it on first use.
func (u user) workDir() string {
	dir := filepath.Join(u.Home, "abtest-work")
	if err := os.Mkdir(dir, 0o700); err == nil {
		os.Chown(dir, u.UID, u.GID)
	}
	return dir
}

// project makes a fresh directory for one test in u's work directory, owned by u,
// mode 0700, and removes it (whatever the test left in it) at the end.
func (u user) project(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp(u.workDir(), "abtest-"+sanitize(t.Name())+"-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := os.RemoveAll(dir); err != nil {
			t.Errorf("remove project %s: %v", dir, err)
		}
	})
	if err := os.Chown(dir, u.UID, u.GID); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	return dir
}

// scratch makes a fresh root-owned, mode-0755 directory under the suite's
// directory (outside /tmp, parent owned by root): a safe parent for hostile
// fixtures of other owners.
func scratch(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp(suiteDir, "fixture-")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	return dir
}

var unsafeChars = regexp.MustCompile(`[^A-Za-z0-9_-]+`)

func sanitize(s string) string {
	s = unsafeChars.ReplaceAllString(s, "_")
	if len(s) > 40 {
		s = s[:40]
	}
	return s
}

// token returns a random string unique to this call, for names in shared
// places and markers in process environments.
func token(t *testing.T) string {
	t.Helper()
	var b [8]byte
	if _, err := rand.Read(b[:]); err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(b[:])
}

// waitFor polls cond every 10 ms until it holds, and fails the test after
// timeout.
func waitFor(t *testing.T, what string, timeout time.Duration, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", timeout, what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// waitReady waits for path to exist, or for p to end (which fails the test:
// the command never got ready).
func waitReady(t *testing.T, p *proc, path string) {
	t.Helper()
	waitFor(t, "readiness file "+path, 20*time.Second, func() bool {
		if _, err := os.Stat(path); err == nil {
			return true
		}
		if p.exited() {
			t.Fatalf("command ended before creating %s: %v", path, p.res)
		}
		return false
	})
}

// touch creates an empty file.
func touch(t *testing.T, path string) {
	t.Helper()
	if err := os.WriteFile(path, nil, 0o644); err != nil {
		t.Fatal(err)
	}
}

// readFile returns the contents of path, failing the test on error.
func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// exists reports whether path exists (without following a final symlink).
// Any error but ENOENT fails the test: it must not read as "absent".
func exists(t *testing.T, path string) bool {
	t.Helper()
	_, err := os.Lstat(path)
	if err == nil {
		return true
	}
	if errors.Is(err, os.ErrNotExist) {
		return false
	}
	t.Fatalf("lstat %s: %v", path, err)
	return false
}

// entries lists the names in dir, failing the test on error.
func entries(t *testing.T, dir string) []string {
	t.Helper()
	des, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	names := make([]string, 0, len(des))
	for _, de := range des {
		names = append(names, de.Name())
	}
	return names
}

var sessionIDRe = regexp.MustCompile(`^[0-9a-f]{12}$`)

// sessionIDs lists the session directories under root.
func sessionIDs(t *testing.T, root string) []string {
	t.Helper()
	var ids []string
	for _, n := range entries(t, root) {
		if sessionIDRe.MatchString(n) {
			ids = append(ids, n)
		}
	}
	return ids
}

var keptRe = regexp.MustCompile(`kept session ([0-9a-f]{12}) at (\S+)`)

// keptSession parses the --keep message on stderr.
func keptSession(t *testing.T, stderr []byte) (id, path string) {
	t.Helper()
	m := keptRe.FindSubmatch(stderr)
	if m == nil {
		t.Fatalf("stderr %q has no \"kept session ID at PATH\"", stderr)
	}
	return string(m[1]), string(m[2])
}

// stateRecord is the part of a session's state file the tests read.
type stateRecord struct {
	ID         string `json:"id"`
	State      string `json:"state"`
	UID        int    `json:"uid"`
	WrapperPID int    `json:"wrapper_pid"`
	InitPID    int    `json:"init_pid"`
	InitStart  uint64 `json:"init_start"`
	Command    string `json:"command"`
}

func readState(t *testing.T, sessionDir string) stateRecord {
	t.Helper()
	var r stateRecord
	b := readFile(t, filepath.Join(sessionDir, "state"))
	if err := json.Unmarshal([]byte(b), &r); err != nil {
		t.Fatalf("state file of %s: %v: %q", sessionDir, err, b)
	}
	return r
}

// psRow is one session in `agentbox ps --json`.
type psRow struct {
	ID         string  `json:"id"`
	State      string  `json:"state"`
	Live       bool    `json:"live"`
	WrapperPID int     `json:"wrapper_pid"`
	AgeSeconds float64 `json:"age_seconds"`
	Bytes      int64   `json:"bytes"`
	Command    string  `json:"command"`
	Path       string  `json:"path"`
	Error      string  `json:"error"`
}

// ps runs `agentbox ps --json --root root` as u.
func (u user) ps(t *testing.T, root string) []psRow {
	t.Helper()
	r := u.box(t, nil, "ps", "--json", "--root", root)
	wantCode(t, "agentbox ps --json", r, 0)
	var raw []map[string]json.RawMessage
	if err := json.Unmarshal(r.stdout, &raw); err != nil {
		t.Fatalf("agentbox ps --json: %v: %q", err, r.stdout)
	}
	for _, m := range raw {
		for _, k := range []string{"id", "state", "live", "wrapper_pid", "age_seconds", "bytes", "command", "path"} {
			if _, ok := m[k]; !ok {
				t.Errorf("agentbox ps --json: row %s has no %q field", r.stdout, k)
			}
		}
	}
	var rows []psRow
	if err := json.Unmarshal(r.stdout, &rows); err != nil {
		t.Fatalf("agentbox ps --json: %v: %q", err, r.stdout)
	}
	return rows
}

// cleanRow is one session in `agentbox clean --json`.
type cleanRow struct {
	ID     string `json:"id"`
	State  string `json:"state"`
	Action string `json:"action"`
	Error  string `json:"error"`
}

// clean runs `agentbox clean --json --root root args...` as u and returns its
// rows and exit status.
func (u user) clean(t *testing.T, root string, args ...string) ([]cleanRow, result) {
	t.Helper()
	r := u.box(t, nil, append([]string{"clean", "--json", "--root", root}, args...)...)
	var rows []cleanRow
	if err := json.Unmarshal(r.stdout, &rows); err != nil {
		t.Fatalf("agentbox clean --json %q: %v (%v)", args, err, r)
	}
	return rows, r
}

func findClean(rows []cleanRow, id string) (cleanRow, bool) {
	for _, r := range rows {
		if r.ID == id {
			return r, true
		}
	}
	return cleanRow{}, false
}

// hostPIDsWithEnv returns the host pids of the processes whose environment
// holds the entry marker (NAME=VALUE), except exclude. Processes that vanish
// or are zombies while being read are left out.
func hostPIDsWithEnv(t *testing.T, marker string, exclude int) []int {
	t.Helper()
	des, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatal(err)
	}
	var pids []int
	for _, de := range des {
		pid, err := strconv.Atoi(de.Name())
		if err != nil || pid == exclude {
			continue
		}
		b, err := os.ReadFile("/proc/" + de.Name() + "/environ")
		if err != nil {
			continue
		}
		for _, kv := range bytes.Split(b, []byte{0}) {
			if string(kv) == marker {
				pids = append(pids, pid)
				break
			}
		}
	}
	return pids
}

// privateOnly starts every script that writes fixed names into /tmp or
// /var/tmp: it stops (exit 99) unless both are the session's own, so that a
// broken sandbox fails the test instead of littering the host's shared
// directories.
const privateOnly = `for d in /tmp /var/tmp; do [ "$(stat -c '%a %u' "$d")" = "700 $(id -u)" ] || { echo "test: $d is not private" >&2; exit 99; }; done
`

// lines splits s into its non-empty lines.
func lines(s string) []string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if l != "" {
			out = append(out, l)
		}
	}
	return out
}
