//go:build linux

package session

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/agentbox/agentbox/internal/rmtree"
)

// Grace is how long a session directory without a state file is taken to be
// still under construction (between its mkdirat and its first state write).
const Grace = time.Minute

// Info describes one session found under the root.
type Info struct {
	ID     string
	Record Record    // zero when the state file could not be read
	Err    error     // why the state file could not be read, if it could not
	Live   bool      // its lock is held: a wrapper is running it
	MTime  time.Time // of the session directory
	Bytes  int64     // with sizes only
	Files  int64     // with sizes only
}

// Age is the session's age from its record, else from its directory.
func (i Info) Age(now time.Time) time.Duration {
	if !i.Record.Created.IsZero() {
		return now.Sub(i.Record.Created)
	}
	return now.Sub(i.MTime)
}

// IDs lists the session ids under the root, sorted. Entries that are not
// session ids are ignored.
func IDs(rootFD int) ([]string, error) {
	fd, err := unix.Openat(rootFD, ".", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("openat session root: %w", err)
	}
	f := os.NewFile(uintptr(fd), "session root")
	defer f.Close()
	names, err := f.Readdirnames(-1)
	if err != nil {
		return nil, fmt.Errorf("getdents session root: %w", err)
	}
	ids := names[:0]
	for _, n := range names {
		if ValidID(n) {
			ids = append(ids, n)
		}
	}
	sort.Strings(ids)
	return ids, nil
}

// Inspect opens the session id, probes its lock without disturbing a live
// holder, and reads its record.
func Inspect(rootFD int, id string, sizes bool) (Info, error) {
	info := Info{ID: id}
	fd, err := unix.Openat(rootFD, id, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return info, fmt.Errorf("openat %s: %w", id, err)
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err == nil {
		info.MTime = time.Unix(st.Mtim.Unix())
	}
	// LOCK_SH|LOCK_NB fails while a wrapper holds LOCK_EX; when it succeeds
	// it is released at once by the close.
	switch err := unix.Flock(fd, unix.LOCK_SH|unix.LOCK_NB); err {
	case nil:
	case unix.EWOULDBLOCK:
		info.Live = true
	default:
		return info, fmt.Errorf("flock %s: %w", id, err)
	}
	info.Record, info.Err = readState(fd)
	if sizes {
		info.Bytes, info.Files, _ = rmtree.Usage(rootFD, id)
	}
	return info, nil
}

// List inspects every session under the root. Sessions that vanish while
// listing are left out; other per-session problems are reported in Info.Err.
func List(rootFD int, sizes bool) ([]Info, error) {
	ids, err := IDs(rootFD)
	if err != nil {
		return nil, err
	}
	out := make([]Info, 0, len(ids))
	for _, id := range ids {
		info, err := Inspect(rootFD, id, sizes)
		if errors.Is(err, unix.ENOENT) {
			continue
		}
		if err != nil && info.Err == nil {
			info.Err = err
		}
		out = append(out, info)
	}
	return out, nil
}

// Action is what a reconcile did, or would do, with one session.
type Action string

const (
	ActRemoved     Action = "removed"
	ActWouldRemove Action = "would-remove" // dry run
	ActSkipLive    Action = "skipped-live"
	ActSkipKept    Action = "skipped-kept"
	ActSkipYoung   Action = "skipped-young"   // no state yet, younger than Grace
	ActSkipExiting Action = "skipped-exiting" // lock free but the sandbox init is still alive
	ActSkipUnknown Action = "skipped-unreadable"
	ActFailed      Action = "failed"
)

// Outcome is the result of reconciling one session.
type Outcome struct {
	ID     string `json:"id"`
	State  State  `json:"state,omitempty"` // as found
	Action Action `json:"action"`
	Err    error  `json:"-"`
}

// Options select what a reconcile may remove.
type Options struct {
	IDs        []string // only these; empty: every session
	Kept       bool     // also remove kept sessions (always, for sessions named in IDs)
	Unreadable bool     // also remove abandoned sessions whose state file is missing or garbled
	DryRun     bool
	Limit      int // with no IDs: stop after this many lock attempts (0: no limit)
}

// Reconcile removes abandoned sessions: those whose lock is free. A live
// session is never touched. With Limit, it looks at the next Limit
// sessions after where the previous bounded run stopped (CursorFile), so
// that repeated bounded runs visit every session in turn, each at a cost
// that does not grow with the number of sessions.
func Reconcile(rootFD int, rootPath string, uid int, opt Options) ([]Outcome, error) {
	ids := opt.IDs
	named := len(ids) > 0
	if !named {
		var err error
		if opt.Limit > 0 {
			ids, err = nextBatch(rootFD, opt.Limit)
		} else {
			ids, err = IDs(rootFD)
		}
		if err != nil {
			return nil, err
		}
	}
	var out []Outcome
	for _, id := range ids {
		if !ValidID(id) {
			out = append(out, Outcome{ID: id, Action: ActFailed, Err: fmt.Errorf("%q is not a session id", id)})
			continue
		}
		o := reconcileOne(rootFD, rootPath, uid, id, named || opt.Kept, named || opt.Unreadable, opt.DryRun)
		if named || (o.Action != ActFailed || !errors.Is(o.Err, unix.ENOENT)) {
			out = append(out, o)
		}
	}
	return out, nil
}

func reconcileOne(rootFD int, rootPath string, uid int, id string, kept, unreadable, dry bool) Outcome {
	o := Outcome{ID: id}
	fd, err := unix.Openat(rootFD, id, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		o.Action, o.Err = ActFailed, fmt.Errorf("openat %s: %w", id, err)
		return o
	}
	defer unix.Close(fd)
	if err := unix.Flock(fd, unix.LOCK_EX|unix.LOCK_NB); err != nil {
		if err == unix.EWOULDBLOCK {
			o.Action = ActSkipLive
			return o
		}
		o.Action, o.Err = ActFailed, fmt.Errorf("flock %s: %w", id, err)
		return o
	}
	// We hold the lock: no wrapper runs this session.
	rec, rerr := readState(fd)
	if rerr != nil {
		var st unix.Stat_t
		if errors.Is(rerr, unix.ENOENT) && unix.Fstat(fd, &st) == nil && time.Since(time.Unix(st.Mtim.Unix())) < Grace {
			o.Action = ActSkipYoung
			return o
		}
		if !unreadable {
			o.Action, o.Err = ActSkipUnknown, rerr
			return o
		}
		rec = Record{Version: RecordVersion, ID: id, State: Cleaning, UID: uid}
	} else {
		o.State = rec.State
		if rec.State == Kept && !kept {
			o.Action = ActSkipKept
			return o
		}
		if initAlive(rec) {
			o.Action = ActSkipExiting
			return o
		}
	}
	if dry {
		o.Action = ActWouldRemove
		return o
	}
	s := &Session{ID: id, Path: filepath.Join(rootPath, id), fd: fd, root: rootFD, rec: rec}
	if rec.State == Removed { // a crash after the last write: finish the job
		s.rec.State = Cleaning
	}
	if err := s.Remove(); err != nil {
		o.Action, o.Err = ActFailed, err
		return o
	}
	o.Action = ActRemoved
	return o
}

// CursorFile, in the session root, holds where the last bounded reconcile
// stopped: a directory offset (telldir cookie) as decimal text. It is only
// a hint: a missing, garbled or stale cursor starts from the beginning.
// Linux filesystems keep these offsets valid across opens (NFS export
// needs it); ext4 makes them name hashes.
const CursorFile = ".reconcile-cursor"

// nextBatch returns up to n session ids from the root's directory stream,
// starting at the cursor and wrapping around once, and moves the cursor
// past them. Listing a whole root costs about 0.25 ms per 1000 sessions on
// ext4, on every start; this reads one getdents batch.
func nextBatch(rootFD, n int) ([]string, error) {
	start := readCursor(rootFD)
	buf := make([]byte, 2<<10) // a few dozen entries: ext4's cost grows with the batch
	seen := map[string]bool{}
	var ids []string
	next := start
	for pass := 0; pass < 2 && len(ids) < n; pass++ {
		if pass == 1 {
			if start == 0 {
				break // the first pass read the whole stream
			}
			start = 0
		}
		// A fresh open for each pass: after a read at the end, ext4 does
		// not restart a directory stream that is sought back to 0.
		fd, err := unix.Openat(rootFD, ".", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
		if err != nil {
			return nil, fmt.Errorf("openat session root: %w", err)
		}
		more, err := readBatch(fd, start, n-len(ids), buf, func(id string, off int64) {
			next = off
			if !seen[id] {
				seen[id] = true
				ids = append(ids, id)
			}
		})
		unix.Close(fd)
		if err != nil && pass == 0 && start != 0 {
			next = 0 // a cookie this filesystem no longer takes: start over
			continue
		}
		if err != nil {
			return nil, err
		}
		if !more {
			next = 0
		}
	}
	writeCursor(rootFD, next)
	return ids, nil
}

// readBatch reads the directory open at fd from offset off and calls found
// with each session id and the offset after it, up to n ids. It reports
// whether the stream may hold more entries.
func readBatch(fd int, off int64, n int, buf []byte, found func(string, int64)) (bool, error) {
	if off != 0 {
		if _, err := unix.Seek(fd, off, io.SeekStart); err != nil {
			return false, nil // a cursor this filesystem refuses: start over
		}
	}
	for got := 0; got < n; {
		m, err := unix.Getdents(fd, buf)
		if err != nil {
			return false, fmt.Errorf("getdents session root: %w", err)
		}
		if m == 0 {
			return false, nil
		}
		for b := buf[:m]; len(b) >= direntHeader; {
			reclen := int(binary.NativeEndian.Uint16(b[16:18]))
			if reclen < direntHeader || reclen > len(b) {
				return false, fmt.Errorf("getdents session root: bad record length %d", reclen)
			}
			name := b[direntHeader:reclen]
			if i := bytes.IndexByte(name, 0); i >= 0 {
				name = name[:i]
			}
			if id := string(name); ValidID(id) {
				// d_off is where the entry after this one starts.
				found(id, int64(binary.NativeEndian.Uint64(b[8:16])))
				if got++; got == n {
					return true, nil
				}
			}
			b = b[reclen:]
		}
	}
	return true, nil
}

// direntHeader is the size of linux_dirent64 before d_name: d_ino (8),
// d_off (8), d_reclen (2), d_type (1).
const direntHeader = 19

func readCursor(rootFD int) int64 {
	fd, err := unix.Openat(rootFD, CursorFile, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if err != nil {
		return 0
	}
	defer unix.Close(fd)
	var b [24]byte
	m, err := unix.Pread(fd, b[:], 0)
	if err != nil {
		return 0
	}
	v, err := strconv.ParseInt(strings.TrimSpace(string(b[:m])), 10, 64)
	if err != nil || v < 0 {
		return 0
	}
	return v
}

// writeCursor records off; a failure only means the next run starts over.
// Offset 0, the start, is the cursor's absence: a root whose sessions all
// fit in one batch holds nothing but sessions.
func writeCursor(rootFD int, off int64) {
	if off == 0 {
		unix.Unlinkat(rootFD, CursorFile, 0)
		return
	}
	fd, err := unix.Openat(rootFD, CursorFile, unix.O_WRONLY|unix.O_CREAT|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, 0o600)
	if err != nil {
		return
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if unix.Fstat(fd, &st) != nil || st.Mode&unix.S_IFMT != unix.S_IFREG {
		return
	}
	s := strconv.FormatInt(off, 10) + "\n"
	if _, err := unix.Pwrite(fd, []byte(s), 0); err == nil {
		unix.Ftruncate(fd, int64(len(s)))
	}
}
