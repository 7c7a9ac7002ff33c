//go:build linux

package session

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

func openRoot(t *testing.T) (int, string) {
	t.Helper()
	dir := t.TempDir()
	fd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { unix.Close(fd) })
	return fd, dir
}

func create(t *testing.T, fd int, dir string) *Session {
	t.Helper()
	old := syscall.Umask(0o077)
	defer syscall.Umask(old)
	s, err := Create(fd, dir, os.Getuid(), os.Getpid(), "cmd")
	if err != nil {
		t.Fatalf("Create = %v", err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func readRecord(t *testing.T, dir, id string) Record {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, id, StateFile))
	if err != nil {
		t.Fatal(err)
	}
	r, err := ParseRecord(b)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func TestCreateLayout(t *testing.T) {
	fd, dir := openRoot(t)
	s := create(t, fd, dir)
	if !ValidID(s.ID) || s.Path != filepath.Join(dir, s.ID) {
		t.Fatalf("Create: id %q path %q", s.ID, s.Path)
	}
	for name, want := range map[string]os.FileMode{"": os.ModeDir | 0o700, TmpDir: os.ModeDir | 0o700, VarTmpDir: os.ModeDir | 0o700, RunDir: os.ModeDir | 0o700, StateFile: 0o600} {
		fi, err := os.Lstat(filepath.Join(s.Path, name))
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode() != want {
			t.Errorf("mode of %q = %v, want %v", name, fi.Mode(), want)
		}
	}
	if r := readRecord(t, dir, s.ID); r.State != Created || r.WrapperPID != os.Getpid() || r.Command != "cmd" {
		t.Errorf("state file = %+v, want created by pid %d", r, os.Getpid())
	}
}

func TestCreateDistinct(t *testing.T) {
	fd, dir := openRoot(t)
	seen := map[string]bool{}
	for i := 0; i < 200; i++ {
		s := create(t, fd, dir)
		if seen[s.ID] {
			t.Fatalf("Create returned id %s twice", s.ID)
		}
		seen[s.ID] = true
	}
}

func TestMoveRecordsAndRefusesIllegal(t *testing.T) {
	fd, dir := openRoot(t)
	s := create(t, fd, dir)
	if err := s.Move(Exited, nil); !errors.Is(err, ErrIllegalTransition) {
		t.Fatalf("Move(created → exited) = %v, want ErrIllegalTransition", err)
	}
	if r := readRecord(t, dir, s.ID); r.State != Created {
		t.Errorf("after an illegal move the file says %s, want created", r.State)
	}
	if err := s.Move(Running, nil); err != nil {
		t.Fatal(err)
	}
	code := 3
	if err := s.Move(Exited, func(r *Record) { r.ExitStatus = &code }); err != nil {
		t.Fatal(err)
	}
	r := readRecord(t, dir, s.ID)
	if r.State != Exited || r.ExitStatus == nil || *r.ExitStatus != 3 {
		t.Errorf("state file = %+v, want exited with status 3", r)
	}
	// The spare holds the previous record, ready to be rewritten in place.
	if b, err := os.ReadFile(filepath.Join(s.Path, stateTmp)); err != nil {
		t.Errorf("spare %s: %v", stateTmp, err)
	} else if prev, err := ParseRecord(b); err != nil || prev.State != Running {
		t.Errorf("spare %s = %+v, %v; want the previous (running) record", stateTmp, prev, err)
	}
}

func TestStateWriteRefusesSymlink(t *testing.T) {
	fd, dir := openRoot(t)
	s := create(t, fd, dir)
	outside := filepath.Join(t.TempDir(), "sentinel")
	os.WriteFile(outside, []byte("keep"), 0o644)
	if err := os.Symlink(outside, filepath.Join(s.Path, stateTmp)); err != nil {
		t.Fatal(err)
	}
	if err := s.Move(Running, nil); err == nil {
		t.Errorf("Move with a symlink at %s = nil, want an error", stateTmp)
	}
	if b, _ := os.ReadFile(outside); string(b) != "keep" {
		t.Errorf("sentinel = %q, want keep", b)
	}
}

func TestRemove(t *testing.T) {
	fd, dir := openRoot(t)
	s := create(t, fd, dir)
	os.WriteFile(filepath.Join(s.Path, TmpDir, "f"), []byte("x"), 0o600)
	os.Mkdir(filepath.Join(s.Path, TmpDir, "locked"), 0o000)
	s.Move(Running, nil)
	s.Move(Exited, nil)
	if err := s.Remove(); err != nil {
		t.Fatalf("Remove = %v", err)
	}
	if _, err := os.Lstat(s.Path); !os.IsNotExist(err) {
		t.Errorf("session dir still there: %v", err)
	}
	if s.Record().State != Removed {
		t.Errorf("state = %s, want removed", s.Record().State)
	}
}

// A second open file description of the same directory conflicts with the
// session's flock, as another process's would.
func TestReconcile(t *testing.T) {
	fd, dir := openRoot(t)
	live := create(t, fd, dir)
	live.Move(Running, nil)

	abandoned := create(t, fd, dir)
	abandoned.Move(Running, nil)
	abandoned.Close()

	kept := create(t, fd, dir)
	kept.Move(Running, nil)
	kept.Move(Exited, nil)
	kept.Keep()
	kept.Close()

	exiting := create(t, fd, dir)
	start, _, err := ProcStart(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	exiting.Update(func(r *Record) { r.InitPID, r.InitStart = os.Getpid(), start })
	exiting.Close()

	garbled := create(t, fd, dir)
	garbled.Close()
	os.WriteFile(filepath.Join(garbled.Path, StateFile), []byte(`{"version":1,"id":"trunc`), 0o600)

	young := filepath.Join(dir, "0123456789ab")
	os.Mkdir(young, 0o700)
	notOurs := filepath.Join(dir, "not-a-session")
	os.Mkdir(notOurs, 0o700)

	dry, err := Reconcile(fd, dir, os.Getuid(), Options{DryRun: true})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]Action{}
	for _, o := range dry {
		got[o.ID] = o.Action
	}
	want := map[string]Action{live.ID: ActSkipLive, abandoned.ID: ActWouldRemove, kept.ID: ActSkipKept,
		exiting.ID: ActSkipExiting, garbled.ID: ActSkipUnknown, "0123456789ab": ActSkipYoung}
	for id, w := range want {
		if got[id] != w {
			t.Errorf("dry run: %s → %s, want %s", id, got[id], w)
		}
	}
	if len(got) != len(want) {
		t.Errorf("dry run visited %v, want exactly %v", got, want)
	}
	if _, err := os.Lstat(abandoned.Path); err != nil {
		t.Errorf("dry run removed %s", abandoned.ID)
	}

	out, _ := Reconcile(fd, dir, os.Getuid(), Options{})
	for _, o := range out {
		if o.ID == abandoned.ID && o.Action != ActRemoved {
			t.Errorf("abandoned → %s (%v), want removed", o.Action, o.Err)
		}
	}
	exists := func(p string) bool { _, err := os.Lstat(p); return err == nil }
	if exists(abandoned.Path) || !exists(live.Path) || !exists(kept.Path) || !exists(garbled.Path) || !exists(exiting.Path) || !exists(notOurs) {
		t.Errorf("after reconcile: abandoned %v (want gone), live %v, kept %v, garbled %v, exiting %v, not-ours %v (want present)",
			exists(abandoned.Path), exists(live.Path), exists(kept.Path), exists(garbled.Path), exists(exiting.Path), exists(notOurs))
	}

	// Asked for by id, kept and garbled sessions go; a live one never does.
	out, _ = Reconcile(fd, dir, os.Getuid(), Options{IDs: []string{kept.ID, garbled.ID, live.ID, "../etc"}})
	for _, o := range out {
		switch o.ID {
		case kept.ID, garbled.ID:
			if o.Action != ActRemoved {
				t.Errorf("clean %s → %s (%v), want removed", o.ID, o.Action, o.Err)
			}
		case live.ID:
			if o.Action != ActSkipLive {
				t.Errorf("clean live → %s, want skipped-live", o.Action)
			}
		case "../etc":
			if o.Action != ActFailed || !strings.Contains(o.Err.Error(), "not a session id") {
				t.Errorf("clean ../etc → %s %v, want failed: not a session id", o.Action, o.Err)
			}
		}
	}
	if !exists(live.Path) || exists(kept.Path) || exists(garbled.Path) {
		t.Errorf("after clean by id: live %v (want present), kept %v, garbled %v (want gone)", exists(live.Path), exists(kept.Path), exists(garbled.Path))
	}
}

func TestReconcileLimit(t *testing.T) {
	fd, dir := openRoot(t)
	for i := 0; i < 20; i++ {
		s := create(t, fd, dir)
		s.Close()
	}
	out, _ := Reconcile(fd, dir, os.Getuid(), Options{Limit: 5})
	if len(out) != 5 {
		t.Errorf("Reconcile(Limit 5) looked at %d sessions, want 5", len(out))
	}
	ids, _ := IDs(fd)
	if len(ids) != 15 {
		t.Errorf("%d sessions left, want 15", len(ids))
	}
}

func TestProcStart(t *testing.T) {
	a, z, err := ProcStart(os.Getpid())
	if err != nil || z || a == 0 {
		t.Fatalf("ProcStart(self) = %d, %v, %v", a, z, err)
	}
	time.Sleep(10 * time.Millisecond)
	b, _, _ := ProcStart(os.Getpid())
	if a != b {
		t.Errorf("ProcStart(self) changed: %d then %d", a, b)
	}
	if _, _, err := ProcStart(1 << 30); err == nil {
		t.Errorf("ProcStart(no such pid) = nil error")
	}
}

func TestStateRecordsGrowAndShrink(t *testing.T) {
	fd, dir := openRoot(t)
	s := create(t, fd, dir)
	long := strings.Repeat("e", 9000)
	if err := s.Move(SetupFailed, func(r *Record) { r.Error = long }); err != nil {
		t.Fatal(err)
	}
	if r := readRecord(t, dir, s.ID); r.Error != long {
		t.Fatalf("long record read back with error of %d bytes, want %d", len(r.Error), len(long))
	}
	if err := s.Move(Kept, func(r *Record) { r.Error = "" }); err != nil {
		t.Fatal(err)
	}
	if err := s.Move(Cleaning, nil); err != nil {
		t.Fatal(err)
	}
	if r := readRecord(t, dir, s.ID); r.State != Cleaning || r.Error != "" {
		t.Errorf("after shrinking: %+v, want cleaning with no error", r)
	}
	for _, name := range []string{StateFile, stateTmp} {
		fi, err := os.Stat(filepath.Join(s.Path, name))
		if err != nil || fi.Size()%recordBlock != 0 || fi.Mode().Perm() != 0o600 {
			t.Errorf("%s: %v %v; want a 0600 file of whole %d-byte blocks", name, fi, err, recordBlock)
		}
	}
}

// TestNextBatchVisitsEverySession checks that successive bounded batches
// walk the whole root in turn, wrapping around, without duplicates in a
// batch, whatever the number of sessions relative to the batch size.
func TestNextBatchVisitsEverySession(t *testing.T) {
	for _, total := range []int{0, 3, 8, 20, 1000} {
		t.Run(strconv.Itoa(total), func(t *testing.T) {
			fd, dir := openRoot(t)
			all := map[string]bool{}
			for i := 0; i < total; i++ {
				id := fmt.Sprintf("%012x", i*7919+1)
				if err := os.Mkdir(filepath.Join(dir, id), 0o700); err != nil {
					t.Fatal(err)
				}
				all[id] = true
			}
			os.Mkdir(filepath.Join(dir, "not-a-session"), 0o700)
			seen := map[string]int{}
			rounds := (total+7)/8 + 1
			for r := 0; r < rounds; r++ {
				ids, err := nextBatch(fd, 8)
				if err != nil {
					t.Fatal(err)
				}
				if want := min(8, total); len(ids) != want {
					t.Fatalf("round %d: nextBatch = %d ids, want %d", r, len(ids), want)
				}
				in := map[string]bool{}
				for _, id := range ids {
					if !all[id] || in[id] {
						t.Fatalf("round %d: nextBatch gave %q (unknown or twice)", r, id)
					}
					in[id] = true
					seen[id]++
				}
			}
			if len(seen) != total {
				t.Errorf("%d rounds of 8 visited %d of %d sessions", rounds, len(seen), total)
			}
		})
	}
}

// TestNextBatchHostileCursor checks that a garbled, huge, negative or
// symlinked cursor only restarts the walk: no error, and the cursor's
// symlink target is neither read nor written.
func TestNextBatchHostileCursor(t *testing.T) {
	for name, plant := range map[string]func(string) error{
		"garbled":  func(p string) error { return os.WriteFile(p, []byte("\x00zz\n"), 0o600) },
		"huge":     func(p string) error { return os.WriteFile(p, []byte("9223372036854775807\n"), 0o600) },
		"negative": func(p string) error { return os.WriteFile(p, []byte("-5\n"), 0o600) },
		"fifo":     func(p string) error { return unix.Mkfifo(p, 0o600) },
		"symlink": func(p string) error {
			return os.Symlink(filepath.Join(filepath.Dir(p), "sentinel"), p)
		},
	} {
		t.Run(name, func(t *testing.T) {
			fd, dir := openRoot(t)
			sentinel := filepath.Join(dir, "sentinel")
			if err := os.WriteFile(sentinel, []byte("12"), 0o600); err != nil {
				t.Fatal(err)
			}
			for i := 0; i < 3; i++ {
				os.Mkdir(filepath.Join(dir, fmt.Sprintf("%012x", i+1)), 0o700)
			}
			if err := plant(filepath.Join(dir, CursorFile)); err != nil {
				t.Fatal(err)
			}
			ids, err := nextBatch(fd, 8)
			if err != nil || len(ids) != 3 {
				t.Fatalf("nextBatch = %v, %v; want the 3 sessions", ids, err)
			}
			if b, _ := os.ReadFile(sentinel); string(b) != "12" {
				t.Errorf("symlink target changed to %q", b)
			}
		})
	}
}
