package main

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/urfave/cli/v3"

	"github.com/agentbox/agentbox/internal/profile"
	"github.com/agentbox/agentbox/internal/testenv"
	"github.com/agentbox/agentbox/landlock"
)

// runMain runs agentbox with args in this process and fails t unless it
// exits 0.
func runMain(t *testing.T, args ...string) string {
	t.Helper()
	var out, errb bytes.Buffer
	if code := Main(append([]string{"agentbox"}, args...), &out, &errb); code != 0 {
		t.Fatalf("Main(%q) = %d, stderr %q; want 0", args, code, errb.String())
	}
	return out.String()
}

// completionScript writes agentbox's script for shell to a fresh file.
func completionScript(t *testing.T, shell string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "agentbox."+shell)
	if err := os.WriteFile(p, []byte(runMain(t, "completion", shell)), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// shellEnv is an environment that keeps the shells away from the user's
// files: no rc files are read, nothing is written to the real home.
func shellEnv(home string) []string {
	return []string{"PATH=" + os.Getenv("PATH"), "HOME=" + home, "XDG_CONFIG_HOME=" + home + "/.config",
		"XDG_DATA_HOME=" + home + "/.local/share", "LC_ALL=C"}
}

// lines runs cmd in dir and returns its stdout split into lines; stderr
// must be empty.
func lines(t *testing.T, dir string, cmd *exec.Cmd) []string {
	t.Helper()
	var out, errb bytes.Buffer
	cmd.Dir, cmd.Stdout, cmd.Stderr = dir, &out, &errb
	cmd.Env = shellEnv(t.TempDir())
	if err := cmd.Run(); err != nil || errb.Len() > 0 {
		t.Fatalf("%q: %v, stderr %q", cmd.Args, err, errb.String())
	}
	s := strings.TrimRight(out.String(), "\n")
	if s == "" {
		return nil
	}
	return strings.Split(s, "\n")
}

// completionDir is a working directory for the completion tests: one
// directory d and one file f, so that file and directory completion have a
// known answer.
func completionDir(t *testing.T) string {
	dir := t.TempDir()
	if err := os.Mkdir(filepath.Join(dir, "d"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "f"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

// rootFlagNames lists every name of the root command's own flags, walked
// from the definition, as typed ("--root", "-v").
func rootFlagNames() []string {
	var names []string
	for _, f := range newApp(nil, nil, nil).Flags {
		for _, n := range f.Names() {
			if len(n) == 1 {
				names = append(names, "-"+n)
			} else {
				names = append(names, "--"+n)
			}
		}
	}
	return names
}

func modes() []string {
	var ms []string
	for _, m := range landlock.Modes {
		ms = append(ms, string(m))
	}
	return ms
}

func TestCompletionUsageErrors(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"agentbox", "completion"}, "bash, zsh or fish"},
		{[]string{"agentbox", "completion", "tcsh"}, `unknown shell "tcsh"; give bash, zsh or fish`},
		{[]string{"agentbox", "completion", "bash", "extra"}, "takes no arguments"},
		{[]string{"agentbox", "completion", "bash", "--bogus"}, "bogus"},
		{[]string{"agentbox", "completion", "bash", "--", "x"}, "no command after --"},
		{[]string{"agentbox", "man", "x"}, "man takes no arguments"},
		{[]string{"agentbox", "man", "--", "x"}, "no command after --"},
	} {
		var out, errb bytes.Buffer
		code := Main(tc.args, &out, &errb)
		if code != 125 || !strings.Contains(errb.String(), tc.want) || out.Len() != 0 {
			t.Errorf("Main(%q) = %d, stderr %q, stdout %q; want 125, stderr ~%q, no stdout", tc.args, code, errb.String(), out.String(), tc.want)
		}
	}
}

func TestHelpMentionsCompletion(t *testing.T) {
	if out := runMain(t, "--help"); !strings.Contains(out, "completion") {
		t.Errorf("agentbox --help does not mention the completion command:\n%s", out)
	}
}

func TestCompletionValueOf(t *testing.T) {
	for _, tc := range []struct {
		flag cli.Flag
		want flagValue
	}{
		{&cli.BoolFlag{Name: "keep"}, flagValue{}},
		{&cli.StringFlag{Name: "root", Usage: "session root `DIR`"}, flagValue{takes: true, dirs: true}},
		{&cli.StringSliceFlag{Name: "rw", Usage: "allow `PATH`"}, flagValue{takes: true, files: true}},
		{&cli.StringFlag{Name: "x", Usage: "no placeholder"}, flagValue{takes: true, files: true}},
		{&cli.IntFlag{Name: "status-fd", Usage: "descriptor `N`"}, flagValue{takes: true}},
		{&cli.DurationFlag{Name: "timeout"}, flagValue{takes: true}},
		{&cli.StringFlag{Name: "landlock", Usage: "`MODE`"}, flagValue{takes: true, choices: modes()}},
		{&cli.StringFlag{Name: "profile", Usage: "`NAME`"}, flagValue{takes: true, choices: profile.BuiltinNames(), files: true}},
	} {
		got := valueOf(tc.flag)
		if got.takes != tc.want.takes || got.dirs != tc.want.dirs || got.files != tc.want.files || !slices.Equal(got.choices, tc.want.choices) {
			t.Errorf("valueOf(--%s) = %+v, want %+v", tc.flag.Names()[0], got, tc.want)
		}
	}
}

func TestCompletionUnquoteUsage(t *testing.T) {
	for _, tc := range []struct{ in, ph, text string }{
		{"session root `DIR` (default)", "DIR", "session root DIR (default)"},
		{"no placeholder", "", "no placeholder"},
		{"one ` quote", "", "one ` quote"},
		{"`A` and `B`", "A", "A and `B`"},
	} {
		if ph, text := unquoteUsage(tc.in); ph != tc.ph || text != tc.text {
			t.Errorf("unquoteUsage(%q) = %q, %q; want %q, %q", tc.in, ph, text, tc.ph, tc.text)
		}
	}
}

// TestCompletionTree checks the walk on a tree with a flag the real CLI
// does not have (yet): it is completed without any change to the scripts.
func TestCompletionTree(t *testing.T) {
	root := &cli.Command{
		Name: "agentbox",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "root", Usage: "`DIR`"},
			&cli.IntFlag{Name: "status-fd", Usage: "descriptor `N`"},
			&cli.BoolFlag{Name: "only-here", Local: true},
			&cli.BoolFlag{Name: "secret", Hidden: true},
		},
		Commands: []*cli.Command{
			{Name: "ps", Flags: []cli.Flag{&cli.BoolFlag{Name: "json"}}},
			{Name: "man", Hidden: true},
			{Name: "completion", Commands: []*cli.Command{{Name: "bash"}}},
		},
	}
	nodes := completionTree(root)
	var paths []string
	flags := map[string][]string{}
	for _, n := range nodes {
		paths = append(paths, n.path)
		for _, f := range n.flags {
			flags[n.path] = append(flags[n.path], f.names...)
		}
	}
	if want := []string{"", "ps", "completion", "completion/bash"}; !slices.Equal(paths, want) {
		t.Errorf("completionTree paths = %q, want %q (hidden commands left out)", paths, want)
	}
	for path, want := range map[string][]string{
		"":                {"--root", "--status-fd", "--only-here"},
		"ps":              {"--json", "--root", "--status-fd"},
		"completion/bash": {"--root", "--status-fd"},
	} {
		if !slices.Equal(flags[path], want) {
			t.Errorf("completionTree flags at %q = %q, want %q (own, then the ancestors' persistent ones)", path, flags[path], want)
		}
	}
	var b strings.Builder
	if err := writeBash(&b, nodes); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "('--status-fd') kind=value reply=()") {
		t.Errorf("bash script does not complete --status-fd as a value with no candidates:\n%s", b.String())
	}
}

func TestCompletionSyntax(t *testing.T) {
	for _, tc := range []struct {
		shell string
		check []string
	}{
		{"bash", []string{"bash", "--norc", "--noprofile", "-n"}},
		{"zsh", []string{"zsh", "-f", "-n"}},
		{"fish", []string{"fish", "--no-config", "-n"}},
	} {
		t.Run(tc.shell, func(t *testing.T) {
			testenv.RequireCommand(t, tc.shell, tc.shell)
			script := completionScript(t, tc.shell)
			lines(t, t.TempDir(), exec.Command(tc.check[0], append(tc.check[1:], script)...))
		})
	}
}

// completionCase is a command line and what completing its last word must
// offer, in any order (the shells sort what they show): exactly want, or,
// with some, at least want; never any of not.
type completionCase struct {
	words []string
	want  []string
	some  bool
	not   []string
}

func sorted(s []string) []string {
	s = slices.Clone(s)
	slices.Sort(s)
	return s
}

func (tc completionCase) check(t *testing.T, got []string) {
	t.Helper()
	if tc.some {
		for _, w := range tc.want {
			if !slices.Contains(got, w) {
				t.Errorf("complete %q = %q, lacks %q", tc.words, got, w)
			}
		}
	} else if !slices.Equal(sorted(got), sorted(tc.want)) {
		t.Errorf("complete %q = %q, want %q", tc.words, got, tc.want)
	}
	for _, n := range tc.not {
		if slices.Contains(got, n) {
			t.Errorf("complete %q = %q, must not offer %q", tc.words, got, n)
		}
	}
}

func TestCompletionBash(t *testing.T) {
	bash := testenv.RequireCommand(t, "bash", "bash")
	script := completionScript(t, "bash")
	driver, err := filepath.Abs("testdata/completion/drive.bash")
	if err != nil {
		t.Fatal(err)
	}
	dir := completionDir(t)
	allLong := slices.DeleteFunc(rootFlagNames(), func(s string) bool { return !strings.HasPrefix(s, "--") })
	for _, tc := range []completionCase{
		{words: []string{"agentbox", "--lan"}, want: []string{"--landlock"}},
		{words: []string{"agentbox", "--landlock", ""}, want: modes()},
		{words: []string{"agentbox", "--landlock", "=", "b"}, want: []string{"best-effort"}},
		{words: []string{"agentbox", "--landlock", "="}, want: modes()},
		{words: []string{"agentbox", "cl"}, want: []string{"clean"}},
		{words: []string{"agentbox", "--landlock", "off", "-v", "cl"}, want: []string{"clean"}},
		{words: []string{"agentbox", "completion", ""}, want: []string{"bash", "zsh", "fish"}},
		{words: []string{"agentbox", "--root", ""}, want: []string{"d"}},
		{words: []string{"agentbox", "--rw", ""}, want: []string{"d", "f"}},
		{words: []string{"agentbox", "--profile", "cl"}, want: []string{"claude"}},
		{words: []string{"agentbox", "--profile", ""}, want: append(profile.BuiltinNames(), "d", "f")},
		{words: []string{"agentbox", "policy", "--lan"}, want: []string{"--landlock"}},
		{words: []string{"agentbox", "clean", "--dr"}, want: []string{"--dry-run"}},
		// Every flag of the definition, with nothing to add to the script.
		{words: []string{"agentbox", "--"}, want: allLong, some: true},
		// After "--" it is the command's argv: nothing of agentbox's.
		{words: []string{"agentbox", "--", "--lan"}, want: nil},
		{words: []string{"agentbox", "-v", "--", "ls", "--lan"}, want: nil},
		{words: []string{"agentbox", "--", "cl"}, not: []string{"clean"}, some: true},
		{words: []string{"agentbox", "--", "bas"}, want: []string{"bash"}, some: true},
		{words: []string{"agentbox", "--", "ls", ""}, want: []string{"d", "f"}},
	} {
		tc.check(t, lines(t, dir, exec.Command(bash, append([]string{"--norc", "--noprofile", driver, script}, tc.words...)...)))
	}
}

func TestCompletionZsh(t *testing.T) {
	zsh := testenv.RequireCommand(t, "zsh", "zsh")
	script := completionScript(t, "zsh")
	dir := completionDir(t)

	// Loaded both ways the script's header says: sourced after compinit,
	// and found in fpath by compinit through its #compdef line.
	fpathDir := t.TempDir()
	if err := os.WriteFile(filepath.Join(fpathDir, "_agentbox"), []byte(runMain(t, "completion", "zsh")), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ name, code, arg string }{
		{"sourced", `autoload -Uz compinit && compinit -u -D && source "$1" && print -r -- $_comps[agentbox] && (( $+functions[_agentbox] ))`, script},
		{"fpath", `fpath=("$1" $fpath) && autoload -Uz compinit && compinit -u -D && print -r -- $_comps[agentbox]`, fpathDir},
	} {
		got := lines(t, dir, exec.Command(zsh, "-f", "-c", tc.code, "zsh", tc.arg))
		if !slices.Equal(got, []string{"_agentbox"}) {
			t.Errorf("zsh, %s: compinit's function for agentbox = %q, want _agentbox", tc.name, got)
		}
	}

	driver, err := filepath.Abs("testdata/completion/drive.zsh")
	if err != nil {
		t.Fatal(err)
	}
	all := append(rootFlagNames(), "--help", "-h", "--version")
	for _, mode := range []string{"source", "autoload"} {
		file := script
		if mode == "autoload" {
			file = filepath.Join(fpathDir, "_agentbox")
		}
		// zsh filters candidates by the prefix typed itself: the driver
		// shows everything the script offered.
		for _, tc := range []completionCase{
			{words: []string{"agentbox", "--lan"}, want: all},
			{words: []string{"agentbox", "--landlock", ""}, want: modes()},
			{words: []string{"agentbox", "--landlock=b"}, want: modes()},
			{words: []string{"agentbox", "--root", ""}, want: []string{"<dirs>"}},
			{words: []string{"agentbox", "--profile", ""}, want: append(profile.BuiltinNames(), "<files>")},
			{words: []string{"agentbox", "cl"}, want: []string{"clean", "completion"}, some: true, not: []string{"bash"}},
			{words: []string{"agentbox", "completion", ""}, want: []string{"bash", "zsh", "fish"}},
			{words: []string{"agentbox", "policy", "--lan"}, want: []string{"--json", "--landlock"}, some: true},
			// After "--" the words are the command's, completed as a
			// command line of their own.
			{words: []string{"agentbox", "--", "--lan"}, want: []string{"<normal --lan 1>"}},
			{words: []string{"agentbox", "-v", "--root", "d", "--", "ls", "--lan"}, want: []string{"<normal ls --lan 2>"}},
		} {
			tc.check(t, lines(t, dir, exec.Command(zsh, append([]string{"-f", driver, mode, file}, tc.words...)...)))
		}
	}
}

func TestCompletionFish(t *testing.T) {
	fish := testenv.RequireCommand(t, "fish", "fish")
	script := completionScript(t, "fish")
	dir := completionDir(t)
	complete := func(line string) []string {
		var got []string
		for _, l := range lines(t, dir, exec.Command(fish, "--no-config", "-c", `source $argv[1]; and complete -C $argv[2]`, script, line)) {
			cand, _, _ := strings.Cut(l, "\t") // candidate TAB description
			got = append(got, cand)
		}
		return got
	}
	agentboxFlags := append(rootFlagNames(), "--help", "-h", "--version")
	for _, tc := range []struct {
		line string
		completionCase
	}{
		{"agentbox --lan", completionCase{want: []string{"--landlock"}}},
		{"agentbox --landlock ", completionCase{want: modes()}},
		{"agentbox --landlock=b", completionCase{want: []string{"--landlock=best-effort"}}},
		{"agentbox cl", completionCase{want: []string{"clean"}}},
		{"agentbox --landlock off cl", completionCase{want: []string{"clean"}}},
		{"agentbox completion ", completionCase{want: []string{"bash", "fish", "zsh"}}},
		{"agentbox --root ", completionCase{want: []string{"d/"}}},
		{"agentbox --profile cl", completionCase{want: []string{"claude"}}},
		{"agentbox policy --js", completionCase{want: []string{"--json"}}},
		// After "--" it is the command's argv: nothing of agentbox's.
		{"agentbox -- --lan", completionCase{some: true, not: agentboxFlags}},
		{"agentbox -v -- ls --lan", completionCase{some: true, not: agentboxFlags}},
		{"agentbox -- cl", completionCase{some: true, not: []string{"clean"}}},
	} {
		tc.words = []string{tc.line}
		tc.check(t, complete(tc.line))
	}
}

// TestCompletionBinary runs the real binary, built as usual and as
// bench/run.sh builds it (-tags urfave_cli_no_template, which leaves out the
// library's templates): both print the same scripts and page as the code
// under test.
func TestCompletionBinary(t *testing.T) {
	goTool, err := exec.LookPath("go")
	if err != nil {
		goTool = filepath.Join(runtime.GOROOT(), "bin", "go")
	}
	for _, tags := range []string{"", "urfave_cli_no_template"} {
		bin := filepath.Join(t.TempDir(), "agentbox")
		build := exec.Command(goTool, "build", "-tags", tags, "-o", bin, ".")
		build.Env = append(os.Environ(), "CGO_ENABLED=0")
		if out, err := build.CombinedOutput(); err != nil {
			t.Fatalf("go build -tags %q: %v\n%s", tags, err, out)
		}
		for _, args := range [][]string{{"completion", "bash"}, {"completion", "zsh"}, {"completion", "fish"}, {"man"}} {
			var out, errb bytes.Buffer
			cmd := exec.Command(bin, args...)
			cmd.Stdout, cmd.Stderr = &out, &errb
			if err := cmd.Run(); err != nil || errb.Len() > 0 {
				t.Errorf("-tags %q: agentbox %q: %v, stderr %q", tags, args, err, errb.String())
				continue
			}
			if want := runMain(t, args...); out.String() != want {
				t.Errorf("-tags %q: agentbox %q prints something else than the code under test", tags, args)
			}
		}
		var out, errb bytes.Buffer
		cmd := exec.Command(bin, "completion", "tcsh")
		cmd.Stdout, cmd.Stderr = &out, &errb
		err := cmd.Run()
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() != 125 || out.Len() != 0 || !strings.Contains(errb.String(), "bash, zsh or fish") {
			t.Errorf("-tags %q: agentbox completion tcsh: %v, stdout %q, stderr %q; want exit 125, nothing on stdout, the valid shells on stderr", tags, err, out.String(), errb.String())
		}
	}
}
