//go:build linux

package tests

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
)

// sharedDirs are the host directories every user shares.
var sharedDirs = []string{"/tmp", "/var/tmp", "/dev/shm"}

// ownedBy returns, for each shared dir, the entries directly in it that uid
// owns, with their kind and mode: a snapshot to compare before and after.
func ownedBy(t *testing.T, uid int) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, dir := range sharedDirs {
		for _, name := range entries(t, dir) {
			var st syscall.Stat_t
			p := filepath.Join(dir, name)
			if err := syscall.Lstat(p, &st); err != nil {
				continue // vanished meanwhile: not ours to judge
			}
			if int(st.Uid) == uid {
				out[p] = fmt.Sprintf("mode %o", st.Mode)
			}
		}
	}
	return out
}

// TestFixedTmpNameOfAnotherUser is the bug agentbox exists for: user A's
// tool creates /tmp/agentx-flags (0755) on the host; user B's run of the
// same tool then cannot write there. Under agentbox B gets its own /tmp: the
// same script succeeds, A's directory is untouched and nothing of B's lands
// in the host's /tmp, /var/tmp or /dev/shm.
//
// Not parallel: the name is fixed and the host listings must not change
// under it.
func TestFixedTmpNameOfAnotherUser(t *testing.T) {
	a, b := users(t)
	const fixed = "/tmp/agentx-flags"
	removeFixed := func() {
		if err := os.RemoveAll(fixed); err != nil {
			t.Errorf("remove %s: %v", fixed, err)
		}
	}
	removeFixed()
	t.Cleanup(removeFixed)

	// User A, directly on the host, not under agentbox.
	wantCode(t, "user A: mkdir -m 0755 "+fixed, a.sh(t, nil, `mkdir -m 0755 "$1"`, fixed), 0)

	const script = `mkdir -p /tmp/agentx-flags && echo data > /tmp/agentx-flags/f && cat /tmp/agentx-flags/f`

	// The bug exists: without agentbox, B's write fails.
	r := b.sh(t, nil, script)
	if r.code == 0 || !strings.Contains(string(r.stderr), "Permission denied") {
		t.Fatalf("without agentbox, user B's write into user A's %s: %v; want a failure with Permission denied (the bug this test guards against is not reproduced)", fixed, r)
	}
	if names := entries(t, fixed); len(names) != 0 {
		t.Fatalf("%s holds %q after B's failed write, want nothing", fixed, names)
	}

	bRoot := filepath.Join(b.Home, ".local/state/agentbox")
	var sessionsBefore []string
	if exists(t, bRoot) {
		sessionsBefore = sessionIDs(t, bRoot)
	}
	before := ownedBy(t, b.UID)

	r = b.box(t, nil, "--", "sh", "-c", script)
	wantCode(t, "user B under agentbox", r, 0)
	if string(r.stdout) != "data\n" || len(r.stderr) != 0 {
		t.Fatalf("user B under agentbox: stdout %q, stderr %q; want \"data\\n\" and nothing", r.stdout, r.stderr)
	}

	var st syscall.Stat_t
	if err := syscall.Lstat(fixed, &st); err != nil {
		t.Fatalf("host %s after B's session: %v", fixed, err)
	}
	if int(st.Uid) != a.UID || st.Mode&syscall.S_IFMT != syscall.S_IFDIR || st.Mode&0o7777 != 0o755 {
		t.Errorf("host %s: owner %d, mode %o; want user A's (%d) directory 0755", fixed, st.Uid, st.Mode, a.UID)
	}
	if names := entries(t, fixed); len(names) != 0 {
		t.Errorf("host %s holds %q after B's session, want nothing", fixed, names)
	}
	if after := ownedBy(t, b.UID); !mapsEqual(before, after) {
		t.Errorf("user B's entries in the host's %v changed: before %v, after %v", sharedDirs, before, after)
	}
	if sessionsAfter := sessionIDs(t, bRoot); !slices.Equal(sessionsBefore, sessionsAfter) {
		t.Errorf("user B's session root %s: sessions %q before, %q after; want the session removed", bRoot, sessionsBefore, sessionsAfter)
	}
}

func mapsEqual(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

// probeScript prints, for each of /tmp, /var/tmp, /dev/shm and
// $XDG_RUNTIME_DIR, whether the file named $T in it can be read, and
// whether $T shows in the directory's listing; then the same for the file
// through the other session's host path $HOSTPATH.
const probeScript = `
for d in /tmp /var/tmp /dev/shm "$XDG_RUNTIME_DIR"; do
	if cat "$d/$T" >/dev/null 2>&1; then echo "read $d yes"; else echo "read $d no"; fi
	if ls -A "$d" | grep -q "$T"; then echo "list $d yes"; else echo "list $d no"; fi
done
if cat "$HOSTPATH" >/dev/null 2>&1; then echo "read hostpath yes"; else echo "read hostpath no"; fi
`

// procProbeScript looks for the file $T of the session $OTHERID through every
// descriptor, working directory and root of every process the command can
// see in /proc: the sandbox's init holds descriptors of the session root
// and of its own session's directories, and a command that can follow
// /proc/1/fd/N reaches whatever they name. It prints the paths through
// which the file could be read, or "none", and tries to plant $T.planted
// next to it through each.
const procProbeScript = `
found=
for f in /proc/[0-9]*/fd/* /proc/[0-9]*/cwd /proc/[0-9]*/root; do
	for c in "$f/$OTHERID/tmp/$T" "$f/tmp/$T" "$f/$T"; do
		if cat "$c" >/dev/null 2>&1; then found="$found $c"; fi
	done
	echo planted 2>/dev/null > "$f/$OTHERID/tmp/$T.planted" || :
done
echo "read via /proc:${found:- none}"
`

// TestSessionsAreIsolated runs two concurrent sessions of one user: files
// the first makes in /tmp, /var/tmp, /dev/shm and its XDG_RUNTIME_DIR are
// neither listed nor readable in the second, neither through the first's
// path on the host nor through any descriptor in /proc, the second cannot
// write into the first's /tmp that way, and none of the files appears in the
// host's shared directories. The first session runs the same probe on
// itself, so a probe that could never see anything would fail the test.
func TestSessionsAreIsolated(t *testing.T) {
	t.Parallel()
	a, _ := users(t)
	p := a.project(t)
	root := filepath.Join(p, "root")
	tok := "abtest-iso-" + token(t)
	env := []string{"T=" + tok, "P=" + p, "PROBE=" + probeScript}
	hostDirs := append(append([]string{}, sharedDirs...), fmt.Sprintf("/run/user/%d", a.UID))
	// A broken sandbox writes into the host's shared directories: remove
	// what it may have left there (the names are this test's own).
	t.Cleanup(func() {
		for _, d := range hostDirs {
			os.Remove(filepath.Join(d, tok))
		}
	})

	first := start(t, a.agentbox(append(env, "HOSTPATH=/nonexistent"), "--root", root, "--", "sh", "-c", `
set -e
for d in /tmp /var/tmp /dev/shm "$XDG_RUNTIME_DIR"; do echo "secret of $AGENTBOX_SESSION" > "$d/$T"; done
sh -c "$PROBE" > "$P/probe1"
echo "$AGENTBOX_SESSION" > "$P/ready.tmp" && mv "$P/ready.tmp" "$P/ready"
while [ ! -e "$P/done" ]; do sleep 0.02; done
`))
	waitReady(t, first, filepath.Join(p, "ready"))
	id1 := strings.TrimSpace(readFile(t, filepath.Join(p, "ready")))
	if !sessionIDRe.MatchString(id1) {
		t.Fatalf("first session's AGENTBOX_SESSION = %q, want a session id", id1)
	}
	hostFile := filepath.Join(root, id1, "tmp", tok)
	if got := readFile(t, hostFile); got != "secret of "+id1+"\n" {
		t.Fatalf("host %s = %q: the first session's /tmp is not its session's tmp/", hostFile, got)
	}

	// The control: the probe sees the first session's own files.
	probe1 := readFile(t, filepath.Join(p, "probe1"))
	for _, l := range lines(probe1) {
		if !strings.HasSuffix(l, " yes") && l != "read hostpath no" {
			t.Errorf("first session probing its own files: %q, want yes (the probe is broken)", l)
		}
	}
	if n := len(lines(probe1)); n != 9 {
		t.Fatalf("probe printed %d lines, want 9: %q", n, probe1)
	}

	second := a.box(t, append(env, "HOSTPATH="+hostFile, "OTHERID="+id1), "--root", root, "--", "sh", "-c",
		probeScript+procProbeScript+`ls -A /tmp /var/tmp /dev/shm "$XDG_RUNTIME_DIR" >&2`)
	wantCode(t, "second session", second, 0)
	t.Logf("second session's probe: %q", second.stdout)
	got := lines(string(second.stdout))
	if len(got) != 10 {
		t.Fatalf("second session's probe printed %q, want 10 lines", got)
	}
	for _, l := range got {
		if !strings.HasSuffix(l, " no") && l != "read via /proc: none" {
			t.Errorf("second session: %q: the first session's file is visible", l)
		}
	}
	if planted := filepath.Join(root, id1, "tmp", tok+".planted"); exists(t, planted) {
		t.Errorf("the second session planted %s in the first session's /tmp", planted)
	}
	if strings.Contains(string(second.stderr), tok) {
		t.Errorf("second session's listing of its private dirs shows %s: %s", tok, second.stderr)
	}

	for _, d := range hostDirs {
		if exists(t, filepath.Join(d, tok)) {
			t.Errorf("host %s holds the session's %s", d, tok)
		}
	}

	touch(t, filepath.Join(p, "done"))
	wantCode(t, "first session", first.wait(), 0)
	if ids := sessionIDs(t, root); len(ids) != 0 {
		t.Errorf("session root %s still holds %q after both sessions ended", root, ids)
	}
}

// TestSessionRootIsHidden checks that a command cannot reach the session
// root, neither its own session's state nor another (kept) session's
// files: the root's path shows an empty directory it cannot list, read or
// write, and no descriptor it can reach through /proc (the sandbox init's
// included) leads there either. It runs with an explicit --root and with the default root in the
// user's home.
func TestSessionRootIsHidden(t *testing.T) {
	t.Parallel()
	a, _ := users(t)
	for _, tc := range []struct {
		name string
		root func(p string) string // the root's path; "" for the default
	}{
		{"explicit", func(p string) string { return filepath.Join(p, "root") }},
		{"default", func(string) string { return "" }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := a.project(t)
			root := tc.root(p)
			var flags []string
			if root != "" {
				flags = []string{"--root", root}
			} else {
				root = filepath.Join(a.Home, ".local/state/agentbox")
			}
			probe := filepath.Join(root, "abtest-"+token(t))
			t.Cleanup(func() { os.Remove(probe) })
			keep := func(script string, env ...string) (id string) {
				t.Helper()
				var before []string
				if exists(t, root) {
					before = sessionIDs(t, root)
				}
				// Whatever happens below, remove the session this run
				// keeps (others in a shared root are live or not ours:
				// clean by id refuses live ones).
				t.Cleanup(func() {
					for _, id := range sessionIDs(t, root) {
						if !slices.Contains(before, id) {
							a.box(t, nil, "clean", "--root", root, id)
						}
					}
				})
				r := a.box(t, append(env, "R="+root), append(append([]string{"--keep"}, flags...), "--", "sh", "-c", script)...)
				wantCode(t, "agentbox --keep", r, 0)
				id, path := keptSession(t, r.stderr)
				if path != filepath.Join(root, id) {
					t.Fatalf("kept session at %s, want %s", path, filepath.Join(root, id))
				}
				return id
			}
			other := keep(privateOnly + `echo secret > /tmp/secret`)
			otherFile := filepath.Join(root, other, "tmp", "secret")
			if got := readFile(t, otherFile); got != "secret\n" {
				t.Fatalf("host %s = %q, want \"secret\\n\"", otherFile, got)
			}

			// The command writes what it finds into its project dir.
			self := keep(`
{
printf 'mode=%s\n' "$(stat -c %a "$R")"
if ls -A "$R" >/dev/null 2>&1; then echo list=ok; else echo list=denied; fi
if cat "$R/$AGENTBOX_SESSION/state" >/dev/null 2>&1; then echo own-state=readable; else echo own-state=hidden; fi
if cat "$OTHER" >/dev/null 2>&1; then echo other=readable; else echo other=hidden; fi
if touch "$PROBE" 2>/dev/null; then echo write=ok; else echo write=denied; fi
procfd=
for f in /proc/[0-9]*/fd/* /proc/[0-9]*/cwd /proc/[0-9]*/root; do
	for c in "$f/$OTHERID/tmp/secret" "$f/$AGENTBOX_SESSION/state" "$f/state"; do
		if cat "$c" >/dev/null 2>&1; then procfd="$procfd $c"; fi
	done
done
echo "procfd=${procfd:-hidden}"
} > "$P/out"`, "P="+p, "OTHER="+otherFile, "OTHERID="+other, "PROBE="+probe)
			want := "mode=0\nlist=denied\nown-state=hidden\nother=hidden\nwrite=denied\nprocfd=hidden\n"
			if got := readFile(t, filepath.Join(p, "out")); got != want {
				t.Errorf("inside, the session root %s: %q, want %q", root, got, want)
			}
			// The paths the command tried exist on the host: the denials
			// were the hiding, not a wrong path.
			for _, f := range []string{filepath.Join(root, self, "state"), otherFile} {
				if !exists(t, f) {
					t.Errorf("host %s does not exist: the probe tried a wrong path", f)
				}
			}
			if exists(t, probe) {
				t.Errorf("the command created %s in the session root", probe)
			}
		})
	}
}
