package main

// agentbox man: the manual page, roff for man(7), generated from the same
// command tree as --help and completion. docs/agentbox.1 is its output,
// regenerated with `go run . man > docs/agentbox.1`; a test fails when it is
// stale.

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/urfave/cli/v3"

	"github.com/agentbox/agentbox/env"
)

// manCommand is the hidden `agentbox man`. argv is what followed "--" on
// the command line (nil when there was no "--"); it takes none.
func manCommand(argv []string) *cli.Command {
	return &cli.Command{
		Name:         "man",
		Hidden:       true,
		Usage:        "print the manual page (roff, man(7)) on stdout",
		UsageText:    "agentbox man",
		OnUsageError: usageOnError,
		Action: func(ctx context.Context, c *cli.Command) error {
			if argv != nil {
				return &usageError{"man takes no command after --"}
			}
			if c.Args().Len() > 0 {
				return &usageError{"man takes no arguments"}
			}
			return writeMan(c.Root().Writer, c.Root())
		},
	}
}

// roffEscape makes s safe as roff text: a backslash is written \e, a hyphen
// \- (a minus, so that flags and commands copied from the page work), and a
// line that would start with a control character (. or ') is protected by
// \&.
func roffEscape(s string) string {
	s = strings.NewReplacer(`\`, `\e`, "-", `\-`).Replace(s)
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		if strings.HasPrefix(l, ".") || strings.HasPrefix(l, "'") {
			lines[i] = `\&` + l
		}
	}
	return strings.Join(lines, "\n")
}

// roffText writes prose: paragraphs split at blank lines, each line trimmed
// (a line that starts with a space would break the filled paragraph).
func roffText(b *strings.Builder, text string) {
	for i, para := range strings.Split(strings.TrimSpace(text), "\n\n") {
		if i > 0 {
			b.WriteString(".PP\n")
		}
		for _, l := range strings.Split(para, "\n") {
			if l = strings.TrimSpace(l); l != "" {
				b.WriteString(roffEscape(l) + "\n")
			}
		}
	}
}

// roffSynopsis writes usage lines unfilled, the program name in bold.
func roffSynopsis(b *strings.Builder, name string, lines []string) {
	b.WriteString(".nf\n")
	for _, l := range lines {
		if rest, ok := strings.CutPrefix(l, name); ok {
			fmt.Fprintf(b, `\fB%s\fR%s`+"\n", roffEscape(name), roffEscape(rest))
		} else {
			b.WriteString(roffEscape(l) + "\n")
		}
	}
	b.WriteString(".fi\n")
}

// roffFlags writes a tagged paragraph per flag: its names in bold, its
// placeholder in italics, its usage.
func roffFlags(b *strings.Builder, flags []cli.Flag) {
	for _, f := range flags {
		var names []string
		for _, n := range f.Names() {
			dash := "--"
			if len(n) == 1 {
				dash = "-"
			}
			names = append(names, `\fB`+roffEscape(dash+n)+`\fR`)
		}
		tag := strings.Join(names, ", ")
		usage := ""
		if df, ok := f.(cli.DocGenerationFlag); ok {
			ph, text := unquoteUsage(df.GetUsage())
			if df.TakesValue() {
				if ph == "" {
					ph = "VALUE"
				}
				tag += ` \fI` + roffEscape(ph) + `\fR`
			}
			usage = text
		}
		fmt.Fprintf(b, ".TP\n%s\n", tag)
		roffText(b, usage)
	}
}

// subcommandFlags is a subcommand's own flags, without the library's --help,
// which every command takes and OPTIONS lists once.
func subcommandFlags(c *cli.Command) []cli.Flag {
	var out []cli.Flag
	for _, f := range c.VisibleFlags() {
		if f.Names()[0] != "help" {
			out = append(out, f)
		}
	}
	return out
}

// writeMan writes the page for the command tree at root.
func writeMan(w io.Writer, root *cli.Command) error {
	var b strings.Builder
	name := root.Name
	// No date or version in the title line: the page is committed, and
	// must not go stale because of the day or the build.
	fmt.Fprintf(&b, ".TH %s 1 \"\" %s \"User Commands\"\n", strings.ToUpper(name), name)
	fmt.Fprintf(&b, ".SH NAME\n%s \\- %s\n", name, roffEscape(root.Usage))

	b.WriteString(".SH SYNOPSIS\n")
	// The root's usage lines, then those of each command they do not
	// already show.
	synopsis := strings.Split(root.UsageText, "\n")
	shown := func(full string) bool {
		for _, l := range synopsis {
			if l == full || strings.HasPrefix(l, full+" ") {
				return true
			}
		}
		return false
	}
	var walk func(c *cli.Command)
	walk = func(c *cli.Command) {
		for _, s := range c.VisibleCommands() {
			switch {
			case shown(s.FullName()):
			case s.UsageText != "":
				synopsis = append(synopsis, strings.Split(s.UsageText, "\n")...)
			default:
				walk(s)
			}
		}
	}
	walk(root)
	roffSynopsis(&b, name, synopsis)

	b.WriteString(".SH DESCRIPTION\n")
	roffText(&b, root.Description)

	b.WriteString(".SH OPTIONS\n")
	roffText(&b, "Flags go before --; they may also follow a command name, as in "+name+" policy --profile codex -- codex.")
	roffFlags(&b, root.VisibleFlags())

	b.WriteString(".SH COMMANDS\n")
	for _, s := range root.VisibleCommands() {
		fmt.Fprintf(&b, ".SS %s\n", roffEscape(s.Name))
		if s.UsageText != "" {
			roffSynopsis(&b, name, strings.Split(s.UsageText, "\n"))
			b.WriteString(".PP\n")
		}
		roffText(&b, s.Usage)
		if s.Description != "" {
			b.WriteString(".PP\n")
			roffDescription(&b, s.Description)
		}
		roffFlags(&b, subcommandFlags(s))
		// Deeper commands are entries of their parent's section.
		var nested func(c *cli.Command)
		nested = func(c *cli.Command) {
			for _, n := range c.VisibleCommands() {
				fmt.Fprintf(&b, ".TP\n\\fB%s\\fR\n", roffEscape(strings.TrimPrefix(n.FullName(), name+" ")))
				roffText(&b, n.Usage)
				if fl := subcommandFlags(n); len(fl) > 0 {
					b.WriteString(".RS\n")
					roffFlags(&b, fl)
					b.WriteString(".RE\n")
				}
				nested(n)
			}
		}
		nested(s)
	}

	b.WriteString(manTail(name))
	_, err := io.WriteString(w, b.String())
	return err
}

// roffDescription writes a command's description: prose, except that
// indented lines (commands to type) are kept as they are.
func roffDescription(b *strings.Builder, text string) {
	var prose []string
	flush := func() {
		if len(prose) > 0 {
			roffText(b, strings.Join(prose, "\n"))
			prose = nil
		}
	}
	var code []string
	flushCode := func() {
		if len(code) > 0 {
			b.WriteString(".PP\n.RS\n.nf\n")
			for _, l := range code {
				b.WriteString(roffEscape(l) + "\n")
			}
			b.WriteString(".fi\n.RE\n")
			code = nil
		}
	}
	for _, l := range strings.Split(strings.TrimSpace(text), "\n") {
		if strings.HasPrefix(l, " ") || strings.HasPrefix(l, "\t") {
			flush()
			code = append(code, strings.TrimSpace(l))
		} else {
			flushCode()
			prose = append(prose, l)
		}
	}
	flush()
	flushCode()
}

// manTail is what the command tree does not hold: exit status,
// environment, files.
func manTail(name string) string {
	var b strings.Builder
	b.WriteString(".SH EXIT STATUS\n")
	for _, row := range [][2]string{
		{"0", "CMD exited with status 0 (and the session was removed)."},
		{"the status of CMD", "CMD exited with that status."},
		{"128+N", "CMD died of signal N."},
		{"125", "agentbox itself failed: a usage error (bad flag, missing --), an unsafe session root, namespaces or Landlock unavailable, or a session it could not remove."},
		{"126", "CMD was found but cannot be executed."},
		{"127", "CMD was not found inside the sandbox."},
	} {
		fmt.Fprintf(&b, ".TP\n.B %s\n%s\n", roffEscape(row[0]), roffEscape(row[1]))
	}
	b.WriteString(".PP\n")
	roffText(&b, name+" doctor exits 1 when the host does not give every guarantee.")

	b.WriteString(".SH ENVIRONMENT\n")
	for _, row := range [][2]string{
		{"AGENTBOX_ROOT", "The session root, when --root is not given."},
		{"XDG_STATE_HOME", "When absolute, and neither --root nor AGENTBOX_ROOT is set, the session root is $XDG_STATE_HOME/agentbox; else ~/.local/state/agentbox, else (no usable home) /tmp/agentbox-UID."},
		{"XDG_CONFIG_HOME", "When absolute, config.toml and profiles/ are read from $XDG_CONFIG_HOME/agentbox instead of ~/.config/agentbox."},
		{"HOME", "The home directory: ~ in profiles and flags, and the default session root and configuration directory."},
	} {
		fmt.Fprintf(&b, ".TP\n.B %s\n%s\n", row[0], roffEscape(row[1]))
	}
	b.WriteString(".PP\n")
	roffText(&b, "Inside the sandbox, "+name+" sets these and passes every other variable through unchanged:")
	for _, row := range [][2]string{
		{strings.Join(env.TempVars, ", "), env.TmpDir + ", the session's private temporary directory."},
		{"XDG_RUNTIME_DIR", "/run/user/UID, the session's private runtime directory."},
		{"AGENTBOX_SESSION", "The session's id (12 hex digits), as agentbox ps lists it."},
		{"AGENTBOX_NEST", "Set inside: the socket of the session's init. An agentbox run inside the sandbox sends its request there and gets a nested session, whose write policy is never wider than the enclosing one."},
	} {
		fmt.Fprintf(&b, ".TP\n.B %s\n%s\n", row[0], roffEscape(row[1]))
	}

	b.WriteString(".SH FILES\n")
	for _, row := range [][2]string{
		{"~/.config/agentbox/config.toml", "Settings for every run, under [defaults]: landlock, profile, allow_degraded, rw, ro, hide, show. TOML, decoded strictly; it must be yours (or root's) and not writable by others."},
		{"~/.config/agentbox/profiles/NAME.toml", "Your own profiles, chosen with --profile NAME or by the command names they list; a profile with a built-in's name replaces it."},
		{"~/.local/state/agentbox/ID", "A session: its state file and its tmp/, var-tmp/ and run/ directories, removed when CMD exits."},
	} {
		fmt.Fprintf(&b, ".TP\n.I %s\n%s\n", roffEscape(row[0]), roffEscape(row[1]))
	}

	b.WriteString(".SH SEE ALSO\n")
	b.WriteString(".BR unshare (1),\n.BR user_namespaces (7),\n.BR mount_namespaces (7),\n.BR pid_namespaces (7),\n.BR landlock (7)\n.PP\n")
	roffText(&b, "README.md in the source tree explains the policy, the guarantees and the threat model in full.")
	return b.String()
}
