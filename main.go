// Command agentbox runs a command, typically an AI coding agent, with a
// private per-session /tmp, /var/tmp and runtime directory, and removes them
// when it ends:
//
//	agentbox [flags] -- CMD [ARGS...]
//	agentbox run [flags] -- CMD [ARGS...]
//	agentbox policy [flags] [--json] [-- CMD]
//	agentbox explain [flags] [--json] PATH [-- CMD]
//	agentbox doctor [--json]
//	agentbox ps [--json]
//	agentbox clean [--dry-run] [--json] [--kept] [ID...]
//	agentbox completion bash|zsh|fish
//
// This file is the CLI only: it turns flags into a sandbox.Config and is the
// one place that turns an error into an exit status.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/urfave/cli/v3"
	"golang.org/x/sys/unix"

	"github.com/agentbox/agentbox/internal/doctor"
	"github.com/agentbox/agentbox/internal/session"
	"github.com/agentbox/agentbox/internal/units"
	"github.com/agentbox/agentbox/landlock"
	"github.com/agentbox/agentbox/sandbox"
)

// version is set at build time with -ldflags "-X main.version=...".
var version = "dev"

func init() {
	// The init stage drops privileges, applies Landlock and forks the
	// command on one locked thread; locking it here, in an init function,
	// makes that thread the main thread (the thread-group leader, which is
	// what other processes signal as PID 1), so the command's Landlock
	// domain includes it.
	if sandbox.IsInit() {
		runtime.LockOSThread()
	}
}

func main() {
	// The init stage is this binary re-executed inside the new namespaces;
	// it must not parse flags or touch anything else first.
	if sandbox.IsInit() {
		os.Exit(sandbox.InitMain())
	}
	if sandbox.IsNestRun() {
		os.Exit(sandbox.NestRunMain())
	}
	if sandbox.IsDegraded() {
		os.Exit(sandbox.DegradedMain())
	}
	os.Exit(Main(os.Args, os.Stdout, os.Stderr))
}

// usageError is a command-line mistake: exit status 125 like any other
// agentbox error, with a hint.
type usageError struct{ msg string }

func (e *usageError) Error() string { return e.msg }

// exitError carries an exit status that is not an error of agentbox's own
// (the command's status, or clean's partial failure).
type exitError struct{ code int }

func (e *exitError) Error() string { return fmt.Sprintf("exit status %d", e.code) }

// SplitArgs splits args (os.Args) at the first "--": what comes before is
// for the CLI library, what comes after is the command, untouched. The
// library never sees the command, so `agentbox -- help` runs a program
// named help. argv is nil when there is no "--".
func SplitArgs(args []string) (cliArgs, argv []string) {
	for i, a := range args {
		if i > 0 && a == "--" {
			return args[:i:i], args[i+1:]
		}
	}
	return args, nil
}

// Main runs the CLI and returns the exit status.
func Main(args []string, stdout, stderr io.Writer) int {
	cliArgs, argv := SplitArgs(args)
	var err error
	if len(cliArgs) == 1 && len(argv) > 0 {
		// The bare prefix form, agentbox -- CMD, which IDEs and
		// orchestrators put in front of every start: no flag to parse, so
		// the run needs nothing of the CLI library (building the command
		// tree costs a third of a millisecond). The result is the one the
		// library gives with every flag at its default.
		err = runSandbox(sandbox.Config{Argv: argv, Env: os.Environ()}, stderr)
	} else {
		err = newApp(argv, stdout, stderr).Run(context.Background(), cliArgs)
	}
	if err == nil {
		return 0
	}
	var ee *exitError
	if errors.As(err, &ee) {
		return ee.code
	}
	fmt.Fprintf(stderr, "agentbox: %v\n", err)
	var ue *usageError
	if errors.As(err, &ue) {
		fmt.Fprintf(stderr, "usage: agentbox [flags] -- CMD [ARGS...]; see agentbox --help\n")
	}
	return sandbox.ExitCode(err)
}

// runSandbox runs cfg and turns its result into the error Main reports.
func runSandbox(cfg sandbox.Config, stderr io.Writer) error {
	res, err := sandbox.Run(cfg)
	if res.CleanupErr != nil {
		fmt.Fprintf(stderr, "agentbox: cleanup: %v\n", res.CleanupErr)
	}
	if err != nil {
		return err
	}
	if res.CleanupErr != nil && res.ExitCode == 0 {
		return &exitError{sandbox.ExitSetup}
	}
	if res.ExitCode != 0 {
		return &exitError{res.ExitCode}
	}
	return nil
}

// statusFile checks that fd is open for writing and returns it, not
// inherited by the sandbox.
func statusFile(fd int) (*os.File, error) {
	if fd < 0 {
		return nil, &usageError{fmt.Sprintf("--status-fd %d: not a file descriptor; give one that is open for writing, as in --status-fd 3 3>events.jsonl", fd)}
	}
	if fd <= 2 {
		return nil, &usageError{fmt.Sprintf("--status-fd %d: that is the command's standard %s, which agentbox passes through untouched; use a descriptor of 3 or more", fd, []string{"input", "output", "error"}[fd])}
	}
	fl, err := unix.FcntlInt(uintptr(fd), unix.F_GETFL, 0)
	if err != nil {
		return nil, &usageError{fmt.Sprintf("--status-fd %d: descriptor %d is not open (%v); open it for writing, as in --status-fd %d %d>events.jsonl", fd, fd, err, fd, fd)}
	}
	if fl&unix.O_ACCMODE == unix.O_RDONLY {
		return nil, &usageError{fmt.Sprintf("--status-fd %d: descriptor %d is open read-only; open it for writing, as in %d>events.jsonl", fd, fd, fd)}
	}
	unix.CloseOnExec(fd)
	return os.NewFile(uintptr(fd), "status"), nil
}

// policyConfig reads the policy flags shared by run, policy and explain.
func policyConfig(c *cli.Command, argv []string) sandbox.Config {
	return sandbox.Config{
		Argv:     argv,
		Env:      os.Environ(),
		Profile:  c.String("profile"),
		Landlock: c.String("landlock"),
		RW:       c.StringSlice("rw"),
		RO:       c.StringSlice("ro"),
		Hide:     c.StringSlice("hide"),
		Show:     c.StringSlice("show"),
	}
}

func newApp(argv []string, stdout, stderr io.Writer) *cli.Command {
	runAction := func(ctx context.Context, c *cli.Command) error {
		if c.Args().Len() > 0 {
			return &usageError{fmt.Sprintf("unexpected argument %q before --: put the command after --, as in agentbox -- %s", c.Args().First(), strings.Join(c.Args().Slice(), " "))}
		}
		if argv == nil {
			return &usageError{"no command: give one after --, as in agentbox -- opencode"}
		}
		if len(argv) == 0 {
			return &usageError{"no command after --"}
		}
		cfg := policyConfig(c, argv)
		cfg.Root = c.String("root")
		cfg.Keep = c.Bool("keep")
		cfg.AllowDegraded = c.Bool("allow-degraded")
		if c.Bool("verbose") {
			cfg.Log = stderr
		}
		if fd := c.Int("status-fd"); fd != -1 {
			f, err := statusFile(fd)
			if err != nil {
				return err
			}
			defer f.Close()
			cfg.Status = f
		}
		return runSandbox(cfg, stderr)
	}
	noArgv := func(name string) error {
		if argv != nil {
			return &usageError{fmt.Sprintf("%s takes no command after --", name)}
		}
		return nil
	}
	onUsage := func(_ context.Context, _ *cli.Command, err error, _ bool) error {
		return &usageError{err.Error()}
	}
	return &cli.Command{
		Name:      "agentbox",
		Usage:     "run an AI coding agent with a private /tmp, /var/tmp and runtime dir",
		UsageText: "agentbox [flags] -- CMD [ARGS...]\nagentbox run [flags] -- CMD [ARGS...]\nagentbox policy [flags] [--json] [-- CMD]\nagentbox explain [flags] [--json] PATH [-- CMD]\nagentbox doctor [--json]\nagentbox ps [--json]\nagentbox clean [--dry-run] [--json] [--kept] [ID...]\nagentbox completion bash|zsh|fish",
		Description: "agentbox runs CMD in new user, mount and PID namespaces, as your own uid, with no capabilities.\n" +
			"Each session gets a fresh mode-0700 directory under the session root; its tmp/, var-tmp/ and run/\n" +
			"are mounted over /tmp, /var/tmp and the runtime directory (XDG_RUNTIME_DIR); /dev/shm and /proc\n" +
			"are private. TMPDIR, TMP, TEMP and TEMPDIR are /tmp. The session is removed when CMD exits.\n" +
			"CMD may write only its working directory, these private directories and what its profile\n" +
			"and --rw grant (read-only mounts and Landlock); credentials such as ~/.ssh are hidden.\n" +
			"agentbox policy -- CMD shows the policy; agentbox explain PATH -- CMD explains a denial.\n\n" +
			"Session root: --root, else AGENTBOX_ROOT, else $XDG_STATE_HOME/agentbox, else\n" +
			"~/.local/state/agentbox, else (no usable home) /tmp/agentbox-UID.\n\n" +
			"Exit status: CMD's own; 128+N if it died of signal N; 125 agentbox's own error;\n" +
			"126 CMD cannot be executed; 127 CMD not found.",
		Version:         version,
		HideHelpCommand: true,
		Writer:          stdout,
		ErrWriter:       stderr,
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "root", Usage: "session root `DIR` (default: AGENTBOX_ROOT, $XDG_STATE_HOME/agentbox, ~/.local/state/agentbox)"},
			&cli.BoolFlag{Name: "keep", Usage: "keep the session directory after CMD exits and print its path on stderr"},
			&cli.BoolFlag{Name: "verbose", Aliases: []string{"v"}, Usage: "say on stderr what agentbox does"},
			&cli.StringFlag{Name: "profile", Usage: "agent profile `NAME` or FILE (default: chosen by the command's name)"},
			&cli.StringFlag{Name: "landlock", Usage: "Landlock `MODE`: require, best-effort or off (default: require)",
				Validator: func(s string) error { _, err := landlock.ParseMode(s); return err }},
			&cli.StringSliceFlag{Name: "rw", Usage: "also allow writing below `PATH` (repeatable)"},
			&cli.StringSliceFlag{Name: "ro", Usage: "make `PATH` read-only inside (repeatable)"},
			&cli.StringSliceFlag{Name: "hide", Usage: "replace `PATH` by an empty directory or file inside (repeatable)"},
			&cli.StringSliceFlag{Name: "show", Usage: "do not hide `PATH` (repeatable)"},
			&cli.BoolFlag{Name: "allow-degraded", Usage: "when user namespaces are unavailable, run with Landlock alone (weaker; says what does not hold)"},
			&cli.IntFlag{Name: "status-fd", Value: -1, Usage: "write lifecycle events to descriptor `N`, one JSON object per line (session, state, started, exited, error, cleanup)"},
		},
		DisableSliceFlagSeparator: true,
		Action:                    runAction,
		ExitErrHandler:            func(context.Context, *cli.Command, error) {},
		OnUsageError:              onUsage,
		Commands: []*cli.Command{
			{
				Name:         "run",
				OnUsageError: onUsage,
				Usage:        "run CMD in a new session (the same as agentbox [flags] -- CMD)",
				UsageText:    "agentbox run [flags] -- CMD [ARGS...]",
				Action:       runAction,
			},
			{
				Name:         "policy",
				OnUsageError: onUsage,
				Usage:        "print the effective policy for a command: every path, and the rule it came from",
				UsageText:    "agentbox policy [--profile P] [--json] [-- CMD]",
				Flags:        []cli.Flag{&cli.BoolFlag{Name: "json", Usage: "print JSON"}},
				Action: func(ctx context.Context, c *cli.Command) error {
					if c.Args().Len() > 0 {
						return &usageError{"policy takes no arguments before --"}
					}
					pol, err := sandbox.Prepare(policyConfig(c, argv))
					if err != nil {
						return err
					}
					return printPolicy(stdout, pol, c.Bool("json"))
				},
			},
			{
				Name:         "explain",
				OnUsageError: onUsage,
				Usage:        "say whether the sandbox could see, read or write PATH, and which rule decides",
				UsageText:    "agentbox explain [--json] PATH [-- CMD]",
				Flags:        []cli.Flag{&cli.BoolFlag{Name: "json", Usage: "print JSON"}},
				Action: func(ctx context.Context, c *cli.Command) error {
					if c.Args().Len() != 1 {
						return &usageError{"explain takes one PATH"}
					}
					pol, err := sandbox.Prepare(policyConfig(c, argv))
					if err != nil {
						return err
					}
					path, err := filepath.Abs(c.Args().First())
					if err != nil {
						return err
					}
					v := pol.Explain(path)
					if c.Bool("json") {
						return json.NewEncoder(stdout).Encode(v)
					}
					yn := func(b bool) string {
						if b {
							return "yes"
						}
						return "no"
					}
					fmt.Fprintf(stdout, "%s\n  visible: %s\n  read:    %s\n  write:   %s\n  because: %s\n", v.Path, yn(v.Visible), yn(v.Read), yn(v.Write), v.Rule)
					return nil
				},
			},
			{
				Name:         "ps",
				OnUsageError: onUsage,
				Usage:        "list the sessions under the session root",
				UsageText:    "agentbox ps [--json]",
				Flags:        []cli.Flag{&cli.BoolFlag{Name: "json", Usage: "print a JSON array"}},
				Action: func(ctx context.Context, c *cli.Command) error {
					if err := noArgv("ps"); err != nil {
						return err
					}
					if c.Args().Len() > 0 {
						return &usageError{"ps takes no arguments"}
					}
					return ps(c.String("root"), c.Bool("json"), stdout)
				},
			},
			{
				Name:         "doctor",
				OnUsageError: onUsage,
				Usage:        "check that this host lets agentbox run with all its guarantees; exit 1 when not",
				UsageText:    "agentbox doctor [--json]",
				Flags:        []cli.Flag{&cli.BoolFlag{Name: "json", Usage: "print a JSON array"}},
				Action: func(ctx context.Context, c *cli.Command) error {
					if err := noArgv("doctor"); err != nil {
						return err
					}
					if c.Args().Len() > 0 {
						return &usageError{"doctor takes no arguments"}
					}
					return runDoctor(c.String("root"), c.Bool("json"), stdout)
				},
			},
			{
				Name:         "clean",
				OnUsageError: onUsage,
				Usage:        "remove abandoned sessions (never a live one); kept ones only by ID or with --kept",
				UsageText:    "agentbox clean [--dry-run] [--json] [--kept] [ID...]",
				Flags: []cli.Flag{
					&cli.BoolFlag{Name: "dry-run", Aliases: []string{"n"}, Usage: "say what would be removed, remove nothing"},
					&cli.BoolFlag{Name: "json", Usage: "print a JSON array"},
					&cli.BoolFlag{Name: "kept", Usage: "also remove sessions kept with --keep"},
				},
				Action: func(ctx context.Context, c *cli.Command) error {
					if err := noArgv("clean"); err != nil {
						return err
					}
					return clean(c.String("root"), c.Args().Slice(), c.Bool("kept"), c.Bool("dry-run"), c.Bool("json"), stdout)
				},
			},
			completionCommand(argv),
			manCommand(argv),
		},
	}
}

type psRow struct {
	ID         string        `json:"id"`
	State      session.State `json:"state"`
	Live       bool          `json:"live"`
	WrapperPID int           `json:"wrapper_pid"`
	AgeSeconds float64       `json:"age_seconds"`
	Bytes      int64         `json:"bytes"`
	Command    string        `json:"command"`
	Path       string        `json:"path"`
	Error      string        `json:"error,omitempty"`
}

func ps(rootFlag string, asJSON bool, stdout io.Writer) error {
	root, err := sandbox.OpenRoot(rootFlag, os.Environ())
	if err != nil {
		return err
	}
	defer root.Close()
	infos, err := session.List(root.FD, true)
	if err != nil {
		return fmt.Errorf("session root %s: %w", root.Path, err)
	}
	now := time.Now()
	rows := make([]psRow, 0, len(infos))
	for _, in := range infos {
		r := psRow{ID: in.ID, State: in.Record.State, Live: in.Live, WrapperPID: in.Record.WrapperPID,
			AgeSeconds: in.Age(now).Seconds(), Bytes: in.Bytes, Command: in.Record.Command, Path: root.Path + "/" + in.ID}
		if in.Err != nil {
			r.Error = in.Err.Error()
		}
		rows = append(rows, r)
	}
	if asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(rows)
	}
	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tSTATE\tPID\tAGE\tSIZE\tCOMMAND")
	for _, r := range rows {
		state := string(r.State)
		switch {
		case r.Error != "":
			state = "unreadable"
		case !r.Live && r.State != session.Kept:
			state += " (abandoned)"
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t%s\t%s\n", r.ID, state, r.WrapperPID, age(time.Duration(r.AgeSeconds*float64(time.Second))), units.Bytes(uint64(max(r.Bytes, 0)), ""), r.Command)
	}
	return tw.Flush()
}

func age(d time.Duration) string {
	switch {
	case d < time.Minute:
		return fmt.Sprintf("%ds", int(d.Seconds()))
	case d < time.Hour:
		return fmt.Sprintf("%dm", int(d.Minutes()))
	case d < 48*time.Hour:
		return fmt.Sprintf("%dh", int(d.Hours()))
	}
	return fmt.Sprintf("%dd", int(d.Hours()/24))
}

type cleanRow struct {
	ID     string         `json:"id"`
	State  session.State  `json:"state,omitempty"`
	Action session.Action `json:"action"`
	Error  string         `json:"error,omitempty"`
}

func clean(rootFlag string, ids []string, kept, dry, asJSON bool, stdout io.Writer) error {
	root, err := sandbox.OpenRoot(rootFlag, os.Environ())
	if err != nil {
		return err
	}
	defer root.Close()
	out, err := session.Reconcile(root.FD, root.Path, os.Getuid(), session.Options{IDs: ids, Kept: kept, Unreadable: true, DryRun: dry})
	if err != nil {
		return fmt.Errorf("session root %s: %w", root.Path, err)
	}
	rows := make([]cleanRow, 0, len(out))
	failed := 0
	for _, o := range out {
		r := cleanRow{ID: o.ID, State: o.State, Action: o.Action}
		if o.Err != nil {
			r.Error = o.Err.Error()
		}
		// A session named on the command line that could not be removed
		// is a failure; skipping one found by the scan is not.
		if o.Action == session.ActFailed || (len(ids) > 0 && o.Action != session.ActRemoved && o.Action != session.ActWouldRemove) {
			failed++
		}
		rows = append(rows, r)
	}
	if asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(rows); err != nil {
			return err
		}
	} else {
		for _, r := range rows {
			line := fmt.Sprintf("%s %s", r.Action, r.ID)
			if r.State != "" {
				line += " (" + string(r.State) + ")"
			}
			if r.Error != "" {
				line += ": " + r.Error
			}
			fmt.Fprintln(stdout, line)
		}
	}
	if failed > 0 {
		return &sandbox.Error{Code: sandbox.ExitSetup, Err: fmt.Errorf("clean: %d session(s) not removed", failed)}
	}
	return nil
}

// runDoctor prints doctor's findings and returns exit status 1 unless every
// one is ok.
func runDoctor(rootFlag string, asJSON bool, stdout io.Writer) error {
	findings := doctor.Evaluate(doctor.Probe(doctor.Options{Root: rootFlag, Env: os.Environ()}))
	if asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(findings); err != nil {
			return err
		}
	} else {
		for _, f := range findings {
			fmt.Fprintf(stdout, "%-4s  %s: %s\n", strings.ToUpper(string(f.Status)), f.Name, f.Detail)
			if f.Remedy != "" {
				fmt.Fprintf(stdout, "      remedy: %s\n", strings.ReplaceAll(strings.TrimRight(f.Remedy, "\n"), "\n", "\n        "))
			}
		}
	}
	if !doctor.OK(findings) {
		return &exitError{1}
	}
	return nil
}

func printPolicy(w io.Writer, pol sandbox.Policy, asJSON bool) error {
	if asJSON {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(pol)
	}
	plan, err := landlock.Check(pol.Landlock)
	fmt.Fprintf(w, "profile: %s\nlandlock: %s\n", pol.Profile, pol.Mode)
	if err != nil {
		fmt.Fprintf(w, "  %v\n", err)
	} else {
		fmt.Fprintf(w, "  %s\n", plan.Summary())
	}
	section := func(title string, es []sandbox.Entry) {
		fmt.Fprintf(w, "%s:\n", title)
		if len(es) == 0 {
			fmt.Fprintln(w, "  (none)")
		}
		tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
		for _, e := range es {
			fmt.Fprintf(tw, "  %s\t%s\n", e.Path, e.Source)
		}
		tw.Flush()
	}
	fmt.Fprintln(w, "read: everything visible")
	section("write", pol.Write)
	section("devices (write, ioctl)", pol.Devices)
	section("read-only", pol.ReadOnly)
	section("hidden", pol.Hide)
	section("created before start when missing", pol.Create)
	if len(pol.Notes) > 0 {
		fmt.Fprintln(w, "notes:")
		for _, n := range pol.Notes {
			fmt.Fprintf(w, "  - %s\n", n)
		}
	}
	return nil
}
