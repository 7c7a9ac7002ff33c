package fserr

import (
	"errors"
	"fmt"
	"strings"
)

// ErrUnsafe is wrapped (as PathError.Err) by every refusal that is about who
// owns a path, its mode or its kind: another user's directory, group or other
// permission bits, a symbolic link, FIFO or file where a directory belongs.
// Callers branch on it with errors.Is. Errors that merely report an errno
// (EACCES from mkdirat, ENOENT, EROFS) do not wrap it.
//
// When PathError.Err is exactly ErrUnsafe, Error() does not print it: the
// Reason already says what was unsafe.
var ErrUnsafe = errors.New("unsafe path")

// PathError reports a failure about one path. Every field but Path may be
// left zero; Error() then leaves that part out.
type PathError struct {
	What   string // what the path is to agentbox: "session root", "session directory", "state file"...
	Path   string
	UID    int    // the acting (caller's) uid; negative when unknown, and then not printed
	Stat   *Seen  // what was seen at the path, nil when nothing could be seen
	Reason string // why agentbox refused, e.g. "refusing a directory another user controls"
	Remedy string // what the user can do, e.g. "remove it or pass --root DIR"
	Err    error  // the errno (ideally as *os.SyscallError, so the syscall is named) or a sentinel; may be nil
}

// Seen is what was found at a path.
type Seen struct {
	Kind  string // "directory", "symbolic link", "FIFO", "regular file", "socket", "character device", "block device", "unknown type"
	Owner int    // st_uid
	Mode  uint32 // permission bits including setuid, setgid and sticky (st_mode & 07777)
}

// Error formats the error as
//
//	WHAT PATH: a KIND owned by uid OWNER, mode MODE: ERR (you are uid UID): REASON; REMEDY
//
// leaving out each part whose field is empty: the Seen part when Stat is nil,
// ERR when Err is nil or exactly ErrUnsafe, "(you are uid UID)" when UID is
// negative.
func (e *PathError) Error() string {
	var b strings.Builder
	if e.What != "" {
		b.WriteString(e.What)
		b.WriteByte(' ')
	}
	b.WriteString(e.Path)

	var facts []string
	if e.Stat != nil {
		facts = append(facts, e.Stat.String())
	}
	if e.Err != nil && e.Err != ErrUnsafe {
		facts = append(facts, e.Err.Error())
	}
	if len(facts) > 0 {
		b.WriteString(": ")
		b.WriteString(strings.Join(facts, ": "))
	}
	if e.UID >= 0 {
		fmt.Fprintf(&b, " (you are uid %d)", e.UID)
	}
	if e.Reason != "" {
		b.WriteString(": ")
		b.WriteString(e.Reason)
	}
	if e.Remedy != "" {
		b.WriteString("; ")
		b.WriteString(e.Remedy)
	}
	return b.String()
}

// Unwrap returns Err, so errors.Is sees both the errno and ErrUnsafe.
func (e *PathError) Unwrap() error { return e.Err }

// String renders s as "a directory owned by uid 1002, mode 0777".
func (s *Seen) String() string {
	return fmt.Sprintf("%s %s owned by uid %d, mode %04o", article(s.Kind), s.Kind, s.Owner, s.Mode)
}

func article(kind string) string {
	if kind != "" && strings.ContainsRune("aeiouAEIOU", rune(kind[0])) {
		return "an"
	}
	return "a"
}

// File type bits of st_mode. These values are the same on every Unix Go
// supports; they are spelled out here so that this file builds everywhere.
const (
	sIFMT   = 0o170000
	sIFSOCK = 0o140000
	sIFLNK  = 0o120000
	sIFREG  = 0o100000
	sIFBLK  = 0o060000
	sIFDIR  = 0o040000
	sIFCHR  = 0o020000
	sIFIFO  = 0o010000
)

// Kind names the file type in a raw st_mode, in the words Error() prints.
func Kind(mode uint32) string {
	switch mode & sIFMT {
	case sIFDIR:
		return "directory"
	case sIFLNK:
		return "symbolic link"
	case sIFREG:
		return "regular file"
	case sIFIFO:
		return "FIFO"
	case sIFSOCK:
		return "socket"
	case sIFCHR:
		return "character device"
	case sIFBLK:
		return "block device"
	}
	return "unknown type"
}

// SeenFromMode builds a Seen from a raw st_mode and st_uid.
func SeenFromMode(mode uint32, uid uint32) *Seen {
	return &Seen{Kind: Kind(mode), Owner: int(uid), Mode: mode & 0o7777}
}
