package sandbox

import (
	"encoding/json"
	"io"
	"sync"
	"time"

	"github.com/agentbox/agentbox/internal/session"
)

// Event is one line of the status stream (--status-fd, Config.Status): a
// JSON object per lifecycle event, so that IDEs and orchestrators never
// parse stderr. Every event has Event and Time; every event after the
// session exists has Session. In order:
//
//	session  the session exists: Session, Path, Root, WrapperPID, Mode
//	state    the session's state changed: State (and ExitStatus, Error)
//	started  the command runs: InitPID and PID as the caller's PID namespace sees them
//	exited   the command ended: ExitStatus, and Signal when a signal ended it
//	error    the sandbox could not run the command: ExitStatus (125–127), Error
//	cleanup  Result removed, kept or failed; Seconds; Error
//
// The stream ends (EOF) when agentbox exits. Fields may be added; none is
// removed or changes meaning.
type Event struct {
	Event      string    `json:"event"`
	Time       time.Time `json:"time"`
	Session    string    `json:"session,omitempty"`
	Path       string    `json:"path,omitempty"`
	Root       string    `json:"root,omitempty"`
	Mode       string    `json:"mode,omitempty"` // "namespaces", "degraded" or "nested"
	WrapperPID int       `json:"wrapper_pid,omitempty"`
	State      string    `json:"state,omitempty"`
	InitPID    int       `json:"init_pid,omitempty"`
	PID        int       `json:"pid,omitempty"`
	ExitStatus *int      `json:"exit_status,omitempty"`
	Signal     string    `json:"signal,omitempty"`
	Result     string    `json:"result,omitempty"`
	Seconds    float64   `json:"seconds,omitempty"`
	Error      string    `json:"error,omitempty"`
}

// Cleanup results.
const (
	CleanupRemoved = "removed"
	CleanupKept    = "kept"
	CleanupFailed  = "failed"
)

// statusWriter writes events, one JSON line each, to the status stream.
// A nil *statusWriter writes nothing; write errors are ignored (a reader
// that went away must not change what the sandbox does).
type statusWriter struct {
	mu      sync.Mutex
	w       io.Writer
	session string
}

func newStatus(w io.Writer) *statusWriter {
	if w == nil {
		return nil
	}
	return &statusWriter{w: w}
}

func (s *statusWriter) emit(e Event) {
	if s == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	e.Time = time.Now().UTC()
	if e.Session == "" {
		e.Session = s.session
	}
	b, err := json.Marshal(e)
	if err != nil {
		return
	}
	s.w.Write(append(b, '\n'))
}

// observe returns the session hook that reports every state change.
func (s *statusWriter) observe() func(session.Record) {
	if s == nil {
		return nil
	}
	return func(r session.Record) {
		e := Event{Event: "state", State: string(r.State), Error: r.Error}
		if r.State == session.Exited {
			e.ExitStatus = r.ExitStatus
		}
		s.emit(e)
	}
}
