//go:build linux

package tests

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/agentbox/agentbox/internal/testenv"
)

// The tests of the sandbox's policy: where the command may write (Landlock),
// what it cannot see (hidden paths) or change (read-only paths), whom it may
// signal or connect to (Landlock scopes), what it may do to its terminal
// (seccomp), and how profiles and flags change that.
//
// Tests that change what every run of a test user sees (its
// ~/.config/agentbox, ~/.config/opencode) do not call t.Parallel: go test
// runs them before any parallel test starts, so no other run of that user
// sees the change. They undo it before they end.

// policyUsers is users for the tests that need the kernel to enforce
// Landlock.
func policyUsers(t *testing.T) (a, b user) {
	t.Helper()
	a, b = users(t)
	testenv.RequireLandlock(t)
	return a, b
}

// agentboxIn is u.agentbox run from dir, which is then the working
// directory the sandbox may write.
func (u user) agentboxIn(dir string, env []string, args ...string) *exec.Cmd {
	cmd := u.agentbox(env, args...)
	cmd.Dir = dir
	return cmd
}

// fsop is one operation of the fsops helper (see fsops) and the result the
// helper must report for it: "ok", an errno name, or "ok" followed by what
// was read.
type fsop struct {
	op    string
	paths []string
	want  string
}

func (o fsop) line(res string) string {
	return fmt.Sprintf("%s %s: %s", o.op, strings.Join(o.paths, " "), res)
}

// fsopsArgs is the command that performs ops inside the sandbox: the helper
// binary and its arguments.
func fsopsArgs(ops []fsop) []string {
	args := []string{helperBin}
	for _, o := range ops {
		args = append(args, o.op)
		args = append(args, o.paths...)
	}
	return args
}

// runFsops runs agentbox as u from dir with flags and the fsops helper
// performing ops, and checks that it exits 0 and reports each operation's
// wanted result.
func (u user) runFsops(t *testing.T, dir string, env, flags []string, ops []fsop) result {
	t.Helper()
	args := append(append(append([]string{}, flags...), "--"), fsopsArgs(ops)...)
	r := run(t, u.agentboxIn(dir, append([]string{helperEnv + "=fsops"}, env...), args...))
	wantCode(t, fmt.Sprintf("agentbox %q -- fsops", flags), r, 0)
	got := lines(string(r.stdout))
	for i, o := range ops {
		want := o.line(o.want)
		if i >= len(got) {
			t.Errorf("agentbox %q: no result for %q, want %q", flags, o.line("…"), want)
			continue
		}
		if got[i] != want && !(o.want == "EACCES" && deniedAs(got[i], o)) {
			t.Errorf("agentbox %q, %s as uid %d: got %q, want %q", flags, o.line("…"), u.UID, got[i], want)
		}
	}
	if len(got) > len(ops) {
		t.Errorf("agentbox %q: extra output %q", flags, got[len(ops):])
	}
	return r
}

// writeOwned writes a file owned by u with mode, making its parent
// directories (owned by u, mode 0700) as needed, and returns the
// directories it made, outermost first.
func writeOwned(t *testing.T, u user, path, content string, mode os.FileMode) (made []string) {
	t.Helper()
	return u.writeAs(t, path, content, mode, 0o700)
}

// mkdirOwned makes dir and its missing parents, owned by u with mode 0700,
// and returns the directories it made, outermost first.
func mkdirOwned(t *testing.T, u user, dir string) (made []string) {
	t.Helper()
	if exists(t, dir) {
		return nil
	}
	made = mkdirOwned(t, u, filepath.Dir(dir))
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(dir, u.UID, u.GID); err != nil {
		t.Fatal(err)
	}
	return append(made, dir)
}

// removeAtEnd removes the paths (and what is below them) when the test
// ends, innermost last given first removed.
func removeAtEnd(t *testing.T, paths ...string) {
	t.Helper()
	t.Cleanup(func() {
		for i := len(paths) - 1; i >= 0; i-- {
			if err := os.RemoveAll(paths[i]); err != nil {
				t.Errorf("cleanup: %v", err)
			}
		}
	})
}

// fileState is what a sentinel must keep: bytes, mode and mtime.
type fileState struct {
	content string
	mode    os.FileMode
	mtime   time.Time
}

func stateOf(t *testing.T, path string) fileState {
	t.Helper()
	st, err := os.Lstat(path)
	if err != nil {
		t.Fatal(err)
	}
	return fileState{content: readFile(t, path), mode: st.Mode(), mtime: st.ModTime()}
}

// wantAbsent fails the test for each path that exists.
func wantAbsent(t *testing.T, what string, paths ...string) {
	t.Helper()
	for _, p := range paths {
		if exists(t, p) {
			t.Errorf("%s: %s exists, want it never made", what, p)
		}
	}
}

// sentinelTime is the mtime a sentinel is given: far from now, so that any
// write shows.
var sentinelTime = time.Date(2001, 2, 3, 4, 5, 6, 0, time.UTC)

// TestWriteConfinement runs the command from a project directory and checks
// that it writes the project and the session's private directories, and
// nothing else of the user's: not the home directory (a new file, an append
// to ~/.bashrc, a directory, links to a project file, a rename of a project
// file out of the project), nor /etc, nor a sentinel in the home directory
// through a symbolic link in the project. ~/.ssh, hidden by default, shows
// as an empty directory and its key file cannot be read. Root gets the same
// confinement: its writes to /etc fail although root owns /etc.
func TestWriteConfinement(t *testing.T) {
	t.Parallel()
	a, _ := policyUsers(t)
	t.Run("user", func(t *testing.T) {
		t.Parallel()
		tok := token(t)
		p := a.project(t)
		h := a.Home

		sentinel := filepath.Join(h, "abtest-sentinel-"+tok)
		writeOwned(t, a, sentinel, "sentinel "+tok+"\n", 0o640)
		removeAtEnd(t, sentinel)
		if err := os.Chtimes(sentinel, sentinelTime, sentinelTime); err != nil {
			t.Fatal(err)
		}
		before := stateOf(t, sentinel)
		if err := os.Symlink(sentinel, filepath.Join(p, "link")); err != nil {
			t.Fatal(err)
		}
		writeOwned(t, a, filepath.Join(p, "file"), "project\n", 0o600)

		key := filepath.Join(h, ".ssh", "abtest-id-"+tok)
		made := writeOwned(t, a, key, "PRIVATE KEY "+tok+"\n", 0o600)
		removeAtEnd(t, append(made, key)...)

		bashrc := filepath.Join(h, ".bashrc")
		if !exists(t, bashrc) {
			writeOwned(t, a, bashrc, "# abtest\n", 0o644)
			removeAtEnd(t, bashrc)
		}
		bashrcBefore := stateOf(t, bashrc)

		etc := "/etc/abtest-" + tok
		outside := []string{
			filepath.Join(h, "abtest-notallowed-"+tok), filepath.Join(h, "abtest-dir-"+tok),
			filepath.Join(h, "abtest-moved-"+tok), filepath.Join(h, "abtest-hardlink-"+tok),
			filepath.Join(h, "abtest-symlink-"+tok), etc,
		}
		removeAtEnd(t, outside...)
		privates := []string{"/tmp/abtest-" + tok, "/var/tmp/abtest-" + tok, "/dev/shm/abtest-" + tok, "$XDG_RUNTIME_DIR/abtest-" + tok}
		ops := []fsop{{"write", []string{"new"}, "ok"}, {"mkdir", []string{"newdir"}, "ok"}}
		for _, pr := range privates {
			ops = append(ops, fsop{"write", []string{pr}, "ok"})
		}
		ops = append(ops,
			fsop{"write", []string{"$HOME/abtest-notallowed-" + tok}, "EACCES"},
			fsop{"append", []string{"$HOME/.bashrc"}, "EACCES"},
			fsop{"mkdir", []string{"$HOME/abtest-dir-" + tok}, "EACCES"},
			fsop{"write", []string{etc}, "EACCES"},
			fsop{"write", []string{"link"}, "EACCES"},
			fsop{"append", []string{"link"}, "EACCES"},
			fsop{"truncate", []string{"link"}, "EACCES"},
			fsop{"rename", []string{"file", "$HOME/abtest-moved-" + tok}, "EACCES"},
			fsop{"link", []string{"file", "$HOME/abtest-hardlink-" + tok}, "EACCES"},
			fsop{"symlink", []string{"file", "$HOME/abtest-symlink-" + tok}, "EACCES"},
			fsop{"ls", []string{"$HOME/.ssh"}, `ok []`},
			fsop{"read", []string{"$HOME/.ssh/abtest-id-" + tok}, "ENOENT"},
		)
		a.runFsops(t, p, nil, nil, ops)

		if got := stateOf(t, sentinel); got != before {
			t.Errorf("sentinel %s reached through the project's link: %+v, was %+v", sentinel, got, before)
		}
		if got := stateOf(t, bashrc); got != bashrcBefore {
			t.Errorf("%s: %+v, was %+v", bashrc, got, bashrcBefore)
		}
		if got := readFile(t, filepath.Join(p, "file")); got != "project\n" {
			t.Errorf("project file after the rename out of the project: %q, want %q", got, "project\n")
		}
		if got := readFile(t, filepath.Join(p, "new")); got != "abtest\n" {
			t.Errorf("file written in the project: %q, want %q", got, "abtest\n")
		}
		wantAbsent(t, "a write outside the sandbox's grants", outside...)
		if got := readFile(t, key); got != "PRIVATE KEY "+tok+"\n" {
			t.Errorf("%s after the run: %q", key, got)
		}
	})
	t.Run("root", func(t *testing.T) {
		t.Parallel()
		tok := token(t)
		p := rootUser.project(t)
		etc, etcDir := "/etc/abtest-"+tok, "/etc/abtest-dir-"+tok
		removeAtEnd(t, etc, etcDir)
		rootUser.runFsops(t, p, nil, nil, []fsop{
			{"write", []string{"new"}, "ok"},
			{"write", []string{etc}, "EACCES"},
			{"mkdir", []string{etcDir}, "EACCES"},
		})
		wantAbsent(t, "root's write to /etc", etc, etcDir)
	})
}

// TestNoMetadataChangesOutside checks that the command cannot change the
// mode or times of a file it may not write, directly or through a symbolic
// link in the project: chmod 0777 of a file in the home directory would let
// every user write it, and a changed mtime misleads make.
//
// Landlock (ABI 1 to 7) does not govern chmod(2), chown(2), utimensat(2)
// or setxattr(2): a policy that relies on Landlock alone for "no write
// outside the grants" lets these through unless something else (a
// read-only mount, a seccomp filter) stops them.
func TestNoMetadataChangesOutside(t *testing.T) {
	t.Parallel()
	a, _ := policyUsers(t)
	tok := token(t)
	p := a.project(t)
	var sentinels []string
	for _, name := range []string{"direct", "linked"} {
		s := filepath.Join(a.Home, "abtest-meta-"+name+"-"+tok)
		writeOwned(t, a, s, "sentinel\n", 0o600)
		removeAtEnd(t, s)
		if err := os.Chtimes(s, sentinelTime, sentinelTime); err != nil {
			t.Fatal(err)
		}
		sentinels = append(sentinels, s)
	}
	if err := os.Symlink(sentinels[1], filepath.Join(p, "link")); err != nil {
		t.Fatal(err)
	}
	before := []fileState{stateOf(t, sentinels[0]), stateOf(t, sentinels[1])}
	r := run(t, a.agentboxIn(p, []string{helperEnv + "=fsops"}, append([]string{"--"}, fsopsArgs([]fsop{
		{"chmod", []string{sentinels[0]}, ""}, {"utimes", []string{sentinels[0]}, ""},
		{"chmod", []string{"link"}, ""}, {"utimes", []string{"link"}, ""},
	})...)...))
	wantCode(t, "agentbox -- fsops chmod, utimes", r, 0)
	for i, s := range sentinels {
		if got := stateOf(t, s); got != before[i] {
			t.Errorf("%s after chmod 0777 and utimes to the epoch from inside: mode %v, mtime %v; was mode %v, mtime %v (the command reported %q)",
				s, got.mode, got.mtime.UTC(), before[i].mode, before[i].mtime.UTC(), lines(string(r.stdout)))
		}
	}
}

// TestPolicyFlags checks --rw, --ro, --hide and --show, each against a run
// without the flag.
func TestPolicyFlags(t *testing.T) {
	t.Parallel()
	a, _ := policyUsers(t)
	t.Run("rw", func(t *testing.T) {
		t.Parallel()
		tok := token(t)
		p := a.project(t)
		dir := filepath.Join(a.Home, "abtest-rw-"+tok)
		mkdirOwned(t, a, dir)
		removeAtEnd(t, dir)
		f := "$HOME/abtest-rw-" + tok + "/f"
		a.runFsops(t, p, nil, nil, []fsop{{"write", []string{f}, "EACCES"}})
		wantAbsent(t, "a write without --rw", filepath.Join(dir, "f"))
		a.runFsops(t, p, nil, []string{"--rw", dir}, []fsop{{"write", []string{f}, "ok"}})
		if got := readFile(t, filepath.Join(dir, "f")); got != "abtest\n" {
			t.Errorf("file written with --rw %s: %q, want %q", dir, got, "abtest\n")
		}
	})
	t.Run("ro", func(t *testing.T) {
		t.Parallel()
		p := a.project(t)
		writeOwned(t, a, filepath.Join(p, "ro", "old"), "old\n", 0o600)
		mkdirOwned(t, a, filepath.Join(p, "rw"))
		a.runFsops(t, p, nil, []string{"--ro", filepath.Join(p, "ro")}, []fsop{
			{"write", []string{"ro/new"}, "EROFS"},
			{"append", []string{"ro/old"}, "EROFS"},
			{"remove", []string{"ro/old"}, "EROFS"},
			{"read", []string{"ro/old"}, `ok "old\n"`},
			{"write", []string{"rw/new"}, "ok"},
			{"write", []string{"new"}, "ok"},
		})
		wantAbsent(t, "a write below --ro", filepath.Join(p, "ro", "new"))
		if got := readFile(t, filepath.Join(p, "ro", "old")); got != "old\n" {
			t.Errorf("file below --ro after the run: %q, want %q", got, "old\n")
		}
	})
	t.Run("hide", func(t *testing.T) {
		t.Parallel()
		tok := token(t)
		p := a.project(t)
		secret := filepath.Join(a.Home, "abtest-hide-"+tok)
		writeOwned(t, a, secret, "secret "+tok+"\n", 0o600)
		removeAtEnd(t, secret)
		path := "$HOME/abtest-hide-" + tok
		a.runFsops(t, p, nil, nil, []fsop{{"read", []string{path}, fmt.Sprintf("ok %q", "secret "+tok+"\n")}})
		a.runFsops(t, p, nil, []string{"--hide", secret}, []fsop{
			{"read", []string{path}, `ok ""`},
			{"append", []string{path}, "EACCES"},
		})
		if got := readFile(t, secret); got != "secret "+tok+"\n" {
			t.Errorf("hidden file after the run: %q", got)
		}
	})
	t.Run("show", func(t *testing.T) {
		t.Parallel()
		tok := token(t)
		p := a.project(t)
		cfg := filepath.Join(a.Home, ".aws", "config")
		if exists(t, cfg) {
			t.Fatalf("%s exists before the test: remove it (the test users' homes are the suite's)", cfg)
		}
		made := writeOwned(t, a, cfg, "[default] "+tok+"\n", 0o600)
		removeAtEnd(t, append(made, cfg)...)
		a.runFsops(t, p, nil, nil, []fsop{
			{"ls", []string{"$HOME/.aws"}, `ok []`},
			{"read", []string{"$HOME/.aws/config"}, "ENOENT"},
		})
		a.runFsops(t, p, nil, []string{"--show", filepath.Join(a.Home, ".aws")}, []fsop{
			{"read", []string{"$HOME/.aws/config"}, fmt.Sprintf("ok %q", "[default] "+tok+"\n")},
		})
	})
}

// TestWorkingDirectoryGrant checks that agentbox refuses to start from /,
// the home directory or one of its ancestors (the sandbox would write all
// of it) unless --rw names that directory, and that the refusal runs
// nothing.
func TestWorkingDirectoryGrant(t *testing.T) {
	t.Parallel()
	a, _ := policyUsers(t)
	for _, dir := range []string{a.Home, filepath.Dir(a.Home), "/"} {
		t.Run("refused "+dir, func(t *testing.T) {
			t.Parallel()
			tok := token(t)
			marker := filepath.Join(a.Home, "abtest-refused-"+tok)
			removeAtEnd(t, marker)
			r := run(t, a.agentboxIn(dir, []string{helperEnv + "=fsops"}, "--", helperBin, "write", marker))
			wantCode(t, "agentbox from "+dir, r, 125)
			if msg := string(r.stderr); !strings.Contains(msg, "working directory "+dir) || !strings.Contains(msg, "--rw "+dir) {
				t.Errorf("refusal to start from %s: stderr %q, want it to name the directory and the remedy %q", dir, msg, "--rw "+dir)
			}
			if len(r.stdout) != 0 {
				t.Errorf("refusal: stdout %q, want nothing", r.stdout)
			}
			wantAbsent(t, "the command of a refused run", marker)
		})
	}
	t.Run("home with --rw", func(t *testing.T) {
		t.Parallel()
		tok := token(t)
		f := filepath.Join(a.Home, "abtest-rwhome-"+tok)
		removeAtEnd(t, f)
		a.runFsops(t, a.Home, nil, []string{"--rw", a.Home}, []fsop{
			{"write", []string{"abtest-rwhome-" + tok}, "ok"},
		})
		if got := readFile(t, f); got != "abtest\n" {
			t.Errorf("file written in the home directory with --rw %s: %q", a.Home, got)
		}
	})
}

// nsPID returns the pid of the host process pid in the innermost PID
// namespace it belongs to (the last field of NSpid in /proc/PID/status).
func nsPID(t *testing.T, pid int) int {
	t.Helper()
	for _, l := range lines(readFile(t, "/proc/"+strconv.Itoa(pid)+"/status")) {
		if rest, ok := strings.CutPrefix(l, "NSpid:"); ok {
			f := strings.Fields(rest)
			n, err := strconv.Atoi(f[len(f)-1])
			if err != nil {
				t.Fatalf("/proc/%d/status: %q: %v", pid, l, err)
			}
			return n
		}
	}
	t.Fatalf("/proc/%d/status has no NSpid line", pid)
	return 0
}

// TestSignalScope checks Landlock's signal scope: the command cannot signal
// a process of the same user that is not in its Landlock domain.
//
// The sandbox's PID namespace gives host processes no pid inside, so a
// kill(2) by a host pid fails (ESRCH) whatever the policy. The target is
// therefore a process the test puts into the sandbox's user and PID
// namespaces from outside (nsenter, as the user, who owns them): the
// command can name it, the kernel's permission checks pass (same uid, same
// user namespace), and only Landlock's scope stands in the way. The target
// is the sigtrap helper, which logs each signal it receives; after the
// command's attempts the test sends it USR2 itself, and since USR1 is
// numbered lower and would be taken first, a log of USR2 alone shows USR1
// never came. With --landlock=off the same signals arrive: the test can
// tell.
func TestSignalScope(t *testing.T) {
	t.Parallel()
	a, _ := policyUsers(t)
	nsenter := testenv.RequireCommand(t, "nsenter", "util-linux")
	const script = `touch ready
while [ ! -s target ]; do sleep 0.01; done
read P < target
kill -0 "$P" 2>>result; echo "kill -0: status $?" >> result
kill -USR1 "$P" 2>>result; echo "kill -USR1: status $?" >> result
touch sent
while [ ! -e finish ]; do sleep 0.01; done
`
	for _, tc := range []struct {
		mode     string
		status   string // of kill -0 and kill -USR1
		received []string
	}{
		{"require", "1", []string{"USR2"}},
		{"off", "0", []string{"USR1", "USR2"}},
	} {
		t.Run(tc.mode, func(t *testing.T) {
			t.Parallel()
			p := a.project(t)
			marker := "ABTEST_MARK=" + token(t)
			box := start(t, a.agentboxIn(p, []string{marker}, "--landlock="+tc.mode, "--", "sh", "-c", script))
			waitReady(t, box, filepath.Join(p, "ready"))
			inside := hostPIDsWithEnv(t, marker, box.cmd.Process.Pid)
			if len(inside) == 0 {
				t.Fatalf("no process of the sandbox has %s in its environment", marker)
			}

			targetMark := "ABTEST_TARGET=" + token(t)
			log, ready := filepath.Join(p, "siglog"), filepath.Join(p, "sigready")
			cmd := a.Cmd(nsenter, "--target", strconv.Itoa(inside[0]), "--user", "--pid", "--preserve-credentials", "--", helperBin)
			cmd.Env = mergeEnv(cmd.Env, []string{helperEnv + "=sigtrap", "LOG=" + log, "READY=" + ready, targetMark})
			target := start(t, cmd)
			waitReady(t, target, ready)
			tpids := hostPIDsWithEnv(t, targetMark, target.cmd.Process.Pid)
			if len(tpids) != 1 {
				t.Fatalf("host pids of the target: %v, want one", tpids)
			}
			inner := nsPID(t, tpids[0])
			if err := os.WriteFile(filepath.Join(p, "target.new"), []byte(strconv.Itoa(inner)+"\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			if err := os.Rename(filepath.Join(p, "target.new"), filepath.Join(p, "target")); err != nil {
				t.Fatal(err)
			}
			waitReady(t, box, filepath.Join(p, "sent"))
			if err := syscall.Kill(tpids[0], syscall.SIGUSR2); err != nil {
				t.Fatalf("kill(%d, SIGUSR2): %v", tpids[0], err)
			}
			waitFor(t, "USR2 in the target's log", 10*time.Second, func() bool {
				return slices.Contains(logLines(t, log), "USR2")
			})
			// The target lives in the sandbox's PID namespace: it dies with
			// the sandbox, so it is checked before the command ends.
			if target.exited() {
				t.Errorf("the target ended: %v", target.res)
			}
			touch(t, filepath.Join(p, "finish"))
			r := box.wait()
			wantCode(t, "agentbox -- sh (kill)", r, 0)

			res := readFile(t, filepath.Join(p, "result"))
			for _, want := range []string{"kill -0: status " + tc.status, "kill -USR1: status " + tc.status} {
				if !strings.Contains(res, want) {
					t.Errorf("--landlock=%s, the command signalling pid %d (host pid %d, not in its Landlock domain): %q, want %q", tc.mode, inner, tpids[0], res, want)
				}
			}
			if tc.mode == "require" && strings.Count(res, "Operation not permitted") != 2 {
				t.Errorf("--landlock=require: the command's kill -0 and kill -USR1 said %q, want \"Operation not permitted\" (EPERM) twice", res)
			}
			if got := logLines(t, log); !slices.Equal(got, tc.received) {
				t.Errorf("--landlock=%s: signals the target received: %q, want %q", tc.mode, got, tc.received)
			}
		})
	}
}

// TestAbstractSocketScope checks Landlock's abstract unix socket scope: a
// process of the user outside the sandbox listens on an abstract socket
// (the sandbox shares the host's network namespace, where that name lives);
// the command cannot connect to it (EPERM), and can with --landlock=off.
func TestAbstractSocketScope(t *testing.T) {
	t.Parallel()
	a, _ := policyUsers(t)
	for _, tc := range []struct{ mode, want string }{
		{"require", "connect: EPERM"},
		{"off", "connect: ok"},
	} {
		t.Run(tc.mode, func(t *testing.T) {
			t.Parallel()
			p := a.project(t)
			name := "abtest-" + token(t)
			ready := filepath.Join(p, "listening")
			l := a.Cmd(helperBin)
			l.Env = mergeEnv(l.Env, []string{helperEnv + "=abstract-listen", "NAME=" + name, "READY=" + ready})
			lp := start(t, l)
			waitReady(t, lp, ready)
			r := run(t, a.agentboxIn(p, []string{helperEnv + "=abstract-connect", "NAME=" + name}, "--landlock="+tc.mode, "--", helperBin))
			wantCode(t, "agentbox -- abstract-connect", r, 0)
			if got := strings.TrimSpace(string(r.stdout)); got != tc.want {
				t.Errorf("--landlock=%s: the command connecting to @%s, where a process of its user outside listens: %q, want %q (%v)", tc.mode, name, got, tc.want, r)
			}
		})
	}
}

// TestTerminalInjectionDenied runs the ttyguard helper with a pseudo-terminal
// as its controlling terminal: TIOCSTI (however asked) and TIOCLINUX fail
// with the seccomp filter's EPERM (the kernel would allow TIOCSTI on one's
// controlling terminal when dev.tty.legacy_tiocsti is 1, and say EIO
// otherwise), nothing reaches the terminal's input or, through echo, its
// output, and resizing, raw mode and job control work.
func TestTerminalInjectionDenied(t *testing.T) {
	t.Parallel()
	a, _ := policyUsers(t)
	p := a.project(t)
	master, slave := openPty(t)
	if err := unix.IoctlSetWinsize(int(slave.Fd()), unix.TIOCSWINSZ, &unix.Winsize{Row: 40, Col: 120}); err != nil {
		t.Fatalf("ioctl(TIOCSWINSZ): %v", err)
	}
	cmd := a.agentboxIn(p, []string{helperEnv + "=ttyguard"}, "--", helperBin)
	cmd.Stdin = slave
	cmd.SysProcAttr.Setsid = true
	cmd.SysProcAttr.Setctty = true
	cmd.SysProcAttr.Ctty = 0
	r := run(t, cmd)
	wantCode(t, "agentbox -- ttyguard", r, 0)
	want := []string{
		"TIOCSTI: EPERM",
		"TIOCSTI on /dev/tty: EPERM",
		"TIOCSTI with upper bits: EPERM",
		"TIOCLINUX: EPERM",
		"TIOCGWINSZ: 40x120",
		"TIOCSWINSZ: 33x101",
		"raw mode: ok",
		`pending input: ""`,
		"TIOCSPGRP: ok",
	}
	if got := lines(string(r.stdout)); !slices.Equal(got, want) {
		t.Errorf("the command on its terminal reported\n%s\nwant\n%s\n(%v)", strings.Join(got, "\n"), strings.Join(want, "\n"), r)
	}
	if ws, err := unix.IoctlGetWinsize(int(slave.Fd()), unix.TIOCGWINSZ); err != nil || ws.Row != 33 || ws.Col != 101 {
		t.Errorf("window size after the run: %+v, %v; want the command's 33x101", ws, err)
	}
	// The command's output went to pipes: anything on the master is the
	// terminal's echo of injected input. An echo is queued for the master
	// by a worker after the ioctl returns, so this waits a little for what
	// must not come.
	fds := []unix.PollFd{{Fd: int32(master.Fd()), Events: unix.POLLIN}}
	if n, err := unix.Poll(fds, 200); err != nil && err != unix.EINTR {
		t.Fatalf("poll on the pty master: %v", err)
	} else if n > 0 && fds[0].Revents&unix.POLLIN != 0 {
		buf := make([]byte, 256)
		n, _ := unix.Read(int(master.Fd()), buf)
		t.Errorf("the terminal echoed %q: input was injected", buf[:max(n, 0)])
	}
}

// TestLandlockUnavailable runs agentbox under the nolandlock-exec helper,
// which makes the Landlock system calls fail with ENOSYS as on a kernel
// without Landlock: --landlock=require (the default) refuses with 125,
// naming Landlock, the ABI and the --landlock=best-effort way out;
// best-effort and off run the command with a warning. The mounts still
// apply without Landlock: a --hide path stays hidden.
func TestLandlockUnavailable(t *testing.T) {
	t.Parallel()
	a, _ := users(t)
	for _, mode := range []string{"require", "", "best-effort", "off"} {
		name := mode
		if name == "" {
			name = "default"
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			tok := token(t)
			p := a.project(t)
			secret := filepath.Join(p, "secret")
			writeOwned(t, a, secret, "secret "+tok+"\n", 0o600)
			args := []string{agentboxBin}
			if mode != "" {
				args = append(args, "--landlock="+mode)
			}
			args = append(args, "--hide", secret, "--", "sh", "-c", `cat "$1"; echo "[status $?]"`, "sh", secret)
			cmd := a.Cmd(helperBin, args...)
			cmd.Dir = p
			cmd.Env = mergeEnv(cmd.Env, []string{helperEnv + "=nolandlock-exec"})
			r := run(t, cmd)
			msg := string(r.stderr)
			switch mode {
			case "require", "":
				wantCode(t, "agentbox --landlock="+mode+" without Landlock", r, 125)
				for _, want := range []string{"landlock", "ABI", "best-effort"} {
					if !strings.Contains(strings.ToLower(msg), strings.ToLower(want)) {
						t.Errorf("refusal without Landlock: stderr %q does not say %q", msg, want)
					}
				}
				if len(r.stdout) != 0 {
					t.Errorf("refusal without Landlock: the command ran: stdout %q", r.stdout)
				}
			default:
				wantCode(t, "agentbox --landlock="+mode+" without Landlock", r, 0)
				ls := lines(msg)
				if len(ls) != 1 || !strings.Contains(ls[0], "warning") || !strings.Contains(strings.ToLower(ls[0]), "landlock") || !strings.Contains(ls[0], "enforced") {
					t.Errorf("--landlock=%s without Landlock: stderr %q, want one warning line saying what Landlock does not enforce", mode, msg)
				}
				if got := string(r.stdout); got != "[status 0]\n" {
					t.Errorf("--landlock=%s without Landlock: the command read the --hide file: %q, want it empty", mode, got)
				}
			}
		})
	}
}

// TestExplainHidden checks that agentbox explain says a key in ~/.ssh is
// hidden, by the default rule, and neither readable nor writable.
func TestExplainHidden(t *testing.T) {
	t.Parallel()
	a, _ := users(t)
	p := a.project(t)
	path := filepath.Join(a.Home, ".ssh", "id")
	r := run(t, a.agentboxIn(p, nil, "explain", "--json", path, "--", "true"))
	wantCode(t, "agentbox explain --json "+path, r, 0)
	var v struct {
		Path                 string
		Visible, Read, Write bool
		Rule                 string
	}
	if err := json.Unmarshal(r.stdout, &v); err != nil {
		t.Fatalf("agentbox explain --json: %v: %q", err, r.stdout)
	}
	if v.Path != path || v.Visible || v.Read || v.Write || !strings.Contains(v.Rule, "hidden") || !strings.Contains(v.Rule, filepath.Join(a.Home, ".ssh")) {
		t.Errorf("agentbox explain %s: %+v, want it not visible, readable or writable, hidden by the rule for %s/.ssh", path, v, a.Home)
	}
	r = run(t, a.agentboxIn(p, nil, "explain", path, "--", "true"))
	wantCode(t, "agentbox explain "+path, r, 0)
	if !strings.Contains(string(r.stdout), "hidden") {
		t.Errorf("agentbox explain %s: %q does not say hidden", path, r.stdout)
	}
}

// configDir is u's ~/.config/agentbox.
func (u user) configDir() string { return filepath.Join(u.Home, ".config", "agentbox") }

// withConfigFile writes u's ~/.config/agentbox/REL with content for the
// rest of the test. The caller must not be parallel: every run of u reads
// that directory.
func withConfigFile(t *testing.T, u user, rel, content string) string {
	t.Helper()
	path := filepath.Join(u.configDir(), rel)
	if exists(t, path) {
		t.Fatalf("%s exists before the test: remove it (the test users' homes are the suite's)", path)
	}
	made := writeOwned(t, u, path, content, 0o600)
	removeAtEnd(t, append(made, path)...)
	return path
}

// TestUserProfile (not parallel: it changes the user's profiles) checks a
// profile in ~/.config/agentbox/profiles: one with an unknown key stops
// every run with an error naming its file and line; a good one chosen with
// --profile grants its paths, and agentbox policy shows them with the
// profile as their source. It also checks [defaults] landlock in
// config.toml.
func TestUserProfile(t *testing.T) {
	a, _ := policyUsers(t)
	tok := token(t)
	p := a.project(t)
	data := filepath.Join(a.Home, "abtest-xdata-"+tok)
	mkdirOwned(t, a, data)
	removeAtEnd(t, data)
	const name = "abtest-x"
	rel := "profiles/" + name + ".toml"
	f := "$HOME/abtest-xdata-" + tok + "/f"

	t.Run("unknown key", func(t *testing.T) {
		path := withConfigFile(t, a, rel, fmt.Sprintf("description = \"abtest\"\nrw = [\"~/abtest-xdata-%s\"]\nbogus = true\n", tok))
		for _, args := range [][]string{{"--profile", name, "--", "true"}, {"--", "true"}} {
			r := run(t, a.agentboxIn(p, nil, args...))
			wantCode(t, fmt.Sprintf("agentbox %q with a bad profile", args), r, 125)
			if !strings.Contains(string(r.stderr), path+":3:1:") || !strings.Contains(string(r.stderr), "bogus") {
				t.Errorf("agentbox %q: stderr %q, want the error at %s:3:1 naming the key bogus", args, r.stderr, path)
			}
		}
	})
	t.Run("grant", func(t *testing.T) {
		path := withConfigFile(t, a, rel, fmt.Sprintf("description = \"abtest\"\nrw = [\"~/abtest-xdata-%s\"]\n", tok))
		a.runFsops(t, p, nil, nil, []fsop{{"write", []string{f}, "EACCES"}})
		a.runFsops(t, p, nil, []string{"--profile", name}, []fsop{{"write", []string{f}, "ok"}})

		r := run(t, a.agentboxIn(p, nil, "policy", "--json", "--profile", name, "--", "true"))
		wantCode(t, "agentbox policy --json --profile "+name, r, 0)
		var pol struct {
			Profile string
			Write   []struct{ Path, Source string }
		}
		if err := json.Unmarshal(r.stdout, &pol); err != nil {
			t.Fatalf("agentbox policy --json: %v: %q", err, r.stdout)
		}
		i := slices.IndexFunc(pol.Write, func(e struct{ Path, Source string }) bool { return e.Path == data })
		if pol.Profile != name || i < 0 || !strings.Contains(pol.Write[i].Source, "profile "+name) || !strings.Contains(pol.Write[i].Source, path) {
			t.Errorf("agentbox policy --json --profile %s: %s; want profile %s and %s writable with the source naming profile %s and %s", name, r.stdout, name, data, name, path)
		}
	})
	t.Run("config landlock off", func(t *testing.T) {
		withConfigFile(t, a, "config.toml", "[defaults]\nlandlock = \"off\"\n")
		r := run(t, a.agentboxIn(p, nil, "--", "true"))
		wantCode(t, "agentbox -- true with [defaults] landlock = \"off\"", r, 0)
		if msg := string(r.stderr); !strings.Contains(msg, "warning") || !strings.Contains(msg, "landlock off") {
			t.Errorf("agentbox with [defaults] landlock = \"off\": stderr %q, want the landlock off warning", msg)
		}
	})
}

// TestProjectProfilesIgnored puts profiles and config files that grant a
// directory of the home into the project (which the agent can write), at
// every place a careless lookup might read: ./.config/agentbox (also with
// XDG_CONFIG_HOME=.config, relative), ./.agentbox, ./profiles and ./agentbox.
// None is read: the grant does not apply, and --profile evil does not find
// one.
func TestProjectProfilesIgnored(t *testing.T) {
	t.Parallel()
	a, _ := policyUsers(t)
	tok := token(t)
	p := a.project(t)
	dir := filepath.Join(a.Home, "abtest-evil-"+tok)
	mkdirOwned(t, a, dir)
	removeAtEnd(t, dir)
	grant := fmt.Sprintf("rw = [\"~/abtest-evil-%s\"]\nshow = [\"~/.ssh\"]\n", tok)
	profile := "commands = [\"abtest-helper\", \"true\"]\n" + grant
	for _, rel := range []string{
		".config/agentbox/profiles/default.toml", ".config/agentbox/profiles/evil.toml",
		".agentbox/default.toml", ".agentbox/evil.toml", ".agentbox/profiles/default.toml", ".agentbox/profiles/evil.toml",
		"profiles/default.toml", "profiles/evil.toml", "agentbox/profiles/default.toml", "evil.toml",
	} {
		writeOwned(t, a, filepath.Join(p, rel), profile, 0o600)
	}
	for _, rel := range []string{".config/agentbox/config.toml", ".agentbox/config.toml", "config.toml", "agentbox.toml"} {
		writeOwned(t, a, filepath.Join(p, rel), "[defaults]\n"+grant, 0o600)
	}
	f := "$HOME/abtest-evil-" + tok + "/f"
	for _, env := range [][]string{nil, {"XDG_CONFIG_HOME=.config"}} {
		a.runFsops(t, p, env, nil, []fsop{{"write", []string{f}, "EACCES"}})
	}
	wantAbsent(t, "a write granted only by files in the project", filepath.Join(dir, "f"))
	r := run(t, a.agentboxIn(p, nil, "--profile", "evil", "--", "true"))
	wantCode(t, "agentbox --profile evil (only in the project)", r, 125)
}

// TestProfileByCommandName (not parallel: it removes the user's
// ~/.config/opencode) runs a program named opencode: it gets the built-in
// opencode profile, whose ~/.config/opencode agentbox creates (0700) before
// the command starts and lets it write. The same program under another
// name gets the default profile and cannot write there.
func TestProfileByCommandName(t *testing.T) {
	a, _ := policyUsers(t)
	tok := token(t)
	p := a.project(t)
	oc := filepath.Join(a.Home, ".config", "opencode")
	if err := os.RemoveAll(oc); err != nil {
		t.Fatal(err)
	}
	removeAtEnd(t, oc)
	// The profile's other directories, which agentbox creates too.
	for _, rel := range []string{".local/share/opencode", ".cache/opencode", ".local/state/opencode"} {
		if d := filepath.Join(a.Home, rel); !exists(t, d) {
			removeAtEnd(t, d)
		}
	}
	script := fmt.Sprintf(`#!/bin/sh
if [ -d "$HOME/.config/opencode" ]; then echo "config dir: exists"; else echo "config dir: missing"; fi
if echo hi > "$HOME/.config/opencode/abtest-%s-$(basename "$0")" 2>/dev/null; then echo "write: ok"; else echo "write: denied"; fi
`, tok)
	for _, name := range []string{"opencode", "notopencode"} {
		writeOwned(t, a, filepath.Join(p, "bin", name), script, 0o755)
	}
	env := []string{"PATH=" + filepath.Join(p, "bin") + ":/usr/local/bin:/usr/bin:/bin"}
	for _, tc := range []struct{ name, want string }{
		{"opencode", "config dir: exists\nwrite: ok\n"},
		{"notopencode", "config dir: exists\nwrite: denied\n"},
	} {
		r := run(t, a.agentboxIn(p, env, "--", tc.name))
		wantCode(t, "agentbox -- "+tc.name, r, 0)
		if got := string(r.stdout); got != tc.want {
			t.Errorf("agentbox -- %s: %q, want %q", tc.name, got, tc.want)
		}
		if tc.name == "opencode" {
			st, err := os.Lstat(oc)
			if err != nil {
				t.Fatalf("after agentbox -- opencode: %v", err)
			}
			if uid := int(st.Sys().(*syscall.Stat_t).Uid); st.Mode() != os.ModeDir|0o700 || uid != a.UID {
				t.Errorf("%s: mode %v, owner %d; want a directory of mode 0700 owned by uid %d", oc, st.Mode(), uid, a.UID)
			}
		}
	}
	wantAbsent(t, "a write by a command not named opencode", filepath.Join(oc, "abtest-"+tok+"-notopencode"))
}

// deniedAs reports whether got is o refused in one of the ways the sandbox
// refuses a write: EACCES (Landlock), EROFS (the read-only mount that also
// stops chmod, chown and utimes, which Landlock does not cover) or EXDEV (a
// rename or link across the writable bind's mount boundary).
func deniedAs(got string, o fsop) bool {
	for _, errno := range []string{"EACCES", "EROFS", "EXDEV"} {
		if got == o.line(errno) {
			return true
		}
	}
	return false
}

// TestPlantedGitFileGrantsNothing: a command may leave a .git file (or
// symlink) in its project that names a directory outside, hoping the next
// session grants it as the project's git directory. It must not: the next
// session still cannot write there.
func TestPlantedGitFileGrantsNothing(t *testing.T) {
	t.Parallel()
	a, _ := users(t)
	for _, plant := range []string{
		`printf 'gitdir: %s\n' "$HOME" > .git`,
		`ln -s "$HOME" .git`,
		`mkdir -p fake && echo ref > fake/HEAD && mkdir fake/objects && printf '%s\n' "$HOME" > fake/commondir && printf '%s\n' "$PWD/.git" > fake/gitdir && printf 'gitdir: %s\n' "$PWD/fake" > .git`,
	} {
		p := a.project(t)
		r := a.box(t, nil, "--", "sh", "-c", "cd "+p+" && "+plant)
		wantCode(t, "agentbox (plant .git)", r, 0)
		probe := filepath.Join(a.Home, "abtest-git-probe")
		os.Remove(probe)
		cmd := a.agentboxIn(p, nil, "--", "sh", "-c", `echo x > "$1" 2>/dev/null && echo wrote; true`, "sh", probe)
		r = run(t, cmd)
		wantCode(t, "agentbox (write through the planted .git)", r, 0)
		if strings.Contains(string(r.stdout), "wrote") {
			t.Errorf("after %q, the next session wrote %s", plant, probe)
		}
		os.Remove(probe)
		pol := run(t, a.agentboxIn(p, nil, "policy", "--json"))
		if strings.Contains(string(pol.stdout), `"`+a.Home+`"`) {
			t.Errorf("after %q, policy grants the home directory: %s", plant, pol.stdout)
		}
	}
}
