//go:build linux

package tests

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"
)

// sentinel is a file or directory outside the session root that a hostile
// tree links to; its bytes (or listing), mode and mtime must survive the
// session's removal.
type sentinel struct {
	path    string
	mode    os.FileMode
	mtime   time.Time
	content string // the file's bytes, or the directory's listing
}

func snapshot(t *testing.T, path string) sentinel {
	t.Helper()
	st, err := os.Lstat(path)
	if err != nil {
		t.Fatal(err)
	}
	s := sentinel{path: path, mode: st.Mode(), mtime: st.ModTime()}
	if st.IsDir() {
		s.content = strings.Join(entries(t, path), "\n")
	} else {
		s.content = readFile(t, path)
	}
	return s
}

// TestHostileTreeRemoved lets the command leave behind what trips naive
// removal: directories of mode 000 and 500 with contents, symbolic links to
// a sentinel file and a sentinel directory outside the session root (some
// inside a mode-000 directory), a FIFO, chains of 100 and of 2100
// directories (a path far longer than PATH_MAX) ending in mode 000, and
// 100 000 files, in /tmp, /var/tmp and the runtime directory. After it exits
// the session directory is gone and the sentinels are unchanged.
//
// The 100 000 files are 1000 files and 99 hard-linked copies of them (cp -al):
// 100 000 names to remove, but only 1000 inodes to allocate, which costs
// about 0.7 ms each on some hosts (70 s for 100 000 inodes).
func TestHostileTreeRemoved(t *testing.T) {
	t.Parallel()
	a, _ := users(t)
	p := a.project(t)
	root := filepath.Join(p, "root")
	sentFile := filepath.Join(p, "sentinel-file")
	sentDir := filepath.Join(p, "sentinel-dir")
	a.writeFile(t, sentFile, "sentinel bytes\n", 0o640)
	a.writeFile(t, filepath.Join(sentDir, "inner"), "inner bytes\n", 0o640)
	if err := os.Chmod(sentDir, 0o750); err != nil {
		t.Fatal(err)
	}
	old := time.Now().Add(-48 * time.Hour).Truncate(time.Second)
	for _, f := range []string{filepath.Join(sentDir, "inner"), sentFile, sentDir} {
		if err := os.Chtimes(f, old, old); err != nil {
			t.Fatal(err)
		}
	}
	before := []sentinel{snapshot(t, sentFile), snapshot(t, sentDir), snapshot(t, filepath.Join(sentDir, "inner"))}

	r := a.box(t, []string{"SF=" + sentFile, "SD=" + sentDir, "HELPER=" + helperBin}, "-v", "--root", root, "--", "sh", "-c", privateOnly+`
set -e
cd /tmp
mkdir -p h/d000/sub h/d500/sub h/link000
echo x > h/d000/f; echo x > h/d000/sub/g; echo x > h/d500/f; echo x > h/d500/sub/g
ln -s "$SF" h/link-file
ln -s "$SD" h/link-dir
ln -s "$SD" h/link000/link-dir
ln -s "$SF" h/link000/link-file
mkfifo h/fifo
chmod 000 h/d000/sub h/d000 h/link000
chmod 500 h/d500/sub h/d500
d=deep; i=0; while [ $i -lt 100 ]; do d=$d/x; i=$((i+1)); done; mkdir -p "$d"; chmod 000 "$d"
mkdir many; cd many; mkdir base; (cd base && seq 1000 | xargs touch)
i=1; while [ $i -le 99 ]; do cp -al base c$i; i=$((i+1)); done
test "$(find . -type f | wc -l)" -eq 100000
cd /tmp
DIR=/tmp/deeper DEPTH=2100 ABTEST_HELPER=mkdeep "$HELPER"
mkdir /var/tmp/v000 && echo x > /var/tmp/v000/f && ln -s "$SD" /var/tmp/v000/l && chmod 000 /var/tmp/v000
mkdir "$XDG_RUNTIME_DIR/r500" && echo x > "$XDG_RUNTIME_DIR/r500/f" && chmod 500 "$XDG_RUNTIME_DIR/r500"
`)
	wantCode(t, "agentbox -- (hostile tree)", r, 0)
	m := regexp.MustCompile(`session ([0-9a-f]{12}) at (\S+)`).FindSubmatch(r.stderr)
	if m == nil {
		t.Fatalf("-v output %q does not name the session", r.stderr)
	}
	sess := string(m[2])
	if sess != filepath.Join(root, string(m[1])) {
		t.Fatalf("session path %s, want it under %s", sess, root)
	}
	if exists(t, sess) {
		t.Errorf("session directory %s still exists after the command ended", sess)
	}
	if ids := sessionIDs(t, root); len(ids) != 0 {
		t.Errorf("session root holds %q, want nothing", ids)
	}
	for _, s := range before {
		if got := snapshot(t, s.path); got != s {
			t.Errorf("sentinel %s changed: %+v, was %+v", s.path, got, s)
		}
	}
}

// TestKeepAndClean checks --keep and what each form of clean does with a
// kept session: clean without arguments and clean --dry-run leave it,
// clean --kept and clean ID remove it.
func TestKeepAndClean(t *testing.T) {
	t.Parallel()
	a, _ := users(t)
	p := a.project(t)
	root := filepath.Join(p, "root")
	keep := func() (id, path string) {
		t.Helper()
		r := a.box(t, nil, "--keep", "--root", root, "--", "sh", "-c", privateOnly+`echo kept > /tmp/k`)
		wantCode(t, "agentbox --keep", r, 0)
		if len(r.stdout) != 0 {
			t.Errorf("agentbox --keep: stdout %q, want nothing", r.stdout)
		}
		id, path = keptSession(t, r.stderr)
		if path != filepath.Join(root, id) {
			t.Fatalf("kept at %s, want %s", path, filepath.Join(root, id))
		}
		if got := readFile(t, filepath.Join(path, "tmp", "k")); got != "kept\n" {
			t.Fatalf("kept session's tmp/k = %q, want \"kept\\n\"", got)
		}
		if rec := readState(t, path); rec.State != "kept" {
			t.Fatalf("kept session's state: %+v, want kept", rec)
		}
		return id, path
	}
	id1, path1 := keep()
	id2, path2 := keep()

	for _, args := range [][]string{nil, {"--dry-run"}, {"--dry-run", "--kept"}, {"--dry-run", id1}} {
		rows, r := a.clean(t, root, args...)
		if r.code != 0 {
			t.Errorf("agentbox clean %q: %v, want exit 0", args, r)
		}
		wantAction := "skipped-kept"
		if slices.Contains(args, "--dry-run") && (slices.Contains(args, "--kept") || slices.Contains(args, id1)) {
			wantAction = "would-remove"
		}
		if c, ok := findClean(rows, id1); !ok || c.Action != wantAction {
			t.Errorf("agentbox clean %q: %+v, want %s %s", args, rows, id1, wantAction)
		}
		for _, path := range []string{path1, path2} {
			if !exists(t, path) {
				t.Fatalf("agentbox clean %q removed the kept session %s", args, path)
			}
		}
	}

	rows, r := a.clean(t, root, id1)
	if c, ok := findClean(rows, id1); r.code != 0 || !ok || c.Action != "removed" || exists(t, path1) {
		t.Errorf("agentbox clean %s: %+v (%v), want it removed", id1, rows, r)
	}
	if !exists(t, path2) {
		t.Fatalf("agentbox clean %s also removed %s", id1, path2)
	}
	rows, r = a.clean(t, root, "--kept")
	if c, ok := findClean(rows, id2); r.code != 0 || !ok || c.Action != "removed" || exists(t, path2) {
		t.Errorf("agentbox clean --kept: %+v (%v), want %s removed", rows, r, id2)
	}
	if ids := sessionIDs(t, root); len(ids) != 0 {
		t.Errorf("session root holds %q, want nothing", ids)
	}

	// Unknown and malformed ids are failures, not silent successes.
	for _, bad := range []string{"0123456789ab", "../x"} {
		if _, r := a.clean(t, root, bad); r.code == 0 {
			t.Errorf("agentbox clean %q: exit 0, want a failure", bad)
		}
	}
}

// TestCleanLeavesLiveSession checks that no form of clean removes a live
// session, and that naming it fails.
func TestCleanLeavesLiveSession(t *testing.T) {
	t.Parallel()
	a, _ := users(t)
	p := a.project(t)
	root := filepath.Join(p, "root")
	ready, done := filepath.Join(p, "ready"), filepath.Join(p, "done")
	pr := start(t, a.agentbox([]string{"READY=" + ready, "DONE=" + done}, "--root", root, "--", "sh", "-c",
		privateOnly+`echo live > /tmp/f; touch "$READY"; while [ ! -e "$DONE" ]; do sleep 0.02; done; cat /tmp/f`))
	waitReady(t, pr, ready)
	ids := sessionIDs(t, root)
	if len(ids) != 1 {
		t.Fatalf("session root holds %q, want one session", ids)
	}
	id := ids[0]
	sess := filepath.Join(root, id)

	for _, args := range [][]string{nil, {"--kept"}, {id}, {"--kept", id}} {
		rows, r := a.clean(t, root, args...)
		named := slices.Contains(args, id)
		if named && r.code == 0 {
			t.Errorf("agentbox clean %q of a live session: exit 0, want a failure", args)
		}
		if !named && r.code != 0 {
			t.Errorf("agentbox clean %q: %v, want exit 0", args, r)
		}
		if c, ok := findClean(rows, id); !ok || c.Action != "skipped-live" {
			t.Errorf("agentbox clean %q: %+v, want %s skipped-live", args, rows, id)
		}
		if got := readFile(t, filepath.Join(sess, "tmp", "f")); got != "live\n" {
			t.Fatalf("after agentbox clean %q the live session's tmp/f = %q", args, got)
		}
	}
	touch(t, done)
	res := pr.wait()
	wantCode(t, "the live session", res, 0)
	if string(res.stdout) != "live\n" {
		t.Errorf("the live session's /tmp/f at its end: %q, want \"live\\n\"", res.stdout)
	}
	if exists(t, sess) {
		t.Errorf("%s still exists after its session ended", sess)
	}
}

// TestCleanStatelessDirectory checks the grace period: a session directory
// without a state file is left alone while it is younger than 60 s (a
// session being created) and removed by clean once it is older.
func TestCleanStatelessDirectory(t *testing.T) {
	t.Parallel()
	a, _ := users(t)
	p := a.project(t)
	root := filepath.Join(p, "root")
	wantCode(t, "agentbox -- true (creates the root)", a.box(t, nil, "--root", root, "--", "true"), 0)
	young, old := "aaaaaaaaaaaa", "bbbbbbbbbbbb"
	for _, id := range []string{young, old} {
		a.mkdir(t, filepath.Join(root, id), 0o700)
		a.mkdir(t, filepath.Join(root, id, "tmp"), 0o700)
		a.writeFile(t, filepath.Join(root, id, "tmp", "f"), "x", 0o600)
	}
	past := time.Now().Add(-10 * time.Minute)
	if err := os.Chtimes(filepath.Join(root, old), past, past); err != nil {
		t.Fatal(err)
	}
	rows, r := a.clean(t, root)
	if r.code != 0 {
		t.Errorf("agentbox clean: %v", r)
	}
	if c, ok := findClean(rows, young); !ok || c.Action != "skipped-young" || !exists(t, filepath.Join(root, young)) {
		t.Errorf("agentbox clean: %+v; want the young stateless %s skipped-young and left", rows, young)
	}
	if c, ok := findClean(rows, old); !ok || c.Action != "removed" || exists(t, filepath.Join(root, old)) {
		t.Errorf("agentbox clean: %+v; want the old stateless %s removed", rows, old)
	}
}

// TestPsShowsLiveSession checks `agentbox ps` while a session runs and
// after it ended.
func TestPsShowsLiveSession(t *testing.T) {
	t.Parallel()
	a, _ := users(t)
	p := a.project(t)
	root := filepath.Join(p, "root")
	ready, done := filepath.Join(p, "ready"), filepath.Join(p, "done")
	pr := start(t, a.agentbox([]string{"READY=" + ready, "DONE=" + done}, "--root", root, "--", "sh", "-c",
		privateOnly+`head -c 100000 /dev/zero > /tmp/fill; touch "$READY"; while [ ! -e "$DONE" ]; do sleep 0.02; done`))
	waitReady(t, pr, ready)
	ids := sessionIDs(t, root)
	if len(ids) != 1 {
		t.Fatalf("session root holds %q, want one session", ids)
	}
	// The command runs before the wrapper has read init's report and
	// recorded it: the state says created for a moment.
	var rows []psRow
	waitFor(t, "agentbox ps to show the session running", 10*time.Second, func() bool {
		rows = a.ps(t, root)
		return len(rows) != 1 || rows[0].State != "created"
	})
	if len(rows) != 1 {
		t.Fatalf("agentbox ps --json: %+v, want one session", rows)
	}
	got := rows[0]
	if got.ID != ids[0] || !got.Live || got.State != "running" || got.Command != "sh" || got.WrapperPID != pr.cmd.Process.Pid ||
		got.Path != filepath.Join(root, ids[0]) || got.AgeSeconds < 0 || got.AgeSeconds > 60 || got.Bytes < 100000 || got.Error != "" {
		t.Errorf("agentbox ps --json: %+v; want id %s, live, running, command sh, wrapper pid %d, path %s, age in [0, 60], at least 100000 bytes",
			got, ids[0], pr.cmd.Process.Pid, filepath.Join(root, ids[0]))
	}
	r := a.box(t, nil, "ps", "--root", root)
	wantCode(t, "agentbox ps", r, 0)
	if !strings.Contains(string(r.stdout), ids[0]) || !strings.Contains(string(r.stdout), "running") || strings.Contains(string(r.stdout), "abandoned") {
		t.Errorf("agentbox ps: %q; want the session %s, running, not abandoned", r.stdout, ids[0])
	}
	touch(t, done)
	wantCode(t, "the session", pr.wait(), 0)
	if r := a.box(t, nil, "ps", "--json", "--root", root); r.code != 0 || strings.TrimSpace(string(r.stdout)) != "[]" {
		t.Errorf("agentbox ps --json after the session ended: %v, want []", r)
	}
}
