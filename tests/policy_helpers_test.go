//go:build linux

package tests

import (
	"errors"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// The helpers of the policy tests (policy_test.go), dispatched from
// helperMain. Each reports what the kernel answered as errno names
// (EACCES, EROFS, ...), so that a test tells a Landlock denial from a
// read-only mount or a missing file.

// policyHelper runs the policy helper called name with the arguments after
// the helper binary's name, and returns its exit status.
func policyHelper(name string, args []string) int {
	switch name {
	case "fsops":
		return fsops(args)
	case "abstract-listen":
		return abstractListen(os.Getenv("NAME"), os.Getenv("READY"))
	case "abstract-connect":
		return abstractConnect(os.Getenv("NAME"))
	case "ttyguard":
		return ttyGuard()
	case "nolandlock-exec":
		return noLandlockExec(args)
	}
	fmt.Fprintf(os.Stderr, "abtest-helper: unknown policy helper %q\n", name)
	return 2
}

// errnoName is err's errno as the kernel names it ("EACCES"), or err's text
// when it carries none.
func errnoName(err error) string {
	var errno syscall.Errno
	if errors.As(err, &errno) {
		if n := unix.ErrnoName(errno); n != "" {
			return n
		}
	}
	return err.Error()
}

// outcome is "ok" for a nil error, else its errno name.
func outcome(err error) string {
	if err == nil {
		return "ok"
	}
	return errnoName(err)
}

// fsopArity is how many paths each fsops operation takes.
var fsopArity = map[string]int{
	"write":    1, // open O_WRONLY|O_CREAT|O_TRUNC, write "abtest\n"
	"append":   1, // open O_WRONLY|O_APPEND (no O_CREAT), write "abtest\n"
	"truncate": 1, // truncate(2) to 0
	"read":     1, // read the whole file: "ok CONTENT" (quoted)
	"ls":       1, // list a directory: "ok [NAMES]"
	"mkdir":    1,
	"remove":   1,
	"chmod":    1, // chmod(2) to 0777, following a final symlink
	"utimes":   1, // utimensat(2) to the epoch, following a final symlink
	"rename":   2,
	"link":     2,
	"symlink":  2, // symlink(TARGET, LINKPATH)
}

// fsops performs the operations in args (each an operation name followed by
// its paths; $VAR in a path is expanded from the environment) in order, and
// prints one line per operation: "OP PATH...: RESULT", with the paths as
// given. It exits 0 whatever the operations returned, 2 on malformed
// arguments.
func fsops(args []string) int {
	for len(args) > 0 {
		op := args[0]
		n, ok := fsopArity[op]
		if !ok || len(args) < 1+n {
			fmt.Fprintf(os.Stderr, "fsops: bad operation %q\n", args)
			return 2
		}
		paths := args[1 : 1+n]
		p := make([]string, n)
		for i, s := range paths {
			p[i] = os.ExpandEnv(s)
		}
		args = args[1+n:]
		var res string
		switch op {
		case "write":
			res = outcome(os.WriteFile(p[0], []byte("abtest\n"), 0o600))
		case "append":
			f, err := os.OpenFile(p[0], os.O_WRONLY|os.O_APPEND, 0)
			if err == nil {
				_, err = f.WriteString("abtest\n")
				f.Close()
			}
			res = outcome(err)
		case "truncate":
			res = outcome(os.Truncate(p[0], 0))
		case "read":
			b, err := os.ReadFile(p[0])
			res = outcome(err)
			if err == nil {
				res += fmt.Sprintf(" %q", b)
			}
		case "ls":
			des, err := os.ReadDir(p[0])
			res = outcome(err)
			if err == nil {
				names := []string{}
				for _, de := range des {
					names = append(names, de.Name())
				}
				res += fmt.Sprintf(" %q", names)
			}
		case "mkdir":
			res = outcome(os.Mkdir(p[0], 0o700))
		case "remove":
			res = outcome(os.Remove(p[0]))
		case "chmod":
			res = outcome(os.Chmod(p[0], 0o777))
		case "utimes":
			res = outcome(os.Chtimes(p[0], time.Unix(0, 0), time.Unix(0, 0)))
		case "rename":
			res = outcome(os.Rename(p[0], p[1]))
		case "link":
			res = outcome(os.Link(p[0], p[1]))
		case "symlink":
			res = outcome(os.Symlink(p[0], p[1]))
		}
		fmt.Printf("%s %s: %s\n", op, strings.Join(paths, " "), res)
	}
	return 0
}

// abstractListen listens on the abstract unix socket @name, creates ready,
// and accepts (and closes) connections until it is killed.
func abstractListen(name, ready string) int {
	fd, err := unix.Socket(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		fmt.Fprintln(os.Stderr, "abstract-listen: socket:", err)
		return 2
	}
	// A leading '@' in the name is the abstract namespace's NUL byte.
	if err := unix.Bind(fd, &unix.SockaddrUnix{Name: "@" + name}); err != nil {
		fmt.Fprintf(os.Stderr, "abstract-listen: bind @%s: %v\n", name, err)
		return 2
	}
	if err := unix.Listen(fd, 16); err != nil {
		fmt.Fprintln(os.Stderr, "abstract-listen: listen:", err)
		return 2
	}
	if err := os.WriteFile(ready, nil, 0o600); err != nil {
		fmt.Fprintln(os.Stderr, "abstract-listen:", err)
		return 2
	}
	for {
		c, _, err := unix.Accept(fd)
		if err == nil {
			unix.Close(c)
		} else if err != unix.EINTR && err != unix.ECONNABORTED {
			fmt.Fprintln(os.Stderr, "abstract-listen: accept:", err)
			return 2
		}
	}
}

// abstractConnect connects to the abstract unix socket @name and prints
// "connect: RESULT".
func abstractConnect(name string) int {
	fd, err := unix.Socket(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		fmt.Fprintln(os.Stderr, "abstract-connect: socket:", err)
		return 2
	}
	defer unix.Close(fd)
	fmt.Printf("connect: %s\n", outcome(unix.Connect(fd, &unix.SockaddrUnix{Name: "@" + name})))
	return 0
}

// ioctlPtr is ioctl(fd, req, p) with req passed to the system call as is:
// all 64 bits of it, where unix.Ioctl* would take an int.
func ioctlPtr(fd int, req uintptr, p unsafe.Pointer) error {
	if _, _, e := unix.Syscall(unix.SYS_IOCTL, uintptr(fd), req, uintptr(p)); e != 0 {
		return e
	}
	return nil
}

// ttyGuard runs on a terminal as stdin (its controlling terminal). It tries
// to push a byte into the terminal's input with TIOCSTI (on fd 0, on a fresh
// open of /dev/tty, and with the request's upper 32 bits set: the kernel
// truncates the request to an unsigned int, so a filter that compares all
// 64 bits would let that one through) and TIOCLINUX, then checks that what
// a shell and an editor do with a terminal still works: reading and setting
// the window size, raw mode, and making its own process group the
// foreground one. It prints one line per check.
//
// Precondition: the test set the window size to 40x120. Postcondition: it
// is 33x101, the terminal is back in its original mode, and the foreground
// process group is the helper's own.
func ttyGuard() int {
	say := func(format string, a ...any) { fmt.Printf(format+"\n", a...) }
	x := byte('x')
	say("TIOCSTI: %s", outcome(ioctlPtr(0, unix.TIOCSTI, unsafe.Pointer(&x))))
	if tty, err := os.OpenFile("/dev/tty", os.O_RDWR, 0); err != nil {
		say("open /dev/tty: %s", outcome(err))
	} else {
		say("TIOCSTI on /dev/tty: %s", outcome(ioctlPtr(int(tty.Fd()), unix.TIOCSTI, unsafe.Pointer(&x))))
		tty.Close()
	}
	say("TIOCSTI with upper bits: %s", outcome(ioctlPtr(0, uintptr(unix.TIOCSTI)|1<<32, unsafe.Pointer(&x))))
	// TIOCLINUX subcode 6 (TIOCL_GETSHIFTSTATE) only reads.
	sub := byte(6)
	say("TIOCLINUX: %s", outcome(ioctlPtr(0, unix.TIOCLINUX, unsafe.Pointer(&sub))))

	ws, err := unix.IoctlGetWinsize(0, unix.TIOCGWINSZ)
	if err != nil {
		say("TIOCGWINSZ: %s", outcome(err))
	} else {
		say("TIOCGWINSZ: %dx%d", ws.Row, ws.Col)
	}
	err = unix.IoctlSetWinsize(0, unix.TIOCSWINSZ, &unix.Winsize{Row: 33, Col: 101})
	if ws, err2 := unix.IoctlGetWinsize(0, unix.TIOCGWINSZ); err == nil && err2 == nil {
		say("TIOCSWINSZ: %dx%d", ws.Row, ws.Col)
	} else {
		say("TIOCSWINSZ: %s, then %s", outcome(err), outcome(err2))
	}

	// Raw mode as cfmakeraw(3) sets it, with reads that return at once:
	// then a byte pushed by TIOCSTI above, even without a newline, would be
	// there to read.
	orig, err := unix.IoctlGetTermios(0, unix.TCGETS)
	if err != nil {
		say("raw mode: TCGETS %s", outcome(err))
		return 0
	}
	raw := *orig
	raw.Iflag &^= unix.IGNBRK | unix.BRKINT | unix.PARMRK | unix.ISTRIP | unix.INLCR | unix.IGNCR | unix.ICRNL | unix.IXON
	raw.Oflag &^= unix.OPOST
	raw.Lflag &^= unix.ECHO | unix.ECHONL | unix.ICANON | unix.ISIG | unix.IEXTEN
	raw.Cflag &^= unix.CSIZE | unix.PARENB
	raw.Cflag |= unix.CS8
	raw.Cc[unix.VMIN], raw.Cc[unix.VTIME] = 0, 0
	if err := unix.IoctlSetTermios(0, unix.TCSETS, &raw); err != nil {
		say("raw mode: TCSETS %s", outcome(err))
		return 0
	}
	got, err := unix.IoctlGetTermios(0, unix.TCGETS)
	switch {
	case err != nil:
		say("raw mode: TCGETS %s", outcome(err))
	case got.Lflag&(unix.ICANON|unix.ECHO|unix.ISIG) != 0 || got.Cc[unix.VMIN] != 0:
		say("raw mode: not applied (lflag %#o)", got.Lflag)
	default:
		say("raw mode: ok")
	}
	buf := make([]byte, 64)
	n, err := unix.Read(0, buf)
	if err != nil {
		say("pending input: %s", outcome(err))
	} else {
		say("pending input: %q", buf[:n])
	}
	if err := unix.IoctlSetTermios(0, unix.TCSETS, orig); err != nil {
		say("restore mode: %s", outcome(err))
	}

	// Job control as a shell does it: a process group of its own, made the
	// terminal's foreground group (a background group must ignore SIGTTOU
	// to do that).
	if _, err := unix.IoctlGetInt(0, unix.TIOCGPGRP); err != nil {
		say("TIOCGPGRP: %s", outcome(err))
	}
	signal.Ignore(syscall.SIGTTOU)
	if err := unix.Setpgid(0, 0); err != nil {
		say("setpgid: %s", outcome(err))
		return 0
	}
	err = unix.IoctlSetPointerInt(0, unix.TIOCSPGRP, unix.Getpid())
	fg, err2 := unix.IoctlGetInt(0, unix.TIOCGPGRP)
	switch {
	case err != nil || err2 != nil:
		say("TIOCSPGRP: %s, then TIOCGPGRP %s", outcome(err), outcome(err2))
	case fg != unix.Getpid():
		say("TIOCSPGRP: foreground group %d, want %d", fg, unix.Getpid())
	default:
		say("TIOCSPGRP: ok")
	}
	return 0
}

// noLandlockExec makes the Landlock system calls fail with ENOSYS, as on a
// kernel without Landlock, for this process and everything it starts, then
// executes args (args[0] an absolute path) with this environment minus the
// helper's variable.
//
// A seccomp filter returning ENOSYS is what the kernel itself answers when
// it was built without CONFIG_SECURITY_LANDLOCK; it is installed on every
// thread (SECCOMP_FILTER_FLAG_TSYNC) after no_new_privs, which an
// unprivileged process needs to install one.
func noLandlockExec(args []string) int {
	body := []unix.SockFilter{
		/* 0 */ {Code: bpfLd, K: offNr},
		/* 1 */ {Code: bpfJeq, K: unix.SYS_LANDLOCK_CREATE_RULESET, Jt: 2},
		/* 2 */ {Code: bpfJeq, K: unix.SYS_LANDLOCK_ADD_RULE, Jt: 1},
		/* 3 */ {Code: bpfJeq, K: unix.SYS_LANDLOCK_RESTRICT_SELF, Jf: 1},
		/* 4 */ {Code: bpfRet, K: retErrno(unix.ENOSYS)},
		/* 5 */ {Code: bpfRet, K: retAllow},
	}
	// The filter must be in force: the probe agentbox makes first.
	check := func() error {
		if _, _, e := unix.Syscall(unix.SYS_LANDLOCK_CREATE_RULESET, 0, 0, 1); e != unix.ENOSYS {
			return fmt.Errorf("landlock_create_ruleset still answers %v, want ENOSYS", e)
		}
		return nil
	}
	return seccompExec("nolandlock-exec", body, check, args) // restricted_helpers_test.go
}
