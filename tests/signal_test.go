//go:build linux

package tests

import (
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// trapScript logs each of HUP, USR1, USR2, INT and QUIT as one line in $LOG
// (in the project dir, not in the private /tmp), logs TERM and exits 42, and
// signals readiness by creating $READY once every trap is set.
const trapScript = `
trap 'echo HUP >> "$LOG"' HUP
trap 'echo USR1 >> "$LOG"' USR1
trap 'echo USR2 >> "$LOG"' USR2
trap 'echo INT >> "$LOG"' INT
trap 'echo QUIT >> "$LOG"' QUIT
trap 'echo TERM >> "$LOG"; exit 42' TERM
: > "$LOG"
touch "$READY"
while :; do sleep 0.02; done
`

// logLines returns the lines of the trap log so far.
func logLines(t *testing.T, path string) []string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	return lines(string(b))
}

// sendAndWait sends sig to the agentbox process and waits until the trap
// log has n lines. Unless last, agentbox must not end meanwhile.
func sendAndWait(t *testing.T, p *proc, sig syscall.Signal, log string, n int, last bool) {
	t.Helper()
	if err := p.cmd.Process.Signal(sig); err != nil {
		t.Fatalf("kill(%d, %v): %v", p.cmd.Process.Pid, sig, err)
	}
	waitFor(t, sig.String()+" in the command's trap log", 10*time.Second, func() bool {
		if !last && p.exited() {
			t.Fatalf("agentbox ended after %v: %v (log %q)", sig, p.res, logLines(t, log))
		}
		return len(logLines(t, log)) >= n
	})
}

// trapCommands are the two commands the signal tests run: a shell with
// traps, as the brief's users write them, and the sigtrap helper, which
// takes each signal the moment it arrives (a shell runs its traps only
// between commands, so two deliveries of one signal close together can
// show as one line).
func trapCommands() []struct {
	name string
	env  []string
	argv []string
} {
	return []struct {
		name string
		env  []string
		argv []string
	}{
		{"sh trap", nil, []string{"sh", "-c", trapScript}},
		{"sigtrap helper", []string{helperEnv + "=sigtrap"}, []string{helperBin}},
	}
}

// TestSignalsForwarded sends HUP, USR1, USR2, INT, QUIT and TERM to the
// agentbox process (stdin is not a terminal): the command receives each
// exactly once, in order, and agentbox exits with the status the TERM trap
// chose.
func TestSignalsForwarded(t *testing.T) {
	t.Parallel()
	a, _ := users(t)
	for _, tc := range trapCommands() {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			p := a.project(t)
			log, ready := filepath.Join(p, "log"), filepath.Join(p, "ready")
			env := append([]string{"LOG=" + log, "READY=" + ready}, tc.env...)
			pr := start(t, a.agentbox(env, append([]string{"--root", filepath.Join(p, "root"), "--"}, tc.argv...)...))
			waitReady(t, pr, ready)

			sigs := []syscall.Signal{syscall.SIGHUP, syscall.SIGUSR1, syscall.SIGUSR2, syscall.SIGINT, syscall.SIGQUIT, syscall.SIGTERM}
			for i, sig := range sigs {
				sendAndWait(t, pr, sig, log, i+1, i == len(sigs)-1)
			}
			r := pr.wait()
			wantCode(t, "agentbox after the command's TERM trap exited 42", r, 42)
			want := []string{"HUP", "USR1", "USR2", "INT", "QUIT", "TERM"}
			if got := logLines(t, log); !slices.Equal(got, want) {
				t.Errorf("signals the command received: %q, want each once: %q", got, want)
			}
			if len(r.stdout) != 0 || len(r.stderr) != 0 {
				t.Errorf("agentbox printed: %v; want nothing", r)
			}
		})
	}
}

// openPty returns a new pseudo-terminal's master and slave.
func openPty(t *testing.T) (master, slave *os.File) {
	t.Helper()
	m, err := os.OpenFile("/dev/ptmx", os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		t.Fatalf("open /dev/ptmx: %v", err)
	}
	t.Cleanup(func() { m.Close() })
	if err := unix.IoctlSetPointerInt(int(m.Fd()), unix.TIOCSPTLCK, 0); err != nil {
		t.Fatalf("ioctl(TIOCSPTLCK): %v", err)
	}
	fd, _, errno := unix.Syscall(unix.SYS_IOCTL, m.Fd(), unix.TIOCGPTPEER, uintptr(unix.O_RDWR|unix.O_NOCTTY|unix.O_CLOEXEC))
	if errno != 0 {
		t.Fatalf("ioctl(TIOCGPTPEER): %v", errno)
	}
	s := os.NewFile(fd, "pty slave")
	t.Cleanup(func() { s.Close() })
	return m, s
}

// TestTerminalSignalsDeliveredOnce runs agentbox as the foreground process
// group of a terminal, as an interactive shell would, and types ^C and ^\:
// the terminal delivers SIGINT and SIGQUIT to the command itself, so
// agentbox must not forward them again. TERM sent to agentbox is still
// forwarded. The command is the sigtrap helper: a shell's traps would merge
// the two deliveries a forwarding agentbox would cause.
func TestTerminalSignalsDeliveredOnce(t *testing.T) {
	t.Parallel()
	a, _ := users(t)
	p := a.project(t)
	log, ready := filepath.Join(p, "log"), filepath.Join(p, "ready")
	master, slave := openPty(t)
	cmd := a.agentbox([]string{"LOG=" + log, "READY=" + ready, helperEnv + "=sigtrap"}, "--root", filepath.Join(p, "root"), "--", helperBin)
	cmd.Stdin = slave
	// A new session whose controlling terminal is the pty (fd 0): its
	// process group is the terminal's foreground group.
	cmd.SysProcAttr.Setsid = true
	cmd.SysProcAttr.Setctty = true
	cmd.SysProcAttr.Ctty = 0
	pr := start(t, cmd)
	waitReady(t, pr, ready)

	type key struct {
		name string
		b    byte
	}
	for i, k := range []key{{"INT", 0x03}, {"QUIT", 0x1c}} {
		if _, err := master.Write([]byte{k.b}); err != nil {
			t.Fatalf("type ^%c: %v", k.b+'@', err)
		}
		waitFor(t, k.name+" in the trap log", 10*time.Second, func() bool {
			if pr.exited() {
				t.Fatalf("agentbox ended after ^%c: %v", k.b+'@', pr.res)
			}
			return len(logLines(t, log)) >= i+1
		})
	}
	sendAndWait(t, pr, syscall.SIGTERM, log, 3, true)
	r := pr.wait()
	wantCode(t, "agentbox after the command's TERM trap exited 42", r, 42)
	want := []string{"INT", "QUIT", "TERM"}
	if got := logLines(t, log); !slices.Equal(got, want) {
		t.Errorf("signals the command received: %q, want each once: %q", got, want)
	}
	if len(r.stdout) != 0 || len(r.stderr) != 0 {
		t.Errorf("agentbox printed: %v; want nothing", r)
	}
}

// procAlive reports whether pid is the process that started at start (field
// 22 of /proc/PID/stat) and is not a zombie.
func procAlive(t *testing.T, pid int, start uint64) bool {
	t.Helper()
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	s := string(b)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	if len(f) < 20 {
		t.Fatalf("/proc/%d/stat: %q", pid, s)
	}
	st, _ := strconv.ParseUint(f[19], 10, 64)
	return st == start && f[0] != "Z" && f[0] != "X"
}

// TestWrapperKilled SIGKILLs the agentbox process while the command has a
// background child, a setsid grandchild, an orphan and a child that ignores
// the catchable signals: every process of the sandbox dies within a bounded
// time, the session directory stays with its state, `agentbox ps` shows it
// abandoned, and either `agentbox clean` or the next start removes it.
func TestWrapperKilled(t *testing.T) {
	t.Parallel()
	a, _ := users(t)
	for _, variant := range []string{"clean", "next start"} {
		t.Run(variant, func(t *testing.T) {
			t.Parallel()
			p := a.project(t)
			root := filepath.Join(p, "root")
			ready := filepath.Join(p, "ready")
			marker := "ABTEST_MARK=" + token(t)
			pr := start(t, a.agentbox([]string{marker, "READY=" + ready}, "--root", root, "--", "sh", "-c", `
sleep 1000 &
setsid sleep 1000 &
sh -c 'sleep 1000 &'
sh -c 'trap "" HUP INT QUIT TERM USR1 USR2; exec sleep 1000' &
touch "$READY"
wait
`))
			waitReady(t, pr, ready)
			wrapper := pr.cmd.Process.Pid
			// sh, and four sleeps.
			var pids []int
			waitFor(t, "the command's five processes", 10*time.Second, func() bool {
				pids = hostPIDsWithEnv(t, marker, wrapper)
				return len(pids) >= 5
			})

			ids := sessionIDs(t, root)
			if len(ids) != 1 {
				t.Fatalf("session root holds %q, want one session", ids)
			}
			id := ids[0]
			sess := filepath.Join(root, id)
			// The wrapper records running a moment after the command
			// starts.
			var rec stateRecord
			waitFor(t, "the session's state to leave created", 10*time.Second, func() bool {
				rec = readState(t, sess)
				return rec.State != "created"
			})
			if rec.State != "running" || rec.WrapperPID != wrapper || rec.InitPID <= 0 {
				t.Fatalf("state before the kill: %+v, want running, wrapper pid %d, an init pid", rec, wrapper)
			}

			if err := pr.cmd.Process.Signal(syscall.SIGKILL); err != nil {
				t.Fatal(err)
			}
			pr.wait()
			waitFor(t, "every process of the sandbox to die", 10*time.Second, func() bool {
				pids = hostPIDsWithEnv(t, marker, -1)
				return len(pids) == 0 && !procAlive(t, rec.InitPID, rec.InitStart)
			})

			after := readState(t, sess)
			if after.ID != id || after.State != "running" {
				t.Errorf("state left by the killed wrapper: %+v, want session %s still running", after, id)
			}
			rows := a.ps(t, root)
			if len(rows) != 1 || rows[0].ID != id || rows[0].Live || rows[0].State != "running" || rows[0].Path != sess {
				t.Errorf("agentbox ps --json: %+v, want session %s at %s, state running, live false", rows, id, sess)
			}

			switch variant {
			case "clean":
				crow, cr := a.clean(t, root)
				if cr.code != 0 {
					t.Errorf("agentbox clean: %v", cr)
				}
				if c, ok := findClean(crow, id); !ok || c.Action != "removed" {
					t.Errorf("agentbox clean --json: %+v, want %s removed", crow, id)
				}
				if exists(t, sess) {
					t.Errorf("%s still exists after agentbox clean", sess)
				}
			case "next start":
				wantCode(t, "the next agentbox -- true", a.box(t, nil, "--root", root, "--", "true"), 0)
				waitFor(t, "the next start to reconcile "+sess, 10*time.Second, func() bool { return !exists(t, sess) })
			}
			if ids := sessionIDs(t, root); len(ids) != 0 {
				t.Errorf("session root holds %q at the end, want nothing", ids)
			}
		})
	}
}

// TestInitSurvivesSignalsFromInside has the command signal PID 1, the
// sandbox's init, with every signal a process may send: init must ignore
// them all (the kernel already drops SIGKILL and SIGSTOP sent to a PID
// namespace's init from inside it), so the command keeps running and its
// status is agentbox's. An init that dies takes the whole sandbox with it.
//
// The command gives a dying init 200 ms to show: a failure to see, not a
// readiness to wait for.
func TestInitSurvivesSignalsFromInside(t *testing.T) {
	t.Parallel()
	a, _ := users(t)
	for _, sig := range []string{"KILL", "STOP", "TERM", "HUP", "INT", "QUIT", "USR1", "USR2", "PIPE", "ALRM", "CHLD", "WINCH",
		"SEGV", "ABRT", "TRAP", "SYS", "BUS", "FPE", "ILL", "XCPU", "XFSZ", "VTALRM", "PROF", "URG", "TSTP", "TTIN", "TTOU"} {
		t.Run(sig, func(t *testing.T) {
			t.Parallel()
			r := a.box(t, []string{"SIG=" + sig}, "--", "sh", "-c", `kill -s "$SIG" 1 && sleep 0.2 && echo alive`)
			if r.code != 0 || string(r.stdout) != "alive\n" || len(r.stderr) != 0 {
				t.Errorf("the command sent SIG%s to the sandbox's init: %v; want it to go on: exit 0, stdout \"alive\\n\", no stderr", sig, r)
			}
		})
	}
}

// TestInitIsOutOfReach checks that the command can neither follow the
// sandbox init's descriptors through /proc/1/fd (they name the session root
// and the session's directories on the host) nor attach to init with
// ptrace (a stopped init reaps nothing: the session would hang; and a
// tracer can write the memory every thread of init runs).
//
// Whether the kernel lets a process reach another of the same uid can
// depend on which thread of init holds which capabilities, which varies
// from one start to the next: the probe runs in several sessions at once.
func TestInitIsOutOfReach(t *testing.T) {
	t.Parallel()
	a, _ := users(t)
	p := a.project(t)
	const n = 8
	procs := make([]*proc, n)
	for i := range procs {
		procs[i] = start(t, a.agentbox([]string{helperEnv + "=probeinit"}, "--root", filepath.Join(p, "root"), "--", helperBin))
	}
	reached := 0
	for i, pr := range procs {
		r := pr.wait()
		wantCode(t, "agentbox -- probeinit", r, 0)
		if got, want := string(r.stdout), "fd: denied\nptrace: denied\n"; got != want {
			reached++
			t.Errorf("session %d: what the command can do to the sandbox's init: %q, want %q", i, got, want)
		}
	}
	if reached > 0 {
		t.Errorf("the command reached its sandbox's init in %d of %d sessions", reached, n)
	}
}
