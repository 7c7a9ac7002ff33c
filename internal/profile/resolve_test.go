package profile

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// fixture is a home directory with a config directory, in a fresh temporary
// directory.
type fixture struct {
	t    *testing.T
	home string
	env  Env
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	h := filepath.Join(t.TempDir(), "home")
	if err := os.MkdirAll(h, 0o700); err != nil {
		t.Fatal(err)
	}
	return &fixture{t: t, home: h, env: Env{Home: h, ConfigDir: DefaultConfigDir(h, "")}}
}

// profile writes profiles/NAME.toml and returns its path.
func (f *fixture) profile(name, doc string) string {
	f.t.Helper()
	return writeFile(f.t, filepath.Join(f.env.ConfigDir, "profiles", name+".toml"), doc)
}

func writeFile(t *testing.T, path, doc string) string {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(doc), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func rulePaths(rs []Rule) []string {
	var out []string
	for _, r := range rs {
		out = append(out, r.Path)
	}
	return out
}

func hasPath(rs []Rule, p string) bool {
	return slices.ContainsFunc(rs, func(r Rule) bool { return r.Path == p })
}

func TestResolveByCommand(t *testing.T) {
	f := newFixture(t)
	for _, c := range []struct{ command, want string }{
		{"/usr/bin/opencode", "opencode"},
		{"opencode", "opencode"},
		{"./node_modules/.bin/opencode", "opencode"},
		{"claude", "claude"},
		{"/home/u/.local/bin/claude", "claude"},
		{"gemini", "gemini"},
		{"codex", "codex"},
		{"vim", "default"},
		{"claude-code", "default"},
		{"Claude", "default"}, // base names match exactly
		{"", "default"},
		{"/", "default"},
		{"default", "default"},
	} {
		p, err := Resolve(f.env, "", c.command)
		if err != nil || p.Name != c.want || p.Origin != "builtin" {
			t.Errorf("Resolve(%q) = %s (%s), %v; want %s (builtin)", c.command, p.Name, p.Origin, err, c.want)
		}
	}
}

func TestResolveByFlag(t *testing.T) {
	f := newFixture(t)
	p, err := Resolve(f.env, "codex", "vim")
	if err != nil || p.Name != "codex" || !hasPath(p.RW, filepath.Join(f.home, ".codex")) {
		t.Errorf("Resolve(--profile codex, vim) = %s %v, %v; want codex", p.Name, rulePaths(p.RW), err)
	}
	p, err = Resolve(f.env, "builtin:gemini", "opencode")
	if err != nil || p.Name != "gemini" {
		t.Errorf("Resolve(--profile builtin:gemini) = %s, %v; want gemini", p.Name, err)
	}
	_, err = Resolve(f.env, "nosuch", "opencode")
	if err == nil || !strings.Contains(err.Error(), `--profile nosuch: no profile "nosuch": no file `+filepath.Join(f.env.ConfigDir, "profiles", "nosuch.toml")) {
		t.Errorf("Resolve(--profile nosuch) = %v, want an error naming the file looked for", err)
	}
	if _, err = Resolve(f.env, "builtin:nosuch", "opencode"); err == nil || !strings.Contains(err.Error(), "built-ins: claude, codex, default, gemini, opencode") {
		t.Errorf("Resolve(--profile builtin:nosuch) = %v, want an error listing the built-ins", err)
	}
}

func TestResolveByFile(t *testing.T) {
	f := newFixture(t)
	dir := t.TempDir()
	path := writeFile(t, filepath.Join(dir, "strict.toml"), "extends = \"builtin:codex\"\n\nrw = [\"~/extra\"]\n")
	p, err := Resolve(f.env, path, "opencode")
	if err != nil {
		t.Fatal(err)
	}
	if p.Name != "strict" || p.Origin != path || !hasPath(p.RW, filepath.Join(f.home, ".codex")) {
		t.Errorf("Resolve(--profile %s) = %s (%s) %v", path, p.Name, p.Origin, rulePaths(p.RW))
	}
	last := p.RW[len(p.RW)-1]
	if want := "profile strict (" + path + ":3)"; last.Path != filepath.Join(f.home, "extra") || last.Source != want {
		t.Errorf("last rule = %+v, want %s from %q", last, filepath.Join(f.home, "extra"), want)
	}
	// A relative file is an explicit choice: relative to the working directory.
	t.Chdir(dir)
	p, err = Resolve(f.env, "./strict.toml", "opencode")
	if err != nil || p.Origin != path {
		t.Errorf("Resolve(--profile ./strict.toml) = %s, %v; want %s", p.Origin, err, path)
	}
	p, err = Resolve(f.env, "strict.toml", "opencode")
	if err != nil || p.Origin != path {
		t.Errorf("Resolve(--profile strict.toml) = %s, %v; want %s", p.Origin, err, path)
	}
	inHome := writeFile(t, filepath.Join(f.home, "p.toml"), "")
	if p, err = Resolve(f.env, "~/p.toml", "x"); err != nil || p.Origin != inHome {
		t.Errorf("Resolve(--profile ~/p.toml) = %s, %v; want %s", p.Origin, err, inHome)
	}
	if _, err = Resolve(f.env, filepath.Join(dir, "missing.toml"), "x"); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("Resolve(--profile missing file) = %v, want ErrNotExist", err)
	}
}

func TestResolveUserOverridesBuiltin(t *testing.T) {
	f := newFixture(t)
	path := f.profile("opencode", "extends = \"builtin:opencode\"\nrw = [\"~/notes\"]\n")
	p, err := Resolve(f.env, "", "/usr/local/bin/opencode")
	if err != nil {
		t.Fatal(err)
	}
	wantChain := []string{"opencode (" + path + ")", "opencode (builtin)", "default (builtin)"}
	if p.Origin != path || !slices.Equal(p.Chain, wantChain) {
		t.Errorf("Resolve(opencode) = origin %s chain %v; want %s, %v", p.Origin, p.Chain, path, wantChain)
	}
	for _, want := range []string{".cache", ".config/opencode", "notes"} {
		if !hasPath(p.RW, filepath.Join(f.home, want)) {
			t.Errorf("Resolve(opencode).RW = %v, lacks ~/%s", rulePaths(p.RW), want)
		}
	}
	// The same by name.
	if q, err := Resolve(f.env, "opencode", "vim"); err != nil || q.Origin != path {
		t.Errorf("Resolve(--profile opencode) = %s, %v; want %s", q.Origin, err, path)
	}
	// Without extends, an override builds on default, not on the built-in.
	f.profile("opencode", "rw = [\"~/notes\"]\n")
	p, err = Resolve(f.env, "", "opencode")
	if err != nil || hasPath(p.RW, filepath.Join(f.home, ".config/opencode")) || !hasPath(p.RW, filepath.Join(f.home, ".npm")) {
		t.Errorf("Resolve(opencode without extends) = %v, %v; want default's rules and not the built-in opencode's", rulePaths(p.RW), err)
	}
}

func TestResolveUserDefault(t *testing.T) {
	f := newFixture(t)
	f.profile("default", "create = [\"~/.rustup\"]\n")
	for _, cmd := range []string{"vim", "codex"} {
		p, err := Resolve(f.env, "", cmd)
		if err != nil || !hasPath(p.RW, filepath.Join(f.home, ".rustup")) || !hasPath(p.RW, filepath.Join(f.home, ".npm")) {
			t.Errorf("Resolve(%s) with a user default = %v, %v; want ~/.rustup and the built-in default's rules", cmd, rulePaths(p.RW), err)
		}
	}
	// The built-ins as shipped ignore it.
	if p, _ := Builtin("codex", f.home); hasPath(p.RW, filepath.Join(f.home, ".rustup")) {
		t.Errorf("Builtin(codex) = %v, includes the user's default", rulePaths(p.RW))
	}
}

func TestResolveCommandsKey(t *testing.T) {
	f := newFixture(t)
	path := f.profile("my-claude", "extends = \"builtin:claude\"\ncommands = [\"claude\", \"aider\"]\n")
	for _, cmd := range []string{"claude", "aider", "/opt/bin/aider", "my-claude"} {
		p, err := Resolve(f.env, "", cmd)
		if err != nil || p.Origin != path {
			t.Errorf("Resolve(%s) = %s, %v; want %s", cmd, p.Origin, err, path)
		}
	}
	// Two user profiles claiming one command: an error naming both.
	other := f.profile("claude", "commands = [\"x\"]\n")
	_, err := Resolve(f.env, "", "claude")
	if err == nil || !strings.Contains(err.Error(), path+":2 (commands)") || !strings.Contains(err.Error(), other+" (its name)") {
		t.Errorf("Resolve(claude claimed twice) = %v, want an error naming %s:2 and %s", err, path, other)
	}
	// A broken profile is reported even when another would be chosen.
	bad := f.profile("broken", "rw = [\"relative\"]\n")
	if _, err := Resolve(f.env, "", "vim"); err == nil || !strings.HasPrefix(err.Error(), bad+":1:7: ") {
		t.Errorf("Resolve(vim) with a broken profile = %v, want %s:1:7", err, bad)
	}
}

func TestResolveChain(t *testing.T) {
	f := newFixture(t)
	a := f.profile("a", "extends = \"b\"\ncreate = [\"~/a\"]\n")
	b := f.profile("b", "extends = \"builtin:gemini\"\ncreate = [\"~/b\"]\nrw = [\"~/a\"]\n")
	p, err := Resolve(f.env, "a", "x")
	if err != nil {
		t.Fatal(err)
	}
	wantChain := []string{"a (" + a + ")", "b (" + b + ")", "gemini (builtin)", "default (builtin)"}
	if !slices.Equal(p.Chain, wantChain) || p.Extends != "b" {
		t.Errorf("Resolve(a).Chain = %v, extends %q; want %v, b", p.Chain, p.Extends, wantChain)
	}
	got := rulePaths(p.RW)
	iGemini, iB, iA := slices.Index(got, filepath.Join(f.home, ".gemini")), slices.Index(got, filepath.Join(f.home, "b")), slices.Index(got, filepath.Join(f.home, "a"))
	if iGemini < 0 || iB < 0 || iA < 0 || !(iGemini < iB && iB < iA) {
		t.Errorf("Resolve(a).RW = %v; want the parents' rules first (in a file: create, create_files, rw)", got)
	}
	// ~/a: first written by b (rw), made Create by a; b's Source stays.
	r := p.RW[iA]
	if !r.Create || r.Source != "profile b ("+b+":3)" {
		t.Errorf("rule ~/a = %+v; want Create from a, Source from b", r)
	}
}

func TestResolveChainConflict(t *testing.T) {
	f := newFixture(t)
	f.profile("p", "create = [\"~/x\"]\n")
	c := f.profile("c", "extends = \"p\"\ncreate_files = [\"~/x\"]\n")
	_, err := Resolve(f.env, "c", "")
	if err == nil || !strings.Contains(err.Error(), "created as a directory by profile p (") || !strings.Contains(err.Error(), "as a file by profile c ("+c+":2)") {
		t.Errorf("Resolve(dir vs file) = %v, want an error naming both rules", err)
	}
}

func TestResolveCycle(t *testing.T) {
	f := newFixture(t)
	a := f.profile("a", "description = \"a\"\nextends = \"b\"\n")
	b := f.profile("b", "\n\nextends = \"c\"\n")
	c := f.profile("c", "extends = \"a\"\n")
	_, err := Resolve(f.env, "a", "")
	want := c + `:1:11: extends "a": cycle: a (` + a + `) → b (` + b + `) → c (` + c + `) → a (` + a + `)`
	var pe *ParseError
	if !errors.As(err, &pe) || err.Error() != want {
		t.Errorf("Resolve(cycle) = %v\nwant %s", err, want)
	}
	// A user profile extending its own name: a cycle, with the way out.
	o := f.profile("opencode", "extends = \"opencode\"\n")
	_, err = Resolve(f.env, "", "opencode")
	if err == nil || !strings.HasPrefix(err.Error(), o+`:1:11: extends "opencode": cycle: opencode (`+o+`) → opencode (`+o+`); to extend the built-in profile, write extends = "builtin:opencode"`) {
		t.Errorf("Resolve(self-extending override) = %v", err)
	}
	// A user default that extends default.
	d := f.profile("default", "extends = \"default\"\n")
	if _, err = Resolve(f.env, "", "vim"); err == nil || !strings.HasPrefix(err.Error(), d+`:1:11: extends "default": cycle`) {
		t.Errorf("Resolve(default extends default) = %v", err)
	}
	// A cycle through an implied extends names the file, without a line.
	f.profile("default", "extends = \"z\"\n")
	z := f.profile("z", "rw = []\n")
	if _, err = Resolve(f.env, "default", ""); err == nil || !strings.HasPrefix(err.Error(), z+`: extends "default" (implied: the file has no extends key): cycle`) {
		t.Errorf("Resolve(implied cycle) = %v", err)
	}
}

func TestResolveUnknownExtends(t *testing.T) {
	f := newFixture(t)
	p := f.profile("p", "description = \"x\"\n  extends = \"nosuch\"\n")
	_, err := Resolve(f.env, "p", "")
	want := p + `:2:13: extends "nosuch": no profile "nosuch": no file ` + filepath.Join(f.env.ConfigDir, "profiles", "nosuch.toml") + " and no built-in profile of that name"
	if err == nil || !strings.HasPrefix(err.Error(), want) {
		t.Errorf("Resolve(unknown extends) = %v\nwant %s...", err, want)
	}
	f.profile("q", "extends = \"builtin:nosuch\"\n")
	if _, err = Resolve(f.env, "q", ""); err == nil || !strings.Contains(err.Error(), `:1:11: extends "builtin:nosuch": no built-in profile "nosuch"`) {
		t.Errorf("Resolve(unknown built-in extends) = %v", err)
	}
	// A broken parent is reported at its own position.
	f.profile("r", "extends = \"bad\"\n")
	bad := f.profile("bad", "ro = [\"..\"]\n")
	if _, err = Resolve(f.env, "r", ""); err == nil || !strings.HasPrefix(err.Error(), bad+":1:7: ") {
		t.Errorf("Resolve(broken parent) = %v, want %s:1:7", err, bad)
	}
}

func TestResolveShowHide(t *testing.T) {
	f := newFixture(t)
	f.profile("parent", "hide = [\"~/x\", \"~/y\"]\nshow = [\"~/.ssh\", \"~/z\"]\n")
	child := f.profile("child", "extends = \"parent\"\nshow = [\"~/x\"]\nhide = [\"~/z\"]\n")
	p, err := Resolve(f.env, "child", "")
	if err != nil {
		t.Fatal(err)
	}
	h := func(s ...string) []string {
		var out []string
		for _, x := range s {
			out = append(out, filepath.Join(f.home, x))
		}
		return out
	}
	if got, want := rulePaths(p.Hide), h("y", "z"); !slices.Equal(got, want) {
		t.Errorf("Resolve(child).Hide = %v, want %v", got, want)
	}
	if got, want := rulePaths(p.Show), h(".ssh", "x"); !slices.Equal(got, want) {
		t.Errorf("Resolve(child).Show = %v, want %v", got, want)
	}
	if p.Show[1].Source != "profile child ("+child+":2)" {
		t.Errorf("show ~/x source = %q", p.Show[1].Source)
	}
}

// TestProjectFilesNeverLoaded: the working directory is the agent's project,
// which the agent can write; nothing there is read unless --profile names a
// file.
func TestProjectFilesNeverLoaded(t *testing.T) {
	f := newFixture(t)
	project := t.TempDir()
	evil := "rw = [\"/etc\"]\ncommands = [\"vim\", \"opencode\"]\n"
	for _, p := range []string{
		"profiles/opencode.toml", "profiles/default.toml", "profiles/vim.toml",
		"opencode.toml", "default.toml", "config.toml", ".agentbox.toml", "agentbox.toml",
		"agentbox/config.toml", "agentbox/profiles/opencode.toml",
		".config/agentbox/config.toml", ".config/agentbox/profiles/opencode.toml",
	} {
		writeFile(t, filepath.Join(project, p), evil)
	}
	writeFile(t, filepath.Join(project, "config.toml"), "[defaults]\nprofile = \"evil\"\nrw = [\"/etc\"]\n")
	t.Chdir(project)
	for _, c := range []struct{ flag, cmd string }{{"", "opencode"}, {"", "vim"}, {"opencode", "x"}, {"default", "x"}} {
		p, err := Resolve(f.env, c.flag, c.cmd)
		if err != nil || p.Origin != "builtin" || hasPath(p.RW, "/etc") {
			t.Errorf("Resolve(%q, %q) in a project with profiles = %s %v, %v; want the built-in", c.flag, c.cmd, p.Origin, rulePaths(p.RW), err)
		}
	}
	if cfg, err := LoadConfig(f.env); err != nil || cfg.Path != "" || len(cfg.RW) != 0 {
		t.Errorf("LoadConfig in a project with config.toml = %+v, %v; want none", cfg, err)
	}
	// A relative config dir would read the project: refused.
	for _, e := range []Env{{Home: f.home, ConfigDir: "."}, {Home: f.home, ConfigDir: "agentbox"}} {
		if _, err := Resolve(e, "", "opencode"); err == nil || !strings.Contains(err.Error(), "not an absolute path") {
			t.Errorf("Resolve(ConfigDir %q) = %v, want a refusal", e.ConfigDir, err)
		}
		if _, err := LoadConfig(e); err == nil {
			t.Errorf("LoadConfig(ConfigDir %q) = nil error, want a refusal", e.ConfigDir)
		}
	}
	// A relative HOME is no home: ~ does not become the project.
	p, err := Resolve(Env{Home: "."}, "", "opencode")
	if err != nil || len(p.RW) != 0 {
		t.Errorf("Resolve(HOME=.) = %v, %v; want no ~ rules", rulePaths(p.RW), err)
	}
}

func TestResolveIgnoresNonProfileFiles(t *testing.T) {
	f := newFixture(t)
	f.profile(".hidden", "garbage")
	writeFile(t, filepath.Join(f.env.ConfigDir, "profiles", "opencode.toml~"), "garbage")
	writeFile(t, filepath.Join(f.env.ConfigDir, "profiles", "README"), "garbage")
	if p, err := Resolve(f.env, "", "opencode"); err != nil || p.Origin != "builtin" {
		t.Errorf("Resolve(opencode) = %s, %v; want the built-in", p.Origin, err)
	}
}
