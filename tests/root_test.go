//go:build linux

package tests

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// seen is what lstat shows at a path: kind, owner, mode and, for
// directories, the listing; a refusal must leave it as it was.
type seen struct {
	kind    uint32
	uid     int
	mode    uint32
	content string
}

func look(t *testing.T, path string) seen {
	t.Helper()
	var st syscall.Stat_t
	if err := syscall.Lstat(path, &st); err != nil {
		t.Fatalf("lstat %s: %v", path, err)
	}
	s := seen{kind: st.Mode & syscall.S_IFMT, uid: int(st.Uid), mode: st.Mode & 0o7777}
	switch s.kind {
	case syscall.S_IFDIR:
		s.content = strings.Join(entries(t, path), "\n")
	case syscall.S_IFREG:
		s.content = readFile(t, path)
	case syscall.S_IFLNK:
		target, err := os.Readlink(path)
		if err != nil {
			t.Fatal(err)
		}
		s.content = target
		if st, err := os.Stat(path); err == nil && st.IsDir() {
			s.content += "\n" + strings.Join(entries(t, path), "\n")
		}
	}
	return s
}

// wantRefusal checks that r is agentbox's refusal of path: exit 125, nothing
// on stdout, and a message on stderr naming the path, its owner, its mode,
// the caller's uid, the reason and a remedy.
func wantRefusal(t *testing.T, r result, path string, owner int, mode uint32, caller int, reason, remedy string) {
	t.Helper()
	wantCode(t, "agentbox with session root "+path, r, 125)
	if len(r.stdout) != 0 {
		t.Errorf("stdout %q, want nothing", r.stdout)
	}
	msg := string(r.stderr)
	for _, want := range []string{
		path + ":",
		fmt.Sprintf("owned by uid %d", owner),
		fmt.Sprintf("mode %04o", mode),
		fmt.Sprintf("you are uid %d", caller),
		reason,
		remedy,
	} {
		if !strings.Contains(msg, want) {
			t.Errorf("refusal %q does not say %q", msg, want)
		}
	}
}

// squat is a thing another user may put where a session root goes.
type squat struct {
	name   string
	script string // run as the squatter with $1 the path and $2 a spare directory path
	remedy string
}

var squats = []squat{
	{"directory 0777", `mkdir "$1" && chmod 0777 "$1"`, "--root"},
	{"symlink to the squatter's directory", `mkdir "$2" && chmod 0777 "$2" && ln -s "$2" "$1"`, "--root"},
	{"FIFO", `mkfifo -m 0666 "$1"`, "--root"},
	{"file", `echo squat > "$1" && chmod 0666 "$1"`, "--root"},
}

// TestFallbackRoot checks the session root agentbox uses when there is no
// usable home, /tmp/agentbox-UID: a predictable name in the shared /tmp. It
// is created 0700 when missing, and refused, with nothing written inside,
// when another user squatted the name with a directory, a symlink, a FIFO or
// a file, or when it is the caller's own directory with mode 0755.
//
// Not parallel: the fallback's name is fixed.
func TestFallbackRoot(t *testing.T) {
	a, b := users(t)
	fallback := fmt.Sprintf("/tmp/agentbox-%d", a.UID)
	spare := "/tmp/abtest-squat-target-" + token(t)
	reset := func() {
		for _, p := range []string{fallback, spare} {
			if err := os.RemoveAll(p); err != nil {
				t.Errorf("remove %s: %v", p, err)
			}
		}
	}
	reset()
	t.Cleanup(reset)

	noHome := []struct {
		name string
		env  []string
	}{
		{"HOME unset", []string{"HOME"}},
		{"HOME missing", []string{"HOME=/nonexistent/abtest-home"}},
		{"HOME of another user", []string{"HOME=" + b.Home}},
	}

	for _, h := range noHome {
		t.Run("created/"+h.name, func(t *testing.T) {
			defer reset()
			r := a.box(t, h.env, "-v", "--", "sh", "-c", `echo "$TMPDIR"`)
			wantCode(t, "agentbox without a usable home", r, 0)
			if string(r.stdout) != "/tmp\n" || !strings.Contains(string(r.stderr), " at "+fallback+"/") {
				t.Errorf("agentbox without a usable home: %v; want the session under %s", r, fallback)
			}
			got := look(t, fallback)
			if got != (seen{kind: syscall.S_IFDIR, uid: a.UID, mode: 0o700}) {
				t.Errorf("fallback root %s: %+v, want an empty directory owned by %d, mode 0700", fallback, got, a.UID)
			}
		})
	}

	t.Run("own directory 0755", func(t *testing.T) {
		defer reset()
		wantCode(t, "user A: mkdir -m 0755", a.sh(t, nil, `mkdir -m 0755 "$1"`, fallback), 0)
		before := look(t, fallback)
		r := a.box(t, []string{"HOME"}, "--", "true")
		wantRefusal(t, r, fallback, a.UID, 0o755, a.UID, "group or others", "chmod 700 "+fallback)
		if after := look(t, fallback); after != before {
			t.Errorf("%s changed: %+v, was %+v", fallback, after, before)
		}
	})

	for _, sq := range squats {
		for _, h := range noHome[:2] {
			t.Run("squatted/"+sq.name+"/"+h.name, func(t *testing.T) {
				defer reset()
				wantCode(t, "user B: squat "+fallback, b.sh(t, nil, sq.script, fallback, spare), 0)
				before := look(t, fallback)
				r := a.box(t, h.env, "--", "true")
				wantRefusal(t, r, fallback, b.UID, before.mode, a.UID, "another user", sq.remedy)
				if after := look(t, fallback); after != before {
					t.Errorf("%s changed: %+v, was %+v", fallback, after, before)
				}
				if exists(t, spare) {
					if names := entries(t, spare); len(names) != 0 {
						t.Errorf("agentbox wrote %q into the squatter's %s", names, spare)
					}
				}
			})
		}
	}
}

// TestExplicitRootRefused checks --root and AGENTBOX_ROOT naming something
// the caller must not use: another user's directory or link, the caller's
// own 0755 directory or symlink, a file, or a path inside another user's
// directory. Each is refused with exit 125 and a full message, and nothing
// is written inside.
func TestExplicitRootRefused(t *testing.T) {
	t.Parallel()
	a, b := users(t)
	dir := scratch(t)
	path := func(name string) string { return filepath.Join(dir, name) }

	b.mkdir(t, path("b-0700"), 0o700)
	b.mkdir(t, path("b-0777"), 0o777)
	b.mkdir(t, path("b-0755"), 0o755)
	a.mkdir(t, path("a-0755"), 0o755)
	a.mkdir(t, path("a-0700"), 0o700)
	for _, l := range []struct{ link, target string }{{"a-link", "a-0700"}, {"b-link", "b-0777"}} {
		if err := os.Symlink(path(l.target), path(l.link)); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Lchown(path("a-link"), a.UID, a.GID); err != nil {
		t.Fatal(err)
	}
	if err := os.Lchown(path("b-link"), b.UID, b.GID); err != nil {
		t.Fatal(err)
	}
	b.writeFile(t, path("b-file"), "b's file\n", 0o666)

	for _, tc := range []struct {
		root   string // passed to agentbox
		about  string // the path the message is about
		owner  int
		reason string
		remedy string
	}{
		{path("b-0700"), path("b-0700"), b.UID, "another user", "--root"},
		{path("b-0777"), path("b-0777"), b.UID, "another user", "--root"},
		{path("b-0755"), path("b-0755"), b.UID, "another user", "--root"},
		{path("a-0755"), path("a-0755"), a.UID, "group or others", "chmod 700 " + path("a-0755")},
		{path("a-link"), path("a-link"), a.UID, "symbolic link", "readlink"},
		{path("b-link"), path("b-link"), b.UID, "another user", "--root"},
		{path("b-file"), path("b-file"), b.UID, "another user", "--root"},
		{path("b-0777/root"), path("b-0777"), b.UID, "another user", "--root"},
	} {
		for _, how := range []string{"--root", "AGENTBOX_ROOT"} {
			rel, _ := filepath.Rel(dir, tc.root)
			t.Run(rel+"/"+how, func(t *testing.T) {
				before := look(t, tc.about)
				var r result
				if how == "--root" {
					r = a.box(t, nil, "--root", tc.root, "--", "true")
				} else {
					r = a.box(t, []string{"AGENTBOX_ROOT=" + tc.root}, "--", "true")
				}
				wantRefusal(t, r, tc.about, tc.owner, before.mode, a.UID, tc.reason, tc.remedy)
				if after := look(t, tc.about); after != before {
					t.Errorf("%s changed: %+v, was %+v", tc.about, after, before)
				}
			})
		}
	}
	// The link's target, the one directory of these A could use, is
	// untouched too.
	if names := entries(t, path("a-0700")); len(names) != 0 {
		t.Errorf("agentbox wrote %q into %s through a refused link", names, path("a-0700"))
	}
}
