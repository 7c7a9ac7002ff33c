//go:build linux

package sandbox

import (
	"bufio"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/agentbox/agentbox/env"
	"github.com/agentbox/agentbox/landlock"
)

// Nested sandboxes: agentbox -- agentbox -- CMD, or an agent inside
// agentbox that wraps its sub-agents with agentbox.
//
// A command inside a sandbox cannot build one itself: Landlock forbids a
// restricted process every mount. So each sandbox's init listens on a
// socket in the runtime directory (AGENTBOX_NEST), and an agentbox started
// inside sends its request there instead of cloning. Init starts a nest-run
// stage for it: this binary, outside the command's Landlock domain, without
// capabilities, with no_new_privs, in the outer sandbox's mount and PID
// namespaces. The nest-run stage is an ordinary wrapper: it creates the
// session (under the outer session's /tmp, so it goes when the outer one
// does), clones new namespaces and runs the inner init, with two
// differences:
//
//   - the inner init applies the outer sandbox's Landlock policy, then the
//     inner one: the inner command can write only where both allow. Its
//     mounts start as a copy of the outer sandbox's, which the kernel locks
//     (a hidden path stays hidden, a read-only mount stays read-only), so
//     the inner policy is never wider than the outer one.
//   - its signals come from the requesting agentbox over the socket, and
//     its events go back the same way; the requesting agentbox turns them
//     into its own exit status, messages and --status-fd events.
//
// The command's stdin, stdout and stderr are passed over the socket
// (SCM_RIGHTS) and handed to the inner command as they are. The inner
// /tmp, /var/tmp, /dev/shm and runtime directory are new mounts over the
// outer ones, so the outer session's are out of reach, and the inner /proc
// is a new instance for the inner PID namespace (the spare proc of
// mounts.StageProc makes that mount possible).

// NestRunArg0 is the argv[0] of the nest-run stage.
const NestRunArg0 = "agentbox:nest-run"

// IsNestRun reports whether this process is the nest-run stage.
func IsNestRun() bool { return len(os.Args) > 1 && os.Args[0] == NestRunArg0 }

// NestVar names the nest socket of the session a command runs in.
const NestVar = "AGENTBOX_NEST"

// nestSocketName is the nest socket's name in the runtime directory.
const nestSocketName = "agentbox-nest.sock"

// nestedRoot is the session root of nested sessions, in the outer
// session's /tmp as the nest-run stage sees it.
const nestedRoot = "/tmp/.agentbox-nested"

// nestRequest is what an agentbox inside a sandbox asks for: its
// command-line flags and its command. Its stdin, stdout and stderr come
// with it as SCM_RIGHTS.
type nestRequest struct {
	Argv     [][]byte `json:"argv"`
	Env      [][]byte `json:"env"`
	Dir      []byte   `json:"dir"`
	Profile  string   `json:"profile,omitempty"`
	Landlock string   `json:"landlock,omitempty"`
	RW       [][]byte `json:"rw,omitempty"`
	RO       [][]byte `json:"ro,omitempty"`
	Hide     [][]byte `json:"hide,omitempty"`
	Show     [][]byte `json:"show,omitempty"`
	Keep     bool     `json:"keep,omitempty"`
	Verbose  bool     `json:"verbose,omitempty"`
}

// nestRunConfig is what init gives the nest-run stage (argv[1]).
type nestRunConfig struct {
	Outer []landlock.Policy `json:"outer"` // this sandbox's policies, outermost first
	// Roots are the enclosing sessions' roots, hidden in the nested
	// sandbox (each holds a sealed tmpfs with a spare proc of its PID
	// namespace, which a command with a user namespace of its own could
	// otherwise enter).
	Roots []string `json:"roots"`
}

// maxNestRuns bounds the nest-run stages one session runs at once.
const maxNestRuns = 64

// maxNestRequest bounds a request (argv and environment included).
const maxNestRequest = 16 << 20

// listenNest creates the session's nest socket in the runtime directory
// (mode 0600 under init's umask 077) and returns the listening descriptor.
func listenNest(runtimeDir string) (int, string, error) {
	path := runtimeDir + "/" + nestSocketName
	fd, err := unix.Socket(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return -1, "", fmt.Errorf("nest socket: %w", err)
	}
	if err := unix.Bind(fd, &unix.SockaddrUnix{Name: path}); err != nil {
		unix.Close(fd)
		return -1, "", fmt.Errorf("nest socket %s: bind: %w", path, err)
	}
	if err := unix.Listen(fd, 16); err != nil {
		unix.Close(fd)
		return -1, "", fmt.Errorf("nest socket %s: listen: %w", path, err)
	}
	return fd, path, nil
}

// serveNest accepts nest requests for as long as init lives, from
// processes of uid only, and starts a nest-run stage for each.
func serveNest(lfd, uid int, cfg nestRunConfig) {
	b, _ := json.Marshal(cfg)
	slots := make(chan struct{}, maxNestRuns)
	for {
		cfd, _, err := unix.Accept4(lfd, unix.SOCK_CLOEXEC)
		switch err {
		case nil:
		case unix.EINTR, unix.ECONNABORTED:
			continue
		case unix.EMFILE, unix.ENFILE, unix.ENOBUFS, unix.ENOMEM:
			// Out of something for now: a requester waits in the backlog.
			time.Sleep(50 * time.Millisecond)
			continue
		default:
			return
		}
		// Only processes of this sandbox, of our uid: the peer's pid reads
		// 0 when it is outside init's PID namespace (another session that
		// can see this socket through the file system).
		cred, err := unix.GetsockoptUcred(cfd, unix.SOL_SOCKET, unix.SO_PEERCRED)
		if err != nil || int(cred.Uid) != uid || cred.Pid <= 0 {
			unix.Close(cfd)
			continue
		}
		select {
		case slots <- struct{}{}:
		default:
			unix.Close(cfd) // too many at once: the requester says so
			continue
		}
		go func() {
			spawnNestRun(cfd, string(b))
			<-slots
		}()
	}
}

// spawnNestRun starts the nest-run stage for the connection cfd. It runs
// on a thread of its own, never on init's main thread (which is in the
// command's Landlock domain: the stage would be too, and could not mount).
// The thread sets no_new_privs first, so that the stage gains no
// capability at execve even for a root caller; the thread ends with the
// goroutine.
func spawnNestRun(cfd int, cfg string) {
	runtime.LockOSThread() // not unlocked: the thread's state changes
	conn := os.NewFile(uintptr(cfd), "nest")
	defer conn.Close()
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return
	}
	null, err := os.OpenFile(os.DevNull, os.O_RDWR, 0)
	if err != nil {
		return
	}
	defer null.Close()
	p, err := os.StartProcess("/proc/self/exe", []string{NestRunArg0, cfg}, &os.ProcAttr{
		Env:   []string{},
		Files: []*os.File{null, null, null, conn},
		// Its own session: terminal signals reach the requesting agentbox,
		// which forwards them, and not this stage a second time.
		Sys: &syscall.SysProcAttr{Setsid: true},
	})
	if err != nil {
		return
	}
	// init's reaper collects it; the slot is held until it has ended.
	pidfd, err := unix.PidfdOpen(p.Pid, 0)
	p.Release()
	if err != nil {
		return
	}
	defer unix.Close(pidfd)
	for {
		fds := []unix.PollFd{{Fd: int32(pidfd), Events: unix.POLLIN}}
		if _, err := unix.Poll(fds, -1); err != unix.EINTR {
			return
		}
	}
}

// NestRunMain is the nest-run stage: it reads one request on fd 3 and runs
// it as a sandbox nested in this one, reporting on fd 3.
func NestRunMain() int {
	conn := os.NewFile(3, "nest")
	var cfg nestRunConfig
	if err := json.Unmarshal([]byte(os.Args[1]), &cfg); err != nil {
		return ExitSetup
	}
	// A requester that connects and says nothing does not hold this stage
	// for the rest of the session.
	unix.SetsockoptTimeval(3, unix.SOL_SOCKET, unix.SO_RCVTIMEO, &unix.Timeval{Sec: 10})
	req, files, err := readNestRequest(conn)
	unix.SetsockoptTimeval(3, unix.SOL_SOCKET, unix.SO_RCVTIMEO, &unix.Timeval{})
	if err == nil && os.Getuid() == 0 {
		err = errors.New("nested sessions are not available when the enclosing agentbox runs as root: the nested user namespace would map uid 0, which needs CAP_SETFCAP, and the sandbox keeps no capability; run the enclosing agentbox as an ordinary user")
	}
	if err != nil {
		status := newStatus(conn)
		code := ExitSetup
		status.emit(Event{Event: "error", ExitStatus: &code, Error: "nested agentbox: " + err.Error()})
		return ExitSetup
	}
	sigs := make(chan os.Signal, 32)
	go func() {
		// One byte per signal; EOF means the requesting agentbox is gone,
		// and so must its command be.
		var b [1]byte
		for {
			if _, err := conn.Read(b[:]); err != nil {
				sigs <- syscall.SIGKILL
				return
			}
			sigs <- syscall.Signal(b[0])
		}
	}()
	hide := strs(req.Hide)
	for _, r := range cfg.Roots {
		if !under(r, "/tmp", "/var/tmp", "/dev/shm") { // those are covered by the nested session's own
			hide = append(hide, r)
		}
	}
	rc := Config{
		Argv: strs(req.Argv), Env: strs(req.Env), Dir: string(req.Dir), Root: nestedRoot, Keep: req.Keep,
		Stdin: files[0], Stdout: files[1], Stderr: files[2], Messages: files[2],
		Profile: req.Profile, Landlock: req.Landlock, RW: strs(req.RW), RO: strs(req.RO), Hide: hide, Show: strs(req.Show),
		Status: conn, signals: sigs, outer: cfg.Outer, roots: cfg.Roots,
	}
	if req.Verbose {
		rc.Log = files[2]
	}
	Run(rc)
	return 0
}

// readNestRequest reads a length-prefixed JSON request and the three
// descriptors that come with its first bytes.
func readNestRequest(conn *os.File) (nestRequest, [3]*os.File, error) {
	var req nestRequest
	var files [3]*os.File
	head := make([]byte, 4)
	oob := make([]byte, unix.CmsgSpace(3*4))
	n, oobn, _, _, err := unix.Recvmsg(int(conn.Fd()), head, oob, unix.MSG_CMSG_CLOEXEC)
	if err != nil {
		return req, files, fmt.Errorf("receive: %w", err)
	}
	msgs, err := unix.ParseSocketControlMessage(oob[:oobn])
	if err != nil {
		return req, files, fmt.Errorf("no descriptors with the request")
	}
	var fds []int
	for i := range msgs {
		got, err := unix.ParseUnixRights(&msgs[i])
		if err == nil {
			fds = append(fds, got...)
		}
	}
	if len(fds) != 3 {
		for _, fd := range fds {
			unix.Close(fd)
		}
		return req, files, fmt.Errorf("want 3 descriptors with the request, got %d", len(fds))
	}
	for i, fd := range fds {
		files[i] = os.NewFile(uintptr(fd), []string{"stdin", "stdout", "stderr"}[i])
	}
	if _, err := io.ReadFull(conn, head[n:]); err != nil {
		return req, files, fmt.Errorf("receive: %w", err)
	}
	size := binary.BigEndian.Uint32(head)
	if size > maxNestRequest {
		return req, files, fmt.Errorf("request of %d bytes: more than %d", size, maxNestRequest)
	}
	body := make([]byte, size)
	if _, err := io.ReadFull(conn, body); err != nil {
		return req, files, fmt.Errorf("receive: %w", err)
	}
	if err := json.Unmarshal(body, &req); err != nil || len(req.Argv) == 0 {
		return req, files, fmt.Errorf("bad request: %v", err)
	}
	if !filepath.IsAbs(string(req.Dir)) {
		return req, files, fmt.Errorf("working directory %q is not an absolute path", req.Dir)
	}
	return req, files, nil
}

// nestSocket returns the nest socket named in the caller's environment,
// or "" when agentbox does not run inside a sandbox.
func nestSocket(vars []string) string {
	if _, in := env.Lookup(vars, "AGENTBOX_SESSION"); !in {
		return ""
	}
	p, _ := env.Lookup(vars, NestVar)
	return p
}

// runNested asks the sandbox that agentbox runs in for a nested one (see
// the top of this file) and relays until it has ended.
func runNested(cfg Config, sock string) (res Result, err error) {
	defer func() {
		if err != nil && !fromServer(err) {
			code := ExitCode(err)
			newStatus(cfg.Status).emit(Event{Event: "error", ExitStatus: &code, Error: err.Error()})
		}
	}()
	// Run has set Stdin, Stdout and Stderr.
	if cfg.Dir == "" {
		if cfg.Dir, err = os.Getwd(); err != nil {
			return res, errorf(ExitSetup, "working directory: %w", err)
		}
	}
	fd, err := unix.Socket(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return res, errorf(ExitSetup, "nested agentbox: socket: %w", err)
	}
	conn := os.NewFile(uintptr(fd), "nest")
	defer conn.Close()
	unreachable := func(err error) (Result, error) {
		return res, errorf(ExitSetup, "agentbox runs inside agentbox session %s, whose nest socket %s (%s) cannot be used: %w; "+
			"remedy: run it from that session's command or its children, or unset %s and AGENTBOX_SESSION to ask for a sandbox of its own",
			envValue(cfg.Env, "AGENTBOX_SESSION"), sock, NestVar, err, NestVar)
	}
	if err := unix.Connect(fd, &unix.SockaddrUnix{Name: sock}); err != nil {
		return unreachable(fmt.Errorf("connect: %w", err))
	}
	// Only the session's own init, PID 1 of our PID namespace and of our
	// uid, gets our descriptors: not a look-alike socket another process
	// of ours serves.
	cred, err := unix.GetsockoptUcred(fd, unix.SOL_SOCKET, unix.SO_PEERCRED)
	if err != nil {
		return unreachable(fmt.Errorf("SO_PEERCRED: %w", err))
	}
	if int(cred.Uid) != os.Getuid() {
		return unreachable(fmt.Errorf("it belongs to uid %d, you are uid %d", cred.Uid, os.Getuid()))
	}
	if cred.Pid != 1 {
		return unreachable(fmt.Errorf("it is served by pid %d, not by this sandbox's init (pid 1)", cred.Pid))
	}
	req := nestRequest{Argv: bytesOf(cfg.Argv), Env: bytesOf(cfg.Env), Dir: []byte(cfg.Dir), Profile: cfg.Profile, Landlock: cfg.Landlock,
		RW: bytesOf(cfg.RW), RO: bytesOf(cfg.RO), Hide: bytesOf(cfg.Hide), Show: bytesOf(cfg.Show),
		Keep: cfg.Keep, Verbose: cfg.Log != nil}
	body, err := json.Marshal(req)
	if err != nil {
		return res, errorf(ExitSetup, "nested agentbox: %w", err)
	}
	msg := binary.BigEndian.AppendUint32(nil, uint32(len(body)))
	rights := unix.UnixRights(int(cfg.Stdin.Fd()), int(cfg.Stdout.Fd()), int(cfg.Stderr.Fd()))
	if err := unix.Sendmsg(fd, msg[:1], rights, nil, 0); err != nil {
		return unreachable(fmt.Errorf("send: %w", err))
	}
	if _, err := conn.Write(append(msg[1:], body...)); err != nil {
		return unreachable(fmt.Errorf("send: %w", err))
	}

	sigs := cfg.signals
	if sigs == nil {
		c := make(chan os.Signal, 32)
		signal.Notify(c, forwarded...)
		defer signal.Stop(c)
		sigs = c
	}
	defer forwardSignals(sigs, conn)()

	var setupErr error
	ended := false
	sc := bufio.NewScanner(conn)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Bytes()
		if cfg.Status != nil {
			cfg.Status.Write(append(append([]byte(nil), line...), '\n'))
		}
		var e Event
		if json.Unmarshal(line, &e) != nil {
			continue
		}
		switch e.Event {
		case "session":
			res.SessionID, res.SessionPath = e.Session, e.Path
		case "exited":
			if e.ExitStatus != nil {
				res.ExitCode, ended = *e.ExitStatus, true
			}
		case "error":
			code := ExitSetup
			if e.ExitStatus != nil {
				code = *e.ExitStatus
			}
			res.ExitCode, ended = code, true
			setupErr = &serverError{&Error{Code: code, Err: errors.New(e.Error)}}
		case "cleanup":
			switch e.Result {
			case CleanupKept:
				res.Kept = true
			case CleanupFailed:
				res.CleanupErr = errors.New(e.Error)
			}
		}
	}
	if !ended {
		return res, errorf(ExitSetup, "nested agentbox: the enclosing session ended the request without running the command (too many nested sessions at once, or the enclosing session is ending); try again")
	}
	return res, setupErr
}

func envValue(vars []string, name string) string {
	v, _ := env.Lookup(vars, name)
	return v
}

// serverError is an error the nest-run stage reported, and already put on
// the status stream.
type serverError struct{ err *Error }

func (e *serverError) Error() string { return e.err.Error() }
func (e *serverError) Unwrap() error { return e.err }

func fromServer(err error) bool {
	var se *serverError
	return errors.As(err, &se)
}
