//go:build linux

package session

import (
	"bytes"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/agentbox/agentbox/internal/fserr"
	"github.com/agentbox/agentbox/internal/rmtree"
)

// Names inside a session directory.
const (
	StateFile = "state"
	stateTmp  = "state.tmp"
	TmpDir    = "tmp"
	VarTmpDir = "var-tmp"
	RunDir    = "run"
)

// Subdirs are the directories bind-mounted into the sandbox, in mount order.
var Subdirs = []string{TmpDir, VarTmpDir, RunDir}

// Session is a live session owned by this process: its directory is open and
// flock(LOCK_EX)ed for as long as the Session is not closed. The lock is the
// session's liveness: the kernel drops it when the last holder dies, even on
// SIGKILL, and it cannot be confused by PID reuse.
type Session struct {
	ID   string
	Path string // the session directory, for messages and --keep
	fd   int    // O_RDONLY|O_DIRECTORY|O_CLOEXEC, holds the lock
	root int    // the verified session root, not owned
	rec  Record
	// OnMove, when set, is called with the record after every state
	// change that took effect (to report it; it must not call back).
	OnMove func(Record)
}

// Create makes a fresh session directory under the root open at rootFD, with
// mode 0700 in the mkdirat itself, locks it, creates tmp/, var-tmp/ and run/
// (0700) and records state created. The caller's umask must not remove owner
// bits (the wrapper sets umask 077).
func Create(rootFD int, rootPath string, uid, wrapperPID int, command string) (*Session, error) {
	var id string
	for tries := 0; ; tries++ {
		id = newID()
		err := unix.Mkdirat(rootFD, id, 0o700)
		if err == nil {
			break
		}
		if err == unix.EEXIST && tries < 16 {
			continue
		}
		return nil, &fserr.PathError{What: "session directory", Path: filepath.Join(rootPath, id), UID: uid,
			Err: fmt.Errorf("mkdirat: %w", err), Remedy: "check that the session root is writable and not full (agentbox doctor)"}
	}
	s := &Session{ID: id, Path: filepath.Join(rootPath, id), root: rootFD, fd: -1}
	fail := func(op string, err error) (*Session, error) {
		if s.fd >= 0 {
			rmtree.RemoveContents(s.fd)
			unix.Close(s.fd)
		}
		unix.Unlinkat(rootFD, id, unix.AT_REMOVEDIR)
		return nil, &fserr.PathError{What: "session directory", Path: s.Path, UID: uid, Err: fmt.Errorf("%s: %w", op, err)}
	}
	fd, err := unix.Openat(rootFD, id, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return fail("openat", err)
	}
	s.fd = fd
	// Blocking: a reconcile may hold the lock for the instant it takes to see
	// that a directory without a state file is young and leave it alone.
	if err := flock(fd, unix.LOCK_EX); err != nil {
		return fail("flock", err)
	}
	for _, d := range Subdirs {
		if err := unix.Mkdirat(fd, d, 0o700); err != nil {
			return fail("mkdirat "+d, err)
		}
	}
	now := time.Now().UTC()
	s.rec = Record{Version: RecordVersion, ID: id, State: Created, UID: uid, WrapperPID: wrapperPID,
		Command: command, Created: now, Updated: now}
	if err := s.write(); err != nil {
		return fail("write state", err)
	}
	return s, nil
}

func newID() string {
	var b [IDLen / 2]byte
	// getrandom(2) directly: crypto/rand would link, and initialise in
	// every start of both stages, the whole FIPS module for six bytes.
	for n := 0; n < len(b); {
		m, err := unix.Getrandom(b[n:], 0)
		if err != nil && err != unix.EINTR {
			panic(err) // never fails on Linux ≥ 3.17 once the pool is ready
		}
		n += max(m, 0)
	}
	return hex.EncodeToString(b[:])
}

func flock(fd, how int) error {
	for {
		err := unix.Flock(fd, how)
		if err != unix.EINTR {
			return err
		}
	}
}

// Record returns a copy of the session's current record.
func (s *Session) Record() Record { return s.rec }

// FD returns the session directory's descriptor (owned by the Session).
func (s *Session) FD() int { return s.fd }

// LockFD returns the descriptor that holds the session's lock. A child that
// inherits it keeps the session live until it too has exited.
func (s *Session) LockFD() int { return s.fd }

// Move changes the session's state to `to`, applying update to the record
// first, and writes the state file. An illegal move changes nothing.
func (s *Session) Move(to State, update func(*Record)) error {
	if err := CanMove(s.rec.State, to); err != nil {
		return err
	}
	prev := s.rec
	s.rec.State = to
	s.rec.Updated = time.Now().UTC()
	if update != nil {
		update(&s.rec)
	}
	if to != Removed { // else nothing is left to write into
		if err := s.write(); err != nil {
			s.rec = prev
			return &fserr.PathError{What: "state file", Path: filepath.Join(s.Path, StateFile), UID: s.rec.UID,
				Err: err, Remedy: "check that the session root's filesystem is writable and not full"}
		}
	}
	if s.OnMove != nil {
		s.OnMove(s.rec)
	}
	return nil
}

// Update applies update to the record and writes it, without a state change.
func (s *Session) Update(update func(*Record)) error {
	prev := s.rec
	update(&s.rec)
	s.rec.State = prev.State
	s.rec.Updated = time.Now().UTC()
	if err := s.write(); err != nil {
		s.rec = prev
		return err
	}
	return nil
}

// write replaces the state file atomically: a reader sees the old or the new
// record, never a mix. It is not fsynced: it survives a crash of the process,
// which is what reconcile needs, not a power loss.
func (s *Session) write() error {
	return writeState(s.fd, s.rec)
}

// recordBlock: a record is padded with spaces to a multiple of it, so that
// rewriting the spare file reuses its blocks.
const recordBlock = 4096

// writeState writes r into the spare file (state.tmp) in place and
// exchanges it with the state file (renameat2 RENAME_EXCHANGE), so the spare
// then holds the previous record, ready for the next write. Creating a file
// costs about 0.6 ms on some disks (this project's CI: ext4 with discard)
// and rewriting one about 5 µs: only the first two records create files.
// A symlink at either name is refused (O_NOFOLLOW) or replaced, never
// followed.
func writeState(dirfd int, r Record) error {
	b := r.Marshal()
	if n := len(b) % recordBlock; n != 0 {
		b = append(b, bytes.Repeat([]byte{' '}, recordBlock-n)...)
	}
	b[len(b)-1] = '\n'
	fd, err := unix.Openat(dirfd, stateTmp, unix.O_WRONLY|unix.O_CREAT|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o600)
	if err != nil {
		return fmt.Errorf("openat %s: %w", stateTmp, err)
	}
	var st unix.Stat_t
	werr := unix.Fstat(fd, &st)
	if werr == nil && st.Mode&unix.S_IFMT != unix.S_IFREG {
		werr = fmt.Errorf("not a regular file")
	}
	if werr == nil {
		var n int
		n, werr = unix.Pwrite(fd, b, 0)
		if werr == nil && n != len(b) {
			werr = io.ErrShortWrite
		}
	}
	if werr == nil && st.Size > int64(len(b)) {
		werr = unix.Ftruncate(fd, int64(len(b)))
	}
	cerr := unix.Close(fd)
	if werr != nil {
		return fmt.Errorf("write %s: %w", stateTmp, werr)
	}
	if cerr != nil {
		return fmt.Errorf("close %s: %w", stateTmp, cerr)
	}
	err = unix.Renameat2(dirfd, stateTmp, dirfd, StateFile, unix.RENAME_EXCHANGE)
	if err == unix.ENOENT || err == unix.EINVAL {
		// No state file yet (the first record), or a filesystem without
		// RENAME_EXCHANGE: an ordinary rename is atomic too.
		err = unix.Renameat(dirfd, stateTmp, dirfd, StateFile)
	}
	if err != nil {
		return fmt.Errorf("renameat2 %s %s: %w", stateTmp, StateFile, err)
	}
	return nil
}

// readState reads and parses the state file of the session open at dirfd.
func readState(dirfd int) (Record, error) {
	fd, err := unix.Openat(dirfd, StateFile, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_CLOEXEC|unix.O_NONBLOCK, 0)
	if err != nil {
		return Record{}, fmt.Errorf("openat %s: %w", StateFile, err)
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return Record{}, fmt.Errorf("fstat %s: %w", StateFile, err)
	}
	if st.Mode&unix.S_IFMT != unix.S_IFREG {
		return Record{}, fmt.Errorf("%s is not a regular file", StateFile)
	}
	// pread into one buffer: a reconcile reads several of these per
	// start, and an *os.File costs a poller registration attempt each.
	b := make([]byte, maxRecordSize+1)
	n := 0
	for n < len(b) {
		m, err := unix.Pread(fd, b[n:], int64(n))
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return Record{}, fmt.Errorf("read %s: %w", StateFile, err)
		}
		if m == 0 {
			break
		}
		n += m
	}
	return ParseRecord(b[:n])
}

// Remove moves the session to cleaning, removes its directory through file
// descriptors and moves it to removed (or cleanup_failed, returning the
// error). Every process of the sandbox must be gone.
func (s *Session) Remove() error {
	if s.rec.State != Cleaning {
		if err := CanMove(s.rec.State, Cleaning); err != nil {
			return err
		}
		if err := s.Move(Cleaning, nil); err != nil {
			// The record could not be written, typically because the
			// command filled the filesystem: remove anyway, which frees
			// the space. A crash from here on leaves the previous state,
			// which a reconcile cleans too.
			s.rec.State = Cleaning
			if s.OnMove != nil {
				s.OnMove(s.rec)
			}
		}
	}
	if err := removeSession(s.root, s.ID, s.fd); err != nil {
		s.Move(CleanupFailed, func(r *Record) { r.Error = err.Error() })
		return &fserr.PathError{What: "session directory", Path: s.Path, UID: s.rec.UID, Err: err,
			Remedy: "inspect it, then run `agentbox clean " + s.ID + "`"}
	}
	return s.Move(Removed, nil)
}

// removeSession empties the session directory, the state file last so that a
// crash part-way leaves a session that still says cleaning, then removes it.
func removeSession(rootFD int, id string, fd int) error {
	for _, d := range Subdirs {
		if err := rmtree.RemoveAt(fd, d); err != nil {
			return err
		}
	}
	if err := rmtree.RemoveContents(fd); err != nil {
		return err
	}
	if err := unix.Unlinkat(rootFD, id, unix.AT_REMOVEDIR); err != nil && err != unix.ENOENT {
		return fmt.Errorf("unlinkat %s: %w", id, err)
	}
	return nil
}

// Keep moves the session to kept.
func (s *Session) Keep() error { return s.Move(Kept, nil) }

// Close releases the lock. The Session must not be used afterwards.
func (s *Session) Close() error {
	if s.fd < 0 {
		return nil
	}
	err := unix.Close(s.fd)
	s.fd = -1
	return err
}

// ProcStart returns field 22 (starttime, in clock ticks since boot) of
// /proc/PID/stat and whether the process is a zombie. Together with the pid
// it names one process for its whole life.
func ProcStart(pid int) (start uint64, zombie bool, err error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, false, err
	}
	// The command name (field 2) is in parentheses and may contain spaces
	// or ')': parse from the last ')'.
	i := strings.LastIndexByte(string(b), ')')
	if i < 0 {
		return 0, false, fmt.Errorf("/proc/%d/stat: no command field", pid)
	}
	f := strings.Fields(string(b[i+1:]))
	// f[0] is field 3 (state); starttime is field 22 → f[19].
	if len(f) < 20 {
		return 0, false, fmt.Errorf("/proc/%d/stat: %d fields", pid, len(f)+2)
	}
	start, err = strconv.ParseUint(f[19], 10, 64)
	if err != nil {
		return 0, false, fmt.Errorf("/proc/%d/stat: starttime: %w", pid, err)
	}
	return start, f[0] == "Z" || f[0] == "X", nil
}

// initAlive reports whether the sandbox init recorded in r still exists and
// is not yet a zombie: then the sandbox's processes may still be running.
func initAlive(r Record) bool {
	if r.InitPID <= 0 {
		return false
	}
	start, zombie, err := ProcStart(r.InitPID)
	if err != nil {
		return !errors.Is(err, os.ErrNotExist) // unsure → assume alive, never remove under a live sandbox
	}
	return start == r.InitStart && !zombie
}
