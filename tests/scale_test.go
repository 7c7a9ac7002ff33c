//go:build linux

package tests

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// The scale tests do not run in parallel: they count the test user's
// processes, which a parallel test of the same user would disturb.

// userProcs counts the host's processes whose real uid is uid.
func userProcs(t *testing.T, uid int) int {
	t.Helper()
	des, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, de := range des {
		if _, err := strconv.Atoi(de.Name()); err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + de.Name() + "/status")
		if err != nil {
			continue // gone meanwhile
		}
		sc := bufio.NewScanner(bytes.NewReader(b))
		for sc.Scan() {
			if f := strings.Fields(sc.Text()); len(f) >= 2 && f[0] == "Uid:" {
				if f[1] == strconv.Itoa(uid) {
					n++
				}
				break
			}
		}
	}
	return n
}

// waitProcsBack waits for u's process count to come back to at most base.
func waitProcsBack(t *testing.T, u user, base int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		n := userProcs(t, u.UID)
		if n <= base {
			return
		}
		if time.Now().After(deadline) {
			t.Errorf("user %s has %d processes after the sessions ended, %d before: leaked processes", u.Name, n, base)
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// wantDistinctIDs checks that out holds n lines, each a session id, all
// different.
func wantDistinctIDs(t *testing.T, out string, n int) {
	t.Helper()
	ls := lines(out)
	if len(ls) != n {
		t.Errorf("%d session ids printed, want %d", len(ls), n)
	}
	seen := map[string]bool{}
	for _, id := range ls {
		if !sessionIDRe.MatchString(id) {
			t.Errorf("AGENTBOX_SESSION = %q, not a session id", id)
		}
		if seen[id] {
			t.Errorf("session id %s given twice", id)
		}
		seen[id] = true
	}
}

// sequentialSessions is how many sessions TestSequentialSessions runs:
// AGENTBOX_TEST_SEQUENTIAL, else 1000.
func sequentialSessions(t *testing.T) int {
	t.Helper()
	s := os.Getenv("AGENTBOX_TEST_SEQUENTIAL")
	if s == "" {
		return 1000
	}
	n, err := strconv.Atoi(s)
	if err != nil || n <= 0 {
		t.Fatalf("AGENTBOX_TEST_SEQUENTIAL=%q: want a positive number", s)
	}
	return n
}

// TestSequentialSessions runs many sessions one after another from one
// shell loop of one user: each exits 0 with its own id, and no session
// directory or process is left.
func TestSequentialSessions(t *testing.T) {
	a, _ := users(t)
	p := a.project(t)
	root := filepath.Join(p, "root")
	n := sequentialSessions(t)
	base := userProcs(t, a.UID)
	cmd := a.Cmd("/bin/sh", "-c", `i=0
while [ "$i" -lt "$2" ]; do
	"$1" --root "$3" -- sh -c 'echo "$AGENTBOX_SESSION"' || { echo "session $i: exit $?" >&2; exit 1; }
	i=$((i + 1))
done`, "sh", agentboxBin, strconv.Itoa(n), root)
	cmd.Dir = p
	begin := time.Now()
	r := run(t, cmd)
	d := time.Since(begin)
	t.Logf("%d sequential sessions in %v (%v each)", n, d, d/time.Duration(n))
	wantCode(t, fmt.Sprintf("%d sequential sessions", n), r, 0)
	noPanic(t, "agentbox", r)
	wantDistinctIDs(t, string(r.stdout), n)
	if names := entries(t, root); len(names) != 0 {
		t.Errorf("session root holds %d entries after %d sessions (%q...), want nothing", len(names), n, names[0])
	}
	waitProcsBack(t, a, base)
}

// inheritable counts this process's descriptors above 2 without O_CLOEXEC:
// whatever started the tests left them open, and every child, agentbox
// included, inherits them (Go closes only the descriptors it opened).
func inheritable(t *testing.T) int {
	t.Helper()
	fds, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, fd := range fds {
		if num, err := strconv.Atoi(fd.Name()); err != nil || num <= 2 {
			continue
		}
		b, err := os.ReadFile("/proc/self/fdinfo/" + fd.Name())
		if err != nil {
			continue // the ReadDir's own descriptor, closed by now
		}
		for _, l := range lines(string(b)) {
			if v, ok := strings.CutPrefix(l, "flags:"); ok {
				if flags, err := strconv.ParseUint(strings.TrimSpace(v), 8, 64); err == nil && flags&0o2000000 == 0 {
					n++
				}
			}
		}
	}
	return n
}

// TestConcurrentSessions runs 64 sessions of one user at once on one root:
// while all run, each wrapper holds few descriptors; then each exits 0
// with its own id and nothing is left.
func TestConcurrentSessions(t *testing.T) {
	a, _ := users(t)
	p := a.project(t)
	root := filepath.Join(p, "root")
	const n = 64
	// A wrapper holds its stdio, the root, the session directory, its
	// subdirectories and a few pipes; far fewer than this.
	const maxFDs = 20
	base := userProcs(t, a.UID)
	goFile := filepath.Join(p, "go")
	procs := make([]*proc, n)
	begin := time.Now()
	for i := range procs {
		ready := filepath.Join(p, fmt.Sprintf("ready-%d", i))
		procs[i] = start(t, a.agentbox([]string{"READY=" + ready, "GO=" + goFile}, "--root", root, "--", "sh", "-c",
			`echo "$AGENTBOX_SESSION"; touch "$READY"; while [ ! -e "$GO" ]; do sleep 0.05; done`))
	}
	for i, pr := range procs {
		waitReady(t, pr, filepath.Join(p, fmt.Sprintf("ready-%d", i)))
	}
	t.Logf("%d concurrent sessions running after %v; user %s has %d processes (%d before)", n, time.Since(begin), a.Name, userProcs(t, a.UID), base)
	if ids := sessionIDs(t, root); len(ids) != n {
		t.Errorf("session root holds %d sessions while %d run", len(ids), n)
	}
	inherited := inheritable(t)
	most := 0
	for _, pr := range procs {
		pid := pr.cmd.Process.Pid
		fds, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
		if err != nil {
			t.Fatal(err)
		}
		own := len(fds) - inherited
		most = max(most, own)
		if own >= maxFDs {
			var links []string
			for _, fd := range fds {
				l, _ := os.Readlink(fmt.Sprintf("/proc/%d/fd/%s", pid, fd.Name()))
				links = append(links, fd.Name()+" → "+l)
			}
			t.Errorf("wrapper %d holds %d descriptors (%d inherited from the test) while its command runs, want fewer than %d: %s",
				pid, len(fds), inherited, maxFDs, strings.Join(links, ", "))
		}
	}
	t.Logf("most descriptors held by one wrapper: %d, besides %d inherited from the test", most, inherited)
	touch(t, goFile)
	var out strings.Builder
	for i, pr := range procs {
		r := pr.wait()
		if r.code != 0 || len(r.stderr) != 0 {
			t.Errorf("session %d of %d: %v, want exit 0 and no message", i, n, r)
		}
		out.Write(r.stdout)
	}
	t.Logf("%d concurrent sessions done in %v", n, time.Since(begin))
	wantDistinctIDs(t, out.String(), n)
	// The reconcile cursor may stay: it is where the next start's bounded
	// reconcile resumes, not a session.
	if names := slices.DeleteFunc(entries(t, root), func(n string) bool { return n == ".reconcile-cursor" }); len(names) != 0 {
		t.Errorf("session root holds %q after every session ended, want nothing but the reconcile cursor", names)
	}
	waitProcsBack(t, a, base)
}
