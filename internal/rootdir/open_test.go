//go:build linux

package rootdir

import (
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/agentbox/agentbox/internal/fserr"
	"github.com/agentbox/agentbox/internal/testenv"
)

const (
	// otherUID owns the hostile fixtures: the other user on a shared host.
	otherUID = 65534
	// userUID is a non-root caller, emulated when the tests run as root.
	userUID = 1000
)

// caller is who calls Open. When fs is set, Open runs on a locked OS thread
// whose fsuid and fsgid are uid: the kernel then checks file permissions as
// that user, without the capabilities root has for files (setfsuid(2) drops
// CAP_DAC_OVERRIDE and friends from the thread's effective set), and new
// files belong to that user. Only that thread changes, and it ends with the
// goroutine, so the test process itself is left as it was.
type caller struct {
	name string
	uid  int
	fs   bool
}

// callers is the test process itself and, when it is root, a non-root user.
func callers() []caller {
	cs := []caller{{name: "uid" + strconv.Itoa(os.Geteuid()), uid: os.Geteuid()}}
	if os.Geteuid() == 0 {
		cs = append(cs, caller{name: "uid" + strconv.Itoa(userUID) + "-fsuid", uid: userUID, fs: true})
	}
	return cs
}

// nonRootCaller is a caller whose writes the kernel checks: the test process
// when it is not root, else userUID through setfsuid (which needs root).
func nonRootCaller(t *testing.T) caller {
	t.Helper()
	if os.Geteuid() != 0 {
		return caller{name: "self", uid: os.Geteuid()}
	}
	testenv.RequireRoot(t)
	return caller{name: "fsuid", uid: userUID, fs: true}
}

// openAs runs Open(ch, c.uid) as c and fails the test if it does not return
// within 10 seconds: opening a FIFO for reading would block for good.
func openAs(t *testing.T, c caller, ch Choice) (*Root, error) {
	t.Helper()
	type result struct {
		r   *Root
		err error
	}
	done := make(chan result, 1)
	go func() {
		if c.fs {
			// Never unlocked: the thread, with its changed fsuid, exits
			// with this goroutine instead of going back to the pool.
			runtime.LockOSThread()
			unix.Setfsgid(c.uid)
			unix.Setfsuid(c.uid)
			if got, _ := unix.SetfsuidRetUid(-1); got != c.uid {
				done <- result{nil, fmt.Errorf("test setup: setfsuid(%d) left fsuid %d", c.uid, got)}
				return
			}
		}
		r, err := Open(ch, c.uid)
		done <- result{r, err}
	}()
	select {
	case res := <-done:
		if res.r != nil {
			t.Cleanup(func() { res.r.Close() })
		}
		return res.r, res.err
	case <-time.After(10 * time.Second):
		t.Fatalf("Open(%+v, %d) did not return within 10s: blocked opening a FIFO?", ch, c.uid)
		return nil, nil
	}
}

// fixtureDir is a fresh directory for one test that an emulated caller can
// search (t.TempDir's parent is 0700 and root's).
func fixtureDir(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	if os.Geteuid() == 0 {
		for _, p := range []string{filepath.Dir(dir), dir} {
			if err := os.Chmod(p, 0o755); err != nil {
				t.Fatal(err)
			}
		}
	}
	return dir
}

// mkdirMode makes a directory with exactly mode (no umask) owned by owner.
func mkdirMode(t *testing.T, p string, mode uint32, owner int) {
	t.Helper()
	if err := os.Mkdir(p, 0o700); err != nil {
		t.Fatal(err)
	}
	chown(t, p, owner)
	if err := unix.Chmod(p, mode); err != nil {
		t.Fatal(err)
	}
}

// chown gives p (not what it links to) to owner, when owner is not already
// the owner; only root can.
func chown(t *testing.T, p string, owner int) {
	t.Helper()
	var st unix.Stat_t
	if err := unix.Lstat(p, &st); err != nil {
		t.Fatal(err)
	}
	if int(st.Uid) == owner {
		return
	}
	testenv.RequireRoot(t)
	if err := os.Lchown(p, owner, owner); err != nil {
		t.Fatal(err)
	}
}

func writeFile(t *testing.T, p, data string, owner int) {
	t.Helper()
	if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
	chown(t, p, owner)
}

// state is what a test asserts did not change: an object's own metadata,
// its link target, and for a directory its entries and their bytes.
type state struct {
	Mode, UID uint32
	Mtime     unix.Timespec
	Link      string
	Entries   map[string]string
}

func snapshot(t *testing.T, p string) state {
	t.Helper()
	var st unix.Stat_t
	if err := unix.Lstat(p, &st); err != nil {
		t.Fatalf("lstat %s: %v", p, err)
	}
	s := state{Mode: st.Mode, UID: st.Uid, Mtime: st.Mtim}
	switch st.Mode & unix.S_IFMT {
	case unix.S_IFLNK:
		s.Link, _ = os.Readlink(p)
	case unix.S_IFREG:
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		s.Entries = map[string]string{"": string(b)}
	case unix.S_IFDIR:
		s.Entries = map[string]string{}
		ents, err := os.ReadDir(p)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range ents {
			s.Entries[e.Name()] = e.Type().String()
			if e.Type().IsRegular() {
				b, err := os.ReadFile(filepath.Join(p, e.Name()))
				if err != nil {
					t.Fatal(err)
				}
				s.Entries[e.Name()] += ":" + string(b)
			}
		}
	}
	return s
}

// hostile is one object an attacker (or the caller by mistake) left where
// the session root goes. make builds it at p for a caller uid and returns the
// owner Open must report and the paths whose state must not change.
type hostile struct {
	name  string
	other bool // owned by otherUID, not by the caller
	make  func(t *testing.T, dir, p string, owner int) (watch []string)
}

func hostiles() []hostile {
	dirMode := func(mode uint32) func(t *testing.T, dir, p string, owner int) []string {
		return func(t *testing.T, dir, p string, owner int) []string {
			mkdirMode(t, p, 0o700, owner)
			writeFile(t, filepath.Join(p, "sentinel"), "do not touch", owner)
			if err := unix.Chmod(p, mode); err != nil {
				t.Fatal(err)
			}
			return []string{p}
		}
	}
	// The link points at a directory outside with a sentinel file: Open must
	// neither write there nor change its mode or mtime.
	symlinkToDir := func(mode uint32) func(t *testing.T, dir, p string, owner int) []string {
		return func(t *testing.T, dir, p string, owner int) []string {
			target := filepath.Join(dir, "outside")
			mkdirMode(t, target, 0o700, owner)
			writeFile(t, filepath.Join(target, "sentinel"), "do not touch", owner)
			if err := unix.Chmod(target, mode); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink(target, p); err != nil {
				t.Fatal(err)
			}
			chown(t, p, owner)
			return []string{p, target}
		}
	}
	dangling := func(t *testing.T, dir, p string, owner int) []string {
		if err := os.Symlink(filepath.Join(dir, "nothing-here"), p); err != nil {
			t.Fatal(err)
		}
		chown(t, p, owner)
		return []string{p}
	}
	fifo := func(t *testing.T, dir, p string, owner int) []string {
		if err := unix.Mkfifo(p, 0o666); err != nil {
			t.Fatal(err)
		}
		chown(t, p, owner)
		return []string{p}
	}
	file := func(t *testing.T, dir, p string, owner int) []string {
		writeFile(t, p, "not a directory", owner)
		return []string{p}
	}
	socket := func(t *testing.T, dir, p string, owner int) []string {
		l, err := net.ListenUnix("unix", &net.UnixAddr{Name: p, Net: "unix"})
		if err != nil {
			t.Fatal(err)
		}
		l.SetUnlinkOnClose(false)
		l.Close()
		chown(t, p, owner)
		return []string{p}
	}
	return []hostile{
		{"other's dir 0777", true, dirMode(0o777)},
		{"other's dir 1777", true, dirMode(0o1777)},
		{"other's dir 0755", true, dirMode(0o755)},
		{"other's dir 0700", true, dirMode(0o700)},
		{"other's symlink to their dir", true, symlinkToDir(0o777)},
		{"other's dangling symlink", true, dangling},
		{"other's FIFO", true, fifo},
		{"other's file", true, file},
		{"own dir 0755", false, dirMode(0o755)},
		{"own dir 0777", false, dirMode(0o777)},
		{"own dir 0750", false, dirMode(0o750)},
		{"own dir 0701", false, dirMode(0o701)},
		{"own symlink to own dir 0700", false, symlinkToDir(0o700)},
		{"own FIFO", false, fifo},
		{"own file", false, file},
		{"own socket", false, socket},
	}
}

// TestOpenRefuses puts each hostile object where the session root goes and
// checks that Open refuses it with a full message and writes nothing.
func TestOpenRefuses(t *testing.T) {
	for _, c := range callers() {
		for _, src := range []Source{SourceFallback, SourceFlag} {
			for _, h := range hostiles() {
				t.Run(c.name+"/"+string(src)+"/"+h.name, func(t *testing.T) {
					if h.other {
						testenv.RequireRoot(t)
					}
					dir := fixtureDir(t)
					tmp := filepath.Join(dir, "tmp") // stands for /tmp
					mkdirMode(t, tmp, 0o1777, os.Geteuid())
					p := filepath.Join(tmp, "agentbox-"+strconv.Itoa(c.uid))
					owner := c.uid
					if h.other {
						owner = otherUID
					}
					watch := append(h.make(t, dir, p, owner), tmp)
					before := map[string]state{}
					for _, w := range watch {
						before[w] = snapshot(t, w)
					}
					var st unix.Stat_t
					if err := unix.Lstat(p, &st); err != nil {
						t.Fatal(err)
					}

					r, err := openAs(t, c, Choice{Path: p, Source: src})
					if err == nil {
						t.Fatalf("Open(%s, %d) = %+v, nil, want a refusal", p, c.uid, r)
					}
					for _, w := range watch {
						if after := snapshot(t, w); !reflect.DeepEqual(after, before[w]) {
							t.Errorf("Open(%s, %d) changed %s: before %+v, after %+v", p, c.uid, w, before[w], after)
						}
					}
					checkRefusal(t, err, p, c.uid, owner, st.Mode&0o7777, src)
				})
			}
		}
	}
}

// checkRefusal asserts that err is a refusal of p naming everything the
// style asks for.
func checkRefusal(t *testing.T, err error, p string, uid, owner int, mode uint32, src Source) {
	t.Helper()
	if !errors.Is(err, fserr.ErrUnsafe) || !errors.Is(err, ErrUnsafeRoot) {
		t.Errorf("Open(%s, %d) = %v, want it to wrap fserr.ErrUnsafe", p, uid, err)
	}
	var pe *fserr.PathError
	if !errors.As(err, &pe) {
		t.Fatalf("Open(%s, %d) = %T %v, want *fserr.PathError", p, uid, err, err)
	}
	if pe.Path != p || pe.UID != uid || pe.Stat == nil || pe.Stat.Owner != owner || pe.Stat.Mode != mode {
		t.Errorf("Open(%s, %d) = %+v (seen %+v), want path %s, uid %d, owner %d, mode %04o", p, uid, pe, pe.Stat, p, uid, owner, mode)
	}
	msg := err.Error()
	for _, want := range []string{
		"session root " + p + ": ",
		fmt.Sprintf("owned by uid %d", owner),
		fmt.Sprintf("mode %04o", mode),
		fmt.Sprintf("(you are uid %d)", uid),
		"refusing",
		"--root",
	} {
		if !strings.Contains(msg, want) {
			t.Errorf("Open(%s, %d) = %q, want it to contain %q", p, uid, msg, want)
		}
	}
	if pe.Remedy == "" || !strings.HasSuffix(msg, "; "+pe.Remedy) {
		t.Errorf("Open(%s, %d) = %q, want it to end with a remedy", p, uid, msg)
	}
	if hasNote := strings.Contains(pe.Remedy, "set HOME"); hasNote != (src == SourceFallback) {
		t.Errorf("Open(%s, %d) remedy %q: mentions HOME = %v, want %v for source %s", p, uid, pe.Remedy, hasNote, src == SourceFallback, src)
	}
}

func TestOpenCreates(t *testing.T) {
	for _, c := range callers() {
		for _, umask := range []int{0o077, 0o022, 0o777} {
			t.Run(fmt.Sprintf("%s/umask%04o", c.name, umask), func(t *testing.T) {
				dir := fixtureDir(t)
				home := filepath.Join(dir, "home")
				mkdirMode(t, home, 0o700, c.uid)
				p := filepath.Join(home, ".local", "state", "agentbox")

				// umask is per process: these tests do not run in parallel.
				old := unix.Umask(umask)
				r, err := openAs(t, c, Choice{Path: p, Source: SourceHome, MakeParents: true})
				unix.Umask(old)
				if err != nil {
					t.Fatalf("Open(%s, %d) = %v, want success", p, c.uid, err)
				}
				if !r.Created || r.Path != p || r.Source != SourceHome {
					t.Errorf("Open(%s, %d) = %+v, want Created, Path %s, Source HOME", p, c.uid, r, p)
				}
				for _, q := range []string{filepath.Join(home, ".local"), filepath.Join(home, ".local", "state"), p} {
					var st unix.Stat_t
					if err := unix.Lstat(q, &st); err != nil {
						t.Fatal(err)
					}
					if st.Mode != unix.S_IFDIR|0o700 || int(st.Uid) != c.uid {
						t.Errorf("after Open: %s has mode %#o uid %d, want a directory 0700 of uid %d", q, st.Mode, st.Uid, c.uid)
					}
				}
				checkFD(t, r, p)
				if err := r.Close(); err != nil || r.FD != -1 {
					t.Errorf("Close() = %v, FD %d, want nil, -1", err, r.FD)
				}
				if err := r.Close(); err != nil {
					t.Errorf("second Close() = %v, want nil", err)
				}
			})
		}
	}
}

// checkFD asserts r.FD is an O_CLOEXEC, readable descriptor of p itself.
func checkFD(t *testing.T, r *Root, p string) {
	t.Helper()
	var st, fst unix.Stat_t
	if err := unix.Lstat(p, &st); err != nil {
		t.Fatal(err)
	}
	if err := unix.Fstat(r.FD, &fst); err != nil {
		t.Fatalf("fstat(Root.FD): %v", err)
	}
	if fst.Dev != st.Dev || fst.Ino != st.Ino || r.Dev != uint64(st.Dev) || r.Ino != uint64(st.Ino) {
		t.Errorf("Root %+v: fd is dev %d ino %d, path is dev %d ino %d", r, fst.Dev, fst.Ino, st.Dev, st.Ino)
	}
	fl, err := unix.FcntlInt(uintptr(r.FD), unix.F_GETFD, 0)
	if err != nil || fl&unix.FD_CLOEXEC == 0 {
		t.Errorf("Root.FD flags = %#x, %v, want FD_CLOEXEC", fl, err)
	}
	acc, err := unix.FcntlInt(uintptr(r.FD), unix.F_GETFL, 0)
	if err != nil || acc&unix.O_PATH != 0 || acc&unix.O_ACCMODE != unix.O_RDONLY {
		t.Errorf("Root.FD status flags = %#x, %v, want O_RDONLY without O_PATH", acc, err)
	}
	buf := make([]byte, 4096)
	if _, err := unix.Getdents(r.FD, buf); err != nil {
		t.Errorf("getdents(Root.FD) = %v, want success", err)
	}
}

func TestOpenFallbackCreates(t *testing.T) {
	for _, c := range callers() {
		t.Run(c.name, func(t *testing.T) {
			dir := fixtureDir(t)
			tmp := filepath.Join(dir, "tmp")
			mkdirMode(t, tmp, 0o1777, os.Geteuid())
			p := filepath.Join(tmp, "agentbox-"+strconv.Itoa(c.uid))
			r, err := openAs(t, c, Choice{Path: p, Source: SourceFallback})
			if err != nil {
				t.Fatalf("Open(%s, %d) = %v, want success", p, c.uid, err)
			}
			if !r.Created {
				t.Errorf("Open(%s, %d).Created = false, want true", p, c.uid)
			}
			checkFD(t, r, p)
		})
	}
}

// An existing root of the caller's, 0700, is used as it is.
func TestOpenExisting(t *testing.T) {
	for _, c := range callers() {
		for _, mode := range []uint32{0o700, 0o1700} {
			t.Run(fmt.Sprintf("%s/%04o", c.name, mode), func(t *testing.T) {
				dir := fixtureDir(t)
				p := filepath.Join(dir, "root")
				mkdirMode(t, p, 0o700, c.uid)
				writeFile(t, filepath.Join(p, "session"), "x", c.uid)
				if err := unix.Chmod(p, mode); err != nil {
					t.Fatal(err)
				}
				before := snapshot(t, p)
				r, err := openAs(t, c, Choice{Path: p, Source: SourceFlag})
				if err != nil {
					t.Fatalf("Open(%s, %d) = %v, want success", p, c.uid, err)
				}
				if r.Created {
					t.Errorf("Open(%s, %d).Created = true, want false", p, c.uid)
				}
				if after := snapshot(t, p); !reflect.DeepEqual(after, before) {
					t.Errorf("Open(%s, %d) changed it: %+v, was %+v", p, c.uid, after, before)
				}
				checkFD(t, r, p)
			})
		}
	}
}

// Root calling for itself: a root-owned 0700 directory is its own.
func TestOpenCallerIsRoot(t *testing.T) {
	testenv.RequireRoot(t)
	dir := fixtureDir(t)
	p := filepath.Join(dir, "agentbox-0")
	mkdirMode(t, p, 0o700, 0)
	r, err := Open(Choice{Path: p, Source: SourceFallback}, 0)
	if err != nil {
		t.Fatalf("Open(%s, 0) = %v, want success", p, err)
	}
	defer r.Close()
	checkFD(t, r, p)

	// And root is refused another user's directory like anyone else.
	q := filepath.Join(dir, "agentbox-x")
	mkdirMode(t, q, 0o700, otherUID)
	if r, err := Open(Choice{Path: q, Source: SourceFlag}, 0); err == nil {
		r.Close()
		t.Fatalf("Open(%s, 0) = success, want a refusal of uid %d's directory", q, otherUID)
	}
}

// The parent decides who can rename the root away: refuse a parent another
// user owns, or one others can write without the sticky bit.
func TestOpenRefusesParent(t *testing.T) {
	me := os.Geteuid()
	tests := []struct {
		name  string
		owner int
		mode  uint32
	}{
		{"own parent 0777", me, 0o777},
		{"own parent 0770", me, 0o770},
		{"own parent 0702", me, 0o702},
		{"other's parent 0755", otherUID, 0o755},
		{"other's parent 1777", otherUID, 0o1777},
	}
	for _, tt := range tests {
		for _, src := range []Source{SourceFallback, SourceFlag} {
			t.Run(tt.name+"/"+string(src), func(t *testing.T) {
				dir := fixtureDir(t)
				parent := filepath.Join(dir, "parent")
				mkdirMode(t, parent, tt.mode, tt.owner)
				p := filepath.Join(parent, "agentbox-"+strconv.Itoa(me))
				before := snapshot(t, parent)
				r, err := Open(Choice{Path: p, Source: src}, me)
				if err == nil {
					r.Close()
					t.Fatalf("Open(%s, %d) = success, want a refusal of its parent", p, me)
				}
				if after := snapshot(t, parent); !reflect.DeepEqual(after, before) {
					t.Errorf("Open(%s, %d) changed the parent: %+v, was %+v", p, me, after, before)
				}
				if !errors.Is(err, ErrUnsafeRoot) {
					t.Errorf("Open(%s, %d) = %v, want it to wrap ErrUnsafeRoot", p, me, err)
				}
				msg := err.Error()
				for _, want := range []string{
					"parent directory " + parent + ": ",
					fmt.Sprintf("owned by uid %d, mode %04o (you are uid %d)", tt.owner, tt.mode, me),
					"session root " + p,
					"--root DIR",
				} {
					if !strings.Contains(msg, want) {
						t.Errorf("Open(%s, %d) = %q, want it to contain %q", p, me, msg, want)
					}
				}
			})
		}
	}
}

// --root names a place: Open does not make its parents.
func TestOpenMissingParent(t *testing.T) {
	me := os.Geteuid()
	dir := fixtureDir(t)
	parent := filepath.Join(dir, "no", "such")
	p := filepath.Join(parent, "root")
	r, err := Open(Choice{Path: p, Source: SourceFlag}, me)
	if err == nil {
		r.Close()
		t.Fatalf("Open(%s, %d) = success, want an error", p, me)
	}
	if errors.Is(err, ErrUnsafeRoot) || !errors.Is(err, unix.ENOENT) {
		t.Errorf("Open(%s, %d) = %v, want ENOENT and not ErrUnsafeRoot", p, me, err)
	}
	want := fmt.Sprintf("parent directory %s: openat: no such file or directory (you are uid %d): needed for the session root %s; create it (mkdir -p -m 700 %s)", parent, me, p, parent)
	if !strings.HasPrefix(err.Error(), want) {
		t.Errorf("Open(%s, %d) = %q, want prefix %q", p, me, err, want)
	}
	if _, err := os.Lstat(filepath.Join(dir, "no")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("after Open: lstat %s = %v, want it not to exist", filepath.Join(dir, "no"), err)
	}
}

// A caller who cannot write the parent gets mkdirat's EACCES and a remedy.
func TestOpenCreateDenied(t *testing.T) {
	c := nonRootCaller(t)
	tests := []struct {
		name        string
		makeParents bool
		sub         []string // below the read-only directory
		what        string   // the path the error names, relative to ro
	}{
		{"root", false, []string{"root"}, "root"},
		{"ancestor", true, []string{"state", "agentbox"}, "state"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := fixtureDir(t)
			ro := filepath.Join(dir, "ro")
			// Readable and searchable, not writable, by the caller; owned by
			// the caller when it is the test process, else by root.
			mkdirMode(t, ro, 0o755, os.Geteuid())
			if c.uid == os.Geteuid() {
				if err := unix.Chmod(ro, 0o555); err != nil {
					t.Fatal(err)
				}
			}
			p := filepath.Join(append([]string{ro}, tt.sub...)...)
			r, err := openAs(t, c, Choice{Path: p, Source: SourceXDG, MakeParents: tt.makeParents})
			if err == nil {
				t.Fatalf("Open(%s, %d) = %+v, want EACCES", p, c.uid, r)
			}
			if !errors.Is(err, unix.EACCES) || errors.Is(err, ErrUnsafeRoot) {
				t.Errorf("Open(%s, %d) = %v, want EACCES and not ErrUnsafeRoot", p, c.uid, err)
			}
			named := filepath.Join(ro, tt.what)
			for _, want := range []string{
				named + ": mkdirat: permission denied (you are uid " + strconv.Itoa(c.uid) + ")",
				"make " + ro + " writable for uid " + strconv.Itoa(c.uid) + " or pass --root DIR",
			} {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("Open(%s, %d) = %q, want it to contain %q", p, c.uid, err, want)
				}
			}
			ents, _ := os.ReadDir(ro)
			if len(ents) != 0 {
				t.Errorf("after Open: %s has %d entries, want none", ro, len(ents))
			}
		})
	}
}

func TestHomeUsable(t *testing.T) {
	me := os.Geteuid()
	dir := fixtureDir(t)
	home := filepath.Join(dir, "home")
	mkdirMode(t, home, 0o700, me)
	link := filepath.Join(dir, "link")
	if err := os.Symlink(home, link); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(dir, "file")
	writeFile(t, file, "", me)
	tests := []struct {
		home string
		uid  int
		want bool
	}{
		{home, me, true},
		{link, me, true}, // a home reached through a link is still the user's
		{home + "/", me, true},
		{"", me, false},
		{"home", me, false},
		{filepath.Join(dir, "missing"), me, false},
		{file, me, false},
		{home, me + 1, false},
		{"/a\x00b", me, false},
	}
	for _, tt := range tests {
		if got := HomeUsable(tt.home, tt.uid); got != tt.want {
			t.Errorf("HomeUsable(%q, %d) = %v, want %v", tt.home, tt.uid, got, tt.want)
		}
	}
}

// The caller's own root without owner read or search bits passes the
// ownership checks but cannot be opened: the error says so and how to fix
// it. (Root reads any directory, so this needs a non-root caller.)
func TestOpenOwnUnreadable(t *testing.T) {
	c := nonRootCaller(t)
	for _, mode := range []uint32{0o000, 0o300} {
		t.Run(fmt.Sprintf("%04o", mode), func(t *testing.T) {
			dir := fixtureDir(t)
			p := filepath.Join(dir, "root")
			mkdirMode(t, p, mode, c.uid)
			t.Cleanup(func() { unix.Chmod(p, 0o700) })
			r, err := openAs(t, c, Choice{Path: p, Source: SourceFlag})
			if err == nil {
				t.Fatalf("Open(%s, %d) = %+v, want EACCES", p, c.uid, r)
			}
			want := fmt.Sprintf("session root %s: a directory owned by uid %d, mode %04o: openat: permission denied (you are uid %d); chmod 700 %s, or pass --root DIR", p, c.uid, mode, c.uid, p)
			if err.Error() != want || !errors.Is(err, unix.EACCES) || errors.Is(err, ErrUnsafeRoot) {
				t.Errorf("Open(%s, %d) = %q, want %q (EACCES, not ErrUnsafeRoot)", p, c.uid, err, want)
			}
		})
	}
}

// An attacker who can rename entries next to the root swaps, as fast as it
// can, the caller's real root with a symbolic link to another directory of
// the caller's that would pass every check. Open must only ever return the
// real root, and never touch the link's target.
func TestOpenRaceSwap(t *testing.T) {
	me := os.Geteuid()
	dir := fixtureDir(t)
	p := filepath.Join(dir, "root")
	swap := filepath.Join(dir, "swap")
	target := filepath.Join(dir, "target")
	mkdirMode(t, p, 0o700, me)
	mkdirMode(t, target, 0o700, me)
	if err := os.Symlink(target, swap); err != nil {
		t.Fatal(err)
	}
	var real, tst unix.Stat_t
	if err := unix.Lstat(p, &real); err != nil {
		t.Fatal(err)
	}
	before := snapshot(t, target)

	stop := make(chan struct{})
	swapped := make(chan int)
	go func() {
		n := 0
		defer func() { swapped <- n }()
		for {
			select {
			case <-stop:
				return
			default:
			}
			if err := unix.Renameat2(unix.AT_FDCWD, p, unix.AT_FDCWD, swap, unix.RENAME_EXCHANGE); err != nil {
				t.Errorf("renameat2(RENAME_EXCHANGE): %v", err)
				return
			}
			n++
		}
	}()
	accepted, refused := 0, 0
	for i := 0; i < 2000; i++ {
		r, err := Open(Choice{Path: p, Source: SourceFlag}, me)
		if err != nil {
			if !errors.Is(err, ErrUnsafeRoot) && !errors.Is(err, unix.ENOENT) {
				t.Errorf("Open(%s) during swaps = %v, want a refusal of the link", p, err)
			}
			refused++
			continue
		}
		if err := unix.Fstat(r.FD, &tst); err != nil {
			t.Fatal(err)
		}
		r.Close()
		if tst.Dev != real.Dev || tst.Ino != real.Ino {
			t.Fatalf("Open(%s) during swaps returned dev %d ino %d, want the real root dev %d ino %d", p, tst.Dev, tst.Ino, real.Dev, real.Ino)
		}
		accepted++
	}
	close(stop)
	n := <-swapped
	t.Logf("%d swaps: %d opens accepted the real root, %d refused the link", n, accepted, refused)
	if after := snapshot(t, target); !reflect.DeepEqual(after, before) {
		t.Errorf("the link's target changed: %+v, was %+v", after, before)
	}
}
