//go:build linux

package sandbox

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/agentbox/agentbox/env"
	"github.com/agentbox/agentbox/internal/remedy"
	"github.com/agentbox/agentbox/internal/rootdir"
	"github.com/agentbox/agentbox/internal/session"
	"github.com/agentbox/agentbox/landlock"
)

// forwarded are the signals the wrapper passes on to the command.
var forwarded = []os.Signal{syscall.SIGTERM, syscall.SIGHUP, syscall.SIGUSR1, syscall.SIGUSR2, syscall.SIGINT, syscall.SIGQUIT}

// OpenRoot resolves the session root from the --root value and the
// environment vars (AGENTBOX_ROOT, XDG_STATE_HOME, HOME), creates what is
// missing and verifies it.
func OpenRoot(flag string, vars []string) (*rootdir.Root, error) {
	uid := os.Getuid()
	in := rootInputs(vars)
	in.Flag, in.UID, in.TempDir = flag, uid, "/tmp"
	in.HomeUsable = rootdir.HomeUsable(in.Home, uid)
	c, err := rootdir.Select(in)
	if err != nil {
		return nil, err
	}
	return rootdir.Open(c, uid)
}

// Run runs cfg.Argv in a new session and returns how it ended. An error
// means agentbox itself failed (ExitCode gives its status); the command's
// own failure is a Result with its exit status.
func Run(cfg Config) (res Result, err error) {
	if len(cfg.Argv) == 0 {
		return res, errorf(ExitSetup, "no command given")
	}
	if cfg.Stdin == nil {
		cfg.Stdin = os.Stdin
	}
	if cfg.Stdout == nil {
		cfg.Stdout = os.Stdout
	}
	if cfg.Stderr == nil {
		cfg.Stderr = os.Stderr
	}
	if cfg.Messages == nil {
		cfg.Messages = os.Stderr
	}
	if sock := nestSocket(cfg.Env); sock != "" && cfg.signals == nil {
		// Inside another agentbox session: that session's init builds the
		// sandbox (nest_linux.go).
		return runNested(cfg, sock)
	}
	cfg.status = newStatus(cfg.Status)
	defer func() {
		if err != nil && res.SessionID == "" {
			// No session: the error is all there is to report.
			code := ExitCode(err)
			cfg.status.emit(Event{Event: "error", ExitStatus: &code, Error: err.Error()})
		}
	}()
	logf := func(format string, a ...any) {
		if cfg.Log != nil {
			fmt.Fprintf(cfg.Log, "agentbox: "+format+"\n", a...)
		}
	}
	if cfg.Dir == "" {
		if cfg.Dir, err = os.Getwd(); err != nil {
			return res, errorf(ExitSetup, "working directory: %w", err)
		}
	}
	uid, gid := os.Getuid(), os.Getgid()
	// Catch the forwarded signals before the session exists: one that
	// arrives while the session is being set up is delivered to the command
	// as soon as it exists, instead of killing the wrapper half-way.
	sigs := cfg.signals
	notified := make(chan struct{})
	if sigs == nil {
		// One round trip to the runtime's signal thread per signal: done
		// while the root is opened and the policy prepared, and waited for
		// before the session is created.
		c := make(chan os.Signal, 32)
		go func() {
			signal.Notify(c, forwarded...)
			close(notified)
		}()
		defer func() {
			<-notified
			signal.Stop(c)
		}()
		sigs = c
	} else {
		close(notified)
	}
	// Every directory agentbox creates gets its final mode in the mkdirat
	// itself: a umask can only remove bits, and 077 removes none of 0700.
	umask := syscall.Umask(0o077)
	defer syscall.Umask(umask)

	root, err := OpenRoot(cfg.Root, cfg.Env)
	if err != nil {
		return res, &Error{Code: ExitSetup, Err: err}
	}
	defer root.Close()
	pol, err := Prepare(cfg)
	if err != nil {
		return res, &Error{Code: ExitSetup, Err: err}
	}
	pol.Hide = append(pol.Hide, otherRoots(cfg, root.Path, pol)...)
	if len(cfg.outer) > 0 {
		// A nested session never degrades, whatever its flags or config
		// say: the degraded stage would run without the enclosing
		// sessions' Landlock layers, in their mount namespace.
		pol.AllowDegraded = false
	}
	plan, err := landlock.Check(pol.Landlock)
	if err != nil {
		return res, &Error{Code: ExitSetup, Err: err}
	}
	for _, r := range notGranted(pol.Landlock.Write, cfg.outer) {
		// Nested: the enclosing session's policy still applies.
		fmt.Fprintf(cfg.Messages, "agentbox: warning: nested: %s (from %s) is not writable in the enclosing agentbox session, so it is not writable here either\n", r.Path, r.Source)
	}
	if len(plan.Unenforced) > 0 || !plan.Enforced {
		// Landlock is never silently absent.
		fmt.Fprintf(cfg.Messages, "agentbox: warning: %s\n", plan.Summary())
	} else {
		logf("%s", plan.Summary())
	}
	if err := createGranted(pol); err != nil {
		// Not fatal: the agent then finds the path missing, as it would
		// without agentbox when it cannot create it.
		logf("%v", err)
	}
	<-notified
	sess, err := session.Create(root.FD, root.Path, uid, os.Getpid(), filepath.Base(cfg.Argv[0]))
	if err != nil {
		return res, &Error{Code: ExitSetup, Err: err}
	}
	defer sess.Close()
	res.SessionID, res.SessionPath = sess.ID, sess.Path
	if st := cfg.status; st != nil {
		st.session = sess.ID
		st.emit(Event{Event: "session", Path: sess.Path, Root: root.Path, WrapperPID: os.Getpid()})
		st.observe()(sess.Record())
		sess.OnMove = st.observe()
	}
	logf("session %s at %s (root from %s)", sess.ID, sess.Path, root.Source)
	testHook("created")

	// Abandoned sessions are reconciled while the command runs, not before:
	// nothing on the start path that can wait.
	var reconcileWG sync.WaitGroup
	startReconcile := func() {
		reconcileWG.Add(1)
		go func() {
			defer reconcileWG.Done()
			limit := cfg.ReconcileLimit
			if limit == 0 {
				limit = 8
			}
			out, err := session.Reconcile(root.FD, root.Path, uid, session.Options{Limit: limit})
			for _, o := range out {
				if o.Action == session.ActRemoved || o.Action == session.ActFailed {
					logf("reconcile %s (%s): %s %v", o.ID, o.State, o.Action, o.Err)
				}
			}
			if err != nil {
				logf("reconcile: %v", err)
			}
		}()
	}

	code, setupErr := start(cfg, pol, sess, root.FD, root.Path, uid, gid, umask, sigs, logf, startReconcile)
	var de *degradeError
	if errors.As(setupErr, &de) {
		code, setupErr = runDegraded(cfg, pol, sess, de.cause, umask, sigs, logf)
	}
	// The command's exit does not wait for other sessions' cleanup beyond a
	// moment: a reconcile cut short by our exit leaves its session in
	// cleaning, under a free lock, and the next one resumes it.
	waitAtMost(&reconcileWG, reconcileGrace)
	res.ExitCode = code
	if setupErr != nil {
		res.ExitCode = ExitCode(setupErr)
		cfg.status.emit(Event{Event: "error", ExitStatus: &res.ExitCode, Error: setupErr.Error()})
	}
	cleanup := Event{Event: "cleanup"}
	if cfg.Keep {
		if kerr := sess.Keep(); kerr != nil {
			res.CleanupErr = kerr
		} else {
			res.Kept = true
			cleanup.Result, cleanup.Path = CleanupKept, sess.Path
			fmt.Fprintf(cfg.Messages, "agentbox: kept session %s at %s (remove it with: agentbox clean %s)\n", sess.ID, sess.Path, sess.ID)
		}
	} else {
		testHookCleaning(sess)
		removeStart := time.Now()
		if rerr := sess.Remove(); rerr != nil {
			res.CleanupErr = rerr
		} else {
			cleanup.Result, cleanup.Seconds = CleanupRemoved, time.Since(removeStart).Seconds()
			logf("session %s removed in %.3fs", sess.ID, cleanup.Seconds)
		}
	}
	if res.CleanupErr != nil {
		cleanup.Result, cleanup.Error = CleanupFailed, res.CleanupErr.Error()
	}
	cfg.status.emit(cleanup)
	return res, setupErr
}

// start runs the init stage and waits for it. It returns the command's exit
// status, or an *Error when the sandbox could not be set up; the session is
// then in exited or setup_failed.
func start(cfg Config, pol Policy, sess *session.Session, rootFD int, rootPath string, uid, gid, umask int, sigs <-chan os.Signal, logf func(string, ...any), startReconcile func()) (int, error) {
	setupFailed := func(err error) (int, error) {
		sess.Move(session.SetupFailed, func(r *session.Record) { r.Error = err.Error() })
		return ExitCode(err), err
	}
	var files []*os.File
	defer func() {
		for _, f := range files {
			f.Close()
		}
	}()
	keep := func(f *os.File) *os.File { files = append(files, f); return f }
	sub := make([]*os.File, 0, len(session.Subdirs))
	for _, d := range session.Subdirs {
		fd, err := unix.Openat(sess.FD(), d, unix.O_PATH|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		if err != nil {
			return setupFailed(errorf(ExitSetup, "session directory %s: openat %s: %w", sess.Path, d, err))
		}
		sub = append(sub, keep(os.NewFile(uintptr(fd), d)))
	}
	rootFile, err := dupFile(rootFD, "root")
	if err != nil {
		return setupFailed(errorf(ExitSetup, "session root: %w", err))
	}
	keep(rootFile)
	sessFile, err := dupFile(sess.LockFD(), "session")
	if err != nil {
		return setupFailed(errorf(ExitSetup, "session directory %s: %w", sess.Path, err))
	}
	keep(sessFile)
	configR, configW, err := os.Pipe()
	if err != nil {
		return setupFailed(errorf(ExitSetup, "pipe: %w", err))
	}
	keep(configR)
	keep(configW)
	reportR, reportW, err := os.Pipe()
	if err != nil {
		return setupFailed(errorf(ExitSetup, "pipe: %w", err))
	}
	keep(reportR)
	keep(reportW)
	controlR, controlW, err := os.Pipe()
	if err != nil {
		return setupFailed(errorf(ExitSetup, "pipe: %w", err))
	}
	keep(controlR)
	keep(controlW)

	cmd := &exec.Cmd{
		Path:       "/proc/self/exe",
		Args:       []string{InitArg0},
		Env:        []string{}, // the init stage's Go runtime reads no GODEBUG or GOMAXPROCS of the caller's
		Stdin:      cfg.Stdin,
		Stdout:     cfg.Stdout,
		Stderr:     cfg.Stderr,
		ExtraFiles: []*os.File{configR, reportW, controlR, sessFile, rootFile, sub[0], sub[1], sub[2]},
		SysProcAttr: &syscall.SysProcAttr{
			Cloneflags:                 syscall.CLONE_NEWUSER | syscall.CLONE_NEWNS | syscall.CLONE_NEWPID,
			UidMappings:                []syscall.SysProcIDMap{{ContainerID: uid, HostID: uid, Size: 1}},
			GidMappings:                []syscall.SysProcIDMap{{ContainerID: gid, HostID: gid, Size: 1}},
			GidMappingsEnableSetgroups: false,
			// Without an ambient capability the execve of the init stage as
			// a non-zero uid drops every capability and the first mount
			// fails with EPERM. Init clears them all before the command.
			AmbientCaps: []uintptr{unix.CAP_SYS_ADMIN, unix.CAP_SETPCAP},
			// If the wrapper dies, the init dies, and with it (PID 1) the
			// whole namespace. Pdeathsig belongs to the forking thread.
			Pdeathsig: syscall.SIGKILL,
		},
	}

	done, err := startLocked(cmd)
	if err != nil {
		c := remedy.Diagnose(remedy.Clone, err, remedy.Probe())
		if !c.Userns {
			return setupFailed(&Error{Code: ExitSetup, Err: fmt.Errorf("cannot start the sandbox: %w\n  cause: %s\n  remedy: %s", err, c.Cause, c.Remedy)})
		}
		if pol.AllowDegraded {
			return 0, &degradeError{cause: c.Cause}
		}
		return setupFailed(&Error{Code: ExitSetup, Err: fmt.Errorf("cannot create the sandbox's namespaces: %w: %w\n  cause: %s\n  remedy: %s", err, remedy.ErrUsernsUnavailable, c.Cause, c.Remedy)})
	}
	// The child holds its copies now.
	configR.Close()
	reportW.Close()
	controlR.Close()
	for _, f := range append(sub, rootFile, sessFile) {
		f.Close()
	}
	pid := cmd.Process.Pid
	logf("init started, pid %d", pid)
	if start, _, err := session.ProcStart(pid); err == nil {
		sess.Update(func(r *session.Record) { r.InitPID, r.InitStart = pid, start })
	}

	ic := initConfig{Argv: bytesOf(cfg.Argv), Env: bytesOf(cfg.Env), Dir: []byte(cfg.Dir), UID: uid, GID: gid, Umask: umask,
		SessionID: sess.ID, RootPath: []byte(rootPath), RunUser: isDir("/run/user"), DevShm: isDir("/dev/shm"), VarTmp: isDir("/var/tmp"),
		Hide: bytesOf(entryPaths(pol.Hide)), ReadOnly: bytesOf(entryPaths(pol.ReadOnly)), Landlock: pol.Landlock, Outer: cfg.outer, Roots: cfg.roots}
	b, _ := json.Marshal(ic)
	configW.Write(b)
	configW.Close()

	// Forward signals from now on; the control pipe buffers them until the
	// command exists. Always forwarded: when the signal went to the whole
	// process group (Ctrl-C), init saw it too and drops this copy.
	defer forwardSignals(sigs, controlW)()

	var msg initMsg
	dec := json.NewDecoder(reportR)
	if err := dec.Decode(&msg); err != nil {
		msg = initMsg{Event: "error", Code: ExitSetup, Stage: "setup", Msg: "the sandbox's init stage ended before starting the command"}
	}
	var setupErr error
	if msg.Event == "started" {
		e := Event{Event: "started", Mode: "namespaces", InitPID: pid}
		if len(cfg.outer) > 0 {
			e.Mode = "nested"
		}
		if cfg.status != nil {
			if kids := childrenOf(pid); len(kids) == 1 {
				e.PID = kids[0]
			}
		}
		cfg.status.emit(e)
		sess.Move(session.Running, nil)
		testHook("running")
		logf("command started")
		startReconcile()
	} else {
		setupErr = initError(cfg, msg)
	}
	w := <-done
	code := exitStatus(w.state)
	if setupErr != nil && pol.AllowDegraded && errors.Is(setupErr, remedy.ErrUsernsUnavailable) {
		// The namespaces exist but may not mount (Ubuntu's AppArmor
		// restriction); init has exited.
		return 0, &degradeError{cause: "the new namespaces may not mount"}
	}
	if setupErr != nil {
		sess.Move(session.SetupFailed, func(r *session.Record) { r.Error = setupErr.Error() })
		return ExitCode(setupErr), setupErr
	}
	if w.err != nil && w.state == nil {
		return setupFailed(errorf(ExitSetup, "wait: %w", w.err))
	}
	sig := waitSignal(w.state)
	var last initMsg
	if dec.Decode(&last) == nil && last.Event == "signaled" {
		sig = syscall.Signal(last.Signal)
	}
	emitExited(cfg.status, sig, code)
	sess.Move(session.Exited, func(r *session.Record) { r.ExitStatus = &code })
	testHook("exited")
	logf("command exited with status %d", code)
	return code, nil
}

// initError turns the init stage's report into the error agentbox prints.
func initError(cfg Config, m initMsg) error {
	err := errors.New(m.Msg)
	switch {
	case m.Stage == "mount":
		c := remedy.Diagnose(remedy.Mount, syscall.Errno(m.Errno), remedy.Probe())
		if c.Userns {
			err = fmt.Errorf("%s: %w\n  cause: %s\n  remedy: %s", m.Msg, remedy.ErrUsernsUnavailable, c.Cause, c.Remedy)
		} else {
			err = fmt.Errorf("%s\n  cause: %s\n  remedy: %s", m.Msg, c.Cause, c.Remedy)
		}
	case m.NotFound:
		if hostPath, ok := hiddenOnHost(cfg); ok {
			err = fmt.Errorf("%s: not found inside the sandbox, but it is installed at %s on the host: /tmp, /var/tmp and /dev/shm are private inside the sandbox, so nothing under the host's is visible; install it elsewhere (for example ~/.local/bin)", cfg.Argv[0], hostPath)
		}
	}
	code := m.Code
	if code == 0 {
		code = ExitSetup
	}
	return &Error{Code: code, Err: err}
}

// hiddenOnHost reports where the host would have found the command when
// that place is hidden inside the sandbox.
func hiddenOnHost(cfg Config) (string, bool) {
	name := cfg.Argv[0]
	p := name
	if strings.Contains(name, "/") {
		if !filepath.IsAbs(name) {
			p = filepath.Join(cfg.Dir, name)
		}
		var st unix.Stat_t
		if unix.Stat(p, &st) != nil {
			return "", false
		}
	} else {
		pathVar, _ := env.Lookup(cfg.Env, "PATH")
		p = ""
		for _, dir := range filepath.SplitList(pathVar) {
			if !filepath.IsAbs(dir) {
				dir = filepath.Join(cfg.Dir, dir)
			}
			c := filepath.Join(dir, name)
			if unix.Access(c, unix.X_OK) == nil {
				p = c
				break
			}
		}
		if p == "" {
			return "", false
		}
	}
	if under(p, "/tmp", "/var/tmp", "/dev/shm") {
		return p, true
	}
	return "", false
}

func exitStatus(st *os.ProcessState) int {
	if st == nil {
		return ExitSetup
	}
	ws, ok := st.Sys().(syscall.WaitStatus)
	if !ok {
		return st.ExitCode()
	}
	switch {
	case ws.Exited():
		return ws.ExitStatus()
	case ws.Signaled():
		return 128 + int(ws.Signal())
	}
	return ExitSetup
}

// waited is how a started child ended.
type waited struct {
	state *os.ProcessState
	err   error
}

// startLocked starts cmd from a goroutine locked to its OS thread and
// never unlocked: Pdeathsig belongs to the forking thread, which must outlive
// the child (go.dev/issue/27505). The channel yields the child's end.
func startLocked(cmd *exec.Cmd) (<-chan waited, error) {
	startErr, done := make(chan error, 1), make(chan waited, 1)
	go func() {
		runtime.LockOSThread()
		if err := cmd.Start(); err != nil {
			startErr <- err
			return
		}
		startErr <- nil
		err := cmd.Wait()
		done <- waited{cmd.ProcessState, err}
	}()
	return done, <-startErr
}

// degradeError asks Run to go on in degraded mode (--allow-degraded): the
// namespaces could not be made, for cause.
type degradeError struct{ cause string }

func (e *degradeError) Error() string { return "user namespaces unavailable: " + e.cause }

// reconcileGrace is how long a finished run waits for its background
// reconcile.
const reconcileGrace = 100 * time.Millisecond

func waitAtMost(wg *sync.WaitGroup, d time.Duration) {
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-done:
	case <-t.C:
	}
}

func entryPaths(es []Entry) []string {
	out := make([]string, len(es))
	for i, e := range es {
		out[i] = e.Path
	}
	return out
}

func bytesOf(s []string) [][]byte {
	b := make([][]byte, len(s))
	for i := range s {
		b[i] = []byte(s[i])
	}
	return b
}

func dupFile(fd int, name string) (*os.File, error) {
	nfd, err := unix.FcntlInt(uintptr(fd), unix.F_DUPFD_CLOEXEC, 3)
	if err != nil {
		return nil, fmt.Errorf("fcntl(F_DUPFD_CLOEXEC): %w", err)
	}
	return os.NewFile(uintptr(nfd), name), nil
}

// waitSignal is the signal that ended a process, or 0.
func waitSignal(ps *os.ProcessState) syscall.Signal {
	if ps != nil {
		if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			return ws.Signal()
		}
	}
	return 0
}

// emitExited reports how the command ended.
func emitExited(st *statusWriter, sig syscall.Signal, code int) {
	e := Event{Event: "exited", ExitStatus: &code}
	if sig != 0 {
		e.Signal = unix.SignalName(sig)
	}
	st.emit(e)
}

// rootInputs reads the variables that choose a session root from vars.
func rootInputs(vars []string) rootdir.Inputs {
	var in rootdir.Inputs
	in.EnvRoot, _ = env.Lookup(vars, "AGENTBOX_ROOT")
	in.XDGStateHome, _ = env.Lookup(vars, "XDG_STATE_HOME")
	in.Home, _ = env.Lookup(vars, "HOME")
	return in
}

// otherRoots are the session roots this run does not use but other runs
// of the same user may (AGENTBOX_ROOT, $XDG_STATE_HOME/agentbox,
// ~/.local/state/agentbox), hidden so that a session with its own --root
// cannot read the others' private directories (same uid, so their 0700
// modes do not stop it). A root under the private /tmp is covered anyway;
// one that holds the working directory or this session's root is left.
func otherRoots(cfg Config, inUse string, pol Policy) []Entry {
	var out []Entry
	for _, c := range rootdir.Defaults(rootInputs(cfg.Env)) {
		// within(inUse, c) also covers c == inUse and c == "/".
		if within(inUse, c) || within(c, inUse) || within(cfg.Dir, c) || under(c, "/tmp", "/var/tmp", "/dev/shm", "/proc") {
			continue
		}
		if fi, err := os.Lstat(c); err != nil || !fi.IsDir() {
			continue
		}
		hidden := func(e Entry) bool { return e.Path == c }
		if !slices.ContainsFunc(pol.Hide, hidden) && !slices.ContainsFunc(out, hidden) {
			out = append(out, Entry{Path: c, Source: "another session root"})
		}
	}
	return out
}

// forwardSignals writes one byte per signal received on sigs to w (init's
// control pipe, or the nest socket) until the returned stop is called.
func forwardSignals(sigs <-chan os.Signal, w io.Writer) (stop func()) {
	done := make(chan struct{})
	go func() {
		for {
			select {
			case s := <-sigs:
				w.Write([]byte{byte(s.(syscall.Signal))})
			case <-done:
				return
			}
		}
	}()
	return func() { close(done) }
}
