package sandbox

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/agentbox/agentbox/internal/profile"
	"github.com/agentbox/agentbox/landlock"
)

func paths(es []Entry) []string {
	out := make([]string, len(es))
	for i, e := range es {
		out[i] = e.Path
	}
	return out
}

func has(es []Entry, p string) bool {
	for _, e := range es {
		if e.Path == p {
			return true
		}
	}
	return false
}

func baseInput() PolicyInput {
	return PolicyInput{Home: "/home/u", Dir: "/home/u/project", RuntimeDir: "/run/user/1000", Mode: landlock.Require,
		Profile: profile.Profile{Name: "opencode", RW: []profile.Rule{{Path: "/home/u/.config/opencode", Source: "profile opencode (builtin)", Create: true}}}}
}

func TestBuildPolicyDefaults(t *testing.T) {
	p, err := BuildPolicy(baseInput())
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range []string{"/home/u/project", "/tmp", "/var/tmp", "/dev/shm", "/run/user/1000", "/home/u/.config/opencode"} {
		if !has(p.Write, w) {
			t.Errorf("write %v lacks %s", paths(p.Write), w)
		}
	}
	for _, h := range []string{"/home/u/.ssh", "/home/u/.gnupg", "/home/u/.aws", "/home/u/.netrc", "/run/docker.sock", "/var/run/docker.sock"} {
		if !has(p.Hide, h) {
			t.Errorf("hide %v lacks %s", paths(p.Hide), h)
		}
	}
	if has(p.Write, "/home/u") {
		t.Errorf("write grants the home directory: %v", paths(p.Write))
	}
	if !has(p.Create, "/home/u/.config/opencode") {
		t.Errorf("create %v lacks the profile's directory", paths(p.Create))
	}
	if len(p.Landlock.Write) != len(p.Write) || !p.Landlock.Scopes || p.Landlock.Mode != landlock.Require {
		t.Errorf("landlock policy %+v does not match", p.Landlock)
	}
}

func TestBuildPolicyRefusesBroadWorkingDirs(t *testing.T) {
	for _, dir := range []string{"/", "/home", "/home/u"} {
		in := baseInput()
		in.Dir = dir
		_, err := BuildPolicy(in)
		var pe *PolicyError
		if !errors.As(err, &pe) || !strings.Contains(err.Error(), "--rw "+dir) {
			t.Errorf("BuildPolicy(dir %s) = %v, want a PolicyError suggesting --rw %s", dir, err, dir)
		}
		in.RW = []string{dir}
		if p, err := BuildPolicy(in); err != nil || !has(p.Write, dir) {
			t.Errorf("BuildPolicy(dir %s, --rw %s) = %v, %v; want it granted", dir, dir, paths(p.Write), err)
		}
	}
	// /home/us is not an ancestor of /home/u: separator boundary.
	in := baseInput()
	in.Home, in.Dir = "/home/u", "/home/us"
	if _, err := BuildPolicy(in); err != nil {
		t.Errorf("BuildPolicy(/home/us with home /home/u) = %v, want nil", err)
	}
}

func TestBuildPolicyFlags(t *testing.T) {
	in := baseInput()
	in.RW = []string{"~/data"}
	in.RO = []string{"/home/u/project/.git/hooks"}
	in.Hide = []string{"~/secret"}
	in.Show = []string{"~/.aws"}
	p, err := BuildPolicy(in)
	if err != nil {
		t.Fatal(err)
	}
	if !has(p.Write, "/home/u/data") || !has(p.ReadOnly, "/home/u/project/.git/hooks") || !has(p.Hide, "/home/u/secret") || has(p.Hide, "/home/u/.aws") {
		t.Errorf("flags not applied: write %v ro %v hide %v", paths(p.Write), paths(p.ReadOnly), paths(p.Hide))
	}
	for _, bad := range [][]string{{"relative"}, {"./x"}} {
		in := baseInput()
		in.RW = bad
		if _, err := BuildPolicy(in); err == nil {
			t.Errorf("BuildPolicy(--rw %q) = nil error", bad)
		}
	}
}

func TestExplain(t *testing.T) {
	in := baseInput()
	in.RO = []string{"/home/u/project/.git/hooks"}
	p, _ := BuildPolicy(in)
	for _, tc := range []struct {
		path                 string
		visible, read, write bool
		rule                 string
	}{
		{"/home/u/project/main.go", true, true, true, "working directory"},
		{"/home/u/project/.git/hooks/pre-commit", true, true, false, "read-only mount"},
		{"/home/u/.ssh/id_ed25519", false, false, false, "hidden"},
		{"/home/u/.ssh", true, false, false, "hidden"},
		{"/home/u/.bashrc", true, true, false, "no write rule"},
		{"/etc/passwd", true, true, false, "no write rule"},
		{"/tmp/x", true, true, true, "session"},
		{"/dev/null", true, true, true, "default device"},
		{"/home/u/projectx", true, true, false, "no write rule"},
	} {
		v := p.Explain(tc.path)
		if v.Visible != tc.visible || v.Read != tc.read || v.Write != tc.write || !strings.Contains(v.Rule, tc.rule) {
			t.Errorf("Explain(%s) = %+v, want visible %v read %v write %v rule ~%q", tc.path, v, tc.visible, tc.read, tc.write, tc.rule)
		}
	}
}

// gitRepo makes the bones of a git directory at dir: HEAD and objects/.
func gitRepo(t *testing.T, dir string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Join(dir, "objects"), 0o755); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(dir, "HEAD"), []byte("ref: refs/heads/main\n"), 0o644)
}

func TestGitCommonDir(t *testing.T) {
	root := t.TempDir()
	repo := filepath.Join(root, "repo")
	gitRepo(t, filepath.Join(repo, ".git"))
	os.MkdirAll(filepath.Join(repo, "sub", "dir"), 0o755)
	// A linked worktree: .git names its gitdir, which names it back.
	wtGit := filepath.Join(repo, ".git", "worktrees", "wt")
	os.MkdirAll(wtGit, 0o755)
	os.WriteFile(filepath.Join(wtGit, "HEAD"), []byte("ref: refs/heads/wt\n"), 0o644)
	wt := filepath.Join(root, "wt")
	os.MkdirAll(wt, 0o755)
	os.WriteFile(filepath.Join(wt, ".git"), []byte("gitdir: "+wtGit+"\n"), 0o644)
	os.WriteFile(filepath.Join(wtGit, "commondir"), []byte("../..\n"), 0o644)
	os.WriteFile(filepath.Join(wtGit, "gitdir"), []byte(filepath.Join(wt, ".git")+"\n"), 0o644)
	// A submodule: .git names the superproject's modules/sub, whose
	// core.worktree names it back.
	sub := filepath.Join(repo, "lib")
	subGit := filepath.Join(repo, ".git", "modules", "lib")
	gitRepo(t, subGit)
	os.MkdirAll(sub, 0o755)
	os.WriteFile(filepath.Join(sub, ".git"), []byte("gitdir: ../.git/modules/lib\n"), 0o644)
	os.WriteFile(filepath.Join(subGit, "config"), []byte("[core]\n\trepositoryformatversion = 0\n\tworktree = ../../../lib\n"), 0o644)
	plain := filepath.Join(root, "plain")
	os.MkdirAll(plain, 0o755)
	for dir, want := range map[string]string{
		repo:                              filepath.Join(repo, ".git"),
		filepath.Join(repo, "sub", "dir"): filepath.Join(repo, ".git"),
		wt:                                filepath.Join(repo, ".git"),
		sub:                               subGit,
	} {
		if got := GitCommonDir(dir); got != want {
			t.Errorf("GitCommonDir(%s) = %q, want %q", dir, got, want)
		}
	}
	if got := GitCommonDir(plain); got != "" && !strings.HasPrefix(root, filepath.Dir(got)) {
		t.Errorf("GitCommonDir(%s) = %q, want none", plain, got)
	}
	if got := GitCommonDir("relative/dir"); got != "" {
		t.Errorf("GitCommonDir(relative) = %q, want none (and no endless walk)", got)
	}
}

// TestGitCommonDirHostile: a command can plant a .git file or symlink in
// its project for its next session. Only a git directory that names this
// working tree back is granted; anything else grants nothing.
func TestGitCommonDirHostile(t *testing.T) {
	root := t.TempDir()
	victim := filepath.Join(root, "home")
	gitRepo(t, filepath.Join(victim, "other", ".git"))
	os.MkdirAll(filepath.Join(victim, "other", ".git", "worktrees", "x"), 0o755)
	for name, plant := range map[string]func(p string){
		"gitdir to a plain directory": func(p string) { os.WriteFile(filepath.Join(p, ".git"), []byte("gitdir: "+victim+"\n"), 0o644) },
		"gitdir to another repository": func(p string) {
			os.WriteFile(filepath.Join(p, ".git"), []byte("gitdir: "+filepath.Join(victim, "other", ".git")+"\n"), 0o644)
		},
		"gitdir to another repository's worktree entry": func(p string) {
			os.WriteFile(filepath.Join(p, ".git"), []byte("gitdir: "+filepath.Join(victim, "other", ".git", "worktrees", "x")+"\n"), 0o644)
		},
		"relative gitdir out":           func(p string) { os.WriteFile(filepath.Join(p, ".git"), []byte("gitdir: ../home\n"), 0o644) },
		"symlink to a directory":        func(p string) { os.Symlink(victim, filepath.Join(p, ".git")) },
		"symlink to another repository": func(p string) { os.Symlink(filepath.Join(victim, "other", ".git"), filepath.Join(p, ".git")) },
		"fake worktree whose commondir is elsewhere": func(p string) {
			fake := filepath.Join(p, "fake")
			os.MkdirAll(fake, 0o755)
			os.WriteFile(filepath.Join(fake, "HEAD"), []byte("ref: refs/heads/x\n"), 0o644)
			os.WriteFile(filepath.Join(fake, "commondir"), []byte(filepath.Join(victim, "other", ".git")+"\n"), 0o644)
			os.WriteFile(filepath.Join(fake, "gitdir"), []byte(filepath.Join(p, ".git")+"\n"), 0o644)
			os.WriteFile(filepath.Join(p, ".git"), []byte("gitdir: "+fake+"\n"), 0o644)
		},
	} {
		t.Run(name, func(t *testing.T) {
			p := filepath.Join(t.TempDir(), "project")
			os.MkdirAll(p, 0o755)
			plant(p)
			if got := GitCommonDir(p); got != "" && within(got, p) == false {
				t.Errorf("GitCommonDir(%s) = %q, want nothing outside the project", p, got)
			}
		})
	}
}

// TestBuildPolicyGitDirNeverHome: whatever GitCommonDir found, a git dir
// that is /, the home directory or an ancestor of it is not granted.
func TestBuildPolicyGitDirNeverHome(t *testing.T) {
	for _, gd := range []string{"/", "/home", "/home/u"} {
		p, err := BuildPolicy(PolicyInput{Home: "/home/u", Dir: "/home/u/p", GitDir: gd, Mode: landlock.Require})
		if err != nil {
			t.Fatal(err)
		}
		for _, w := range p.Write {
			if w.Path == gd {
				t.Errorf("BuildPolicy(git dir %s) grants it", gd)
			}
		}
	}
}

func FuzzBuildPolicy(f *testing.F) {
	f.Add("/home/u", "/home/u/project", "~/data", "/etc", "~/.aws")
	f.Add("", "/", "/", "x", "../..")
	f.Fuzz(func(t *testing.T, home, dir, rw, hide, show string) {
		in := PolicyInput{Home: home, Dir: dir, RW: []string{rw}, Hide: []string{hide}, Show: []string{show}, Mode: landlock.Require}
		p, err := BuildPolicy(in)
		if err != nil {
			return
		}
		cleanHome := filepath.Clean(home)
		for _, e := range append(append(append([]Entry{}, p.Write...), p.Hide...), p.ReadOnly...) {
			if !filepath.IsAbs(e.Path) || filepath.Clean(e.Path) != e.Path {
				t.Fatalf("BuildPolicy(%+v): path %q is not absolute and clean", in, e.Path)
			}
		}
		for _, w := range p.Write {
			// The home or an ancestor is writable only when --rw named it.
			if filepath.IsAbs(home) && within(cleanHome, w.Path) && w.Source != "--rw" {
				t.Fatalf("BuildPolicy(%+v) grants %s (%s) containing the home", in, w.Path, w.Source)
			}
		}
		if _, err := landlock.Compile(p.Landlock, 7); err != nil && !errors.Is(err, landlock.ErrInvalidRule) {
			t.Fatalf("Compile(BuildPolicy(%+v)) = %v", in, err)
		}
	})
}

func TestNotGranted(t *testing.T) {
	rule := func(p string) landlock.Rule { return landlock.Rule{Path: p, Source: "test"} }
	outer := []landlock.Policy{{Write: []landlock.Rule{rule("/home/u/p"), rule("/tmp"), rule("/home/u/.cache")}}}
	for _, tc := range []struct {
		write []landlock.Rule
		outer []landlock.Policy
		want  []string
	}{
		{[]landlock.Rule{rule("/home/u/p"), rule("/home/u/p/sub"), rule("/tmp"), rule("/run/user/1000"), rule("/dev/shm")}, outer, nil},
		{[]landlock.Rule{rule("/home/u"), rule("/home/u/pp"), rule("/etc")}, outer, []string{"/home/u", "/home/u/pp", "/etc"}},
		{[]landlock.Rule{rule("/home/u")}, nil, nil},
		{[]landlock.Rule{rule("/home/u")}, []landlock.Policy{{Mode: landlock.Off}}, nil},
		{[]landlock.Rule{rule("/home/u/p")}, append(outer, landlock.Policy{Write: []landlock.Rule{rule("/srv")}}), []string{"/home/u/p"}},
	} {
		var got []string
		for _, r := range notGranted(tc.write, tc.outer) {
			got = append(got, r.Path)
		}
		if !slices.Equal(got, tc.want) {
			t.Errorf("notGranted(%v, %d layers) = %q, want %q", tc.write, len(tc.outer), got, tc.want)
		}
	}
}
