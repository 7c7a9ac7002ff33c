package sandbox

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/agentbox/agentbox/env"
	"github.com/agentbox/agentbox/internal/profile"
	"github.com/agentbox/agentbox/internal/rootdir"
	"github.com/agentbox/agentbox/landlock"
)

// Prepare resolves the profile and the user's config and computes the
// effective policy for cfg, without changing anything.
func Prepare(cfg Config) (Policy, error) {
	home, _ := env.Lookup(cfg.Env, "HOME")
	if !rootdir.HomeOwned(home, os.Getuid()) {
		home = ""
	}
	xdgConfig, _ := env.Lookup(cfg.Env, "XDG_CONFIG_HOME")
	pe := profile.Env{Home: home, ConfigDir: profile.DefaultConfigDir(home, xdgConfig)}
	conf, err := profile.LoadConfig(pe)
	if err != nil {
		return Policy{}, err
	}
	flag := cfg.Profile
	if flag == "" {
		flag = conf.Profile
	}
	argv0 := ""
	if len(cfg.Argv) > 0 {
		argv0 = cfg.Argv[0]
	}
	prof, err := profile.Resolve(pe, flag, argv0)
	if err != nil {
		return Policy{}, err
	}
	mode := landlock.Mode(cfg.Landlock)
	if mode == "" && conf.Landlock != "" {
		if mode, err = landlock.ParseMode(conf.Landlock); err != nil {
			return Policy{}, fmt.Errorf("%s: landlock: %w", conf.Path, err)
		}
	}
	if mode == "" {
		mode = landlock.Require
	}
	dir := cfg.Dir
	if dir == "" {
		if dir, err = os.Getwd(); err != nil {
			return Policy{}, err
		}
	}
	hostRun, _ := env.Lookup(cfg.Env, "XDG_RUNTIME_DIR")
	pol, err := BuildPolicy(PolicyInput{
		Home: home, Dir: dir, GitDir: GitCommonDir(dir), RuntimeDir: runtimeDirInside(os.Getuid()),
		HostRuntimeDir: hostRun, Profile: prof, Config: conf,
		RW: cfg.RW, RO: cfg.RO, Hide: cfg.Hide, Show: cfg.Show, Mode: mode,
	})
	pol.AllowDegraded = cfg.AllowDegraded || conf.AllowDegraded
	return pol, err
}

// runtimeDirInside mirrors mounts.Config.RuntimeDir for this host.
func runtimeDirInside(uid int) string {
	if isDir("/run/user") {
		return fmt.Sprintf("/run/user/%d", uid)
	}
	return fmt.Sprintf("/tmp/.agentbox-run-%d", uid)
}

// GitCommonDir returns the git common directory of the repository dir is
// in ("" when none): the ".git" directory of the enclosing repository, or,
// for a linked worktree (".git" is a file "gitdir: ..."), the directory its
// "commondir" names. It reads files only; it never runs git.
func GitCommonDir(dir string) string {
	if !filepath.IsAbs(dir) {
		return ""
	}
	for d := filepath.Clean(dir); ; d = filepath.Dir(d) {
		dotgit := filepath.Join(d, ".git")
		// Lstat: a symlinked .git (one the command may have planted for
		// its next session) would grant wherever it points.
		fi, err := os.Lstat(dotgit)
		if err == nil && fi.IsDir() {
			return dotgit
		}
		if err == nil && fi.Mode().IsRegular() {
			return linkedGitDir(d, dotgit)
		}
		if err == nil {
			return ""
		}
		if d == filepath.Dir(d) {
			return ""
		}
	}
}

// linkedGitDir returns the git directory that the .git file dotgit of the
// working tree d names, and only when that git directory names d back: a
// linked worktree (its gitdir file names dotgit; the common dir is granted)
// or a submodule (its core.worktree names d). Anything else, such as a .git
// file planted to point at another repository or at a plain directory,
// grants nothing.
func linkedGitDir(d, dotgit string) string {
	gitdir, err := readGitdirFile(dotgit)
	if err != nil {
		return ""
	}
	if !filepath.IsAbs(gitdir) {
		gitdir = filepath.Join(d, gitdir)
	}
	gitdir = filepath.Clean(gitdir)
	if !isGitDir(gitdir) {
		return ""
	}
	if b, err := os.ReadFile(filepath.Join(gitdir, "gitdir")); err == nil && filepath.Clean(strings.TrimSpace(string(b))) == dotgit {
		b, err := os.ReadFile(filepath.Join(gitdir, "commondir"))
		if err != nil {
			return ""
		}
		common := strings.TrimSpace(string(b))
		if !filepath.IsAbs(common) {
			common = filepath.Join(gitdir, common)
		}
		common = filepath.Clean(common)
		if !isGitDir(common) || !within(gitdir, filepath.Join(common, "worktrees")) {
			return ""
		}
		return common
	}
	if wt := coreWorktree(gitdir); wt != "" && wt == d {
		return gitdir
	}
	return ""
}

// isGitDir reports whether p is a real directory (not a symlink) that
// looks like a git directory: a HEAD file, and objects/ or a commondir file.
func isGitDir(p string) bool {
	if fi, err := os.Lstat(p); err != nil || !fi.IsDir() {
		return false
	}
	if fi, err := os.Lstat(filepath.Join(p, "HEAD")); err != nil || !fi.Mode().IsRegular() {
		return false
	}
	if fi, err := os.Lstat(filepath.Join(p, "objects")); err == nil && fi.IsDir() {
		return true
	}
	fi, err := os.Lstat(filepath.Join(p, "commondir"))
	return err == nil && fi.Mode().IsRegular()
}

// coreWorktree returns core.worktree of the git directory gitdir, made
// absolute, or "". It reads the simple form git writes for submodules.
func coreWorktree(gitdir string) string {
	b, err := os.ReadFile(filepath.Join(gitdir, "config"))
	if err != nil {
		return ""
	}
	inCore := false
	for _, l := range strings.Split(string(b), "\n") {
		l = strings.TrimSpace(l)
		if strings.HasPrefix(l, "[") {
			inCore = strings.EqualFold(strings.Trim(l, "[] \t"), "core")
			continue
		}
		k, v, ok := strings.Cut(l, "=")
		if !inCore || !ok || !strings.EqualFold(strings.TrimSpace(k), "worktree") {
			continue
		}
		v = strings.Trim(strings.TrimSpace(v), `"`)
		if !filepath.IsAbs(v) {
			v = filepath.Join(gitdir, v)
		}
		return filepath.Clean(v)
	}
	return ""
}

func readGitdirFile(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	line, err := bufio.NewReader(f).ReadString('\n')
	if err != nil && line == "" {
		return "", err
	}
	gitdir, ok := strings.CutPrefix(strings.TrimSpace(line), "gitdir: ")
	if !ok {
		return "", errors.New("not a gitdir file")
	}
	return gitdir, nil
}

// createGranted makes the directories (0700) and files (0600, empty) a
// profile grants that do not exist yet, so that the agent can use them as
// it would outside. Existing paths are left as they are.
func createGranted(p Policy) error {
	for _, e := range p.Create {
		if _, err := os.Lstat(e.Path); err == nil || !errors.Is(err, os.ErrNotExist) {
			continue
		}
		parent := e.Path
		if e.File {
			parent = filepath.Dir(e.Path)
		}
		if err := os.MkdirAll(parent, 0o700); err != nil {
			return fmt.Errorf("creating %s for %s: %w", parent, e.Source, err)
		}
		if e.File {
			f, err := os.OpenFile(e.Path, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
			if err != nil && !errors.Is(err, os.ErrExist) {
				return fmt.Errorf("creating %s for %s: %w", e.Path, e.Source, err)
			}
			if f != nil {
				f.Close()
			}
		}
	}
	return nil
}

func isDir(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.IsDir()
}
