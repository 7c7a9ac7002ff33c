package tests

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestRacingSquatterOnFallbackRoot: user A runs many sessions under the
// fallback root /tmp/agentbox-UID (no usable home) while user B keeps
// trying to replace, rename, remove or plant things at that name and at
// names next to it in /tmp, with symlinks to B's own sentinel. Every one of
// A's sessions succeeds, B's sentinel and objects never change, and nothing
// of A's appears outside its root. (The sticky /tmp and the 0700 root are
// what stop B; agentbox verifies both through the descriptors it opened.)
func TestRacingSquatterOnFallbackRoot(t *testing.T) {
	a, b := users(t)
	fallback := fmt.Sprintf("/tmp/agentbox-%d", a.UID)
	reset := func() { os.RemoveAll(fallback) }
	reset()
	t.Cleanup(reset)

	// B's sentinel and the directory its links point at.
	bp := b.project(t)
	sentinelDir := filepath.Join(bp, "sentinel-dir")
	b.mkdir(t, sentinelDir, 0o777)
	sentinel := filepath.Join(sentinelDir, "sentinel")
	b.writeFile(t, sentinel, "B's bytes\n", 0o666)
	before := snapshot(t, sentinel)
	stop := filepath.Join(bp, "stop")

	// A creates its root once, so that the race is on an existing root.
	r := a.box(t, []string{"HOME"}, "--", "true")
	wantCode(t, "agentbox (fallback root)", r, 0)

	tok := token(t)
	attacker := fmt.Sprintf(`
n=0
while [ ! -e %[1]q ]; do
	ln -s %[2]q %[3]q 2>/dev/null
	ln -sfn %[2]q %[3]q 2>/dev/null
	mv %[3]q %[3]q.moved 2>/dev/null
	rm -rf %[3]q 2>/dev/null
	mkdir %[3]q/evil 2>/dev/null
	ln -s %[4]q %[3]q/evil-link 2>/dev/null
	ln -s %[2]q /tmp/abtest-race-%[5]s-$n 2>/dev/null
	rm -f /tmp/abtest-race-%[5]s-$n
	n=$((n+1))
done
echo $n
`, stop, sentinelDir, fallback, sentinel, tok)
	att := b.Cmd("/bin/sh", "-c", attacker)
	var out strings.Builder
	att.Stdout = &out
	if err := att.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		touchAs(t, b, stop)
		att.Wait()
		t.Logf("attacker loops: %s", strings.TrimSpace(out.String()))
	}()

	const sessions = 500
	loop := fmt.Sprintf(`i=0; while [ $i -lt %d ]; do env -u HOME %q -- sh -c 'echo x > /tmp/f; echo y > /var/tmp/g' || exit $?; i=$((i+1)); done`, sessions, agentboxBin)
	cmd := a.Cmd("/bin/sh", "-c", loop)
	cmd.Dir = a.workDir()
	start := time.Now()
	r = run(t, cmd)
	wantCode(t, fmt.Sprintf("%d sessions of A under a racing B", sessions), r, 0)
	t.Logf("%d sessions in %v", sessions, time.Since(start))

	if after := snapshot(t, sentinel); after != before {
		t.Errorf("B's sentinel changed: %v, was %v", after, before)
	}
	fi, err := os.Lstat(fallback)
	if err != nil || !fi.IsDir() || owner(fi) != a.UID || fi.Mode().Perm() != 0o700 {
		t.Fatalf("fallback root after the race: %v %v, want A's 0700 directory", fi, err)
	}
	if left := sessionIDs(t, fallback); len(left) != 0 {
		t.Errorf("sessions left in %s: %v", fallback, left)
	}
	for _, e := range entries(t, fallback) {
		t.Errorf("unexpected entry in A's root: %s", e)
	}
	// Nothing of A's in the shared directories.
	for _, dir := range []string{"/tmp", "/var/tmp", "/dev/shm"} {
		ents, _ := os.ReadDir(dir)
		for _, e := range ents {
			fi, err := os.Lstat(filepath.Join(dir, e.Name()))
			if err == nil && owner(fi) == a.UID && filepath.Join(dir, e.Name()) != fallback {
				t.Errorf("A left %s in the host's %s", e.Name(), dir)
			}
		}
	}
}

func touchAs(t *testing.T, u user, path string) {
	t.Helper()
	r := run(t, u.Cmd("/bin/sh", "-c", "touch "+path))
	wantCode(t, "touch "+path, r, 0)
}

// TestHundredConcurrentStarts: 100 agentbox starts by one user on one root,
// all at once: 100 distinct sessions, every one succeeds, nothing left.
func TestHundredConcurrentStarts(t *testing.T) {
	t.Parallel()
	a, _ := users(t)
	p := a.project(t)
	root := filepath.Join(p, "root")
	script := fmt.Sprintf(`
for i in $(seq 100); do
	%[1]q --root %[2]q -- sh -c 'echo "$AGENTBOX_SESSION"' > %[3]q/out.$i 2>%[3]q/err.$i &
done
fail=0
for job in $(jobs -p); do wait $job || fail=1; done
exit $fail`, agentboxBin, root, p)
	cmd := a.Cmd("/bin/bash", "-c", script)
	cmd.Dir = p
	r := run(t, cmd)
	wantCode(t, "100 concurrent agentbox starts", r, 0)
	ids := map[string]bool{}
	for i := 1; i <= 100; i++ {
		out := strings.TrimSpace(readFile(t, filepath.Join(p, fmt.Sprintf("out.%d", i))))
		if errText := readFile(t, filepath.Join(p, fmt.Sprintf("err.%d", i))); errText != "" {
			t.Errorf("start %d printed on stderr: %q", i, errText)
		}
		if !sessionIDRe.MatchString(out) || ids[out] {
			t.Errorf("start %d: session id %q (empty, malformed or seen before)", i, out)
		}
		ids[out] = true
	}
	if left := sessionIDs(t, root); len(left) != 0 {
		t.Errorf("%d sessions left in the root: %v", len(left), left)
	}
}

// TestPlantedLinksInSession: links to an outside sentinel planted where
// agentbox writes or removes inside a session directory (the temporary
// state file, the state file, each of tmp/, var-tmp/, run/) are never
// followed: a clean of that session removes the links and leaves the
// sentinel's bytes, mode and mtime as they were.
func TestPlantedLinksInSession(t *testing.T) {
	t.Parallel()
	a, _ := users(t)
	p := a.project(t)
	root := filepath.Join(p, "root")
	sentinelDir := filepath.Join(p, "outside")
	a.mkdir(t, sentinelDir, 0o700)
	sentinel := filepath.Join(sentinelDir, "sentinel")
	a.writeFile(t, sentinel, "keep these bytes\n", 0o600)
	a.writeFile(t, filepath.Join(sentinelDir, "inner"), "inner\n", 0o600)
	before := snapshot(t, sentinel)

	for _, name := range []string{"state.tmp", "state", "tmp", "var-tmp", "run"} {
		t.Run(name, func(t *testing.T) {
			r := a.box(t, nil, "--keep", "--root", root, "--", "true")
			wantCode(t, "agentbox --keep", r, 0)
			id, dir := keptSession(t, r.stderr)
			target := sentinel
			if name == "tmp" || name == "var-tmp" || name == "run" {
				target = sentinelDir
			}
			script := `rm -rf "$1/$2" && ln -s "$3" "$1/$2"`
			wantCode(t, "plant "+name, a.sh(t, nil, script, dir, name, target), 0)
			cr := run(t, a.agentbox(nil, "clean", "--root", root, id))
			if cr.code != 0 && cr.code != 125 {
				t.Errorf("agentbox clean %s with %s planted: %v", id, name, cr)
			}
			if after := snapshot(t, sentinel); after != before {
				t.Errorf("sentinel changed with %s planted: %v, was %v", name, after, before)
			}
			if got := readFile(t, filepath.Join(sentinelDir, "inner")); got != "inner\n" {
				t.Errorf("the outside directory's file changed: %q", got)
			}
			if cr.code == 0 && exists(t, dir) {
				t.Errorf("clean exited 0 but %s is still there", dir)
			}
			os.RemoveAll(dir)
		})
	}
}
