//go:build linux

package tests

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestExitStatus checks every exit status rule: the command's own status,
// 128+N when it dies of signal N, 127 when it cannot be found, 126 when it
// cannot be executed.
func TestExitStatus(t *testing.T) {
	t.Parallel()
	a, _ := users(t)
	p := a.project(t)
	bin := filepath.Join(p, "bin")
	noexec := filepath.Join(bin, "abtest-noexec")
	a.writeFile(t, noexec, "#!/bin/sh\necho should not run\n", 0o644)
	pathEnv := []string{"PATH=" + bin + ":/usr/local/bin:/usr/bin:/bin"}

	for _, tc := range []struct {
		name   string
		argv   []string
		code   int
		stderr string // a substring of stderr; "" wants it empty
	}{
		{"success", []string{"true"}, 0, ""},
		{"exit 3", []string{"sh", "-c", "exit 3"}, 3, ""},
		{"exit 255", []string{"sh", "-c", "exit 255"}, 255, ""},
		{"SIGKILL", []string{"sh", "-c", "kill -KILL $$"}, 128 + 9, ""},
		{"SIGTERM", []string{"sh", "-c", "kill -TERM $$"}, 128 + 15, ""},
		{"SIGHUP", []string{"sh", "-c", "kill -HUP $$"}, 128 + 1, ""},
		{"SIGPIPE", []string{"sh", "-c", "kill -PIPE $$"}, 128 + 13, ""},
		{"not found in PATH", []string{"abtest-no-such-command"}, 127, "abtest-no-such-command"},
		{"not found by path", []string{"/nonexistent/abtest-cmd"}, 127, "/nonexistent/abtest-cmd"},
		{"not executable by path", []string{noexec}, 126, noexec},
		{"not executable in PATH", []string{"abtest-noexec"}, 126, "abtest-noexec"},
		{"directory", []string{bin}, 126, bin},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r := a.box(t, pathEnv, append([]string{"--"}, tc.argv...)...)
			wantCode(t, "agentbox -- "+strings.Join(tc.argv, " "), r, tc.code)
			if len(r.stdout) != 0 {
				t.Errorf("stdout %q, want nothing", r.stdout)
			}
			if tc.stderr == "" && len(r.stderr) != 0 || !strings.Contains(string(r.stderr), tc.stderr) {
				t.Errorf("stderr %q, want %s", r.stderr, map[bool]string{true: "nothing", false: "a message naming " + tc.stderr}[tc.stderr == ""])
			}
		})
	}
}

// TestUsageErrors checks that command-line mistakes exit 125 with a message
// on stderr, print nothing on stdout and run nothing.
func TestUsageErrors(t *testing.T) {
	t.Parallel()
	a, _ := users(t)
	p := a.project(t)
	ran := filepath.Join(p, "ran")
	probe := []string{"sh", "-c", `touch "$RAN"`}
	for _, tc := range []struct {
		name string
		args []string
	}{
		{"no separator", []string{"opencode"}},
		{"no separator, run", []string{"run", "opencode"}},
		{"nothing at all", nil},
		{"nothing after separator", []string{"--"}},
		{"nothing after separator, run", []string{"run", "--"}},
		{"unknown flag", append([]string{"--no-such-flag", "--"}, probe...)},
		{"unknown flag, run", append([]string{"run", "--no-such-flag", "--"}, probe...)},
		{"argument before separator", append([]string{"extra", "--"}, probe...)},
		{"relative root", append([]string{"--root", "relative/dir", "--"}, probe...)},
		{"ps with a command", append([]string{"ps", "--"}, probe...)},
		{"clean with a command", append([]string{"clean", "--"}, probe...)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := a.box(t, []string{"RAN=" + ran}, tc.args...)
			wantCode(t, "agentbox "+strings.Join(tc.args, " "), r, 125)
			if len(r.stdout) != 0 {
				t.Errorf("agentbox %q: stdout %q, want nothing", tc.args, r.stdout)
			}
			if !strings.Contains(string(r.stderr), "agentbox: ") {
				t.Errorf("agentbox %q: stderr %q, want an agentbox: message", tc.args, r.stderr)
			}
			if exists(t, ran) {
				t.Errorf("agentbox %q ran the command", tc.args)
			}
		})
	}
}

// TestCommandNamedLikeASubcommand checks that the words after -- are the
// command, never agentbox's own: `agentbox -- help` runs a program named
// help from PATH, and so for clean, ps and run.
func TestCommandNamedLikeASubcommand(t *testing.T) {
	t.Parallel()
	a, _ := users(t)
	p := a.project(t)
	bin := filepath.Join(p, "bin")
	names := []string{"help", "clean", "ps", "run"}
	for _, name := range names {
		a.writeFile(t, filepath.Join(bin, name), "#!/bin/sh\necho \"marker $0 $*\"\n", 0o755)
	}
	env := []string{"PATH=" + bin + ":/usr/local/bin:/usr/bin:/bin"}
	for _, name := range names {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			for _, args := range [][]string{{"--", name, "--json"}, {"run", "--", name, "--json"}} {
				r := a.box(t, env, args...)
				wantCode(t, "agentbox "+strings.Join(args, " "), r, 0)
				want := "marker " + filepath.Join(bin, name) + " --json\n"
				if string(r.stdout) != want || len(r.stderr) != 0 {
					t.Errorf("agentbox %q: %v; want stdout %q and no stderr", args, r, want)
				}
			}
		})
	}
}

// TestCommandUnderHostTmp checks that a command installed under the host's
// /tmp, which is hidden inside, fails with 127 and a message that says where
// it is installed and why it cannot be seen; run directly it works (the
// fixture is a real, working command).
func TestCommandUnderHostTmp(t *testing.T) {
	t.Parallel()
	a, _ := users(t)
	dir := "/tmp/abtest-bin-" + token(t)
	t.Cleanup(func() { os.RemoveAll(dir) })
	tool := filepath.Join(dir, "abtest-tool")
	wantCode(t, "user A: install a tool in /tmp",
		a.sh(t, nil, `mkdir -m 0755 "$1" && printf '#!/bin/sh\necho tool ran\n' > "$2" && chmod 0755 "$2"`, dir, tool), 0)
	env := []string{"PATH=" + dir + ":/usr/local/bin:/usr/bin:/bin"}

	if r := a.sh(t, env, `abtest-tool`); r.code != 0 || string(r.stdout) != "tool ran\n" {
		t.Fatalf("the tool run directly: %v; want it to print \"tool ran\"", r)
	}
	for _, argv0 := range []string{"abtest-tool", tool} {
		r := a.box(t, env, "--", argv0)
		wantCode(t, "agentbox -- "+argv0, r, 127)
		msg := string(r.stderr)
		if !strings.Contains(msg, "installed at "+tool) || !strings.Contains(msg, "private") {
			t.Errorf("agentbox -- %s: stderr %q, want it to say \"installed at %s\" and that /tmp is private", argv0, msg, tool)
		}
		if len(r.stdout) != 0 {
			t.Errorf("agentbox -- %s: stdout %q, want nothing", argv0, r.stdout)
		}
	}
}

// writeFile creates path owned by u with content and mode; missing parent
// directories are made too, mode 0755 and owned by u (existing ones are left
// as they are).
func (u user) writeFile(t *testing.T, path, content string, mode os.FileMode) {
	t.Helper()
	u.writeAs(t, path, content, mode, 0o755)
}

// writeAs creates path owned by u with content and mode, making its missing
// parent directories with dirMode, owned by u; it returns the directories
// it made, outermost first.
func (u user) writeAs(t *testing.T, path, content string, mode, dirMode os.FileMode) (made []string) {
	t.Helper()
	for d := filepath.Dir(path); !exists(t, d); d = filepath.Dir(d) {
		made = append([]string{d}, made...)
	}
	for _, d := range made {
		u.mkdir(t, d, dirMode)
	}
	if err := os.WriteFile(path, []byte(content), mode); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(path, mode); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(path, u.UID, u.GID); err != nil {
		t.Fatal(err)
	}
	return made
}

// mkdir creates the directory path owned by u with mode.
func (u user) mkdir(t *testing.T, path string, mode os.FileMode) {
	t.Helper()
	if err := os.Mkdir(path, mode); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(path, mode); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(path, u.UID, u.GID); err != nil {
		t.Fatal(err)
	}
}

// TestBarePrefixMatchesParsedRun checks that `agentbox -- CMD`, which skips
// the CLI library, sets up exactly what `agentbox run -- CMD` (parsed, every
// flag at its default) does: the same environment, mounts, write policy and
// exit status. The session id is the only difference.
func TestBarePrefixMatchesParsedRun(t *testing.T) {
	t.Parallel()
	a, _ := users(t)
	p := a.project(t)
	script := `env | sort
awk '{print $5, $6}' /proc/self/mountinfo | sort
for d in "$PWD" "$HOME" /tmp /var/tmp /dev/shm "$XDG_RUNTIME_DIR" /etc; do
	if (: > "$d/abtest-probe") 2>/dev/null; then echo "write $d: yes"; rm -f "$d/abtest-probe"; else echo "write $d: no"; fi
done
exit 7`
	var outs [2]string
	for i, pre := range [][]string{{"--"}, {"run", "--"}} {
		r := a.box(t, nil, append(pre, "sh", "-c", "cd "+p+" && "+script)...)
		wantCode(t, "agentbox "+strings.Join(pre, " ")+" sh", r, 7)
		if len(r.stderr) != 0 {
			t.Fatalf("agentbox %s: stderr %q, want none", pre, r.stderr)
		}
		id := ""
		for _, l := range strings.Split(string(r.stdout), "\n") {
			if v, ok := strings.CutPrefix(l, "AGENTBOX_SESSION="); ok {
				id = v
			}
		}
		if id == "" {
			t.Fatalf("agentbox %s: no AGENTBOX_SESSION in\n%s", pre, r.stdout)
		}
		outs[i] = strings.ReplaceAll(string(r.stdout), id, "ID")
	}
	if outs[0] != outs[1] {
		t.Errorf("agentbox -- and agentbox run -- differ:\n--- bare\n%s\n--- run\n%s", outs[0], outs[1])
	}
	for _, want := range []string{"write " + p + ": yes", "write /tmp: yes", "write /etc: no", "TMPDIR=/tmp"} {
		if !strings.Contains(outs[0], want) {
			t.Errorf("output lacks %q:\n%s", want, outs[0])
		}
	}
}
