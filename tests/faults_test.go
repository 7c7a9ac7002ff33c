//go:build linux

package tests

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

var (
	hookOnce sync.Once
	hookBin  string
	hookErr  error
)

// hookBinary builds, once, a second agentbox with -tags agentbox_testhooks
// (sandbox/testhook.go) into the suite's directory: it pauses forever in the
// session state named by AGENTBOX_TEST_PAUSE, after writing that state to
// AGENTBOX_TEST_PAUSE_FILE.
func hookBinary(t *testing.T) string {
	t.Helper()
	hookOnce.Do(func() {
		if suiteDir == "" {
			hookErr = fmt.Errorf("no suite directory: %v", setupErr)
			return
		}
		wd, err := os.Getwd()
		if err != nil {
			hookErr = err
			return
		}
		goTool, err := exec.LookPath("go")
		if err != nil {
			goTool = filepath.Join(runtime.GOROOT(), "bin", "go")
		}
		bin := filepath.Join(suiteDir, "agentbox-testhooks")
		cmd := exec.Command(goTool, "build", "-tags", "agentbox_testhooks", "-o", bin, ".")
		cmd.Dir = filepath.Dir(wd)
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		if out, err := cmd.CombinedOutput(); err != nil {
			hookErr = fmt.Errorf("go build -tags agentbox_testhooks: %v\n%s", err, out)
			return
		}
		if hookErr = os.Chmod(bin, 0o755); hookErr == nil {
			hookBin = bin
		}
	})
	if hookErr != nil {
		t.Fatal(hookErr)
	}
	return hookBin
}

// agentboxPaused is agentbox (the test-hook build) as u, set to pause in
// state and report it in the file pause.
func (u user) agentboxPaused(t *testing.T, state, pause string, env []string, args ...string) *exec.Cmd {
	t.Helper()
	bin := hookBinary(t)
	cmd := u.agentbox(append([]string{"AGENTBOX_TEST_PAUSE=" + state, "AGENTBOX_TEST_PAUSE_FILE=" + pause}, env...), args...)
	cmd.Path, cmd.Args[0] = bin, bin
	return cmd
}

// waitPaused waits for the wrapper p to report that it paused in state.
func waitPaused(t *testing.T, p *proc, pause, state string) {
	t.Helper()
	waitReady(t, p, pause)
	waitFor(t, "the pause file to say "+state, 5*time.Second, func() bool { return readFile(t, pause) == state })
}

// noPanic fails the test when r's stderr holds a Go runtime crash.
func noPanic(t *testing.T, what string, r result) {
	t.Helper()
	for _, s := range []string{"panic:", "goroutine ", "fatal error:", "SIGSEGV"} {
		if strings.Contains(string(r.stderr), s) {
			t.Errorf("%s crashed: %v", what, r)
			return
		}
	}
}

// TestKillHooksAbsentFromNormalBuild checks that the binary under test, a
// normal build, ignores AGENTBOX_TEST_PAUSE: no environment variable can
// stop a released agentbox.
func TestKillHooksAbsentFromNormalBuild(t *testing.T) {
	t.Parallel()
	a, _ := users(t)
	p := a.project(t)
	root := filepath.Join(p, "root")
	for _, state := range []string{"created", "running", "exited", "cleaning"} {
		pause := filepath.Join(p, "paused-"+state)
		r := a.box(t, []string{"AGENTBOX_TEST_PAUSE=" + state, "AGENTBOX_TEST_PAUSE_FILE=" + pause}, "--root", root, "--", "true")
		wantCode(t, "agentbox -- true with AGENTBOX_TEST_PAUSE="+state, r, 0)
		if exists(t, pause) {
			t.Errorf("the normal build honoured AGENTBOX_TEST_PAUSE=%s", state)
		}
	}
	if ids := sessionIDs(t, root); len(ids) != 0 {
		t.Errorf("session root holds %q, want nothing", ids)
	}
}

// TestKillAtEachState SIGKILLs the wrapper while it is paused in each state
// a session passes through (proven from the state file before the kill):
// every sandbox process is gone, the state file still says that state, ps
// shows the session abandoned, and `agentbox clean` removes it — also for
// created, where no init was ever started.
func TestKillAtEachState(t *testing.T) {
	t.Parallel()
	a, _ := users(t)
	for _, state := range []string{"created", "running", "exited", "cleaning"} {
		t.Run(state, func(t *testing.T) {
			t.Parallel()
			p := a.project(t)
			root := filepath.Join(p, "root")
			pause := filepath.Join(p, "paused")
			marker := "ABTEST_MARK=" + token(t)
			script := `sleep 1000 & exec sleep 1000`
			if state == "exited" || state == "cleaning" {
				script = `echo x > /tmp/f; exit 3`
			}
			pr := start(t, a.agentboxPaused(t, state, pause, []string{marker}, "--root", root, "--", "sh", "-c", script))
			waitPaused(t, pr, pause, state)
			wrapper := pr.cmd.Process.Pid

			ids := sessionIDs(t, root)
			if len(ids) != 1 {
				t.Fatalf("session root holds %q, want one session", ids)
			}
			id := ids[0]
			sess := filepath.Join(root, id)
			rec := readState(t, sess)
			if rec.State != state || rec.WrapperPID != wrapper {
				t.Fatalf("state of the paused session: %+v, want %s, wrapper pid %d", rec, state, wrapper)
			}
			switch state {
			case "created":
				if rec.InitPID != 0 {
					t.Errorf("created: init pid %d recorded, want none (the hook runs before the clone)", rec.InitPID)
				}
			case "running":
				if !procAlive(t, rec.InitPID, rec.InitStart) {
					t.Errorf("running: init %d is not alive", rec.InitPID)
				}
				waitFor(t, "the command's processes", 10*time.Second, func() bool { return len(hostPIDsWithEnv(t, marker, wrapper)) >= 2 })
			}
			if rows := a.ps(t, root); len(rows) != 1 || !rows[0].Live || string(rows[0].State) != state {
				t.Errorf("agentbox ps --json of the paused session: %+v, want %s live, in %s", rows, id, state)
			}

			if err := pr.cmd.Process.Signal(syscall.SIGKILL); err != nil {
				t.Fatal(err)
			}
			pr.wait()
			waitFor(t, "every process of the sandbox to die", 10*time.Second, func() bool {
				return len(hostPIDsWithEnv(t, marker, -1)) == 0 && (rec.InitPID == 0 || !procAlive(t, rec.InitPID, rec.InitStart))
			})
			if after := readState(t, sess); after.State != state {
				t.Errorf("state left by the wrapper killed in %s: %+v", state, after)
			}
			if rows := a.ps(t, root); len(rows) != 1 || rows[0].Live || string(rows[0].State) != state {
				t.Errorf("agentbox ps --json after the kill: %+v, want %s abandoned (live false) in %s", rows, id, state)
			}
			rows, cr := a.clean(t, root)
			noPanic(t, "agentbox clean", cr)
			if c, ok := findClean(rows, id); cr.code != 0 || !ok || c.Action != "removed" || c.State != state {
				t.Errorf("agentbox clean --json: %+v (%v), want %s (%s) removed", rows, cr, id, state)
			}
			if ids := sessionIDs(t, root); len(ids) != 0 {
				t.Errorf("session root holds %q after agentbox clean, want nothing", ids)
			}
		})
	}
}

// TestKillLiveSessionUntouched checks that a live session, paused in created
// (lock held, no init yet) or running, is left alone by the reconcile of
// the same user's other sessions and by clean, and that the other user's
// agentbox refuses the root as not its own. The root is in a root-owned
// mode-0755 directory, so that B reaches the root's own ownership check
// rather than a permission error on a parent.
func TestKillLiveSessionUntouched(t *testing.T) {
	t.Parallel()
	a, b := users(t)
	for _, state := range []string{"created", "running"} {
		t.Run(state, func(t *testing.T) {
			t.Parallel()
			p := a.project(t)
			root := filepath.Join(scratch(t), "root")
			a.mkdir(t, root, 0o700)
			pause := filepath.Join(p, "paused")
			pr := start(t, a.agentboxPaused(t, state, pause, nil, "--root", root, "--", "sh", "-c", `echo live > /tmp/f; exec sleep 1000`))
			waitPaused(t, pr, pause, state)
			ids := sessionIDs(t, root)
			if len(ids) != 1 {
				t.Fatalf("session root holds %q, want one session", ids)
			}
			id := ids[0]
			sess := filepath.Join(root, id)
			before := look(t, sess)

			for i := 0; i < 3; i++ {
				wantCode(t, "another session of A (reconciles the root)", a.box(t, nil, "--root", root, "--", "true"), 0)
			}
			rows, cr := a.clean(t, root)
			if c, ok := findClean(rows, id); cr.code != 0 || !ok || c.Action != "skipped-live" {
				t.Errorf("agentbox clean as A: %+v (%v), want %s skipped-live", rows, cr, id)
			}
			for _, args := range [][]string{{"clean", "--json", "--root", root}, {"clean", "--root", root, id}, {"ps", "--root", root}, {"--root", root, "--", "true"}} {
				r := b.box(t, nil, args...)
				noPanic(t, "agentbox as B", r)
				if r.code != 125 || !strings.Contains(string(r.stderr), root) || !strings.Contains(string(r.stderr), fmt.Sprintf("owned by uid %d", a.UID)) {
					t.Errorf("agentbox %q as B on A's root: %v; want exit 125 and a refusal naming %s, owned by uid %d", args, r, root, a.UID)
				}
			}
			if got := look(t, sess); got != before || readState(t, sess).State != state {
				t.Errorf("live session changed: %+v, was %+v", got, before)
			}
			if pr.exited() {
				t.Fatalf("the paused wrapper ended: %v", pr.res)
			}
			if state == "running" {
				if got := readFile(t, filepath.Join(sess, "tmp", "f")); got != "live\n" {
					t.Errorf("live session's tmp/f = %q", got)
				}
			}
			pr.cmd.Process.Signal(syscall.SIGKILL)
			pr.wait()
			waitFor(t, "clean to remove the abandoned session", 10*time.Second, func() bool {
				rows, _ := a.clean(t, root)
				c, _ := findClean(rows, id)
				return c.Action == "removed" || !exists(t, sess)
			})
		})
	}
}

// mountTmpfs mounts a tmpfs of size bytes on a new directory of u's in dir,
// owned by u, mode 0700, and unmounts it at the end of the test.
func mountTmpfs(t *testing.T, u user, dir, size string) string {
	t.Helper()
	mnt := filepath.Join(dir, "small")
	u.mkdir(t, mnt, 0o700)
	opts := fmt.Sprintf("size=%s,mode=0700,uid=%d,gid=%d", size, u.UID, u.GID)
	if err := syscall.Mount("tmpfs", mnt, "tmpfs", syscall.MS_NOSUID|syscall.MS_NODEV, opts); err != nil {
		t.Fatalf("mount tmpfs %s on %s: %v", opts, mnt, err)
	}
	t.Cleanup(func() {
		if err := syscall.Unmount(mnt, syscall.MNT_DETACH); err != nil {
			t.Errorf("umount %s: %v", mnt, err)
		}
	})
	return mnt
}

// TestFullSessionRoot runs a command that fills /tmp on a session root whose
// filesystem is a 2 MiB tmpfs: the command sees ENOSPC as it would outside,
// its exit status is agentbox's, and the session is still removed.
func TestFullSessionRoot(t *testing.T) {
	t.Parallel()
	a, _ := users(t)
	p := a.project(t)
	root := mountTmpfs(t, a, p, "2m")
	fill := `head -c 10485760 /dev/zero > "$1/f"`

	// Outside: the same command on the same filesystem.
	out := filepath.Join(root, "outside")
	a.mkdir(t, out, 0o700)
	want := a.sh(t, nil, fill, out)
	if want.code == 0 || !strings.Contains(string(want.stderr), "No space left on device") {
		t.Fatalf("outside agentbox, %s: %v; want ENOSPC", fill, want)
	}
	if err := os.RemoveAll(out); err != nil {
		t.Fatal(err)
	}

	r := a.box(t, nil, "--root", root, "--", "sh", "-c", privateOnly+fill, "sh", "/tmp")
	noPanic(t, "agentbox", r)
	if r.code != want.code || !strings.Contains(string(r.stderr), "No space left on device") {
		t.Errorf("agentbox -- %s on a full session root: %v; want exit %d and ENOSPC like outside (%v)", fill, r, want.code, want)
	}
	left := sessionIDs(t, root)
	if strings.Contains(string(r.stderr), "agentbox: cleanup") || len(left) != 0 {
		t.Errorf("agentbox did not remove the session on a full filesystem: %v; root holds %q", r, left)
	}
	if names := entries(t, root); len(names) != 0 {
		t.Errorf("session root holds %q after the run, want nothing", names)
	}
}

// TestGarbledState damages kept sessions behind agentbox's back: a truncated
// state file, a garbled one, and a session directory renamed with a plain
// file put at its name. ps and clean report them with clear errors and no
// crash, and still work on the healthy session; a new session starts fine.
func TestGarbledState(t *testing.T) {
	t.Parallel()
	a, _ := users(t)
	p := a.project(t)
	root := filepath.Join(p, "root")
	keep := func() string {
		t.Helper()
		r := a.box(t, nil, "--keep", "--root", root, "--", "true")
		wantCode(t, "agentbox --keep -- true", r, 0)
		id, _ := keptSession(t, r.stderr)
		return id
	}
	healthy, truncated, garbled, replaced := keep(), keep(), keep(), keep()
	if err := os.Truncate(filepath.Join(root, truncated, "state"), 0); err != nil {
		t.Fatal(err)
	}
	a.writeFile(t, filepath.Join(root, garbled, "state"), `{"version":1,"id":"`+garbled+`","state":"kept`+"\x00\xff", 0o600)
	if err := os.Rename(filepath.Join(root, replaced), filepath.Join(root, "moved-away")); err != nil {
		t.Fatal(err)
	}
	a.writeFile(t, filepath.Join(root, replaced), "not a session\n", 0o600)

	r := a.box(t, nil, "ps", "--json", "--root", root)
	noPanic(t, "agentbox ps", r)
	wantCode(t, "agentbox ps --json", r, 0)
	byID := map[string]psRow{}
	for _, row := range a.ps(t, root) {
		byID[row.ID] = row
	}
	if h := byID[healthy]; h.State != "kept" || h.Error != "" {
		t.Errorf("agentbox ps: healthy session %+v, want kept without error", h)
	}
	for _, id := range []string{truncated, garbled, replaced} {
		if row, ok := byID[id]; !ok || row.Error == "" {
			t.Errorf("agentbox ps: damaged session %s: %+v (listed %v), want a row with an error", id, row, ok)
		}
	}
	if r := a.box(t, nil, "ps", "--root", root); r.code != 0 || !strings.Contains(string(r.stdout), "unreadable") {
		noPanic(t, "agentbox ps", r)
		t.Errorf("agentbox ps: %v; want the damaged sessions shown unreadable", r)
	}

	rows, cr := a.clean(t, root)
	noPanic(t, "agentbox clean", cr)
	if c, _ := findClean(rows, healthy); c.Action != "skipped-kept" {
		t.Errorf("agentbox clean: %+v, want %s skipped-kept", rows, healthy)
	}
	for _, id := range []string{truncated, garbled} {
		if c, _ := findClean(rows, id); c.Action != "removed" || exists(t, filepath.Join(root, id)) {
			t.Errorf("agentbox clean: %+v, want the abandoned unreadable %s removed", rows, id)
		}
	}
	if c, ok := findClean(rows, replaced); !ok || c.Action != "failed" || !strings.Contains(c.Error, "not a directory") {
		t.Errorf("agentbox clean: %+v, want %s failed: not a directory", rows, replaced)
	}
	if cr.code != 125 {
		t.Errorf("agentbox clean with one session it could not remove: %v, want exit 125", cr)
	}
	if got := readFile(t, filepath.Join(root, replaced)); got != "not a session\n" {
		t.Errorf("the plain file at %s changed: %q", replaced, got)
	}
	wantCode(t, "agentbox -- true among damaged sessions", a.box(t, nil, "--root", root, "--", "true"), 0)
	rows, cr = a.clean(t, root, healthy)
	if c, _ := findClean(rows, healthy); cr.code != 0 || c.Action != "removed" {
		t.Errorf("agentbox clean %s: %+v (%v), want it removed", healthy, rows, cr)
	}
	if ids := sessionIDs(t, root); len(ids) != 1 || ids[0] != replaced {
		t.Errorf("session root holds %q, want only the plain file %s", ids, replaced)
	}
}

// TestFaultRootReadOnlyOrGone checks a session root made read-only (mode
// 0500) between runs, and one renamed away while a session runs: a clear
// error naming the path and no crash, ps still works, and the session
// running when its root moved is still removed.
func TestFaultRootReadOnlyOrGone(t *testing.T) {
	t.Parallel()
	a, _ := users(t)
	p := a.project(t)
	root := filepath.Join(p, "root")
	r := a.box(t, nil, "--keep", "--root", root, "--", "true")
	wantCode(t, "agentbox --keep -- true", r, 0)
	kept, _ := keptSession(t, r.stderr)

	if err := os.Chmod(root, 0o500); err != nil {
		t.Fatal(err)
	}
	r = a.box(t, nil, "--root", root, "--", "true")
	noPanic(t, "agentbox on a read-only root", r)
	if r.code != 125 || !strings.Contains(string(r.stderr), root) || !strings.Contains(string(r.stderr), "permission denied") {
		t.Errorf("agentbox -- true on a read-only root: %v; want exit 125 and an error naming %s, permission denied", r, root)
	}
	if rows := a.ps(t, root); len(rows) != 1 || rows[0].ID != kept || rows[0].State != "kept" {
		t.Errorf("agentbox ps on a read-only root: %+v, want %s kept", rows, kept)
	}
	rows, cr := a.clean(t, root, kept)
	noPanic(t, "agentbox clean on a read-only root", cr)
	if c, _ := findClean(rows, kept); cr.code != 125 || c.Action != "failed" || c.Error == "" {
		t.Errorf("agentbox clean %s on a read-only root: %+v (%v), want it failed with an error, exit 125", kept, rows, cr)
	}
	if err := os.Chmod(root, 0o700); err != nil {
		t.Fatal(err)
	}
	rows, cr = a.clean(t, root, kept)
	if c, _ := findClean(rows, kept); cr.code != 0 || c.Action != "removed" {
		t.Errorf("agentbox clean %s after chmod 0700: %+v (%v)", kept, rows, cr)
	}

	// The root renamed away while a session runs: the wrapper works
	// through its descriptors and still removes the session.
	ready, done := filepath.Join(p, "ready"), filepath.Join(p, "done")
	pr := start(t, a.agentbox([]string{"READY=" + ready, "DONE=" + done}, "--root", root, "--", "sh", "-c",
		`echo x > /tmp/f; touch "$READY"; while [ ! -e "$DONE" ]; do sleep 0.02; done`))
	waitReady(t, pr, ready)
	moved := filepath.Join(p, "root-moved")
	if err := os.Rename(root, moved); err != nil {
		t.Fatal(err)
	}
	r = a.box(t, nil, "ps", "--json", "--root", root)
	noPanic(t, "agentbox ps on a vanished root", r)
	touch(t, done)
	res := pr.wait()
	noPanic(t, "agentbox whose root moved", res)
	wantCode(t, "agentbox whose root was renamed away", res, 0)
	if ids := sessionIDs(t, moved); len(ids) != 0 {
		t.Errorf("the moved root holds %q, want nothing", ids)
	}
}
