//go:build linux

package sandbox

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/agentbox/agentbox/env"
	"github.com/agentbox/agentbox/internal/seccomp"
	"github.com/agentbox/agentbox/internal/session"
	"github.com/agentbox/agentbox/landlock"
)

// Degraded mode (--allow-degraded): when this host does not let agentbox
// create its namespaces, the command runs without them, with Landlock
// alone. Its temp variables and runtime directory name the session's own
// directories; Landlock denies writing the host's /tmp, /var/tmp and
// /dev/shm, so a program that hard-codes /tmp fails loudly instead of
// colliding; the session's lifecycle, cleanup and reconcile are as usual.

// DegradedArg0 is the argv[0] of the degraded stage: this binary, re-executed
// without namespaces, that restricts itself and execs the command.
const DegradedArg0 = "agentbox:degraded"

// IsDegraded reports whether this process is the degraded stage.
func IsDegraded() bool { return len(os.Args) > 0 && os.Args[0] == DegradedArg0 }

// degradedConfig is what the wrapper sends the degraded stage on fd 3.
type degradedConfig struct {
	Argv     [][]byte        `json:"argv"`
	Env      [][]byte        `json:"env"`
	Dir      []byte          `json:"dir"`
	Umask    int             `json:"umask"`
	Session  string          `json:"session"`
	TmpDir   []byte          `json:"tmp_dir"`
	RunDir   []byte          `json:"run_dir"`
	Landlock landlock.Policy `json:"landlock"`
}

// DegradedGuarantees is what agentbox prints when it runs degraded.
const DegradedGuarantees = `agentbox: degraded mode: user namespaces are unavailable (%s); running with Landlock alone:
  holds:     TMPDIR, TMP, TEMP, TEMPDIR and XDG_RUNTIME_DIR name private per-session directories (%s); writes outside the project and granted paths are denied (%s); the session is cleaned up as usual
  does not:  /tmp is not private: programs that ignore TMPDIR cannot write there (they fail instead of colliding); credentials (~/.ssh, ...) are not hidden; processes are not isolated in a PID namespace (leftovers are killed when the command exits); chmod and utimes outside are not prevented
`

// degradedPolicy turns the sandbox policy into the one for degraded mode:
// the private directories are the session's own on the host, and the
// host's shared temp directories are not writable.
func degradedPolicy(p landlock.Policy, runtimeDir, tmp, varTmp, run string) landlock.Policy {
	out := p
	out.Write = nil
	for _, r := range p.Write {
		switch r.Path {
		case "/tmp", "/var/tmp", "/dev/shm", runtimeDir:
			continue
		}
		out.Write = append(out.Write, r)
	}
	for _, d := range []string{tmp, varTmp, run} {
		out.Write = append(out.Write, landlock.Rule{Path: d, Source: "session (degraded: on the host)"})
	}
	return out
}

// DegradedMain is the degraded stage: it drops privileges, applies
// Landlock and the TIOCSTI guard to itself, and execs the command. A
// failure before the exec is reported on fd 4; a successful exec closes
// it (close-on-exec).
func DegradedMain() int {
	runtime.LockOSThread()
	report := os.NewFile(fdReport, "report")
	syscall.CloseOnExec(fdReport)
	fail := func(code int, err error) int {
		json.NewEncoder(report).Encode(initMsg{Event: "error", Code: code, Stage: "degraded", Msg: err.Error(), NotFound: code == ExitNotFound})
		return code
	}
	var cfg degradedConfig
	b, err := io.ReadAll(os.NewFile(fdConfig, "config"))
	if err == nil {
		err = json.Unmarshal(b, &cfg)
	}
	if err != nil || len(cfg.Argv) == 0 {
		return fail(ExitSetup, fmt.Errorf("degraded stage: config: %v", err))
	}
	argv := strs(cfg.Argv)
	if err := unix.Chdir(string(cfg.Dir)); err != nil {
		return fail(ExitSetup, fmt.Errorf("working directory %s: %w", cfg.Dir, err))
	}
	// Without a user namespace, only root has capabilities to drop (and
	// the CAP_SETPCAP to drop them); anyone else gets no_new_privs.
	if os.Geteuid() == 0 {
		if err := dropPrivileges(); err != nil {
			return fail(ExitSetup, err)
		}
	} else if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return fail(ExitSetup, fmt.Errorf("prctl(PR_SET_NO_NEW_PRIVS): %w", err))
	}
	if _, err := landlock.Apply(cfg.Landlock); err != nil {
		return fail(ExitSetup, err)
	}
	if err := seccomp.InstallTTYGuard(); err != nil {
		return fail(ExitSetup, err)
	}
	if err := unix.CloseRange(3, ^uint(0), unix.CLOSE_RANGE_CLOEXEC); err != nil {
		return fail(ExitSetup, fmt.Errorf("close_range: %w", err))
	}
	vars := env.Build(strs(cfg.Env), env.Session{ID: cfg.Session, RuntimeDir: string(cfg.RunDir)})
	for i, kv := range vars {
		for _, v := range env.TempVars {
			if strings.HasPrefix(kv, v+"=") {
				vars[i] = v + "=" + string(cfg.TmpDir)
			}
		}
	}
	path, code, err := lookPath(argv[0], vars)
	if err != nil {
		return fail(code, err)
	}
	syscall.Umask(cfg.Umask)
	err = syscall.Exec(path, argv, vars)
	code = ExitCannotExec
	if errors.Is(err, syscall.ENOENT) {
		code = ExitNotFound
	}
	return fail(code, fmt.Errorf("%s: %w", argv[0], err))
}

// runDegraded runs the command of a session without namespaces. The
// session is in created; it ends in exited or setup_failed.
func runDegraded(cfg Config, pol Policy, sess *session.Session, cause string, umask int, sigs <-chan os.Signal, logf func(string, ...any)) (int, error) {
	setupFailed := func(err error) (int, error) {
		sess.Move(session.SetupFailed, func(r *session.Record) { r.Error = err.Error() })
		return ExitCode(err), err
	}
	tmp, varTmp, run := filepath.Join(sess.Path, session.TmpDir), filepath.Join(sess.Path, session.VarTmpDir), filepath.Join(sess.Path, session.RunDir)
	lp := degradedPolicy(pol.Landlock, runtimeDirInside(os.Getuid()), tmp, varTmp, run)
	plan, err := landlock.Check(lp)
	if err != nil {
		return setupFailed(&Error{Code: ExitSetup, Err: fmt.Errorf("degraded mode needs Landlock to keep the host's /tmp unwritten: %w", err)})
	}
	if !plan.Enforced {
		return setupFailed(&Error{Code: ExitSetup, Err: errors.New("degraded mode needs Landlock to keep the host's /tmp unwritten, and --landlock=off (or an unavailable Landlock) leaves nothing enforced; drop --landlock=off, or run where user namespaces are available")})
	}
	fmt.Fprintf(cfg.Messages, DegradedGuarantees, cause, tmp, plan.Summary())

	// Orphans of the command are re-parented to us, so that none outlives
	// the session: there is no PID namespace to end them.
	if err := unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0); err != nil {
		return setupFailed(errorf(ExitSetup, "prctl(PR_SET_CHILD_SUBREAPER): %w", err))
	}
	configR, configW, err := os.Pipe()
	if err != nil {
		return setupFailed(errorf(ExitSetup, "pipe: %w", err))
	}
	defer configW.Close()
	reportR, reportW, err := os.Pipe()
	if err != nil {
		configR.Close()
		return setupFailed(errorf(ExitSetup, "pipe: %w", err))
	}
	defer reportR.Close()
	cmd := &exec.Cmd{
		Path: "/proc/self/exe", Args: []string{DegradedArg0}, Env: []string{},
		Stdin: cfg.Stdin, Stdout: cfg.Stdout, Stderr: cfg.Stderr,
		ExtraFiles:  []*os.File{configR, reportW},
		SysProcAttr: &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL},
	}
	done, err := startLocked(cmd)
	configR.Close()
	reportW.Close()
	if err != nil {
		return setupFailed(errorf(ExitSetup, "start the degraded stage: %w", err))
	}
	pid := cmd.Process.Pid
	b, _ := json.Marshal(degradedConfig{Argv: bytesOf(cfg.Argv), Env: bytesOf(cfg.Env), Dir: []byte(cfg.Dir), Umask: umask,
		Session: sess.ID, TmpDir: []byte(tmp), RunDir: []byte(run), Landlock: lp})
	configW.Write(b)
	configW.Close()

	stopFwd := make(chan struct{})
	defer close(stopFwd)
	go func() {
		for {
			select {
			case s := <-sigs:
				sig := s.(syscall.Signal)
				// No init to drop a twin here: a signal the terminal sent
				// to the process group reached the command already.
				if (sig == syscall.SIGINT || sig == syscall.SIGQUIT) && fromTerminal() {
					continue
				}
				syscall.Kill(pid, sig)
			case <-stopFwd:
				return
			}
		}
	}()
	var msg initMsg
	var setupErr error
	if err := json.NewDecoder(reportR).Decode(&msg); err == nil {
		setupErr = initError(cfg, msg)
	} else {
		cfg.status.emit(Event{Event: "started", Mode: "degraded", PID: pid})
		sess.Move(session.Running, nil) // EOF: the exec succeeded
		logf("command started (degraded)")
	}
	w := <-done
	killLeftovers()
	if setupErr != nil {
		return setupFailed(setupErr)
	}
	code := exitStatus(w.state)
	emitExited(cfg.status, waitSignal(w.state), code)
	sess.Move(session.Exited, func(r *session.Record) { r.ExitStatus = &code })
	return code, nil
}

// killLeftovers kills and reaps every process re-parented to us (we are a
// child subreaper) until none is left.
func killLeftovers() {
	self := os.Getpid()
	for round := 0; round < 100; round++ {
		kids := childrenOf(self)
		if len(kids) == 0 {
			return
		}
		for _, k := range kids {
			syscall.Kill(k, syscall.SIGKILL)
		}
		for {
			var ws syscall.WaitStatus
			if pid, err := syscall.Wait4(-1, &ws, syscall.WNOHANG, nil); pid <= 0 || err != nil {
				break
			}
		}
	}
}

// childrenOf lists the pids whose parent is pid, from /proc/PID/task/*/children.
func childrenOf(pid int) []int {
	tasks, _ := os.ReadDir("/proc/" + strconv.Itoa(pid) + "/task")
	var out []int
	for _, t := range tasks {
		b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/task/" + t.Name() + "/children")
		if err != nil {
			continue
		}
		for _, f := range strings.Fields(string(b)) {
			if n, err := strconv.Atoi(f); err == nil {
				out = append(out, n)
			}
		}
	}
	return out
}

// fromTerminal reports whether a SIGINT or SIGQUIT most likely came from
// the controlling terminal: stdin is a terminal whose foreground process
// group is ours.
func fromTerminal() bool {
	fg, err := unix.IoctlGetInt(0, unix.TIOCGPGRP)
	return err == nil && fg == unix.Getpgrp()
}
