//go:build linux

package tests

import (
	"bufio"
	"encoding/json"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// statusEvent is one line of --status-fd, as a consumer decodes it.
type statusEvent struct {
	Event      string    `json:"event"`
	Time       time.Time `json:"time"`
	Session    string    `json:"session"`
	Path       string    `json:"path"`
	Root       string    `json:"root"`
	Mode       string    `json:"mode"`
	WrapperPID int       `json:"wrapper_pid"`
	State      string    `json:"state"`
	InitPID    int       `json:"init_pid"`
	PID        int       `json:"pid"`
	ExitStatus *int      `json:"exit_status"`
	Signal     string    `json:"signal"`
	Result     string    `json:"result"`
	Error      string    `json:"error"`
}

// boxStatus runs agentbox as u with --status-fd 3 on a pipe and returns the
// events in order and how agentbox ended. onEvent, if set, sees each event
// as it arrives, while agentbox runs.
func (u user) boxStatus(t *testing.T, onEvent func(statusEvent), args ...string) ([]statusEvent, result) {
	t.Helper()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd := u.agentbox(nil, append([]string{"--status-fd", "3"}, args...)...)
	cmd.ExtraFiles = []*os.File{w}
	p := start(t, cmd)
	w.Close()
	var events []statusEvent
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		var e statusEvent
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			t.Fatalf("status line %q: not a JSON object: %v", sc.Bytes(), err)
		}
		if e.Event == "" || e.Time.IsZero() {
			t.Errorf("status line %q: no event or time", sc.Bytes())
		}
		if onEvent != nil {
			onEvent(e)
		}
		events = append(events, e)
	}
	r.Close()
	return events, p.wait()
}

// kinds is the sequence of event names, states written as state:NAME.
func kinds(events []statusEvent) []string {
	var out []string
	for _, e := range events {
		k := e.Event
		if e.Event == "state" {
			k += ":" + e.State
		}
		out = append(out, k)
	}
	return out
}

// TestStatusFD checks the --status-fd stream: one JSON object per line for
// each lifecycle event, in order, with the session, the sandbox's pids (the
// command's pid is live and is the command when "started" arrives), the exit
// status and signal, setup errors and the cleanup result; and stdout and
// stderr stay the command's alone.
func TestStatusFD(t *testing.T) {
	t.Parallel()
	a, _ := users(t)
	p := a.project(t)

	t.Run("exit", func(t *testing.T) {
		t.Parallel()
		var cmdline string
		events, res := a.boxStatus(t, func(e statusEvent) {
			if e.Event == "started" {
				// The event may come while the kernel is still finishing the
				// command's execve: its argv shows a moment later.
				for i := 0; i < 50 && cmdline == ""; i++ {
					b, _ := os.ReadFile("/proc/" + strconv.Itoa(e.PID) + "/cmdline")
					cmdline = strings.ReplaceAll(string(b), "\x00", " ")
					if cmdline == "" {
						time.Sleep(2 * time.Millisecond)
					}
				}
			}
		}, "--", "sh", "-c", "cd "+p+" && echo out && echo err >&2 && sleep 0.3; exit 3")
		wantCode(t, "agentbox", res, 3)
		if string(res.stdout) != "out\n" || string(res.stderr) != "err\n" {
			t.Errorf("stdout %q, stderr %q: want the command's alone", res.stdout, res.stderr)
		}
		want := []string{"session", "state:created", "started", "state:running", "exited", "state:exited", "state:cleaning", "state:removed", "cleanup"}
		if got := kinds(events); !slices.Equal(got, want) {
			t.Fatalf("events %v, want %v", got, want)
		}
		id := events[0].Session
		for _, e := range events {
			if e.Session != id || len(id) != 12 {
				t.Errorf("event %s: session %q, want %q in every event", e.Event, e.Session, id)
			}
		}
		s := events[0]
		if s.Path == "" || !strings.HasPrefix(s.Path, s.Root+"/") || s.WrapperPID <= 0 {
			t.Errorf("session event %+v: want path under root and the wrapper's pid", s)
		}
		if _, err := os.Lstat(s.Path); !os.IsNotExist(err) {
			t.Errorf("session directory %s still there after cleanup: %v", s.Path, err)
		}
		st := events[2]
		if st.Mode != "namespaces" || st.InitPID <= 0 || st.PID <= 0 || st.PID == st.InitPID {
			t.Errorf("started event %+v: want mode namespaces and two host pids", st)
		}
		if !strings.HasPrefix(cmdline, "sh -c ") {
			t.Errorf("pid %d of the started event is %q, want the command (sh -c ...)", st.PID, cmdline)
		}
		if ex := events[4]; ex.ExitStatus == nil || *ex.ExitStatus != 3 || ex.Signal != "" {
			t.Errorf("exited event %+v: want exit_status 3, no signal", ex)
		}
		if c := events[8]; c.Result != "removed" || c.Error != "" {
			t.Errorf("cleanup event %+v: want removed", c)
		}
		for i := 1; i < len(events); i++ {
			if events[i].Time.Before(events[i-1].Time) {
				t.Errorf("event %d (%s) is older than the one before it", i, events[i].Event)
			}
		}
	})

	t.Run("signal", func(t *testing.T) {
		t.Parallel()
		events, res := a.boxStatus(t, nil, "--", "sh", "-c", "kill -TERM $$")
		wantCode(t, "agentbox", res, 128+15)
		i := slices.Index(kinds(events), "exited")
		if i < 0 || events[i].Signal != "SIGTERM" || events[i].ExitStatus == nil || *events[i].ExitStatus != 143 {
			t.Fatalf("events %+v: want exited with signal SIGTERM and status 143", events)
		}
	})

	t.Run("not found", func(t *testing.T) {
		t.Parallel()
		events, res := a.boxStatus(t, nil, "--", "abtest-no-such-command")
		wantCode(t, "agentbox", res, 127)
		want := []string{"session", "state:created", "state:setup_failed", "error", "state:cleaning", "state:removed", "cleanup"}
		if got := kinds(events); !slices.Equal(got, want) {
			t.Fatalf("events %v, want %v", got, want)
		}
		if e := events[3]; e.ExitStatus == nil || *e.ExitStatus != 127 || !strings.Contains(e.Error, "abtest-no-such-command") {
			t.Errorf("error event %+v: want 127 naming the command", e)
		}
	})

	t.Run("keep", func(t *testing.T) {
		t.Parallel()
		events, res := a.boxStatus(t, nil, "--keep", "--", "true")
		wantCode(t, "agentbox", res, 0)
		last := events[len(events)-1]
		if last.Event != "cleanup" || last.Result != "kept" || last.Path == "" {
			t.Fatalf("last event %+v: want cleanup kept with the path", last)
		}
		if fi, err := os.Stat(last.Path); err != nil || !fi.IsDir() {
			t.Fatalf("kept session %s: %v", last.Path, err)
		}
		if _, r := a.clean(t, events[0].Root, last.Session); r.code != 0 {
			t.Fatalf("clean %s: %v", last.Session, r)
		}
	})

	t.Run("no session", func(t *testing.T) {
		t.Parallel()
		events, res := a.boxStatus(t, nil, "--root", "relative/root", "--", "true")
		wantCode(t, "agentbox", res, 125)
		if len(events) != 1 || events[0].Event != "error" || events[0].ExitStatus == nil || *events[0].ExitStatus != 125 || events[0].Error == "" {
			t.Fatalf("events %+v: want one error event with status 125", events)
		}
	})

	t.Run("reader gone", func(t *testing.T) {
		t.Parallel()
		// The consumer closed its end before agentbox started: the
		// command runs and its status is agentbox's, as without the flag.
		r, w, err := os.Pipe()
		if err != nil {
			t.Fatal(err)
		}
		r.Close()
		cmd := a.agentbox(nil, "--status-fd", "3", "--", "sh", "-c", "echo ran; exit 4")
		cmd.ExtraFiles = []*os.File{w}
		res := run(t, cmd)
		w.Close()
		wantCode(t, "agentbox", res, 4)
		if string(res.stdout) != "ran\n" {
			t.Errorf("stdout %q, want ran", res.stdout)
		}
	})
}

// TestStatusFDBad checks that a --status-fd that cannot be written is a
// usage error (125) that runs nothing.
func TestStatusFDBad(t *testing.T) {
	t.Parallel()
	a, _ := users(t)
	ro, err := os.Open("/dev/null")
	if err != nil {
		t.Fatal(err)
	}
	defer ro.Close()
	for _, tc := range []struct {
		name  string
		fd    string
		files []*os.File
		want  string
	}{
		{"closed", "9", nil, "not open"},
		{"read-only", "3", []*os.File{ro}, "read-only"},
		{"stdout", "1", nil, "standard output"},
		{"negative", "-2", nil, "not a file descriptor"},
		{"not a number", "x", nil, "status-fd"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			marker := "abtest-ran-" + tc.name
			cmd := a.agentbox(nil, "--status-fd", tc.fd, "--", "sh", "-c", "echo "+marker)
			cmd.ExtraFiles = tc.files
			res := run(t, cmd)
			wantCode(t, "agentbox --status-fd "+tc.fd, res, 125)
			if strings.Contains(string(res.stdout), marker) || !strings.Contains(string(res.stderr), tc.want) {
				t.Errorf("%v: want no run and a message containing %q", res, tc.want)
			}
		})
	}
}
