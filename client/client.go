//go:build linux

package client

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/agentbox/agentbox/sandbox"
)

// Event is one lifecycle event of a sandbox, as agentbox --status-fd writes
// it (see sandbox.Event for the list).
type Event = sandbox.Event

// Config is one sandboxed command.
type Config struct {
	// Binary is the agentbox executable; "" looks up "agentbox" in PATH.
	Binary string
	// Argv is the command and its arguments; Argv[0] is looked up in PATH
	// inside the sandbox.
	Argv []string
	// Dir is the working directory (the project); "" is the caller's.
	Dir string
	// Env is the command's environment; nil is the caller's. agentbox sets
	// TMPDIR, TMP, TEMP, TEMPDIR, XDG_RUNTIME_DIR and AGENTBOX_SESSION.
	Env []string
	// Profile, Landlock, RW, RO, Hide and Show are agentbox's --profile,
	// --landlock, --rw, --ro, --hide and --show.
	Profile, Landlock  string
	RW, RO, Hide, Show []string
	// Root is --root, the session root; "" is agentbox's default.
	Root string
	// Keep keeps the session directory after the command ends (--keep).
	Keep bool
	// Stdin, Stdout and Stderr are the command's; nil is /dev/null. An
	// *os.File is handed over as it is; anything else goes through a pipe.
	// Stderr also receives agentbox's own messages.
	Stdin          io.Reader
	Stdout, Stderr io.Writer
	// Grace is how long a cancelled sandbox has between SIGTERM and
	// SIGKILL; 0 means 5 seconds.
	Grace time.Duration
	// OnEvent, if set, is called with every event, in order, from one
	// goroutine; it must not block for long.
	OnEvent func(Event)
}

// Result is how a sandbox ended.
type Result struct {
	SessionID string
	// ExitStatus is agentbox's exit status: the command's own, 128+N if a
	// signal N ended it, 125–127 if agentbox could not run it.
	ExitStatus int
	// Signal names the signal that ended the command ("SIGTERM"), or "".
	Signal string
	// Cleanup is "removed", "kept" or "failed"; "" if agentbox ended before
	// reporting it (it was killed).
	Cleanup string
	// CleanupError says why the cleanup failed.
	CleanupError string
	// SetupError is agentbox's message when it could not run the command.
	SetupError string
	// Canceled is true when the context ended the sandbox.
	Canceled bool
}

// Sandbox is a started command. Its methods are safe for concurrent use.
type Sandbox struct {
	cmd     *exec.Cmd
	cfg     Config
	ready   chan struct{} // closed at the session event, or at EOF
	started chan struct{} // closed at the started event, or at EOF
	done    chan struct{} // closed when Wait's result is known

	mu       sync.Mutex
	events   []Event
	id, path string
	root     string
	initPID  int
	initFD   int // pidfd of the sandbox's PID 1, -1 until started
	res      Result
	err      error
	canceled bool
}

// Error is agentbox failing before the command ran: a bad flag, an unusable
// session root, an unavailable sandbox, a command not found.
type Error struct {
	ExitStatus int
	Message    string
}

func (e *Error) Error() string {
	return fmt.Sprintf("agentbox: %s (exit status %d)", e.Message, e.ExitStatus)
}

// Args returns agentbox's command line for cfg, without the binary: the
// flags, --status-fd fd, then -- and the command.
func Args(cfg Config, fd int) []string {
	args := []string{"--status-fd", fmt.Sprint(fd)}
	add := func(flag, v string) {
		if v != "" {
			args = append(args, flag, v)
		}
	}
	add("--root", cfg.Root)
	add("--profile", cfg.Profile)
	add("--landlock", cfg.Landlock)
	for _, f := range []struct {
		flag string
		vs   []string
	}{{"--rw", cfg.RW}, {"--ro", cfg.RO}, {"--hide", cfg.Hide}, {"--show", cfg.Show}} {
		for _, v := range f.vs {
			args = append(args, f.flag, v)
		}
	}
	if cfg.Keep {
		args = append(args, "--keep")
	}
	return append(append(args, "--"), cfg.Argv...)
}

// Start starts cfg.Argv in a new sandbox and returns once its session
// exists, so that ID and Path are known. It returns an *Error when
// agentbox could not create the session, and then has waited for it.
func Start(ctx context.Context, cfg Config) (*Sandbox, error) {
	if len(cfg.Argv) == 0 {
		return nil, errors.New("agentbox client: no command (Config.Argv is empty)")
	}
	bin := cfg.Binary
	if bin == "" {
		var err error
		if bin, err = exec.LookPath("agentbox"); err != nil {
			return nil, fmt.Errorf("agentbox client: %w; install agentbox or set Config.Binary", err)
		}
	}
	if cfg.Grace <= 0 {
		cfg.Grace = 5 * time.Second
	}
	r, w, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("agentbox client: status pipe: %w", err)
	}
	cmd := exec.Command(bin, Args(cfg, 3)...)
	cmd.Dir, cmd.Env = cfg.Dir, cfg.Env
	cmd.Stdin, cmd.Stdout, cmd.Stderr = cfg.Stdin, cfg.Stdout, cfg.Stderr
	cmd.ExtraFiles = []*os.File{w}
	// If the orchestrator dies, so does the sandbox, even a command that
	// ignores SIGTERM (the session directory is removed by the next start
	// or by agentbox clean). Pdeathsig follows the thread that forked, so
	// the fork runs on a locked thread that lives until the wrapper ends.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	startErr, waitErr := make(chan error, 1), make(chan error, 1)
	go func() {
		runtime.LockOSThread() // never unlocked: retired after the wrapper has ended
		if err := cmd.Start(); err != nil {
			startErr <- err
			return
		}
		startErr <- nil
		waitErr <- cmd.Wait()
	}()
	if err := <-startErr; err != nil {
		r.Close()
		w.Close()
		return nil, fmt.Errorf("agentbox client: %w", err)
	}
	w.Close()
	s := &Sandbox{cmd: cmd, cfg: cfg, ready: make(chan struct{}), started: make(chan struct{}), done: make(chan struct{}), root: cfg.Root, initFD: -1}
	eventsDone := make(chan struct{})
	go func() {
		defer close(eventsDone)
		s.read(r)
	}()
	go func() {
		err := <-waitErr
		<-eventsDone
		s.finish(err)
	}()
	go s.watch(ctx)
	<-s.ready
	s.mu.Lock()
	id := s.id
	s.mu.Unlock()
	if id == "" {
		<-s.done
		if s.err != nil {
			return nil, s.err
		}
		return nil, &Error{ExitStatus: s.res.ExitStatus, Message: "agentbox ended without creating a session"}
	}
	return s, nil
}

// read decodes the status stream until EOF.
func (s *Sandbox) read(r *os.File) {
	defer r.Close()
	readyOnce := sync.OnceFunc(func() { close(s.ready) })
	defer readyOnce()
	startedOnce := sync.OnceFunc(func() { close(s.started) })
	defer startedOnce()
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64*1024), 1<<20)
	for sc.Scan() {
		var e Event
		if json.Unmarshal(sc.Bytes(), &e) != nil {
			continue // not ours to judge; a newer agentbox may say more
		}
		s.mu.Lock()
		s.events = append(s.events, e)
		switch e.Event {
		case "session":
			s.id, s.path, s.root = e.Session, e.Path, e.Root
			s.res.SessionID = e.Session
		case "started":
			s.initPID = e.InitPID
			// A pidfd now, while init is alive (it has just reported): a
			// bare pid could be reused by the time it is signalled.
			if fd, err := unix.PidfdOpen(e.InitPID, 0); err == nil && s.initFD < 0 {
				s.initFD = fd
			}
		case "exited":
			if e.ExitStatus != nil {
				s.res.ExitStatus = *e.ExitStatus
			}
			s.res.Signal = e.Signal
		case "error":
			s.res.SetupError = e.Error
		case "cleanup":
			s.res.Cleanup, s.res.CleanupError = e.Result, e.Error
		}
		s.mu.Unlock()
		if s.cfg.OnEvent != nil {
			s.cfg.OnEvent(e)
		}
		switch e.Event {
		case "session":
			readyOnce()
		case "error":
			readyOnce()
			startedOnce()
		case "started":
			startedOnce()
		}
	}
}

// finish records how agentbox ended.
func (s *Sandbox) finish(waitErr error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	defer close(s.done)
	if s.initFD >= 0 {
		unix.Close(s.initFD)
		s.initFD = -1
	}
	s.res.Canceled = s.canceled
	st := s.cmd.ProcessState
	if st == nil {
		s.err = fmt.Errorf("agentbox client: %w", waitErr)
		return
	}
	s.res.ExitStatus = st.ExitCode()
	if ws, ok := st.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		// The wrapper itself was killed: no cleanup was reported.
		s.res.ExitStatus = 128 + int(ws.Signal())
	}
	if s.res.SetupError != "" && s.id == "" {
		s.err = &Error{ExitStatus: s.res.ExitStatus, Message: s.res.SetupError}
	}
}

// watch ends the sandbox when ctx is done: SIGTERM to the command (the
// wrapper forwards it), then SIGKILL to the sandbox's PID 1 after Grace.
func (s *Sandbox) watch(ctx context.Context) {
	select {
	case <-s.done:
		return
	case <-ctx.Done():
	}
	s.mu.Lock()
	s.canceled = true
	s.mu.Unlock()
	s.cmd.Process.Signal(syscall.SIGTERM)
	t := time.NewTimer(s.cfg.Grace)
	defer t.Stop()
	select {
	case <-s.done:
		return
	case <-t.C:
	}
	s.mu.Lock()
	var err error = os.ErrProcessDone
	if s.initFD >= 0 {
		// PID 1 of the sandbox: the kernel kills everything in it, and the
		// wrapper, which survives, removes the session as usual.
		err = unix.PidfdSendSignal(s.initFD, unix.SIGKILL, nil, 0)
	}
	s.mu.Unlock()
	if err == nil {
		return
	}
	// Not started yet, or not ours to signal (a nested sandbox is in a
	// Landlock domain of its own): kill the wrapper. A nested session's
	// enclosing init then kills the command and removes the session; a
	// top-level one dies with its wrapper (Pdeathsig) and is removed by
	// the next start or by agentbox clean.
	s.cmd.Process.Kill()
}

// ID is the session id (AGENTBOX_SESSION inside).
func (s *Sandbox) ID() string { s.mu.Lock(); defer s.mu.Unlock(); return s.id }

// Path is the session directory on the host.
func (s *Sandbox) Path() string { s.mu.Lock(); defer s.mu.Unlock(); return s.path }

// InitPID is the host pid of the sandbox's PID 1, 0 until the command has
// started (or in degraded mode).
func (s *Sandbox) InitPID() int { s.mu.Lock(); defer s.mu.Unlock(); return s.initPID }

// Events returns the events received so far, in order.
func (s *Sandbox) Events() []Event {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Event(nil), s.events...)
}

// Signal sends sig to the command: agentbox forwards every signal it gets,
// and holds one sent before the command exists until it does.
func (s *Sandbox) Signal(sig os.Signal) error {
	select {
	case <-s.done:
		return os.ErrProcessDone
	default:
	}
	return s.cmd.Process.Signal(sig)
}

// Started is closed once the command runs (InitPID is then known), or
// when agentbox ended without running it.
func (s *Sandbox) Started() <-chan struct{} { return s.started }

// Done is closed when the sandbox has ended and Wait returns at once.
func (s *Sandbox) Done() <-chan struct{} { return s.done }

// Wait waits for the command to end and the session to be cleaned up, and
// returns how it went. The error is non-nil only when agentbox could not
// be run or waited for; a command that failed is a Result with its
// ExitStatus.
func (s *Sandbox) Wait() (Result, error) {
	<-s.done
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.res, s.err
}
