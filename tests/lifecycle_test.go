//go:build linux

package tests

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestBackgroundProcessesEndWithCommand checks that when the command exits,
// what it left running in the background (a child, a setsid daemon that
// ignores the catchable signals) dies with the sandbox: agentbox returns at
// once with the command's status and the session is removed.
func TestBackgroundProcessesEndWithCommand(t *testing.T) {
	t.Parallel()
	a, _ := users(t)
	p := a.project(t)
	root := filepath.Join(p, "root")
	marker := "ABTEST_MARK=" + token(t)
	begin := time.Now()
	r := a.box(t, []string{marker}, "--root", root, "--", "sh", "-c", privateOnly+`
sleep 1000 > /dev/null 2>&1 &
setsid sh -c 'trap "" HUP INT QUIT TERM; while :; do echo x >> /tmp/log; sleep 0.01; done' > /dev/null 2>&1 &
exit 7
`)
	wantCode(t, "agentbox -- sh (background children, exit 7)", r, 7)
	if d := time.Since(begin); d > 20*time.Second {
		t.Errorf("agentbox took %v to return after the command exited", d)
	}
	if pids := hostPIDsWithEnv(t, marker, -1); len(pids) != 0 {
		t.Errorf("processes of the ended sandbox still run: %v", pids)
	}
	if ids := sessionIDs(t, root); len(ids) != 0 {
		t.Errorf("session root holds %q after the command ended, want nothing", ids)
	}
}

// TestConcurrentSessionsOneRoot runs many sessions of one user at once on
// one session root, each starting a reconcile of the others: every one
// succeeds with its own /tmp, and the root is empty at the end.
func TestConcurrentSessionsOneRoot(t *testing.T) {
	t.Parallel()
	a, _ := users(t)
	p := a.project(t)
	root := filepath.Join(p, "root")
	const n = 12
	cmds := make([]*proc, n)
	for i := range cmds {
		cmds[i] = start(t, a.agentbox([]string{fmt.Sprintf("I=%d", i)}, "--root", root, "--", "sh", "-c",
			privateOnly+`test -z "$(ls -A /tmp)" && echo "$I" > /tmp/i && sleep 0.1 && cat /tmp/i`))
	}
	for i, c := range cmds {
		r := c.wait()
		if r.code != 0 || string(r.stdout) != fmt.Sprintf("%d\n", i) || len(r.stderr) != 0 {
			t.Errorf("session %d of %d: %v; want exit 0 and its own /tmp", i, n, r)
		}
	}
	if ids := sessionIDs(t, root); len(ids) != 0 {
		t.Errorf("session root holds %q after every session ended, want nothing", ids)
	}
}

// abandonAll starts n sessions under root, waits until all run, SIGKILLs
// every wrapper and waits until every sandbox is gone: n abandoned sessions,
// none of which could reconcile another (all were live while starting).
func abandonAll(t *testing.T, u user, root string, n int) []string {
	t.Helper()
	p := filepath.Dir(root)
	procs := make([]*proc, n)
	for i := range procs {
		ready := filepath.Join(p, fmt.Sprintf("ready-%d", i))
		procs[i] = start(t, u.agentbox([]string{"READY=" + ready}, "--root", root, "--", "sh", "-c", `touch "$READY"; exec sleep 1000`))
	}
	for i, pr := range procs {
		waitReady(t, pr, filepath.Join(p, fmt.Sprintf("ready-%d", i)))
	}
	ids := sessionIDs(t, root)
	if len(ids) != n {
		t.Fatalf("session root holds %d sessions, want %d", len(ids), n)
	}
	recs := make([]stateRecord, n)
	for i, id := range ids {
		recs[i] = readState(t, filepath.Join(root, id))
	}
	for _, pr := range procs {
		pr.cmd.Process.Signal(syscall.SIGKILL)
	}
	for _, pr := range procs {
		pr.wait()
	}
	waitFor(t, "every sandbox to die", 10*time.Second, func() bool {
		for _, r := range recs {
			if procAlive(t, r.InitPID, r.InitStart) {
				return false
			}
		}
		return true
	})
	return ids
}

// TestReconcileIsBounded checks that a start reconciles some, not all, of
// many abandoned sessions (its work before the command is bounded), and that
// repeated starts eventually remove them all.
func TestReconcileIsBounded(t *testing.T) {
	t.Parallel()
	a, _ := users(t)
	p := a.project(t)
	root := filepath.Join(p, "root")
	const n = 24
	abandonAll(t, a, root, n)

	wantCode(t, "agentbox -- true", a.box(t, nil, "--root", root, "--", "true"), 0)
	left := len(sessionIDs(t, root))
	if left == n || left == 0 {
		t.Errorf("one start left %d of %d abandoned sessions; want some removed and, the work being bounded, some left", left, n)
	}
	for i := 0; i < 4*n && left > 0; i++ {
		wantCode(t, "agentbox -- true", a.box(t, nil, "--root", root, "--", "true"), 0)
		left = len(sessionIDs(t, root))
	}
	if left != 0 {
		t.Errorf("%d abandoned sessions left after %d starts", left, 4*n)
	}
}

// TestRootSelection checks where sessions go: --root, else AGENTBOX_ROOT,
// else $XDG_STATE_HOME/agentbox, else ~/.local/state/agentbox; the default
// roots' missing parents are created, mode 0700.
func TestRootSelection(t *testing.T) {
	t.Parallel()
	a, _ := users(t)
	p := a.project(t)
	home := filepath.Join(p, "home")
	a.mkdir(t, home, 0o755)
	proj := filepath.Join(home, "project")
	a.mkdir(t, proj, 0o755)
	flag, envRoot, xdg := filepath.Join(p, "flag-root"), filepath.Join(p, "env-root"), filepath.Join(p, "xdg")
	for _, tc := range []struct {
		name string
		env  []string
		args []string
		want string
	}{
		{"flag", []string{"AGENTBOX_ROOT=" + envRoot, "XDG_STATE_HOME=" + xdg}, []string{"--root", flag}, flag},
		{"AGENTBOX_ROOT", []string{"AGENTBOX_ROOT=" + envRoot, "XDG_STATE_HOME=" + xdg}, nil, envRoot},
		{"XDG_STATE_HOME", []string{"XDG_STATE_HOME=" + xdg}, nil, filepath.Join(xdg, "agentbox")},
		{"relative XDG_STATE_HOME", []string{"XDG_STATE_HOME=relative"}, nil, filepath.Join(home, ".local/state/agentbox")},
		{"HOME", nil, nil, filepath.Join(home, ".local/state/agentbox")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			env := append([]string{"HOME=" + home}, tc.env...)
			// Run from a project of that home: agentbox refuses a working
			// directory that contains the home directory.
			cmd := a.agentbox(env, append(append([]string{"--keep"}, tc.args...), "--", "true")...)
			cmd.Dir = proj
			r := run(t, cmd)
			wantCode(t, "agentbox --keep -- true", r, 0)
			id, path := keptSession(t, r.stderr)
			if path != filepath.Join(tc.want, id) || !exists(t, path) {
				t.Errorf("session kept at %s, want it in %s", path, tc.want)
			}
			if rows, cr := a.clean(t, tc.want, id); cr.code != 0 || len(rows) != 1 || rows[0].Action != "removed" {
				t.Errorf("agentbox clean %s: %+v (%v)", id, rows, cr)
			}
		})
	}
	// The parents the default roots needed were created 0700.
	for _, d := range []string{xdg, filepath.Join(xdg, "agentbox"), filepath.Join(home, ".local"), filepath.Join(home, ".local/state"), filepath.Join(home, ".local/state/agentbox")} {
		got := look(t, d)
		if got.kind != syscall.S_IFDIR || got.uid != a.UID || got.mode != 0o700 {
			t.Errorf("%s: %+v, want a directory of uid %d, mode 0700", d, got, a.UID)
		}
	}
}

// TestWorkingDirectoryUnderHostTmp checks that agentbox started from a
// directory under the host's /tmp, which does not exist inside, refuses with
// 125 and says why, instead of running the command somewhere else.
func TestWorkingDirectoryUnderHostTmp(t *testing.T) {
	t.Parallel()
	a, _ := users(t)
	dir := "/tmp/abtest-cwd-" + token(t)
	t.Cleanup(func() { os.RemoveAll(dir) })
	wantCode(t, "user A: mkdir", a.sh(t, nil, `mkdir -m 0700 "$1"`, dir), 0)
	cmd := a.agentbox(nil, "--", "pwd")
	cmd.Dir = dir
	r := run(t, cmd)
	wantCode(t, "agentbox -- pwd in "+dir, r, 125)
	if len(r.stdout) != 0 || !strings.Contains(string(r.stderr), dir) || !strings.Contains(string(r.stderr), "private") {
		t.Errorf("agentbox -- pwd in %s: %v; want no stdout and a message naming the directory and saying /tmp is private", dir, r)
	}
}
