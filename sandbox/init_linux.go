//go:build linux

package sandbox

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/agentbox/agentbox/env"
	"github.com/agentbox/agentbox/internal/seccomp"
	"github.com/agentbox/agentbox/landlock"
	"github.com/agentbox/agentbox/mounts"
)

// InitArg0 is the argv[0] under which the wrapper re-executes this binary as
// the init stage. It cannot be typed by accident and is not a command name.
const InitArg0 = "agentbox:init"

// IsInit reports whether this process is the init stage. main calls it
// first, before any flag parsing.
func IsInit() bool { return len(os.Args) > 0 && os.Args[0] == InitArg0 }

// InitMain runs the init stage and returns its exit status: the command's,
// 128+N if it died of signal N, or 125–127 after reporting an error to the
// wrapper. It is PID 1 of the sandbox's PID namespace: when it returns and
// the process exits, the kernel kills every process left in the namespace.
func InitMain() int {
	// Not dumpable: a process of the same uid without capabilities (the
	// command) can then neither ptrace init nor open /proc/1/fd, /proc/1/mem
	// or /proc/1/root, which would lead to the session root and to threads
	// holding capabilities. execve makes the command dumpable again.
	if err := unix.Prctl(unix.PR_SET_DUMPABLE, 0, 0, 0, 0); err != nil {
		return ExitSetup
	}
	// Catch every signal that would otherwise end or crash init (as PID 1,
	// Go's default handling ends in exit(2), and a SIGSEGV sent by kill is a
	// crash with a traceback). Catching, not ignoring: a caught signal is
	// reset to default by execve, an ignored one would stay ignored in the
	// command. signal.Notify makes one round trip to the runtime's signal
	// thread per signal, 0.7 ms for these on a 2-core VM, a tenth of a
	// start: it runs alongside the mounts, and the command is started only
	// once it is done (relaySignals must see every direct signal). A signal
	// in the first millisecond ends the start-up, as it always could
	// before the runtime had started.
	sigs := make(chan os.Signal, 64)
	notified := make(chan struct{})
	go func() {
		signal.Notify(sigs, initSignals...)
		close(notified)
	}()
	report := os.NewFile(fdReport, "report")
	fail := func(code int, stage string, err error) int {
		m := initMsg{Event: "error", Code: code, Stage: stage, Msg: err.Error()}
		var errno syscall.Errno
		if errors.As(err, &errno) {
			m.Errno = int(errno)
		}
		m.NotFound = code == ExitNotFound
		json.NewEncoder(report).Encode(m)
		return code
	}
	var cfg initConfig
	b, err := io.ReadAll(os.NewFile(fdConfig, "config"))
	if err != nil {
		return fail(ExitSetup, "setup", fmt.Errorf("init: read config: %w", err))
	}
	if err := json.Unmarshal(b, &cfg); err != nil || len(cfg.Argv) == 0 {
		// EOF before any config: the wrapper died before sending it.
		return fail(ExitSetup, "setup", fmt.Errorf("init: config: %v", err))
	}
	argv, cfgEnv := strs(cfg.Argv), strs(cfg.Env)
	dir, rootPath := string(cfg.Dir), string(cfg.RootPath)
	sessPath := rootPath + "/" + cfg.SessionID
	// The forking thread's credentials are the command's: keep this
	// goroutine on one thread from the capability drop to the fork.
	runtime.LockOSThread()

	// The wrapper's descriptors name mounts of the host's mount namespace,
	// and mount(2) refuses those as source or target (EINVAL). Open the same
	// objects again here, by path, and check they are the very ones the
	// wrapper verified (st_dev, st_ino), so no path swap can redirect a mount.
	here, err := reopenHere(rootPath, cfg.SessionID)
	if err != nil {
		return fail(ExitSetup, "setup", err)
	}
	mcfg := mounts.Config{
		TmpSource: fdPath(here[fdTmp]), VarTmpSource: fdPath(here[fdVarTmp]), RunSource: fdPath(here[fdRun]),
		RootHide: fdPath(here[fdRoot]), RunUser: cfg.RunUser, UID: cfg.UID, DevShm: cfg.DevShm, VarTmp: cfg.VarTmp,
		RootName: rootPath, TmpName: sessPath + "/tmp", VarTmpName: sessPath + "/var-tmp", RunName: sessPath + "/run",
		RootPath: rootPath, Hide: strs(cfg.Hide), ReadOnly: strs(cfg.ReadOnly),
		ReadOnlyRoot: cfg.Landlock.Mode != landlock.Off,
	}
	for _, r := range cfg.Landlock.Write {
		mcfg.Writable = append(mcfg.Writable, r.Path)
	}
	ops, err := mounts.Plan(mcfg)
	if err != nil {
		return fail(ExitSetup, "setup", err)
	}
	if err := mounts.Apply(ops); err != nil {
		return fail(ExitSetup, "mount", err)
	}
	runtimeDir := mcfg.RuntimeDir()
	private := []string{"/tmp", runtimeDir}
	if cfg.VarTmp {
		private = append(private, "/var/tmp")
	}
	for _, d := range private {
		if err := checkPrivateDir(d, cfg.UID); err != nil {
			return fail(ExitSetup, "setup", err)
		}
	}
	// The wrapper's cwd may be a directory the mounts now hide (under the
	// host's /tmp): resolve the path again so the command can never hold a
	// reference into the host's /tmp.
	if err := unix.Chdir(dir); err != nil {
		hint := ""
		if under(dir, "/tmp", "/var/tmp", "/dev/shm") {
			hint = " (it is under the host's " + topDir(dir) + ", which is private inside the sandbox); run agentbox from a directory outside /tmp, /var/tmp and /dev/shm"
		}
		return fail(ExitSetup, "setup", fmt.Errorf("working directory %s: chdir inside the sandbox: %w%s", dir, err, hint))
	}
	// The nest socket, for an agentbox run inside (nest_linux.go). Without
	// it such a run fails to mount and says so; the session goes on.
	nestFD, nestPath, nestErr := listenNest(runtimeDir)
	if nestErr == nil {
		go serveNest(nestFD, cfg.UID, nestRunConfig{
			Outer: append(append([]landlock.Policy{}, cfg.Outer...), cfg.Landlock),
			Roots: append(append([]string{}, cfg.Roots...), rootPath),
		})
	}
	// Nothing of the session root may stay open in init past this point.
	for _, fd := range here {
		unix.Close(fd)
	}
	for _, fd := range []int{fdRoot, fdTmp, fdVarTmp, fdRun} {
		unix.Close(fd)
	}
	<-notified
	if err := dropPrivileges(); err != nil {
		return fail(ExitSetup, "setup", err)
	}
	// After the mounts (a landlocked process can never mount) and after
	// no_new_privs; on every thread.
	// Nested: every enclosing sandbox's policy first, each a Landlock
	// layer of its own, so writes need all of them to agree.
	for _, p := range cfg.Outer {
		if _, err := landlock.Apply(p); err != nil {
			return fail(ExitSetup, "landlock", fmt.Errorf("the enclosing sandbox's policy: %w", err))
		}
	}
	if _, err := landlock.Apply(cfg.Landlock); err != nil {
		return fail(ExitSetup, "landlock", err)
	}
	// The command cannot push input into the caller's terminal.
	if err := seccomp.InstallTTYGuard(); err != nil {
		return fail(ExitSetup, "setup", err)
	}
	// Descriptors the caller leaked to us (not CLOEXEC in the wrapper) must
	// not reach the command; ours (4, 5, 6) stay open in init only.
	if err := unix.CloseRange(3, ^uint(0), unix.CLOSE_RANGE_CLOEXEC); err != nil {
		return fail(ExitSetup, "setup", fmt.Errorf("close_range: %w", err))
	}
	vars := env.Build(cfgEnv, env.Session{ID: cfg.SessionID, RuntimeDir: runtimeDir, Nest: nestPath})
	path, code, err := lookPath(argv[0], vars)
	if err != nil {
		return fail(code, "exec", err)
	}
	control := make(chan syscall.Signal, 16)
	go readControl(os.NewFile(fdControl, "control"), control)
	syscall.Umask(cfg.Umask)
	proc, err := os.StartProcess(path, argv, &os.ProcAttr{
		Env:   vars,
		Files: []*os.File{os.Stdin, os.Stdout, os.Stderr},
	})
	if err != nil {
		code := ExitCannotExec
		if errors.Is(err, syscall.ENOENT) {
			code = ExitNotFound
		}
		return fail(code, "exec", fmt.Errorf("%s: %w", argv[0], unwrapPath(err)))
	}
	json.NewEncoder(report).Encode(initMsg{Event: "started", PID: proc.Pid})
	go relaySignals(proc.Pid, sigs, control)
	code, sig := reap(proc.Pid)
	if sig != 0 {
		// The exit status says 128+N either way; this says which it was.
		json.NewEncoder(report).Encode(initMsg{Event: "signaled", Signal: int(sig)})
	}
	return code
}

func strs(b [][]byte) []string {
	s := make([]string, len(b))
	for i := range b {
		s[i] = string(b[i])
	}
	return s
}

// reopenHere opens the session root and the session's subdirectories in
// this mount namespace, each relative to the one before and without
// following a symlink, and checks each against the wrapper's descriptor. It
// returns the new descriptors keyed by the wrapper's.
func reopenHere(rootPath, sessionID string) (map[int]int, error) {
	const flags = unix.O_PATH | unix.O_DIRECTORY | unix.O_NOFOLLOW | unix.O_CLOEXEC
	out := map[int]int{}
	check := func(fd, want int, what string) error {
		var a, b unix.Stat_t
		if err := unix.Fstat(fd, &a); err != nil {
			return fmt.Errorf("%s: fstat: %w", what, err)
		}
		if err := unix.Fstat(want, &b); err != nil {
			return fmt.Errorf("%s: fstat: %w", what, err)
		}
		if a.Dev != b.Dev || a.Ino != b.Ino {
			return fmt.Errorf("%s: replaced while the sandbox was being set up (dev/inode %d/%d, want %d/%d)", what, a.Dev, a.Ino, b.Dev, b.Ino)
		}
		return nil
	}
	root, err := unix.Open(rootPath, flags, 0)
	if err != nil {
		return nil, fmt.Errorf("session root %s: open: %w", rootPath, err)
	}
	if err := check(root, fdRoot, "session root "+rootPath); err != nil {
		return nil, err
	}
	out[fdRoot] = root
	sess, err := unix.Openat(root, sessionID, flags, 0)
	if err != nil {
		return nil, fmt.Errorf("session directory %s/%s: openat: %w", rootPath, sessionID, err)
	}
	if err := check(sess, fdSession, "session directory"); err != nil {
		return nil, err
	}
	for i, name := range []string{"tmp", "var-tmp", "run"} {
		fd, err := unix.Openat(sess, name, flags, 0)
		if err != nil {
			return nil, fmt.Errorf("session directory %s/%s/%s: openat: %w", rootPath, sessionID, name, err)
		}
		if err := check(fd, fdTmp+i, "session directory "+name); err != nil {
			return nil, err
		}
		out[fdTmp+i] = fd
	}
	unix.Close(sess)
	return out, nil
}

func fdPath(fd int) string { return "/proc/self/fd/" + strconv.Itoa(fd) }

// initSignals are caught by init from its first instruction on.
var initSignals = []os.Signal{
	syscall.SIGHUP, syscall.SIGINT, syscall.SIGQUIT, syscall.SIGILL, syscall.SIGTRAP, syscall.SIGABRT,
	syscall.SIGBUS, syscall.SIGFPE, syscall.SIGUSR1, syscall.SIGSEGV, syscall.SIGUSR2, syscall.SIGPIPE,
	syscall.SIGALRM, syscall.SIGTERM, syscall.SIGSTKFLT, syscall.SIGTSTP, syscall.SIGTTIN, syscall.SIGTTOU,
	syscall.SIGXCPU, syscall.SIGXFSZ, syscall.SIGVTALRM, syscall.SIGIO, syscall.SIGPWR, syscall.SIGSYS,
}

// readControl turns the wrapper's control pipe (one byte per signal) into
// a channel. EOF means the wrapper is gone; Pdeathsig ends us then.
func readControl(f *os.File, out chan<- syscall.Signal) {
	var b [1]byte
	for {
		if _, err := f.Read(b[:]); err != nil {
			close(out)
			return
		}
		out <- syscall.Signal(b[0])
	}
}

// twinWindow is how long a forwarded signal waits for its direct twin, and
// how long a direct copy stays a candidate twin.
const (
	twinWait = 20 * time.Millisecond
	twinLife = 2 * time.Second
)

// relaySignals delivers the signals the wrapper forwards to the command,
// exactly once. A signal sent to the whole process group (Ctrl-C from the
// terminal, timeout(1), kill(0, sig)) reaches the wrapper, init and, when it
// is still in that group, the command: the command already has it, so the
// wrapper's forwarded copy is dropped when init saw the same signal directly.
// A signal sent to the wrapper alone has no direct twin and is delivered.
// Direct signals that are not twins (kill 1 from inside) are dropped: they
// were meant for init.
func relaySignals(pid int, sigs <-chan os.Signal, control <-chan syscall.Signal) {
	direct := map[syscall.Signal][]time.Time{}
	note := func(s os.Signal) {
		if sig, ok := s.(syscall.Signal); ok && samePgrp(pid) {
			direct[sig] = append(direct[sig], time.Now())
		}
	}
	// Direct signals queued before the command existed did not reach it.
	for drained := false; !drained; {
		select {
		case <-sigs:
		default:
			drained = true
		}
	}
	takeTwin := func(sig syscall.Signal) bool {
		ts := direct[sig]
		for len(ts) > 0 && time.Since(ts[0]) > twinLife {
			ts = ts[1:]
		}
		if len(ts) > 0 {
			direct[sig] = ts[1:]
			return true
		}
		direct[sig] = ts
		return false
	}
	for {
		select {
		case s := <-sigs:
			note(s)
		case sig, ok := <-control:
			if !ok {
				return
			}
			twin := takeTwin(sig)
			if !twin && samePgrp(pid) {
				timer := time.NewTimer(twinWait)
			wait:
				for {
					select {
					case s := <-sigs:
						note(s)
						if s == sig {
							break wait
						}
					case <-timer.C:
						break wait
					}
				}
				timer.Stop()
				twin = takeTwin(sig)
			}
			if twin {
				continue
			}
			syscall.Kill(pid, sig)
		}
	}
}

// samePgrp reports whether the command is still in init's process group
// (both outside the PID namespace, where getpgid reports 0 for each).
func samePgrp(pid int) bool {
	pg, err := unix.Getpgid(pid)
	return err == nil && pg == unix.Getpgrp()
}

// reap waits for every child (orphans of the sandbox are re-parented to us)
// until the command itself exits, and returns its status.
func reap(pid int) (int, syscall.Signal) {
	for {
		var ws syscall.WaitStatus
		got, err := syscall.Wait4(-1, &ws, 0, nil)
		if err == syscall.EINTR {
			continue
		}
		if err != nil { // ECHILD: cannot happen while the command is ours
			return ExitSetup, 0
		}
		if got != pid {
			continue
		}
		switch {
		case ws.Exited():
			return ws.ExitStatus(), 0
		case ws.Signaled():
			return 128 + int(ws.Signal()), ws.Signal()
		}
	}
}

// checkPrivateDir verifies that dir, as the command will see it, is an
// existing directory owned by uid, without group or other bits, and
// writable.
func checkPrivateDir(dir string, uid int) error {
	var st unix.Stat_t
	if err := unix.Stat(dir, &st); err != nil {
		return fmt.Errorf("private directory %s: stat: %w", dir, err)
	}
	if st.Mode&unix.S_IFMT != unix.S_IFDIR || int(st.Uid) != uid || st.Mode&0o077 != 0 {
		return fmt.Errorf("private directory %s: owner uid %d, mode %04o (you are uid %d): not a private directory of yours", dir, st.Uid, st.Mode&0o7777, uid)
	}
	if err := unix.Access(dir, unix.W_OK|unix.X_OK); err != nil {
		return fmt.Errorf("private directory %s: access: %w", dir, err)
	}
	return nil
}

// dropPrivileges leaves the calling thread, and so the command it forks,
// without any capability and with no_new_privs. Capabilities, the bounding
// set, securebits and no_new_privs are per thread: the caller must hold
// runtime.LockOSThread from here to the fork, which os.StartProcess does on
// the calling thread. Only capset is applied to every thread: each
// AllThreadsSyscall stops the world, and one per capability cost about
// 30 ms per start.
func dropPrivileges() error {
	last := 63
	if b, err := os.ReadFile("/proc/sys/kernel/cap_last_cap"); err == nil {
		if n, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil {
			last = n
		}
	}
	// The bounding set caps what any later execve can grant, including a
	// uid-0 caller's command (root inside gets full caps at execve unless
	// bounded). Dropping needs CAP_SETPCAP, which init holds until capset.
	for c := 0; c <= last; c++ {
		if err := unix.Prctl(unix.PR_CAPBSET_DROP, uintptr(c), 0, 0, 0); err != nil && err != unix.EINVAL {
			return fmt.Errorf("prctl(PR_CAPBSET_DROP, %d): %w", c, err)
		}
	}
	// Root is not special any more: execve as uid 0 grants nothing.
	// SECBIT_NOROOT|SECBIT_NOROOT_LOCKED|SECBIT_NO_SETUID_FIXUP|..._LOCKED
	// (linux/securebits.h; x/sys does not name them).
	const secbits = 1<<0 | 1<<1 | 1<<2 | 1<<3
	if err := unix.Prctl(unix.PR_SET_SECUREBITS, secbits, 0, 0, 0); err != nil {
		return fmt.Errorf("prctl(PR_SET_SECUREBITS): %w", err)
	}
	if err := unix.Prctl(unix.PR_CAP_AMBIENT, unix.PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0); err != nil {
		return fmt.Errorf("prctl(PR_CAP_AMBIENT_CLEAR_ALL): %w", err)
	}
	// Every thread loses its capabilities (one stop-the-world, not one per
	// call): init keeps nothing a same-uid process could borrow.
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var data [2]unix.CapUserData // all zero: no effective, permitted or inheritable capability
	if _, _, e := syscall.AllThreadsSyscall(unix.SYS_CAPSET, uintptr(unsafe.Pointer(&hdr)), uintptr(unsafe.Pointer(&data[0])), 0); e == unix.ENOTSUP {
		// A cgo build cannot use AllThreadsSyscall: clear this thread,
		// the one the command is forked from. init's other threads keep
		// capabilities of the sandbox's user namespace only, and cannot
		// be ptraced (init is not dumpable).
		if err := unix.Capset(&hdr, &data[0]); err != nil {
			return fmt.Errorf("capset: %w", err)
		}
	} else if e != 0 {
		return fmt.Errorf("capset: %w", e)
	}
	runtime.KeepAlive(&hdr)
	runtime.KeepAlive(&data)
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return fmt.Errorf("prctl(PR_SET_NO_NEW_PRIVS): %w", err)
	}
	return nil
}

// lookPath finds the command as execvp would, in the PATH of the command's
// environment, inside the sandbox. It returns the exit status to use when
// it fails: 127 not found, 126 found but not executable.
func lookPath(name string, vars []string) (string, int, error) {
	if name == "" {
		return "", ExitNotFound, fmt.Errorf("empty command name")
	}
	if strings.Contains(name, "/") {
		if err := executable(name); err != nil {
			code := ExitCannotExec
			if errors.Is(err, unix.ENOENT) || errors.Is(err, unix.ENOTDIR) {
				code = ExitNotFound
			}
			return "", code, fmt.Errorf("%s: %w", name, err)
		}
		return name, 0, nil
	}
	pathVar, ok := env.Lookup(vars, "PATH")
	if !ok {
		pathVar = "/usr/local/bin:/usr/bin:/bin"
	}
	var denied error
	for _, dir := range filepath.SplitList(pathVar) {
		if dir == "" {
			dir = "."
		}
		p := filepath.Join(dir, name)
		err := executable(p)
		if err == nil {
			return p, 0, nil
		}
		if denied == nil && !errors.Is(err, errNoFile) {
			denied = fmt.Errorf("%s: %w", p, err)
		}
	}
	if denied != nil {
		return "", ExitCannotExec, denied
	}
	return "", ExitNotFound, fmt.Errorf("%s: command not found in PATH=%s", name, pathVar)
}

// errNoFile marks a path that does not name a file the caller can reach:
// a PATH entry that is missing or cannot be searched is skipped, as execvp
// and shells do.
var errNoFile = errors.New("no such file")

// noFileError is an errno that means errNoFile; it prints as the errno.
type noFileError struct{ errno error }

func (e noFileError) Error() string        { return e.errno.Error() }
func (e noFileError) Is(target error) bool { return target == errNoFile }
func (e noFileError) Unwrap() error        { return e.errno }

func executable(p string) error {
	var st unix.Stat_t
	if err := unix.Stat(p, &st); err != nil {
		return noFileError{err}
	}
	if st.Mode&unix.S_IFMT == unix.S_IFDIR {
		return unix.EISDIR
	}
	return unix.Access(p, unix.X_OK)
}

func unwrapPath(err error) error {
	var pe *os.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// under reports whether p is one of the dirs or inside one, on a path
// separator boundary.
func under(p string, dirs ...string) bool {
	for _, d := range dirs {
		if p == d || strings.HasPrefix(p, d+"/") {
			return true
		}
	}
	return false
}

func topDir(p string) string {
	for _, d := range []string{"/var/tmp", "/tmp", "/dev/shm"} {
		if under(p, d) {
			return d
		}
	}
	return p
}
