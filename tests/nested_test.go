//go:build linux

package tests

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// nestedEnv puts the binary under test first in PATH, so that the command
// inside can run agentbox by name, as an agent would.
func nestedEnv() []string {
	return []string{"PATH=" + filepath.Dir(agentboxBin) + ":/usr/local/bin:/usr/bin:/bin"}
}

// TestNested checks agentbox -- agentbox -- CMD: the inner command gets its
// own session, a private /tmp, /var/tmp, /dev/shm, runtime directory and
// PID namespace, none of the outer session's files (the outer session left
// one in each), its exit status passed through, and its session removed
// when it ends; three levels work; the outer session is removed as usual.
func TestNested(t *testing.T) {
	t.Parallel()
	a, _ := users(t)
	p := a.project(t)
	a.writeFile(t, filepath.Join(p, "inner.sh"), `
echo "inner-session=$AGENTBOX_SESSION"
echo "inner-tmp=$(ls -A /tmp /var/tmp /dev/shm "$XDG_RUNTIME_DIR" | grep -v -e '^$' -e ':$' -e '^agentbox-nest.sock$' | tr '\n' ' ')"
for f in /tmp/outer-t /var/tmp/outer-v /dev/shm/outer-s "$XDG_RUNTIME_DIR/outer-r"; do
	if cat "$f" 2>/dev/null; then echo "inner-read=$f"; fi
done
echo inner > /tmp/inner-t && echo "inner-wrote-tmp=yes"
echo "inner-procs=$(ls /proc | grep -c '^[0-9]')"
echo "inner-tmpdir=$TMPDIR"
if [ "${1:-}" = deeper ]; then agentbox -- sh -c 'echo "level3-session=$AGENTBOX_SESSION"; ls -A /tmp; exit 5'; echo "level3-exit=$?"; fi
exit 3
`, 0o755)
	script := `
echo "outer-session=$AGENTBOX_SESSION"
for f in /tmp/outer-t /var/tmp/outer-v /dev/shm/outer-s "$XDG_RUNTIME_DIR/outer-r"; do echo secret > "$f"; done
agentbox -- sh ./inner.sh "$1"
echo "inner-exit=$?"
echo "outer-tmp-after=$(ls -A /tmp | tr '\n' ' ')"
echo "nested-root-after=$(ls -A /tmp/.agentbox-nested | tr '\n' ' ')"
if cat /tmp/inner-t 2>/dev/null; then echo "outer-sees-inner-tmp=yes"; fi
`
	for _, deeper := range []string{"", "deeper"} {
		t.Run("levels"+map[string]string{"": "2", "deeper": "3"}[deeper], func(t *testing.T) {
			t.Parallel()
			r := a.box(t, nestedEnv(), "--", "sh", "-c", "cd "+p+" && "+script, "sh", deeper)
			wantCode(t, "agentbox -- agentbox", r, 0)
			out := string(r.stdout)
			kv := map[string]string{}
			for _, l := range strings.Split(out, "\n") {
				if k, v, ok := strings.Cut(l, "="); ok {
					kv[k] = strings.TrimSpace(v)
				}
			}
			if kv["inner-session"] == "" || kv["inner-session"] == kv["outer-session"] {
				t.Fatalf("inner session %q, outer %q: want two sessions\n%s\nstderr: %s", kv["inner-session"], kv["outer-session"], out, r.stderr)
			}
			if kv["inner-tmp"] != "" || strings.Contains(out, "inner-read=") {
				t.Errorf("the inner command saw the outer session's files: tmp %q\n%s", kv["inner-tmp"], out)
			}
			if kv["inner-wrote-tmp"] != "yes" || kv["inner-tmpdir"] != "/tmp" {
				t.Errorf("inner /tmp not usable:\n%s", out)
			}
			if n := kv["inner-procs"]; n == "" || len(n) > 1 {
				t.Errorf("inner /proc lists %s processes: want only the inner PID namespace's few", n)
			}
			if kv["inner-exit"] != "3" {
				t.Errorf("inner exit status %q, want 3", kv["inner-exit"])
			}
			if kv["nested-root-after"] != "" || strings.Contains(kv["outer-tmp-after"], "inner-t") || kv["outer-sees-inner-tmp"] != "" {
				t.Errorf("the inner session left something in the outer one: root %q, outer /tmp %q", kv["nested-root-after"], kv["outer-tmp-after"])
			}
			if deeper != "" {
				if kv["level3-session"] == "" || kv["level3-session"] == kv["inner-session"] || kv["level3-exit"] != "5" {
					t.Errorf("third level: session %q exit %q\n%s", kv["level3-session"], kv["level3-exit"], out)
				}
			}
			if len(r.stderr) != 0 {
				t.Errorf("stderr %q, want nothing", r.stderr)
			}
		})
	}
}

// TestNestedPolicyNeverWider checks that a nested sandbox cannot write
// where the enclosing one may not, whatever it asks for: --rw of the home
// directory, --landlock=off, --rw of a path the outer session made
// read-only; and that it says so on stderr when a grant cannot hold.
func TestNestedPolicyNeverWider(t *testing.T) {
	t.Parallel()
	a, _ := users(t)
	p := a.project(t)
	ro := filepath.Join(p, "ro")
	a.mkdir(t, ro, 0o755)
	probe := filepath.Join(a.Home, "abtest-nested-probe")
	os.Remove(probe)
	script := `
agentbox --rw "$HOME" -- sh -c 'echo x > "$1" 2>/dev/null && echo home-wrote' sh "$1"
agentbox --landlock=off -- sh -c 'echo x > "$1" 2>/dev/null && echo off-wrote' sh "$1"
agentbox --rw "$2" -- sh -c 'echo x > "$1/f" 2>/dev/null && echo ro-wrote' sh "$2"
agentbox -- sh -c 'echo x > "$1/ok" && echo project-wrote' sh "$3"
`
	r := a.box(t, nestedEnv(), "--ro", ro, "--", "sh", "-c", script, "sh", probe, ro, p)
	wantCode(t, "agentbox", r, 0)
	out := string(r.stdout)
	for _, bad := range []string{"home-wrote", "off-wrote", "ro-wrote"} {
		if strings.Contains(out, bad) {
			t.Errorf("nested sandbox widened the policy: %s\n%s", bad, out)
		}
	}
	if !strings.Contains(out, "project-wrote") {
		t.Errorf("nested sandbox could not write the project:\n%s\nstderr: %s", out, r.stderr)
	}
	if _, err := os.Lstat(probe); !os.IsNotExist(err) {
		t.Errorf("%s exists: the nested sandbox wrote the home directory", probe)
	}
	if !strings.Contains(string(r.stderr), "nested: "+a.Home+" (from --rw) is not writable in the enclosing agentbox session") {
		t.Errorf("stderr %q: want a warning naming the --rw grant that cannot hold", r.stderr)
	}
}

// TestNestedSignalsAndKill checks that a signal sent to the inner agentbox
// reaches the inner command, and that killing the inner agentbox kills its
// command and removes its session.
func TestNestedSignalsAndKill(t *testing.T) {
	t.Parallel()
	a, _ := users(t)
	script := `
agentbox -- sh -c 'trap "exit 9" TERM; echo ready > /tmp/ready; while :; do sleep 0.05; done' & p=$!
n=0; while [ "$(ls /tmp/.agentbox-nested 2>/dev/null | wc -l)" = 0 ] && [ $n -lt 100 ]; do sleep 0.05; n=$((n+1)); done
sleep 0.3; kill -TERM $p; wait $p; echo "term-exit=$?"
agentbox -- sh -c 'echo $$ > /tmp/pid; exec sleep 300' & p=$!
sleep 0.5; kill -KILL $p; wait $p
n=0; while [ -n "$(ls -A /tmp/.agentbox-nested)" ] && [ $n -lt 100 ]; do sleep 0.05; n=$((n+1)); done
echo "left=$(ls -A /tmp/.agentbox-nested | tr '\n' ' ')"
echo "sleepers=$(pgrep -c -x sleep)"
`
	r := a.box(t, nestedEnv(), "--", "sh", "-c", script)
	wantCode(t, "agentbox", r, 0)
	out := string(r.stdout)
	for _, want := range []string{"term-exit=9", "left=\n", "sleepers=0"} {
		if !strings.Contains(out+"\n", want) {
			t.Errorf("output lacks %q:\n%s\nstderr: %s", want, out, r.stderr)
		}
	}
}

// TestNestedStatusAndBytes checks that a nested agentbox's --status-fd
// carries the inner session's events, and that stdin and stdout pass
// through both levels byte for byte.
func TestNestedStatusAndBytes(t *testing.T) {
	t.Parallel()
	a, _ := users(t)
	p := a.project(t)
	var payload []byte
	for i := 0; i < 3; i++ {
		for b := 0; b < 256; b++ {
			payload = append(payload, byte(b))
		}
	}
	cmd := a.agentbox(nestedEnv(), "--", "sh", "-c", `agentbox --status-fd 3 -- cat 3>"$1/events"`, "sh", p)
	cmd.Stdin = strings.NewReader(string(payload))
	r := run(t, cmd)
	wantCode(t, "agentbox", r, 0)
	if string(r.stdout) != string(payload) {
		t.Errorf("stdout differs from stdin through two levels (%d bytes, want %d)", len(r.stdout), len(payload))
	}
	b, err := os.ReadFile(filepath.Join(p, "events"))
	if err != nil {
		t.Fatal(err)
	}
	var kinds []string
	var session statusEvent
	for _, l := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		var e statusEvent
		if err := json.Unmarshal([]byte(l), &e); err != nil {
			t.Fatalf("event %q: %v", l, err)
		}
		if e.Event == "session" {
			session = e
		}
		kinds = append(kinds, e.Event)
	}
	if session.Root != "/tmp/.agentbox-nested" || kinds[len(kinds)-1] != "cleanup" {
		t.Errorf("events %v, session %+v: want the nested session's, ending in cleanup", kinds, session)
	}
}

// TestNestSocketOtherSession: a session whose root differs can see another
// session's nest socket through the file system. Neither the socket's init
// (the peer is outside its PID namespace) nor agentbox (the server is not
// its own init) may accept that.
func TestNestSocketOtherSession(t *testing.T) {
	t.Parallel()
	a, _ := users(t)
	p := a.project(t)
	id := a.runningSession(t, p, "")
	sock := filepath.Join(a.Home, ".local", "state", "agentbox", id, "run", "agentbox-nest.sock")
	marker := filepath.Join(p, "reached")
	otherRoot := filepath.Join(a.workDir(), "other-root-"+id)
	// The outsider's own agentbox, pointed at A's socket.
	r := a.box(t, []string{"AGENTBOX_SESSION=" + id, "AGENTBOX_NEST=" + sock}, "--root", otherRoot, "--", "sh", "-c", "echo reached > "+marker)
	if r.code != 125 || !strings.Contains(string(r.stderr), "not by this sandbox's init") {
		t.Errorf("agentbox with another session's AGENTBOX_NEST: %v; want 125 naming the wrong server", r)
	}
	// A raw request from inside session B, which can see A's root.
	cmd := a.agentbox([]string{helperEnv + "=nestprobe"}, "--root", otherRoot, "--", helperBin, sock, marker)
	r = run(t, cmd)
	if _, err := os.Stat(marker); err == nil {
		t.Fatalf("session B ran a command through session A's nest socket (%v)", r)
	}
	if out := string(r.stdout); !strings.Contains(out, "reply=0") && !strings.Contains(out, "connect:") && !strings.Contains(out, "sendmsg:") {
		t.Errorf("nest probe from another session: %v; want the connection refused or closed without a reply", r)
	}
}

// TestNestedHidesEnclosingRoots: the enclosing session's root holds a
// sealed tmpfs with a spare proc of the enclosing PID namespace; a nested
// command with a user namespace of its own (which gives it DAC override
// over its own files) must still not reach it, because it is hidden.
func TestNestedHidesEnclosingRoots(t *testing.T) {
	t.Parallel()
	a, _ := users(t)
	root := filepath.Join(a.Home, ".local", "state", "agentbox")
	script := `agentbox -- sh -c 'ls -A "$1"; unshare -Ur sh -c "ls \"$1/proc\" 2>/dev/null | grep -c \"^[0-9]\"" ; echo "end"' sh "$1"`
	r := a.box(t, nestedEnv(), "--", "sh", "-c", script, "sh", root)
	wantCode(t, "agentbox", r, 0)
	if got := strings.TrimSpace(string(r.stdout)); got != "0\nend" {
		t.Errorf("inside the nested session, the enclosing root shows %q; want it empty and no proc behind it", got)
	}
}

// TestClientNestedCancelAndOrphan: the Go API used by an orchestrator that
// itself runs inside agentbox: cancelling ends a command that ignores
// SIGTERM (the nested init is out of the caller's reach, so the wrapper is
// killed and the enclosing init cleans up), and a dead orchestrator takes
// its sandboxes with it.
func TestClientNestedCancelAndOrphan(t *testing.T) {
	t.Parallel()
	a, _ := users(t)
	p := a.project(t)
	r := a.box(t, append(nestedEnv(), helperEnv+"=clientcancel"), "--", helperBin, agentboxBin)
	wantCode(t, "agentbox -- clientcancel", r, 0)
	if !strings.Contains(string(r.stdout), "canceled=true") || !strings.Contains(string(r.stdout), "within=true") {
		t.Errorf("cancel inside agentbox: %v", r)
	}
	pidfile := filepath.Join(p, "orphan-pid")
	// The nested command's processes are visible here (its PID namespace
	// is inside this one); $3 only says it started.
	script := `"$1" "$2" "$3"; n=0; while pgrep -x sleep >/dev/null && [ $n -lt 100 ]; do sleep 0.05; n=$((n+1)); done; pgrep -x sleep >/dev/null && echo alive || echo gone`
	r = a.box(t, append(nestedEnv(), helperEnv+"=clientorphan"), "--", "sh", "-c", script, "sh", helperBin, agentboxBin, pidfile)
	wantCode(t, "agentbox -- clientorphan", r, 0)
	if !strings.Contains(string(r.stdout), "orphaning") || !strings.HasSuffix(strings.TrimSpace(string(r.stdout)), "gone") {
		t.Errorf("orphaned sandbox: %v; want its command gone", r)
	}
}

// TestNestedRootCaller: a root caller's sandbox cannot map uid 0 into a
// nested user namespace; agentbox says so instead of a misleading remedy.
func TestNestedRootCaller(t *testing.T) {
	users(t)
	r := rootUser.box(t, nestedEnv(), "--", "sh", "-c", `agentbox -- true; echo "inner=$?"`)
	wantCode(t, "agentbox", r, 0)
	if !strings.Contains(string(r.stdout), "inner=125") || !strings.Contains(string(r.stderr), "not available when the enclosing agentbox runs as root") {
		t.Errorf("nested agentbox as root: %v", r)
	}
}

// TestOtherRootsHidden: a session run with its own --root must not read
// the private directories of sessions under the default root (they are the
// same user's, so file modes do not stop it).
func TestOtherRootsHidden(t *testing.T) {
	t.Parallel()
	a, _ := users(t)
	p := a.project(t)
	id := a.runningSession(t, p, "echo secret > /tmp/a-secret")
	secret := filepath.Join(a.Home, ".local", "state", "agentbox", id, "tmp", "a-secret")
	r := a.box(t, nil, "--root", filepath.Join(a.workDir(), "own-root-"+id), "--", "sh", "-c", `cat "$1" 2>/dev/null && echo READ; ls -A "$2"`, "sh", secret, filepath.Dir(filepath.Dir(filepath.Dir(secret))))
	wantCode(t, "agentbox --root other", r, 0)
	if strings.Contains(string(r.stdout), "READ") || strings.Contains(string(r.stdout), id) {
		t.Errorf("a session with its own root read the default root's sessions: %v", r)
	}
}

// TestNestedHomeRelative: inside a sandbox the home directory is on a
// read-only mount; a nested session must still expand ~ and apply
// home-relative rules: grant what the enclosing session granted (a
// profile's ~/.config/agent) and hide what it hides.
func TestNestedHomeRelative(t *testing.T) {
	t.Parallel()
	a, _ := users(t)
	grant := filepath.Join(a.Home, "abtest-nested-grant")
	os.RemoveAll(grant)
	a.mkdir(t, grant, 0o700)
	t.Cleanup(func() { os.RemoveAll(grant) })
	script := `agentbox --rw ~/abtest-nested-grant -- sh -c 'echo x > ~/abtest-nested-grant/f && echo granted-wrote; agentbox policy | grep -c "$HOME/.ssh"'`
	r := a.box(t, nestedEnv(), "--rw", grant, "--", "sh", "-c", script)
	wantCode(t, "agentbox", r, 0)
	out := strings.Fields(string(r.stdout))
	if len(out) != 2 || out[0] != "granted-wrote" || out[1] == "0" {
		t.Errorf("nested home-relative rules: %v; want the grant writable and ~/.ssh hidden", r)
	}
}

// runningSession starts a session of u in the default root that runs
// setup, then sleeps until the test ends, and returns its id.
func (u user) runningSession(t *testing.T, p, setup string) string {
	t.Helper()
	if setup == "" {
		setup = "true"
	}
	ready := filepath.Join(p, "session-ready")
	start(t, u.agentbox(nil, "--", "sh", "-c", setup+`; echo "$AGENTBOX_SESSION" > "$1"; sleep 30`, "sh", ready))
	for i := 0; i < 100; i++ {
		if b, _ := os.ReadFile(ready); len(strings.TrimSpace(string(b))) == 12 {
			return strings.TrimSpace(string(b))
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatal("the session did not start")
	return ""
}
