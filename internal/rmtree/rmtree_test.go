//go:build linux

package rmtree

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/agentbox/agentbox/internal/testenv"
)

// childEnv tells a re-executed test binary which child it is: "unprivileged"
// (run as uid 65534 by TestUnprivileged) or "nofile" (TestDeepLowNOFILE).
const (
	childEnv    = "AGENTBOX_RMTREE_CHILD"
	fixtureEnv  = "AGENTBOX_RMTREE_FIXTURES"
	nobody      = 65534
	deepLevels  = 5000
	manyFiles   = 100_000
	shortFiles  = 10_000
	sentinelTxt = "sentinel: must survive\n"
)

// entry is one fixture entry, created in order; modes are applied
// afterwards deepest first, so a mode-000 directory can still be filled.
type entry struct {
	path   string
	kind   byte // 'd' directory, 'f' file, 'l' symbolic link, 'h' hard link, 'p' FIFO, 's' socket
	mode   os.FileMode
	target string // 'l': link text; 'h': path of the existing file, relative to the fixture root
	size   int    // 'f': bytes written
}

func dir(p string, mode os.FileMode) entry { return entry{path: p, kind: 'd', mode: mode} }
func file(p string, mode os.FileMode, n int) entry {
	return entry{path: p, kind: 'f', mode: mode, size: n}
}
func link(p, target string) entry { return entry{path: p, kind: 'l', target: target} }
func hard(p, target string) entry { return entry{path: p, kind: 'h', target: target} }
func fifo(p string) entry         { return entry{path: p, kind: 'p', mode: 0o644} }
func sock(p string) entry         { return entry{path: p, kind: 's', mode: 0o755} }

// build creates the entries under root and registers a cleanup that makes
// every directory left there removable again.
func build(t testing.TB, root string, entries ...entry) {
	t.Helper()
	t.Cleanup(func() { unlock(root) })
	for _, e := range entries {
		p := filepath.Join(root, e.path)
		var err error
		switch e.kind {
		case 'd':
			err = os.Mkdir(p, 0o700)
		case 'f':
			err = os.WriteFile(p, bytes.Repeat([]byte{'x'}, e.size), 0o600)
		case 'l':
			err = os.Symlink(e.target, p)
		case 'h':
			err = os.Link(filepath.Join(root, e.target), p)
		case 'p':
			err = unix.Mkfifo(p, 0o600)
		case 's':
			// mknod of a socket inode needs no privilege and no bind.
			err = unix.Mknod(p, unix.S_IFSOCK|0o600, 0)
		}
		if err != nil {
			t.Fatalf("fixture %s: %v", e.path, err)
		}
	}
	for _, e := range slices.Backward(entries) {
		if e.kind == 'l' || e.kind == 'h' {
			continue
		}
		if err := os.Chmod(filepath.Join(root, e.path), e.mode); err != nil {
			t.Fatalf("fixture chmod %s %04o: %v", e.path, e.mode, err)
		}
	}
}

// unlock gives the owner rwx on every directory under root (never through a
// link), so that a failed test still leaves a removable directory.
func unlock(root string) {
	filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if d != nil && d.IsDir() {
			os.Chmod(p, 0o700)
		}
		return nil
	})
}

// openDir opens path for use as a dirfd, closed when the test ends.
func openDir(t testing.TB, path string, flags int) int {
	t.Helper()
	fd, err := unix.Open(path, flags|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatalf("open %s: %v", path, err)
	}
	t.Cleanup(func() { unix.Close(fd) })
	return fd
}

// names lists dir, sorted.
func names(t testing.TB, dir string) []string {
	t.Helper()
	des, err := os.ReadDir(dir)
	if err != nil {
		t.Fatalf("readdir %s: %v", dir, err)
	}
	var ns []string
	for _, de := range des {
		ns = append(ns, de.Name())
	}
	return ns
}

func exists(t testing.TB, path string) bool {
	t.Helper()
	_, err := os.Lstat(path)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("lstat %s: %v", path, err)
	}
	return err == nil
}

func isRoot() bool { return os.Geteuid() == 0 }

func TestRemoveAt(t *testing.T) {
	tests := []struct {
		name    string
		entries []entry
	}{
		{"regular file", []entry{file("victim", 0o644, 10)}},
		{"empty directory", []entry{dir("victim", 0o755)}},
		{"plain tree", []entry{
			dir("victim", 0o755), file("victim/a", 0o644, 1), dir("victim/d", 0o755),
			file("victim/d/b", 0o600, 5000), dir("victim/d/e", 0o700), dir("victim/d/e/f", 0o700),
			file("victim/d/e/f/g", 0o644, 0), dir("victim/empty", 0o755),
		}},
		{"mode 000 directory holding files", []entry{
			dir("victim", 0o755), dir("victim/locked", 0o000), file("victim/locked/a", 0o644, 3), file("victim/locked/b", 0o644, 3),
		}},
		{"mode 500 directory holding files and a 000 directory", []entry{
			dir("victim", 0o755), dir("victim/ro", 0o500), file("victim/ro/a", 0o644, 3),
			dir("victim/ro/locked", 0o000), file("victim/ro/locked/b", 0o644, 3), dir("victim/ro/locked/c", 0o000),
		}},
		{"mode 000 top directory", []entry{dir("victim", 0o000), dir("victim/ro", 0o500), file("victim/ro/a", 0o400, 1)}},
		{"directories of mode 100, 300, 400 and 600", []entry{
			dir("victim", 0o700),
			dir("victim/x", 0o100), file("victim/x/a", 0o644, 1),
			dir("victim/wx", 0o300), file("victim/wx/a", 0o644, 1),
			dir("victim/r", 0o400), file("victim/r/a", 0o644, 1),
			dir("victim/rw", 0o600), file("victim/rw/a", 0o644, 1),
		}},
		{"FIFO, socket and mode 000 file", []entry{
			dir("victim", 0o755), fifo("victim/fifo"), sock("victim/sock"), file("victim/secret", 0o000, 10),
		}},
		{"sticky and setgid directories", []entry{
			dir("victim", 0o1777), dir("victim/g", 0o2500), file("victim/g/a", 0o644, 1),
		}},
		{"hard links and long names", []entry{
			dir("victim", 0o755), file("victim/f", 0o644, 100), hard("victim/h", "victim/f"),
			dir("victim/"+strings.Repeat("n", 255), 0o500), file("victim/"+strings.Repeat("n", 255)+"/"+strings.Repeat("m", 255), 0o644, 1),
		}},
		{"dangling and looping links", []entry{
			dir("victim", 0o755), link("victim/dangling", "nowhere"), link("victim/self", "self"),
			link("victim/up", ".."), link("victim/root", "/"),
		}},
		{"symbolic link itself", []entry{dir("target", 0o755), file("target/keep", 0o644, 1), link("victim", "target")}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			root := t.TempDir()
			build(t, root, tt.entries...)
			want := slices.DeleteFunc(names(t, root), func(n string) bool { return n == "victim" })
			fd := openDir(t, root, unix.O_PATH)
			if err := RemoveAt(fd, "victim"); err != nil {
				t.Fatalf("RemoveAt(%s, victim) = %v, want nil", root, err)
			}
			if got := names(t, root); !slices.Equal(got, want) {
				t.Errorf("after RemoveAt(%s, victim): entries %q, want %q", root, got, want)
			}
			if exists(t, filepath.Join(root, "target")) && !exists(t, filepath.Join(root, "target/keep")) {
				t.Errorf("RemoveAt(%s, victim) removed target/keep through the link victim", root)
			}
		})
	}
}

func TestRemoveAtMissing(t *testing.T) {
	root := t.TempDir()
	fd := openDir(t, root, unix.O_RDONLY)
	if err := RemoveAt(fd, "absent"); err != nil {
		t.Errorf("RemoveAt(%s, absent) = %v, want nil", root, err)
	}
}

func TestRemoveAtBadName(t *testing.T) {
	root := t.TempDir()
	build(t, root, dir("a", 0o755), dir("a/b", 0o755))
	fd := openDir(t, root, unix.O_PATH)
	for _, name := range []string{"", ".", "..", "a/b", "a/", "/tmp", "a\x00b"} {
		err := RemoveAt(fd, name)
		var e *Error
		if !errors.As(err, &e) || !errors.Is(err, unix.EINVAL) {
			t.Errorf("RemoveAt(%s, %q) = %v, want an *Error wrapping EINVAL", root, name, err)
		}
		if _, _, err := Usage(fd, name); !errors.Is(err, unix.EINVAL) {
			t.Errorf("Usage(%s, %q) = %v, want an error wrapping EINVAL", root, name, err)
		}
	}
	if !exists(t, filepath.Join(root, "a/b")) {
		t.Errorf("RemoveAt with bad names removed %s/a/b", root)
	}
}

// snapshot is what must not change about a link's target.
type snapshot struct {
	data               string
	mode, uid          uint32
	mtime, ctime, size int64
	children           []string
}

func snap(t testing.TB, path string) snapshot {
	t.Helper()
	var st unix.Stat_t
	if err := unix.Lstat(path, &st); err != nil {
		t.Fatalf("lstat %s: %v", path, err)
	}
	s := snapshot{mode: st.Mode, uid: st.Uid, mtime: st.Mtim.Nano(), ctime: st.Ctim.Nano(), size: st.Size}
	if st.Mode&unix.S_IFMT == unix.S_IFDIR {
		for _, n := range names(t, path) {
			c := snap(t, filepath.Join(path, n))
			s.children = append(s.children, fmt.Sprintf("%s %o %d %q", n, c.mode, c.ctime, c.data))
		}
		return s
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("read %s: %v", path, err)
	}
	s.data = string(b)
	return s
}

// TestRemoveAtLinks points links of every kind at an outside sentinel file
// and directory, from directories of every troublesome mode, and checks
// that nothing about the sentinels changed: bytes, mode, owner, mtime and
// ctime (which any chmod would move), and the directory's content.
func TestRemoveAtLinks(t *testing.T) {
	outside := t.TempDir()
	build(t, outside, dir("sdir", 0o700), file("sdir/inner", 0o600, 7), dir("sdir/sub", 0o500), file("sfile", 0o444, 0))
	if err := os.WriteFile(filepath.Join(outside, "sdir/inner"), []byte(sentinelTxt), 0o600); err != nil {
		t.Fatal(err)
	}
	// Modes a chmod through a link would change.
	if err := os.Chmod(filepath.Join(outside, "sdir"), 0o555); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.Chmod(filepath.Join(outside, "sdir"), 0o700) })
	sfile, sdir := filepath.Join(outside, "sfile"), filepath.Join(outside, "sdir")
	before := map[string]snapshot{sfile: snap(t, sfile), sdir: snap(t, sdir)}

	root := t.TempDir()
	build(t, root,
		dir("victim", 0o755),
		link("victim/file", sfile), link("victim/dir", sdir), link("victim/dir-rel", "../../"+filepath.Base(outside)+"/sdir"),
		dir("victim/locked", 0o000), link("victim/locked/dir", sdir), link("victim/locked/file", sfile),
		dir("victim/ro", 0o500), link("victim/ro/dir", sdir), link("victim/ro/sub", sdir+"/sub"),
		dir("victim/ro/locked", 0o000), link("victim/ro/locked/file", sfile),
	)
	fd := openDir(t, root, unix.O_RDONLY)
	// 12 entries; without root, the three links inside the mode 000
	// directories cannot be seen without changing their modes.
	want := int64(12)
	if !isRoot() {
		want = 9
	}
	if nb, n, err := Usage(fd, "victim"); err != nil || n != want || nb > 64<<10 {
		t.Errorf("Usage(%s, victim) = %d bytes, %d entries, %v; want a few blocks (links not followed), %d, nil", root, nb, n, err, want)
	}
	if err := RemoveAt(fd, "victim"); err != nil {
		t.Fatalf("RemoveAt(%s, victim) = %v, want nil", root, err)
	}
	if exists(t, filepath.Join(root, "victim")) {
		t.Errorf("RemoveAt(%s, victim) = nil but victim still exists", root)
	}
	// Also a link as the entry itself, and a link into a directory of the
	// sentinel that RemoveContents must not empty.
	build(t, root, link("l", sdir))
	if err := RemoveAt(fd, "l"); err != nil {
		t.Fatalf("RemoveAt(%s, l) = %v, want nil", root, err)
	}
	build(t, root, link("l2", sfile), link("l3", sdir+"/sub"))
	if err := RemoveContents(fd); err != nil {
		t.Fatalf("RemoveContents(%s) = %v, want nil", root, err)
	}
	for p, want := range before {
		if got := snap(t, p); !equalSnap(got, want) {
			t.Errorf("sentinel %s after removal through links = %+v, want %+v", p, got, want)
		}
	}
}

func equalSnap(a, b snapshot) bool {
	return a.data == b.data && a.mode == b.mode && a.uid == b.uid && a.mtime == b.mtime &&
		a.ctime == b.ctime && a.size == b.size && slices.Equal(a.children, b.children)
}

// makeFiles creates n files of 16 bytes in dir, through one descriptor.
func makeFiles(t testing.TB, dir string, n int) {
	t.Helper()
	dfd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(dfd)
	data := []byte("0123456789abcdef")
	for i := range n {
		fd, err := unix.Openat(dfd, fmt.Sprintf("file-%06d", i), unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_CLOEXEC, 0o644)
		if err != nil {
			t.Fatalf("create file %d in %s: %v", i, dir, err)
		}
		unix.Write(fd, data)
		unix.Close(fd)
	}
}

func TestRemoveAtManyFiles(t *testing.T) {
	n := manyFiles
	if testing.Short() {
		n = shortFiles
	}
	root := t.TempDir()
	build(t, root, dir("victim", 0o755), dir("victim/flat", 0o755), dir("victim/ro", 0o755))
	makeFiles(t, filepath.Join(root, "victim/flat"), n-1000)
	makeFiles(t, filepath.Join(root, "victim/ro"), 1000)
	os.Chmod(filepath.Join(root, "victim/ro"), 0o500)
	fd := openDir(t, root, unix.O_RDONLY)
	if _, entries, err := Usage(fd, "victim"); err != nil || entries != int64(n)+3 {
		t.Errorf("Usage(%s, victim) = %d entries, %v; want %d, nil", root, entries, err, n+3)
	}
	if err := RemoveAt(fd, "victim"); err != nil {
		t.Fatalf("RemoveAt(%s, victim) = %v, want nil", root, err)
	}
	if exists(t, filepath.Join(root, "victim")) {
		t.Errorf("RemoveAt(%s, victim) = nil but victim still exists", root)
	}
}

// chain creates name in dirfd as a chain of levels directories, each
// holding a file f and the next level d, through descriptors only: the
// deepest path is far longer than PATH_MAX. When every > 0, every every-th
// level gets mode once its child exists.
func chain(t testing.TB, dirfd int, name string, levels int, mode uint32, every int) {
	t.Helper()
	if err := unix.Mkdirat(dirfd, name, 0o700); err != nil {
		t.Fatal(err)
	}
	cur, err := unix.Openat(dirfd, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	for i := range levels {
		fd, err := unix.Openat(cur, "f", unix.O_WRONLY|unix.O_CREAT|unix.O_CLOEXEC, 0o600)
		if err != nil {
			t.Fatalf("level %d: create f: %v", i, err)
		}
		unix.Close(fd)
		if i == levels-1 {
			break
		}
		if err := unix.Mkdirat(cur, "d", 0o700); err != nil {
			t.Fatalf("level %d: mkdirat d: %v", i, err)
		}
		next, err := unix.Openat(cur, "d", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
		if err != nil {
			t.Fatalf("level %d: openat d: %v", i, err)
		}
		if every > 0 && i%every == every-1 {
			if err := unix.Fchmod(cur, mode); err != nil {
				t.Fatal(err)
			}
		}
		unix.Close(cur)
		cur = next
	}
	unix.Close(cur)
}

// cleanupTree removes what a failed test left in root with the package
// itself: os.RemoveAll can neither enter mode 000 directories nor always
// name paths longer than PATH_MAX.
func cleanupTree(t testing.TB, root string) {
	t.Cleanup(func() {
		if fd, err := unix.Open(root, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0); err == nil {
			RemoveContents(fd)
			unix.Close(fd)
		}
	})
}

func TestRemoveAtDeep(t *testing.T) {
	// Creating a level costs more the deeper it is (about 1 ms at 5000
	// here), so the small caps, which reopen through ".." at every level
	// anyway, get shorter chains.
	tests := []struct {
		name    string
		levels  int
		maxOpen int
		mode    uint32
		every   int
	}{
		{"default cap", deepLevels, 0, 0, 0},
		{"default cap, every 7th level mode 000", deepLevels, 0, 0o000, 7},
		{"cap 3, every 5th level mode 500", 1000, 3, 0o500, 5},
		{"cap 2, every 3rd level mode 300", 1000, 2, 0o300, 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			root := t.TempDir()
			cleanupTree(t, root)
			fd := openDir(t, root, unix.O_PATH)
			chain(t, fd, "victim", tt.levels, tt.mode, tt.every)
			peak := 0
			if err := removeAt(fd, "victim", options{maxOpen: tt.maxOpen, peak: &peak}); err != nil {
				t.Fatalf("RemoveAt(%s, victim) on a %d-level chain = %v, want nil", root, tt.levels, err)
			}
			if exists(t, filepath.Join(root, "victim")) {
				t.Errorf("RemoveAt(%s, victim) = nil but victim still exists", root)
			}
			limit := cmp(tt.maxOpen, maxOpenDirs) + 2
			if peak > limit {
				t.Errorf("RemoveAt(%s, victim) held %d directory descriptors at once, want at most %d", root, peak, limit)
			}
		})
	}
}

func cmp(v, def int) int {
	if v == 0 {
		return def
	}
	return v
}

// TestDeepLowNOFILE removes the deep chain in a child whose RLIMIT_NOFILE
// is 256: a walk holding one descriptor per level would fail with EMFILE.
func TestDeepLowNOFILE(t *testing.T) {
	if os.Getenv(childEnv) != "" {
		return
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe, "-test.run=^TestChildLowNOFILE$", "-test.v", "-test.count=1")
	cmd.Env = append(os.Environ(), childEnv+"=nofile")
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "--- PASS: TestChildLowNOFILE") {
		t.Fatalf("child with RLIMIT_NOFILE 256 = %v, want a pass; output:\n%s", err, out)
	}
}

func TestChildLowNOFILE(t *testing.T) {
	if os.Getenv(childEnv) != "nofile" {
		return
	}
	var lim unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_NOFILE, &lim); err != nil {
		t.Fatal(err)
	}
	lim.Cur = 256
	if err := unix.Setrlimit(unix.RLIMIT_NOFILE, &lim); err != nil {
		t.Fatal(err)
	}
	root := t.TempDir()
	cleanupTree(t, root)
	fd := openDir(t, root, unix.O_PATH)
	chain(t, fd, "victim", deepLevels, 0o500, 11)
	bytes, entries, err := Usage(fd, "victim")
	if err != nil || entries != 2*deepLevels || bytes <= 0 {
		t.Errorf("Usage(%s, victim) = %d, %d, %v; want >0, %d, nil", root, bytes, entries, err, 2*deepLevels)
	}
	if err := RemoveAt(fd, "victim"); err != nil {
		t.Fatalf("RemoveAt(%s, victim) under RLIMIT_NOFILE 256 = %v, want nil", root, err)
	}
}

// TestRemoveAtVanishing removes entries behind the walk's back: each is
// gone by the time unlinkat, openat or rmdir gets to it.
func TestRemoveAtVanishing(t *testing.T) {
	tests := []struct {
		name string
		hook func(root, path string) // called before each entry is handled
	}{
		{"every entry removed just before", func(root, path string) { os.RemoveAll(filepath.Join(root, path)) }},
		{"parent directory removed mid-listing", func(root, path string) {
			if strings.HasPrefix(path, "victim/d/") {
				os.RemoveAll(filepath.Join(root, "victim/d"))
			}
		}},
		{"top directory removed mid-listing", func(root, path string) { os.RemoveAll(filepath.Join(root, "victim")) }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			root := t.TempDir()
			build(t, root, dir("victim", 0o755), dir("victim/d", 0o755), dir("victim/d/e", 0o755), file("victim/d/e/f", 0o644, 1))
			makeFiles(t, filepath.Join(root, "victim/d"), 100)
			makeFiles(t, filepath.Join(root, "victim"), 100)
			fd := openDir(t, root, unix.O_PATH)
			err := removeAt(fd, "victim", options{beforeEntry: func(p string) { tt.hook(root, p) }})
			if err != nil {
				t.Fatalf("RemoveAt(%s, victim) with entries vanishing = %v, want nil", root, err)
			}
			if exists(t, filepath.Join(root, "victim")) {
				t.Errorf("RemoveAt(%s, victim) = nil but victim still exists", root)
			}
		})
	}
}

// TestRemoveAtConcurrent races a second remover over the same tree.
func TestRemoveAtConcurrent(t *testing.T) {
	root := t.TempDir()
	build(t, root, dir("victim", 0o755))
	for i := range 20 {
		d := fmt.Sprintf("victim/d%02d", i)
		build(t, root, dir(d, 0o755))
		makeFiles(t, filepath.Join(root, d), 200)
	}
	fd := openDir(t, root, unix.O_PATH)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := 19; i >= 0; i-- {
			os.RemoveAll(filepath.Join(root, fmt.Sprintf("victim/d%02d", i)))
		}
	}()
	err := RemoveAt(fd, "victim")
	<-done
	if err != nil {
		t.Fatalf("RemoveAt(%s, victim) racing os.RemoveAll = %v, want nil", root, err)
	}
	if exists(t, filepath.Join(root, "victim")) {
		t.Errorf("RemoveAt(%s, victim) = nil but victim still exists", root)
	}
}

// TestRemoveAtLateEntries creates entries in a directory after it was
// listed, just before its rmdir: one rescan removes them; entries that keep
// coming are reported, not chased.
func TestRemoveAtLateEntries(t *testing.T) {
	tests := []struct {
		name    string
		times   int // how many rmdir attempts of victim/d see a new entry
		wantErr error
	}{
		{"once", 1, nil},
		{"every time", 1000, unix.ENOTEMPTY},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			root := t.TempDir()
			build(t, root, dir("victim", 0o755), dir("victim/d", 0o500), file("victim/d/a", 0o644, 1))
			fd := openDir(t, root, unix.O_PATH)
			n := 0
			hook := func(p string) {
				if p == "victim/d" && n < tt.times {
					n++
					if err := os.WriteFile(filepath.Join(root, p, fmt.Sprintf("late%d", n)), nil, 0o644); err != nil {
						t.Error(err)
					}
				}
			}
			err := removeAt(fd, "victim", options{beforeRmdir: hook})
			if !errors.Is(err, tt.wantErr) || (err == nil) != (tt.wantErr == nil) {
				t.Fatalf("RemoveAt(%s, victim) with late entries = %v, want %v", root, err, tt.wantErr)
			}
			if tt.wantErr == nil && exists(t, filepath.Join(root, "victim")) {
				t.Errorf("RemoveAt(%s, victim) = nil but victim still exists", root)
			}
			if tt.wantErr != nil {
				want := "unlinkat victim/d: directory not empty"
				if err.Error() != want {
					t.Errorf("RemoveAt(%s, victim) = %q, want %q", root, err, want)
				}
			}
		})
	}
}

// TestRemoveAtTreeChanged moves a directory whose ancestor's descriptor was
// closed (cap 2) to another parent: reopening through ".." would reach the
// wrong directory, so the walk must stop rather than empty it.
func TestRemoveAtTreeChanged(t *testing.T) {
	root := t.TempDir()
	build(t, root,
		dir("victim", 0o755), dir("victim/a", 0o755), dir("victim/a/b", 0o755), dir("victim/a/b/c", 0o755),
		file("victim/a/b/c/f", 0o644, 1), dir("elsewhere", 0o755), file("elsewhere/keep", 0o644, 1))
	fd := openDir(t, root, unix.O_PATH)
	moved := false
	hook := func(p string) {
		// The first reopen is of victim/a, through ".." of victim/a/b once
		// c is gone: move b so that its ".." leads to elsewhere.
		if !moved {
			moved = true
			if err := os.Rename(filepath.Join(root, "victim/a/b"), filepath.Join(root, "elsewhere/b")); err != nil {
				t.Error(err)
			}
		}
	}
	err := removeAt(fd, "victim", options{maxOpen: 2, beforeReopen: hook})
	var e *Error
	if !errors.As(err, &e) || !errors.Is(err, errTreeChanged) {
		t.Fatalf("RemoveAt(%s, victim) with a directory moved mid-walk = %v, want an *Error wrapping %v", root, err, errTreeChanged)
	}
	for _, p := range []string{"elsewhere/keep", "elsewhere/b", "victim/a"} {
		if !exists(t, filepath.Join(root, p)) {
			t.Errorf("RemoveAt(%s, victim) after the tree changed removed %s", root, p)
		}
	}
}

func TestRemoveContents(t *testing.T) {
	tests := []struct {
		name    string
		topMode os.FileMode
		flags   int // of the dirfd passed
	}{
		{"O_PATH descriptor", 0o755, unix.O_PATH},
		{"O_RDONLY descriptor", 0o755, unix.O_RDONLY},
		{"mode 500 directory", 0o500, unix.O_PATH},
		{"mode 000 directory", 0o000, unix.O_PATH},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			root := t.TempDir()
			build(t, root, dir("top", 0o755), file("top/a", 0o644, 1), dir("top/d", 0o000), file("top/d/b", 0o644, 1),
				link("top/l", root), fifo("top/p"))
			fd := openDir(t, filepath.Join(root, "top"), tt.flags)
			if err := os.Chmod(filepath.Join(root, "top"), tt.topMode); err != nil {
				t.Fatal(err)
			}
			if tt.flags == unix.O_RDONLY {
				// The caller's offset stays where the caller left it.
				buf := make([]byte, 4096)
				unix.Getdents(fd, buf)
			}
			before, _ := unix.Seek(fd, 0, io.SeekCurrent)
			if err := RemoveContents(fd); err != nil {
				t.Fatalf("RemoveContents(%s/top) = %v, want nil", root, err)
			}
			os.Chmod(filepath.Join(root, "top"), 0o755)
			if got := names(t, filepath.Join(root, "top")); len(got) != 0 {
				t.Errorf("after RemoveContents(%s/top): entries %q, want none", root, got)
			}
			if after, _ := unix.Seek(fd, 0, io.SeekCurrent); after != before {
				t.Errorf("RemoveContents(%s/top) moved the caller's offset from %d to %d", root, before, after)
			}
		})
	}
}

// TestUsage compares Usage with st_blocks summed over the entries that
// must be counted, and checks Usage changed no mode.
func TestUsage(t *testing.T) {
	outside := filepath.Join(t.TempDir(), "big")
	if err := os.WriteFile(outside, make([]byte, 1<<20), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		entries []entry
		counted []string // paths whose st_blocks are counted
		named   []string // paths counted as entries only: listed, not stat-able
	}{
		{"file", []entry{file("victim", 0o644, 5000)}, []string{"victim"}, nil},
		{"tree with a link to a big outside file", []entry{
			dir("victim", 0o755), file("victim/a", 0o644, 5000), dir("victim/d", 0o755), file("victim/d/b", 0o644, 1),
			link("victim/big", outside), fifo("victim/p"),
		}, []string{"victim", "victim/a", "victim/d", "victim/d/b", "victim/big", "victim/p"}, nil},
		{"hard links counted once", []entry{
			dir("victim", 0o755), file("victim/f", 0o644, 64<<10), hard("victim/h", "victim/f"), hard("victim/i", "victim/f"),
		}, []string{"victim", "victim/f"}, []string{"victim/h", "victim/i"}},
		{"mode 000 directory", []entry{
			dir("victim", 0o755), dir("victim/locked", 0o000), file("victim/locked/a", 0o644, 5000),
		}, append([]string{"victim", "victim/locked"}, rootOnly("victim/locked/a")...), nil},
		{"mode 400 directory", []entry{
			dir("victim", 0o755), dir("victim/r", 0o400), file("victim/r/a", 0o644, 5000), dir("victim/r/d", 0o755),
		}, append([]string{"victim", "victim/r"}, rootOnly("victim/r/a", "victim/r/d")...), userOnly("victim/r/a", "victim/r/d")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			root := t.TempDir()
			build(t, root, tt.entries...)
			var wantBytes int64
			for _, p := range tt.counted {
				var st unix.Stat_t
				if err := unix.Lstat(filepath.Join(root, p), &st); err != nil {
					t.Fatal(err)
				}
				wantBytes += st.Blocks * 512
			}
			wantEntries := int64(len(tt.counted) + len(tt.named))
			modes := map[string]unix.Stat_t{}
			for _, e := range tt.entries {
				var st unix.Stat_t
				// Without root, what lies in a mode 400 directory cannot be seen.
				if e.kind == 'd' && unix.Lstat(filepath.Join(root, e.path), &st) == nil {
					modes[e.path] = st
				}
			}
			fd := openDir(t, root, unix.O_PATH)
			gotBytes, gotEntries, err := Usage(fd, "victim")
			if err != nil || gotBytes != wantBytes || gotEntries != wantEntries {
				t.Errorf("Usage(%s, victim) = %d, %d, %v; want %d, %d, nil", root, gotBytes, gotEntries, err, wantBytes, wantEntries)
			}
			for p, want := range modes {
				if got := lstat(t, filepath.Join(root, p)); got.Mode != want.Mode || got.Ctim != want.Ctim {
					t.Errorf("Usage(%s, victim) changed %s: mode %o ctime %v, want %o %v", root, p, got.Mode, got.Ctim, want.Mode, want.Ctim)
				}
			}
		})
	}
}

func lstat(t testing.TB, path string) unix.Stat_t {
	t.Helper()
	var st unix.Stat_t
	if err := unix.Lstat(path, &st); err != nil {
		t.Fatalf("lstat %s: %v", path, err)
	}
	return st
}

func rootOnly(p ...string) []string {
	if isRoot() {
		return p
	}
	return nil
}

func userOnly(p ...string) []string {
	if isRoot() {
		return nil
	}
	return p
}

func TestUsageMissing(t *testing.T) {
	root := t.TempDir()
	fd := openDir(t, root, unix.O_PATH)
	if b, n, err := Usage(fd, "absent"); !errors.Is(err, unix.ENOENT) || b != 0 || n != 0 {
		t.Errorf("Usage(%s, absent) = %d, %d, %v; want 0, 0, ENOENT", root, b, n, err)
	}
}

func TestUsageDeep(t *testing.T) {
	root := t.TempDir()
	cleanupTree(t, root)
	fd := openDir(t, root, unix.O_PATH)
	// The full depth with the default cap is TestChildLowNOFILE's.
	const levels = 1000
	chain(t, fd, "victim", levels, 0, 0)
	for _, maxOpen := range []int{0, 2, 5} {
		peak := 0
		_, entries, err := usage(fd, "victim", options{maxOpen: maxOpen, peak: &peak})
		if err != nil || entries != 2*levels {
			t.Errorf("Usage(%s, victim) with cap %d = %d entries, %v; want %d, nil", root, maxOpen, entries, err, 2*levels)
		}
		if limit := cmp(maxOpen, maxOpenDirs) + 2; peak > limit {
			t.Errorf("Usage(%s, victim) with cap %d held %d directory descriptors, want at most %d", root, maxOpen, peak, limit)
		}
	}
}

func TestErrorString(t *testing.T) {
	tests := []struct {
		err  *Error
		want string
		is   error
	}{
		{&Error{Op: "unlinkat", Path: "tmp/a/b", Err: unix.EACCES}, "unlinkat tmp/a/b: permission denied", unix.EACCES},
		{&Error{Op: "fstat", Path: "tmp/mnt", Err: fmt.Errorf("%w: on device 0:52", ErrCrossDevice)},
			"fstat tmp/mnt: refusing to cross into another filesystem: on device 0:52", ErrCrossDevice},
		{&Error{Op: "getdents64", Path: ".", Err: unix.EIO}, "getdents64 .: input/output error", fs.ErrInvalid},
	}
	for _, tt := range tests {
		if got := tt.err.Error(); got != tt.want {
			t.Errorf("(%#v).Error() = %q, want %q", tt.err, got, tt.want)
		}
		if tt.is != fs.ErrInvalid && !errors.Is(tt.err, tt.is) {
			t.Errorf("errors.Is(%v, %v) = false, want true", tt.err, tt.is)
		}
	}
}

// mountTmpfs mounts a 1 MiB tmpfs on path, holding the file keep, and
// unmounts it when the test ends (before t.TempDir's own cleanup).
func mountTmpfs(t *testing.T, path string) {
	t.Helper()
	if err := unix.Mount("tmpfs", path, "tmpfs", 0, "size=1m,mode=0755"); err != nil {
		t.Fatalf("mount tmpfs on %s: %v", path, err)
	}
	t.Cleanup(func() {
		if err := unix.Unmount(path, unix.MNT_DETACH); err != nil {
			t.Errorf("umount %s: %v", path, err)
		}
	})
	if err := os.WriteFile(filepath.Join(path, "keep"), []byte(sentinelTxt), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestRemoveAtCrossDevice(t *testing.T) {
	testenv.RequireRoot(t)
	for _, noOpenat2 := range []bool{false, true} {
		t.Run(fmt.Sprintf("noOpenat2=%v", noOpenat2), func(t *testing.T) {
			root := t.TempDir()
			build(t, root, dir("victim", 0o755), dir("victim/sub", 0o755), dir("victim/sub/mnt", 0o755),
				file("victim/sub/a", 0o644, 1), dir("victim/b", 0o755), file("victim/b/c", 0o644, 1), file("victim/z", 0o644, 1))
			mountTmpfs(t, filepath.Join(root, "victim/sub/mnt"))
			fd := openDir(t, root, unix.O_PATH)

			b, n, err := usage(fd, "victim", options{noOpenat2: noOpenat2})
			if err != nil || n != 6 {
				t.Errorf("Usage(%s, victim) = %d, %d, %v; want 6 entries (not the tmpfs root nor its file), nil", root, b, n, err)
			}

			err = removeAt(fd, "victim", options{noOpenat2: noOpenat2})
			var e *Error
			if !errors.Is(err, ErrCrossDevice) || !errors.As(err, &e) || e.Path != "victim/sub/mnt" {
				t.Fatalf("RemoveAt(%s, victim) over a tmpfs mount = %v, want an *Error for victim/sub/mnt wrapping ErrCrossDevice", root, err)
			}
			if got, _ := os.ReadFile(filepath.Join(root, "victim/sub/mnt/keep")); string(got) != sentinelTxt {
				t.Errorf("RemoveAt(%s, victim) changed the file on the tmpfs: %q, want %q", root, got, sentinelTxt)
			}
			for p, want := range map[string][]string{"victim": {"sub"}, "victim/sub": {"mnt"}} {
				if got := names(t, filepath.Join(root, p)); !slices.Equal(got, want) {
					t.Errorf("after RemoveAt(%s, victim): %s holds %q, want %q", root, p, got, want)
				}
			}

			// The mount point as the entry itself, and RemoveContents over it.
			sfd := openDir(t, filepath.Join(root, "victim/sub"), unix.O_PATH)
			if err := removeAt(sfd, "mnt", options{noOpenat2: noOpenat2}); !errors.Is(err, ErrCrossDevice) {
				t.Errorf("RemoveAt(%s/victim/sub, mnt) = %v, want ErrCrossDevice", root, err)
			}
			if err := removeContents(sfd, options{noOpenat2: noOpenat2}); !errors.Is(err, ErrCrossDevice) {
				t.Errorf("RemoveContents(%s/victim/sub) = %v, want ErrCrossDevice", root, err)
			}
			if !exists(t, filepath.Join(root, "victim/sub/mnt/keep")) {
				t.Errorf("RemoveAt/RemoveContents removed the file on the tmpfs under %s", root)
			}
		})
	}
}

// TestRemoveAtBindMount: a bind mount of the same filesystem has the same
// st_dev; only openat2's RESOLVE_NO_XDEV tells it from a directory.
func TestRemoveAtBindMount(t *testing.T) {
	testenv.RequireRoot(t)
	if !haveOpenat2(unix.AT_FDCWD) {
		t.Fatalf("openat2 unavailable on a root test host; want Linux >= 5.6 without a seccomp filter on it")
	}
	outside := t.TempDir()
	build(t, outside, file("keep", 0o644, 10))
	root := t.TempDir()
	build(t, root, dir("victim", 0o755), dir("victim/bind", 0o755), file("victim/a", 0o644, 1))
	bind := filepath.Join(root, "victim/bind")
	if err := unix.Mount(outside, bind, "", unix.MS_BIND, ""); err != nil {
		t.Fatalf("mount --bind %s %s: %v", outside, bind, err)
	}
	t.Cleanup(func() { unix.Unmount(bind, unix.MNT_DETACH) })
	fd := openDir(t, root, unix.O_PATH)
	err := RemoveAt(fd, "victim")
	if !errors.Is(err, ErrCrossDevice) || !errors.Is(err, unix.EXDEV) {
		t.Fatalf("RemoveAt(%s, victim) over a bind mount = %v, want ErrCrossDevice (EXDEV)", root, err)
	}
	if !exists(t, filepath.Join(outside, "keep")) {
		t.Errorf("RemoveAt(%s, victim) deleted %s/keep through a bind mount", root, outside)
	}
}

// TestUnprivileged reruns the permission-sensitive tests as uid 65534 when
// the tests run as root, since root's CAP_DAC_OVERRIDE never lets a mode
// 000 directory refuse an open, and the chmod paths would go untested.
func TestUnprivileged(t *testing.T) {
	if os.Getenv(childEnv) != "" {
		return
	}
	if !isRoot() {
		t.Logf("running as uid %d already: the other tests covered the permission paths", os.Geteuid())
		return
	}
	// Not under t.TempDir: that one is root's, mode 0700, and uid 65534
	// must be able to reach its own temporary directory.
	shared, err := os.MkdirTemp("", "rmtree-unprivileged-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if fd, err := unix.Open(filepath.Dir(shared), unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0); err == nil {
			if err := RemoveAt(fd, filepath.Base(shared)); err != nil {
				t.Errorf("remove %s: %v", shared, err)
			}
			unix.Close(fd)
		}
	})
	for p := filepath.Dir(shared); ; p = filepath.Dir(p) {
		if fi, err := os.Stat(p); err != nil || fi.Mode().Perm()&0o001 == 0 {
			t.Fatalf("%s (holding %s) is not searchable by uid %d; set TMPDIR to a directory all users can reach", p, shared, nobody)
		}
		if p == "/" {
			break
		}
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	src, err := os.ReadFile(exe)
	if err != nil {
		t.Fatal(err)
	}
	child := filepath.Join(shared, "rmtree.test")
	if err := os.WriteFile(child, src, 0o755); err != nil {
		t.Fatal(err)
	}
	fixtures, tmp := filepath.Join(shared, "fixtures"), filepath.Join(shared, "tmp")
	build(t, shared, dir("fixtures", 0o755), dir("tmp", 0o755),
		// Removable by uid 65534 but for a root-owned directory inside.
		dir("fixtures/write", 0o755), dir("fixtures/write/mine", 0o000), file("fixtures/write/mine/a", 0o644, 1),
		dir("fixtures/write/roots", 0o755), file("fixtures/write/roots/f", 0o644, 1),
		// Not ours to chmod, but writable by all: removable anyway.
		dir("fixtures/others", 0o755), dir("fixtures/others/roots", 0o577), file("fixtures/others/roots/f", 0o644, 1),
		// Not ours to chmod, and unreadable: left in place.
		dir("fixtures/locked", 0o755), dir("fixtures/locked/roots", 0o000), file("fixtures/locked/roots/f", 0o644, 1))
	for _, p := range []string{"fixtures", "tmp", "fixtures/write", "fixtures/write/mine", "fixtures/write/mine/a", "fixtures/others", "fixtures/locked", shared} {
		if !filepath.IsAbs(p) {
			p = filepath.Join(shared, p)
		}
		if err := os.Lchown(p, nobody, nobody); err != nil {
			t.Fatal(err)
		}
	}
	cmd := exec.Command(child, "-test.v", "-test.count=1",
		"-test.run=^(TestChildUnprivileged|TestRemoveAt|TestRemoveAtLinks|TestRemoveAtDeep|TestRemoveAtVanishing|TestRemoveAtLateEntries|TestRemoveContents|TestUsage|TestUsageDeep)$")
	cmd.Env = append(os.Environ(), childEnv+"=unprivileged", fixtureEnv+"="+fixtures, "TMPDIR="+tmp)
	cmd.Dir = shared
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: nobody, Gid: nobody}}
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "--- PASS: TestChildUnprivileged") || strings.Contains(string(out), "--- SKIP") {
		t.Fatalf("tests rerun as uid %d = %v, want all passed, none skipped; output:\n%s", nobody, err, out)
	}
	t.Logf("tests rerun as uid %d: %d passed", nobody, strings.Count(string(out), "--- PASS"))
}

// TestChildUnprivileged runs only in TestUnprivileged's child: it checks
// that permissions really apply there, and that entries the child may not
// remove are reported with who owns what and left in place while the rest
// goes.
func TestChildUnprivileged(t *testing.T) {
	if os.Getenv(childEnv) != "unprivileged" {
		return
	}
	if isRoot() {
		t.Fatalf("euid = 0, want %d", nobody)
	}
	root := t.TempDir()
	build(t, root, dir("locked", 0o000))
	if _, err := unix.Open(filepath.Join(root, "locked"), unix.O_RDONLY|unix.O_DIRECTORY, 0); err != unix.EACCES {
		t.Fatalf("open of a mode 000 directory as uid %d = %v, want EACCES", os.Geteuid(), err)
	}

	fixtures := os.Getenv(fixtureEnv)
	fd := openDir(t, fixtures, unix.O_PATH)
	tests := []struct {
		name string
		ops  []string // the failing system call: fchmodat2 needs Linux 6.6, else fchmodat of /proc/self/fd/N
		want string   // the error after "OP "
		kept []string
		gone []string
	}{
		{"write", []string{"unlinkat"}, "write/roots/f: permission denied (its directory is owned by uid 0, mode 0755; you are uid 65534): remove it as that user or as root",
			[]string{"write/roots/f"}, []string{"write/mine"}},
		{"others", nil, "", nil, []string{"others"}},
		{"locked", []string{"fchmodat2", "fchmodat"}, "locked/roots: operation not permitted (owned by uid 0, mode 0000; you are uid 65534): remove it as its owner or as root",
			[]string{"locked/roots"}, nil},
	}
	for _, tt := range tests {
		err := RemoveAt(fd, tt.name)
		var e *Error
		switch {
		case tt.want == "" && err != nil,
			tt.want != "" && !errors.As(err, &e),
			tt.want != "" && (!slices.Contains(tt.ops, e.Op) || strings.TrimPrefix(err.Error(), e.Op+" ") != tt.want):
			t.Errorf("RemoveAt(%s, %s) = %v, want %q after one of %q", fixtures, tt.name, err, tt.want, tt.ops)
		}
		for _, p := range tt.kept {
			if !exists(t, filepath.Join(fixtures, p)) {
				t.Errorf("RemoveAt(%s, %s) removed %s", fixtures, tt.name, p)
			}
		}
		for _, p := range tt.gone {
			if exists(t, filepath.Join(fixtures, p)) {
				t.Errorf("RemoveAt(%s, %s) left %s, which uid %d may remove", fixtures, tt.name, p, os.Geteuid())
			}
		}
	}
}
