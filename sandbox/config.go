package sandbox

import (
	"io"
	"os"

	"github.com/agentbox/agentbox/landlock"
)

// Config is one sandboxed run.
type Config struct {
	Argv []string // the command and its arguments; Argv[0] is looked up in PATH inside
	Env  []string // the caller's environment; passed through except the session's variables
	Dir  string   // working directory; must be visible inside (not under /tmp)
	// Root is the session root from --root; empty: AGENTBOX_ROOT, then the
	// XDG default, from Env.
	Root string
	Keep bool // keep the session directory and print its path
	// Stdin, Stdout and Stderr are handed to the command as they are (the
	// same open files, not copies): nil means the wrapper's own.
	Stdin, Stdout, Stderr *os.File
	// Log receives agentbox's own messages (-v); nil: only errors and --keep.
	Log io.Writer
	// Messages receives --keep's path and warnings; nil: os.Stderr.
	Messages io.Writer
	// Profile is --profile NAME|FILE; empty: by the command's base name.
	Profile string
	// Landlock is --landlock=require|best-effort|off; empty: config, then require.
	Landlock string
	// RW, RO, Hide and Show are the repeatable --rw, --ro, --hide and --show.
	RW, RO, Hide, Show []string
	// AllowDegraded runs the command with Landlock alone when user
	// namespaces are unavailable (--allow-degraded, or allow_degraded in
	// config.toml); never the default.
	AllowDegraded bool
	// ReconcileLimit bounds the abandoned sessions looked at per start (0: 8).
	ReconcileLimit int
	// Status, when set, receives the lifecycle events, one JSON Event per
	// line (--status-fd).
	Status io.Writer

	status *statusWriter // from Status, set by Run
	// signals, when set, replaces the signals the wrapper catches itself:
	// the nest-run stage gets them from the requesting agentbox.
	signals <-chan os.Signal
	// outer are the Landlock policies of the sandboxes this one is nested
	// in, outermost first, applied by init before the sandbox's own.
	outer []landlock.Policy
	// roots are the enclosing sessions' roots, outermost first.
	roots []string
}

// Result is how a run ended.
type Result struct {
	SessionID   string
	SessionPath string
	ExitCode    int   // the command's status, 128+N for signal N, or 125–127
	CleanupErr  error // nil when the session was removed or kept
	Kept        bool
}

// initConfig is what the wrapper sends the init stage, as JSON on fd 3.
// Strings that come from the caller are bytes: encoding/json would replace
// invalid UTF-8 in a string with U+FFFD, and arguments, variables and paths
// are bytes, not text.
type initConfig struct {
	Argv      [][]byte `json:"argv"`
	Env       [][]byte `json:"env"`
	Dir       []byte   `json:"dir"`
	UID       int      `json:"uid"`
	GID       int      `json:"gid"`
	Umask     int      `json:"umask"`
	SessionID string   `json:"session_id"`
	RootPath  []byte   `json:"root_path"`
	RunUser   bool     `json:"run_user"`
	DevShm    bool     `json:"dev_shm"`
	VarTmp    bool     `json:"var_tmp"`
	Hide      [][]byte `json:"hide"`
	ReadOnly  [][]byte `json:"read_only"`
	// Landlock is the write policy init applies after the mounts.
	Landlock landlock.Policy `json:"landlock"`
	// Outer are the policies of the sandboxes this one is nested in,
	// outermost first, applied before Landlock; empty when not nested.
	Outer []landlock.Policy `json:"outer,omitempty"`
	// Roots are the enclosing sessions' roots, outermost first.
	Roots []string `json:"roots,omitempty"`
}

// initMsg is what the init stage reports on fd 4, one JSON object.
type initMsg struct {
	Event string `json:"event"` // "started" or "error"; then "signaled" if the command died of Signal
	PID   int    `json:"pid,omitempty"`
	Code  int    `json:"code,omitempty"`
	Stage string `json:"stage,omitempty"` // "mount", "exec", "setup"
	Errno int    `json:"errno,omitempty"`
	Msg   string `json:"msg,omitempty"`
	// NotFound is set when the command could not be found inside.
	NotFound bool `json:"not_found,omitempty"`
	Signal   int  `json:"signal,omitempty"`
}

// Descriptors of the init stage (ExtraFiles order).
const (
	fdConfig  = 3 // JSON initConfig, read to EOF
	fdReport  = 4 // initMsg, written once
	fdControl = 5 // one byte per signal to forward to the command
	fdSession = 6 // the session directory, holding the session's flock
	fdRoot    = 7 // the session root, hidden inside
	fdTmp     = 8
	fdVarTmp  = 9
	fdRun     = 10
)
