package main

// agentbox completion bash|zsh|fish: shell completion scripts generated
// from the command tree (commands, flags, their usage), so that a flag added
// to the CLI is completed without anyone editing a script.
//
// The scripts are static: they never run agentbox while completing. The
// library's own dynamic completion (EnableShellCompletion) re-runs the binary
// with the words typed so far and --generate-shell-completion appended. Here
// that would be unsafe: SplitArgs hands everything after "--" to the command
// untouched, so completing `agentbox -- claude <TAB>` would start claude in a
// sandbox instead of completing; and its bash script evals the command line.

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/urfave/cli/v3"

	"github.com/agentbox/agentbox/internal/profile"
	"github.com/agentbox/agentbox/landlock"
)

// completionShells are the shells a script is generated for, in the order
// help and errors list them.
var completionShells = []struct {
	name    string
	install string
	write   func(io.Writer, []compNode) error
}{
	{"bash", "source <(agentbox completion bash)   # in ~/.bashrc", writeBash},
	{"zsh", "source <(agentbox completion zsh)    # in ~/.zshrc, after compinit", writeZsh},
	{"fish", "agentbox completion fish > ~/.config/fish/completions/agentbox.fish", writeFish},
}

// usageOnError turns the library's flag and argument errors into a usage
// error (exit status 125 with a hint), as every other command does.
func usageOnError(_ context.Context, _ *cli.Command, err error, _ bool) error {
	return &usageError{err.Error()}
}

// completionCommand is `agentbox completion SHELL`. argv is what followed
// "--" on the command line (nil when there was no "--"); it takes none.
func completionCommand(argv []string) *cli.Command {
	var names, install []string
	for _, sh := range completionShells {
		names = append(names, sh.name)
		install = append(install, "  "+sh.install)
	}
	valid := strings.Join(names[:len(names)-1], ", ") + " or " + names[len(names)-1]
	cmd := &cli.Command{
		Name:         "completion",
		Usage:        "print a completion script for " + valid + " on stdout",
		UsageText:    "agentbox completion " + strings.Join(names, "|"),
		Description:  "Install it with one of:\n" + strings.Join(install, "\n"),
		OnUsageError: usageOnError,
		Action: func(ctx context.Context, c *cli.Command) error {
			if c.Args().Len() == 0 {
				return &usageError{"completion needs a shell: " + valid}
			}
			return &usageError{fmt.Sprintf("completion: unknown shell %q; give %s", c.Args().First(), valid)}
		},
	}
	for _, sh := range completionShells {
		cmd.Commands = append(cmd.Commands, &cli.Command{
			Name:         sh.name,
			Usage:        "print the " + sh.name + " completion script",
			UsageText:    "agentbox completion " + sh.name,
			OnUsageError: usageOnError,
			Action: func(ctx context.Context, c *cli.Command) error {
				if argv != nil {
					return &usageError{"completion takes no command after --"}
				}
				if c.Args().Len() > 0 {
					return &usageError{fmt.Sprintf("completion %s takes no arguments", sh.name)}
				}
				return sh.write(c.Root().Writer, completionTree(c.Root()))
			},
		})
	}
	return cmd
}

// compNode is what completion needs of one command: where it is, the
// flags the library accepts there, and its visible subcommands.
type compNode struct {
	// path is the command's names below the root joined by "/": "" for
	// the root, "completion/bash".
	path  string
	flags []compFlag
	subs  []compSub
	// leaf: no subcommands, so a word that is not a flag is an argument
	// (a PATH, an ID), completed as a file name.
	leaf bool
}

type compSub struct {
	names []string // the name first, then aliases
	usage string
}

type compFlag struct {
	names []string // as typed: "--verbose", "-v"
	usage string   // with the placeholder's backquotes removed
	value flagValue
}

// flagValue says what follows a flag: nothing (a boolean flag), or a value
// completed from fixed choices, directories or any path; a value with none
// of those (a number) is not completed.
type flagValue struct {
	takes       bool
	choices     []string
	dirs, files bool
}

// completionTree walks the command tree from root, depth first, skipping
// hidden commands and flags. A command's flags are its own and the
// persistent (non-local) flags of its ancestors, as the library parses
// them.
func completionTree(root *cli.Command) []compNode {
	var nodes []compNode
	var walk func(c *cli.Command, path string, inherited []cli.Flag)
	walk = func(c *cli.Command, path string, inherited []cli.Flag) {
		n := compNode{path: path}
		own := c.VisibleFlags()
		for _, f := range own {
			n.flags = append(n.flags, newCompFlag(f))
		}
		for _, f := range inherited {
			if !definesAny(own, f.Names()) {
				n.flags = append(n.flags, newCompFlag(f))
			}
		}
		var pass []cli.Flag
		for _, f := range append(own, inherited...) {
			if lf, ok := f.(cli.LocalFlag); ok && !lf.IsLocal() {
				pass = append(pass, f)
			}
		}
		subs := c.VisibleCommands()
		for _, s := range subs {
			n.subs = append(n.subs, compSub{names: s.Names(), usage: s.Usage})
		}
		n.leaf = len(subs) == 0
		nodes = append(nodes, n)
		for _, s := range subs {
			p := s.Name
			if path != "" {
				p = path + "/" + s.Name
			}
			walk(s, p, pass)
		}
	}
	walk(root, "", nil)
	return nodes
}

func definesAny(flags []cli.Flag, names []string) bool {
	for _, f := range flags {
		for _, a := range f.Names() {
			for _, b := range names {
				if a == b {
					return true
				}
			}
		}
	}
	return false
}

func newCompFlag(f cli.Flag) compFlag {
	cf := compFlag{value: valueOf(f)}
	for _, n := range f.Names() {
		if len(n) == 1 {
			cf.names = append(cf.names, "-"+n)
		} else {
			cf.names = append(cf.names, "--"+n)
		}
	}
	if df, ok := f.(cli.DocGenerationFlag); ok {
		_, cf.usage = unquoteUsage(df.GetUsage())
	}
	return cf
}

// valueOf says what a flag's value is. The definition says whether the
// flag takes one, its type and its placeholder (`DIR`, `PATH`); the few
// values that are fixed choices are named here, from the lists the flags
// are checked against.
func valueOf(f cli.Flag) flagValue {
	df, ok := f.(cli.DocGenerationFlag)
	if !ok || !df.TakesValue() {
		return flagValue{}
	}
	v := flagValue{takes: true}
	switch f.Names()[0] {
	case "landlock":
		for _, m := range landlock.Modes {
			v.choices = append(v.choices, string(m))
		}
		return v
	case "profile":
		v.choices = profile.BuiltinNames()
		v.files = true // --profile FILE
		return v
	}
	if st, ok := f.(cli.SchemaTyper); ok {
		switch st.SchemaType() {
		case "integer", "number", "duration", "date-time":
			return v
		}
	}
	if ph, _ := unquoteUsage(df.GetUsage()); ph == "DIR" {
		v.dirs = true
	} else {
		v.files = true
	}
	return v
}

// unquoteUsage returns the placeholder a usage string marks with
// backquotes ("session root `DIR`" → "DIR") and the usage without them, as
// the library's help shows it.
func unquoteUsage(usage string) (placeholder, text string) {
	i := strings.IndexByte(usage, '`')
	if i < 0 {
		return "", usage
	}
	j := strings.IndexByte(usage[i+1:], '`')
	if j < 0 {
		return "", usage
	}
	placeholder = usage[i+1 : i+1+j]
	return placeholder, usage[:i] + placeholder + usage[i+1+j+1:]
}

// shQuote quotes s for bash and zsh in single quotes; a quote inside ends
// them, is escaped with a backslash, and starts them again.
func shQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// fishQuote quotes s for fish, where \ and ' are the only escapes inside
// single quotes.
func fishQuote(s string) string {
	return "'" + strings.NewReplacer(`\`, `\\`, `'`, `\'`).Replace(s) + "'"
}

func shWords(ws []string) string {
	q := make([]string, len(ws))
	for i, w := range ws {
		q[i] = shQuote(w)
	}
	return strings.Join(q, " ")
}

// kind is a flag's value as the bash and zsh scripts name it: "" for no
// value, else dirs, files or value (choices only, or nothing to complete).
func (v flagValue) kind() string {
	switch {
	case !v.takes:
		return ""
	case v.dirs:
		return "dirs"
	case v.files:
		return "files"
	}
	return "value"
}

// writeCaseTable writes the shell function named on the last line of head
// (the lines before it are its comment): a case on the command path $1
// that sets reply to words(node) for each node.
func writeCaseTable(b *strings.Builder, head string, nodes []compNode, words func(compNode) []string) {
	b.WriteString(head + "() {\n\tcase $1 in\n")
	for _, n := range nodes {
		fmt.Fprintf(b, "\t(%s) reply=(%s) ;;\n", shQuote(n.path), shWords(words(n)))
	}
	b.WriteString("\t(*) reply=() ;;\n\tesac\n}\n\n")
}

// writeShTables writes the three lookup functions the bash and zsh scripts
// share; pair formats a name and its usage as one candidate (zsh's
// _describe takes "name:usage", bash takes the name alone).
func writeShTables(b *strings.Builder, nodes []compNode, pair func(name, usage string) string) {
	writeCaseTable(b, "# __agentbox_subcommands PATH sets reply to the subcommands of the command at\n"+
		"# PATH (its names below agentbox, joined by /).\n__agentbox_subcommands", nodes, func(n compNode) (ws []string) {
		for _, s := range n.subs {
			ws = append(ws, pair(s.names[0], s.usage))
		}
		return ws
	})
	writeCaseTable(b, "# __agentbox_names PATH sets reply to every name of the subcommands at PATH.\n__agentbox_names", nodes, func(n compNode) (ws []string) {
		for _, s := range n.subs {
			ws = append(ws, s.names...)
		}
		return ws
	})
	writeCaseTable(b, "# __agentbox_flags PATH sets reply to the flags accepted at PATH.\n__agentbox_flags", nodes, func(n compNode) (ws []string) {
		for _, f := range n.flags {
			for _, name := range f.names {
				ws = append(ws, pair(name, f.usage))
			}
		}
		return ws
	})

	b.WriteString("# __agentbox_value PATH FLAG sets kind to what follows FLAG at PATH: empty\n" +
		"# when it takes no value, else dirs, files or value; and reply to the fixed\n" +
		"# choices for that value, if any.\n" +
		"__agentbox_value() {\n\tkind= reply=()\n\tcase $1 in\n")
	for _, n := range nodes {
		fmt.Fprintf(b, "\t(%s)\n\t\tcase $2 in\n", shQuote(n.path))
		for _, f := range n.flags {
			if !f.value.takes {
				continue
			}
			var pats []string
			for _, name := range f.names {
				pats = append(pats, shQuote(name))
			}
			fmt.Fprintf(b, "\t\t(%s) kind=%s reply=(%s) ;;\n", strings.Join(pats, "|"), f.value.kind(), shWords(f.value.choices))
		}
		b.WriteString("\t\tesac ;;\n")
	}
	b.WriteString("\tesac\n}\n\n")

	b.WriteString("# __agentbox_leaf PATH succeeds when the command at PATH has no subcommands,\n" +
		"# so that its arguments are file names.\n" +
		"__agentbox_leaf() {\n\tcase $1 in\n")
	var leaves []string
	for _, n := range nodes {
		if n.leaf {
			leaves = append(leaves, shQuote(n.path))
		}
	}
	if len(leaves) > 0 {
		fmt.Fprintf(b, "\t(%s) return 0 ;;\n", strings.Join(leaves, "|"))
	}
	b.WriteString("\tesac\n\treturn 1\n}\n\n")
}

// writeBash writes the bash script. It needs nothing but bash itself; with
// the bash-completion package loaded, the command after "--" is completed by
// its own completion.
func writeBash(w io.Writer, nodes []compNode) error {
	var b strings.Builder
	b.WriteString(`# bash completion for agentbox, generated by "agentbox completion bash" from
# its command-line definition. Load it with: source <(agentbox completion bash)

`)
	writeShTables(&b, nodes, func(name, _ string) string { return name })
	b.WriteString(bashMain)
	_, err := io.WriteString(w, b.String())
	return err
}

const bashMain = `# __agentbox_reply_value CUR completes CUR as the value of the flag that
# __agentbox_value looked up last.
__agentbox_reply_value() {
	local IFS=$'\n'
	COMPREPLY=()
	if ((${#reply[@]})); then
		COMPREPLY=($(compgen -W "${reply[*]}" -- "$1"))
	fi
	case $kind in
	dirs)
		compopt -o filenames 2>/dev/null
		COMPREPLY+=($(compgen -d -- "$1")) ;;
	files)
		compopt -o filenames 2>/dev/null
		COMPREPLY+=($(compgen -f -- "$1")) ;;
	esac
}

# __agentbox_argv N completes the command's argv, which starts at word N
# (after "--"): nothing there is agentbox's.
__agentbox_argv() {
	if declare -F _comp_command_offset >/dev/null; then
		_comp_command_offset "$1"
		return
	fi
	if declare -F _command_offset >/dev/null; then
		_command_offset "$1"
		return
	fi
	local IFS=$'\n' cur=${COMP_WORDS[COMP_CWORD]}
	compopt -o filenames 2>/dev/null
	if (($1 == COMP_CWORD)) && [[ $cur != */* ]]; then
		COMPREPLY=($(compgen -c -- "$cur"))
	else
		COMPREPLY=($(compgen -f -- "$cur"))
	fi
}

_agentbox() {
	local cur=${COMP_WORDS[COMP_CWORD]} at= w i n expect= kind
	local -a reply
	COMPREPLY=()
	# Walk the words before the cursor: flags, the values of those that
	# take one, subcommands (which change the flags that apply), and "--",
	# after which everything is the command's.
	for ((i = 1; i < COMP_CWORD; i++)); do
		w=${COMP_WORDS[i]}
		if [[ -n $expect ]]; then
			# bash splits --flag=value at the "=" (COMP_WORDBREAKS): the
			# value is the word after it.
			[[ $w == = ]] || expect=
			continue
		fi
		case $w in
		--)
			__agentbox_argv $((i + 1))
			return ;;
		-*=*) ;;
		-*)
			__agentbox_value "$at" "$w"
			[[ -n $kind ]] && expect=1 ;;
		*)
			__agentbox_names "$at"
			for n in "${reply[@]}"; do
				if [[ $n == "$w" ]]; then
					at=${at:+$at/}$w
					break
				fi
			done ;;
		esac
	done
	if [[ -n $expect ]]; then
		# "--flag=" with the cursor after the "=" is the word "=".
		[[ $cur == = ]] && cur=
		__agentbox_reply_value "$cur"
		return
	fi
	case $cur in
	-*=*)
		__agentbox_value "$at" "${cur%%=*}"
		if [[ -n $kind ]]; then
			__agentbox_reply_value "${cur#*=}"
			# bash completes only what follows the "=" when "=" is in
			# COMP_WORDBREAKS, else the whole word.
			if [[ $COMP_WORDBREAKS != *=* ]]; then
				COMPREPLY=("${COMPREPLY[@]/#/${cur%%=*}=}")
			fi
		fi ;;
	-*)
		__agentbox_flags "$at"
		COMPREPLY=($(compgen -W "${reply[*]}" -- "$cur")) ;;
	*)
		if __agentbox_leaf "$at"; then
			kind=files reply=()
			__agentbox_reply_value "$cur"
		else
			__agentbox_subcommands "$at"
			COMPREPLY=($(compgen -W "${reply[*]}" -- "$cur"))
		fi ;;
	esac
}

complete -F _agentbox agentbox
`

// writeZsh writes the zsh script: a completion function for fpath (its
// #compdef line registers it when compinit finds it) that also works when
// sourced after compinit.
func writeZsh(w io.Writer, nodes []compNode) error {
	var b strings.Builder
	b.WriteString(`#compdef agentbox
# zsh completion for agentbox, generated by "agentbox completion zsh" from its
# command-line definition. Install it as _agentbox in a directory of fpath
# before compinit runs, or source it after compinit:
#   agentbox completion zsh > "${fpath[1]}/_agentbox"
#   source <(agentbox completion zsh)

`)
	// _describe splits "name:description" at the first unescaped colon.
	writeShTables(&b, nodes, func(name, usage string) string {
		return strings.ReplaceAll(name, ":", `\:`) + ":" + usage
	})
	b.WriteString(zshMain)
	_, err := io.WriteString(w, b.String())
	return err
}

const zshMain = `# __agentbox_reply_value completes the current word as the value of the flag
# that __agentbox_value looked up last.
__agentbox_reply_value() {
	local ret=1
	if (( $#reply )); then
		compadd -a reply && ret=0
	fi
	case $kind in
	(dirs) _directories && ret=0 ;;
	(files) _files && ret=0 ;;
	esac
	return ret
}

_agentbox() {
	local at= w i expect= kind
	local -a reply
	# Walk the words before the cursor: flags, the values of those that
	# take one, subcommands (which change the flags that apply), and "--",
	# after which everything is the command's.
	for (( i = 2; i < CURRENT; i++ )); do
		w=${words[i]}
		if [[ -n $expect ]]; then
			expect=
			continue
		fi
		case $w in
		(--)
			# The command's argv: complete it as a command line of its own.
			shift $i words
			(( CURRENT -= i ))
			_normal
			return ;;
		(-*=*) ;;
		(-*)
			__agentbox_value "$at" "$w"
			[[ -n $kind ]] && expect=1 ;;
		(*)
			__agentbox_names "$at"
			if (( ${reply[(Ie)$w]} )); then
				at=${at:+$at/}$w
			fi ;;
		esac
	done
	if [[ -n $expect ]]; then
		__agentbox_reply_value
		return
	fi
	local cur=${words[CURRENT]}
	case $cur in
	(-*=*)
		__agentbox_value "$at" "${cur%%=*}"
		if [[ -n $kind ]]; then
			compset -P '*='
			__agentbox_reply_value
		fi ;;
	(-*)
		__agentbox_flags "$at"
		_describe -t options option reply ;;
	(*)
		if __agentbox_leaf "$at"; then
			_files
		else
			__agentbox_subcommands "$at"
			_describe -t commands command reply
		fi ;;
	esac
}

# Autoloaded from fpath, this file is the body of _agentbox: define the
# functions above, then complete. Sourced, register the function instead.
if [[ $funcstack[1] == _agentbox ]]; then
	_agentbox "$@"
else
	compdef _agentbox agentbox
fi
`

// writeFish writes the fish script: one complete rule per flag and
// subcommand, each guarded by where the command line is.
func writeFish(w io.Writer, nodes []compNode) error {
	var b strings.Builder
	b.WriteString(fishHead)
	b.WriteString("function __agentbox_names\n\tswitch $argv[1]\n")
	for _, n := range nodes {
		var ws []string
		for _, s := range n.subs {
			ws = append(ws, s.names...)
		}
		if len(ws) > 0 {
			fmt.Fprintf(&b, "\t\tcase %s\n\t\t\tprintf '%%s\\n' %s\n", fishQuote(n.path), fishWords(ws))
		}
	}
	b.WriteString("\tend\nend\n\n")
	b.WriteString("function __agentbox_takes_value\n\tswitch $argv[1]\n")
	for _, n := range nodes {
		var ws []string
		for _, f := range n.flags {
			if f.value.takes {
				ws = append(ws, f.names...)
			}
		}
		if len(ws) > 0 {
			fmt.Fprintf(&b, "\t\tcase %s\n\t\t\tcontains -- $argv[2] %s\n\t\t\treturn\n", fishQuote(n.path), fishWords(ws))
		}
	}
	b.WriteString("\tend\n\treturn 1\nend\n\n")
	b.WriteString(fishFuncs)

	b.WriteString("# Nothing is a file name unless a rule below says so.\ncomplete -c agentbox -e\ncomplete -c agentbox -f\n")
	b.WriteString("complete -c agentbox -n '__agentbox_at --' -a '(__agentbox_argv)'\n")
	for _, n := range nodes {
		at := fishQuote("__agentbox_at " + fishQuote(n.path))
		fmt.Fprintf(&b, "\n# %s\n", strings.TrimSpace("agentbox "+strings.ReplaceAll(n.path, "/", " ")))
		for _, s := range n.subs {
			fmt.Fprintf(&b, "complete -c agentbox -n %s -a %s -d %s\n", at, fishQuote(s.names[0]), fishQuote(s.usage))
		}
		if n.leaf {
			fmt.Fprintf(&b, "complete -c agentbox -n %s -F\n", at)
		}
		for _, f := range n.flags {
			var opt []string
			for _, name := range f.names {
				if strings.HasPrefix(name, "--") {
					opt = append(opt, "-l", name[2:])
				} else {
					opt = append(opt, "-s", name[1:])
				}
			}
			switch v := f.value; {
			case !v.takes:
			case v.dirs:
				opt = append(opt, "-x", "-a", fishQuote("(__fish_complete_directories (commandline -ct))"))
			case v.files:
				opt = append(opt, "-r", "-F")
			default:
				opt = append(opt, "-x")
			}
			if len(f.value.choices) > 0 {
				opt = append(opt, "-a", fishQuote(strings.Join(f.value.choices, " ")))
			}
			fmt.Fprintf(&b, "complete -c agentbox -n %s %s -d %s\n", at, strings.Join(opt, " "), fishQuote(f.usage))
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func fishWords(ws []string) string {
	q := make([]string, len(ws))
	for i, w := range ws {
		q[i] = fishQuote(w)
	}
	return strings.Join(q, " ")
}

const fishHead = `# fish completion for agentbox, generated by "agentbox completion fish" from
# its command-line definition. Install it with:
#   agentbox completion fish > ~/.config/fish/completions/agentbox.fish

# __agentbox_names PATH prints every name of the subcommands of the command at
# PATH (its names below agentbox, joined by /).
# __agentbox_takes_value PATH FLAG succeeds when FLAG takes a value at PATH.
`

const fishFuncs = `# __agentbox_path prints where the command line is: the PATH of the
# subcommands given so far, or -- once past "--", after which everything is
# the command's argv.
function __agentbox_path
	set -l tokens (commandline -opc)
	set -e tokens[1]
	set -l at ''
	set -l expect 0
	for t in $tokens
		if test $expect = 1
			set expect 0
			continue
		end
		switch $t
			case --
				printf '%s\n' --
				return
			case '-*=*'
			case '-*'
				if __agentbox_takes_value "$at" $t
					set expect 1
				end
			case '*'
				if contains -- $t (__agentbox_names "$at")
					if test -n "$at"
						set at "$at/$t"
					else
						set at $t
					end
				end
		end
	end
	printf '%s\n' $at
end

function __agentbox_at
	set -l at (__agentbox_path)
	test "$at" = "$argv[1]"
end

# __agentbox_argv completes the command line after the first "--" (as typed,
# quotes and all) as one of its own.
function __agentbox_argv
	set -l line (string replace -rf -- '^\s*\S+\s+(.*?\s)?--\s+' '' (commandline -cp))
	or return
	complete --do-complete="$line"
end

`
