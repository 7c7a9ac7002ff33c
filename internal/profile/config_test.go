package profile

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"syscall"
	"testing"

	"github.com/agentbox/agentbox/internal/fserr"
	"github.com/agentbox/agentbox/internal/testenv"
)

func TestLoadConfigMissing(t *testing.T) {
	f := newFixture(t)
	for _, e := range []Env{f.env, {Home: f.home}, {}} {
		cfg, err := LoadConfig(e)
		if err != nil || !reflect.DeepEqual(cfg, Config{}) {
			t.Errorf("LoadConfig(%+v) = %+v, %v; want the zero Config", e, cfg, err)
		}
	}
}

func TestLoadConfig(t *testing.T) {
	f := newFixture(t)
	path := writeFile(t, filepath.Join(f.env.ConfigDir, "config.toml"), `# agentbox config
[defaults]
landlock = "best-effort"
profile = "codex"
rw = ["~/work/shared"]
create = ["~/.rustup"]
ro = ["~/work/shared/.git"]
hide = ["~/.config/gh"]
show = ["~/.ssh"]
`)
	cfg, err := LoadConfig(f.env)
	if err != nil {
		t.Fatal(err)
	}
	src := func(line string) string { return "config " + path + ":" + line }
	h := func(p string) string { return filepath.Join(f.home, p) }
	want := Config{
		Landlock: "best-effort", Profile: "codex", Path: path,
		RW:   []Rule{{Path: h(".rustup"), Source: src("6"), Create: true}, {Path: h("work/shared"), Source: src("5")}},
		RO:   []Rule{{Path: h("work/shared/.git"), Source: src("7")}},
		Hide: []Rule{{Path: h(".config/gh"), Source: src("8")}},
		Show: []Rule{{Path: h(".ssh"), Source: src("9")}},
	}
	if !reflect.DeepEqual(cfg, want) {
		t.Errorf("LoadConfig = %+v\nwant %+v", cfg, want)
	}
}

func TestLoadConfigForms(t *testing.T) {
	f := newFixture(t)
	for _, doc := range []string{
		"defaults = { rw = [\"~/x\"], landlock = \"off\" }\n",
		"defaults.rw = [\"~/x\"]\ndefaults.landlock = \"off\"\n",
	} {
		writeFile(t, filepath.Join(f.env.ConfigDir, "config.toml"), doc)
		cfg, err := LoadConfig(f.env)
		if err != nil || len(cfg.RW) != 1 || !strings.HasSuffix(cfg.RW[0].Source, ":1") {
			t.Errorf("LoadConfig(%q) = %+v, %v", doc, cfg, err)
		}
	}
	writeFile(t, filepath.Join(f.env.ConfigDir, "config.toml"), "[defaults]\nprofile = \"\"\nrw = []\n")
	if cfg, err := LoadConfig(f.env); err != nil || cfg.Profile != "" {
		t.Errorf(`LoadConfig(profile = "") = %+v, %v; want no profile forced`, cfg, err)
	}
	writeFile(t, filepath.Join(f.env.ConfigDir, "config.toml"), "# nothing yet\n[defaults]\n")
	if cfg, err := LoadConfig(f.env); err != nil || cfg.Path == "" {
		t.Errorf("LoadConfig(empty [defaults]) = %+v, %v", cfg, err)
	}
}

func TestLoadConfigErrors(t *testing.T) {
	f := newFixture(t)
	path := filepath.Join(f.env.ConfigDir, "config.toml")
	for _, c := range []struct{ doc, where, msg string }{
		{"landlock = \"off\"\n", "1:1", `unknown key "landlock"; valid keys here: defaults`},
		{"[default]\nlandlock = \"off\"\n", "1:2", `unknown table "default"; valid keys here: defaults`},
		{"[defaults]\nlandlock = \"off\"\nrws = []\n", "3:1", `unknown key "defaults.rws"; valid keys here: allow_degraded, create, create_files, hide, landlock, profile, ro, rw, show`},
		{"[defaults]\nLandlock = \"off\"\n", "2:1", `unknown key "defaults.Landlock"`},
		{"[defaults]\nlandlock = \"strict\"\n", "2:12", `defaults.landlock: "strict": valid values are "require" (the default), "best-effort" and "off"`},
		{"[defaults]\nlandlock = false\n", "2:12", "defaults.landlock: expected a string, found a boolean"},
		{"[defaults]\nrw = [\"~/a\", 1]\n", "2:14", "defaults.rw: expected a list of strings, found an integer"},
		{"defaults = 1\n", "1:12", "defaults: expected a table, found an integer"},
		{"[defaults]\nhide = [\"tmp\"]\n", "2:9", `defaults.hide: "tmp": relative path`},
		{"[defaults]\nro = [\"/a/../b\"]\n", "2:7", `defaults.ro: "/a/../b": path contains ".."`},
		{"[defaults]\n\nprofile = \"nosuch\"\n", "3:11", `defaults.profile: no profile "nosuch": no file ` + filepath.Join(f.env.ConfigDir, "profiles", "nosuch.toml")},
		{"[defaults]\nprofile = \"builtin:x\"\n", "2:11", `defaults.profile: no built-in profile "x"`},
		{"[defaults]\nprofile = \"a/b\"\n", "2:11", `defaults.profile: "a/b": not a profile name`},
	} {
		writeFile(t, path, c.doc)
		_, err := LoadConfig(f.env)
		var pe *ParseError
		if !errors.As(err, &pe) || !strings.HasPrefix(err.Error(), path+":"+c.where+": ") || !strings.Contains(err.Error(), c.msg) {
			t.Errorf("LoadConfig(%q) = %v\nwant %s:%s: ...%s", c.doc, err, path, c.where, c.msg)
		}
	}
	// A profile the config names, from the profiles directory.
	f.profile("mine", "")
	writeFile(t, path, "[defaults]\nprofile = \"mine\"\n")
	if cfg, err := LoadConfig(f.env); err != nil || cfg.Profile != "mine" {
		t.Errorf("LoadConfig(profile = mine) = %+v, %v", cfg, err)
	}
	// A broken profile named by the config is reported at its own line.
	bad := f.profile("mine", "rw = [1]\n")
	if _, err := LoadConfig(f.env); err == nil || !strings.HasPrefix(err.Error(), bad+":1:7: ") {
		t.Errorf("LoadConfig(profile = broken) = %v, want %s:1:7", err, bad)
	}
}

// TestUntrustedFiles: a file someone else can write could grant the sandbox
// anything.
func TestUntrustedFiles(t *testing.T) {
	f := newFixture(t)
	cfgPath := filepath.Join(f.env.ConfigDir, "config.toml")
	prof := f.profile("p", "")

	for _, mode := range []os.FileMode{0o602, 0o666} {
		if err := os.Chmod(cfgPath, mode); err != nil && !errors.Is(err, os.ErrNotExist) {
			t.Fatal(err)
		}
		writeFile(t, cfgPath, "")
		if err := os.Chmod(cfgPath, mode); err != nil {
			t.Fatal(err)
		}
		_, err := LoadConfig(f.env)
		if !errors.Is(err, fserr.ErrUnsafe) || !strings.Contains(err.Error(), "config file "+cfgPath) || !strings.Contains(err.Error(), "chmod o-w "+cfgPath) {
			t.Errorf("LoadConfig(mode %04o) = %v, want ErrUnsafe with a chmod remedy", mode, err)
		}
		os.Chmod(cfgPath, 0o600)
	}
	// Group-writable by the user's own primary group (user private groups): accepted.
	if err := os.Chmod(prof, 0o660); err != nil {
		t.Fatal(err)
	}
	if _, err := Resolve(f.env, "p", ""); err != nil {
		t.Errorf("Resolve(profile mode 0660, own group) = %v, want it accepted", err)
	}
	os.Chmod(prof, 0o602)
	if _, err := Resolve(f.env, "p", ""); !errors.Is(err, fserr.ErrUnsafe) || !strings.Contains(err.Error(), "profile file "+prof) {
		t.Errorf("Resolve(profile mode 0602) = %v, want ErrUnsafe", err)
	}
	os.Chmod(prof, 0o600)

	// Not a regular file: a directory, and a FIFO that must not block.
	d := filepath.Join(f.env.ConfigDir, "profiles", "dir.toml")
	if err := os.Mkdir(d, 0o700); err != nil {
		t.Fatal(err)
	}
	if _, err := Resolve(f.env, "dir", ""); !errors.Is(err, fserr.ErrUnsafe) || !strings.Contains(err.Error(), "not a regular file") {
		t.Errorf("Resolve(directory profile) = %v, want ErrUnsafe: not a regular file", err)
	}
	os.Remove(cfgPath)
	if err := syscall.Mkfifo(cfgPath, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadConfig(f.env); !errors.Is(err, fserr.ErrUnsafe) || !strings.Contains(err.Error(), "a FIFO") {
		t.Errorf("LoadConfig(FIFO) = %v, want ErrUnsafe naming a FIFO", err)
	}
	os.Remove(cfgPath)

	// Too large.
	writeFile(t, cfgPath, "# "+strings.Repeat("x", maxFileSize)+"\n")
	if _, err := LoadConfig(f.env); err == nil || !strings.Contains(err.Error(), "larger than 1 MiB") {
		t.Errorf("LoadConfig(2 MiB) = %v, want a size error", err)
	}
	os.Remove(cfgPath)

	// Unreadable: the errno, not "missing".
	if os.Geteuid() != 0 {
		writeFile(t, cfgPath, "")
		os.Chmod(cfgPath, 0)
		if _, err := LoadConfig(f.env); !errors.Is(err, os.ErrPermission) {
			t.Errorf("LoadConfig(mode 0000) = %v, want EACCES", err)
		}
		os.Remove(cfgPath)
	}
}

// TestUntrustedOwner needs root to give a file to another uid and group.
func TestUntrustedOwner(t *testing.T) {
	testenv.RequireRoot(t)
	f := newFixture(t)
	prof := f.profile("p", "")
	if err := os.Chown(prof, 12345, -1); err != nil {
		t.Fatal(err)
	}
	_, err := Resolve(f.env, "p", "")
	if !errors.Is(err, fserr.ErrUnsafe) || !strings.Contains(err.Error(), "owned by uid 12345") || !strings.Contains(err.Error(), "another user controls") {
		t.Errorf("Resolve(profile owned by uid 12345) = %v, want ErrUnsafe naming the owner", err)
	}
	if err := os.Chown(prof, os.Getuid(), 12345); err != nil {
		t.Fatal(err)
	}
	os.Chmod(prof, 0o660)
	if _, err := Resolve(f.env, "p", ""); !errors.Is(err, fserr.ErrUnsafe) || !strings.Contains(err.Error(), "group 12345 can write") {
		t.Errorf("Resolve(profile writable by group 12345) = %v, want ErrUnsafe", err)
	}
	// Root-owned files are trusted (a system-wide dotfiles setup).
	if err := os.Chown(prof, 0, 0); err != nil {
		t.Fatal(err)
	}
	os.Chmod(prof, 0o644)
	if _, err := Resolve(f.env, "p", ""); err != nil {
		t.Errorf("Resolve(root-owned profile) = %v", err)
	}
}

// TestSymlinkedProfile: dotfile managers link profiles; the target is checked.
func TestSymlinkedProfile(t *testing.T) {
	f := newFixture(t)
	target := writeFile(t, filepath.Join(t.TempDir(), "dotfiles", "x.toml"), "rw = [\"~/x\"]\n")
	link := filepath.Join(f.env.ConfigDir, "profiles", "x.toml")
	os.MkdirAll(filepath.Dir(link), 0o700)
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
	p, err := Resolve(f.env, "x", "")
	if err != nil || !hasPath(p.RW, filepath.Join(f.home, "x")) {
		t.Errorf("Resolve(symlinked profile) = %v, %v", rulePaths(p.RW), err)
	}
	os.Chmod(target, 0o606)
	if _, err := Resolve(f.env, "x", ""); !errors.Is(err, fserr.ErrUnsafe) {
		t.Errorf("Resolve(symlink to a world-writable file) = %v, want ErrUnsafe", err)
	}
}

func TestConfigAllowDegraded(t *testing.T) {
	home := t.TempDir()
	for _, tc := range []struct {
		text string
		want bool
		bad  bool
	}{
		{"[defaults]\nallow_degraded = true\n", true, false},
		{"[defaults]\nallow_degraded = false\n", false, false},
		{"[defaults]\n", false, false},
		{"[defaults]\nallow_degraded = \"yes\"\n", false, true},
	} {
		dir := filepath.Join(home, ".config", "agentbox")
		os.MkdirAll(dir, 0o700)
		if err := os.WriteFile(filepath.Join(dir, "config.toml"), []byte(tc.text), 0o600); err != nil {
			t.Fatal(err)
		}
		cfg, err := LoadConfig(Env{Home: home, ConfigDir: dir})
		if tc.bad {
			if err == nil || !strings.Contains(err.Error(), "config.toml:2") {
				t.Errorf("LoadConfig(%q) = %v, want an error at config.toml:2", tc.text, err)
			}
			continue
		}
		if err != nil || cfg.AllowDegraded != tc.want {
			t.Errorf("LoadConfig(%q) = %+v, %v; want AllowDegraded %v", tc.text, cfg, err, tc.want)
		}
	}
}
