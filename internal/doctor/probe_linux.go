//go:build linux

package doctor

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime/debug"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/agentbox/agentbox/env"
	"github.com/agentbox/agentbox/internal/remedy"
	"github.com/agentbox/agentbox/internal/rootdir"
	"github.com/agentbox/agentbox/internal/session"
	"github.com/agentbox/agentbox/landlock"
	"github.com/agentbox/agentbox/sandbox"
)

// Options are the inputs of Probe.
type Options struct {
	Root string   // --root; empty: AGENTBOX_ROOT, then the XDG default, from Env
	Env  []string // the caller's environment (os.Environ())
}

// Probe gathers the Facts on this host for the calling user. It starts one
// sandbox (/bin/true) from a private directory under the state home
// ($XDG_STATE_HOME, else ~/.local/state), with its own session root there,
// and removes that directory afterwards: the user's session root and its
// sessions are only inspected, never used. It writes nothing to stdout or
// stderr.
func Probe(opt Options) Facts {
	uid := os.Getuid()
	f := Facts{UID: uid}
	f.Userns = remedy.Probe()
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, kv := range bi.Settings {
			f.Cgo = f.Cgo || (kv.Key == "CGO_ENABLED" && kv.Value == "1")
		}
	}
	st := procStatus("/proc/self/status")
	f.Seccomp, f.SeccompFilters, f.NoNewPrivs = st["Seccomp"], st["Seccomp_filters"], st["NoNewPrivs"]

	home, _ := env.Lookup(opt.Env, "HOME")
	if !rootdir.HomeUsable(home, uid) {
		home = ""
	}
	work, cleanup, skipped := probeDir(opt.Env, home)
	if skipped != "" {
		f.Sandbox.Skipped = skipped
		f.Landlock = probeLandlock(opt.Env, "")
	} else {
		f.Sandbox = probeSandbox(opt.Env, work)
		f.Landlock = probeLandlock(opt.Env, filepath.Join(work, "work"))
		cleanup()
	}

	f.Nesting = probeNesting(opt.Env)
	f.Root = probeRoot(opt.Root, opt.Env)

	var tst unix.Stat_t
	if err := unix.Lstat("/tmp", &tst); err != nil {
		f.TmpErr = err.Error()
	} else {
		f.TmpIsDir = tst.Mode&unix.S_IFMT == unix.S_IFDIR
		f.TmpMode = tst.Mode & 0o7777
	}
	f.ProtectedSymlinks = remedy.ReadInt("/proc/sys/fs/protected_symlinks")
	f.LegacyTIOCSTI = remedy.ReadInt("/proc/sys/dev/tty/legacy_tiocsti")
	f.RuntimeDir = probeRuntimeDir(opt.Env)
	f.Binary = probeBinary(home)
	return f
}

// probeDir makes a private directory (mode 0700) for the sandbox probe
// under the state home, outside /tmp (the sandbox replaces /tmp, so a
// working directory there would not be visible inside) and not the home
// itself (agentbox refuses it as working directory). It returns the
// directory and a function that removes it, or why there is none.
func probeDir(vars []string, home string) (dir string, cleanup func(), skipped string) {
	base, _ := env.Lookup(vars, "XDG_STATE_HOME")
	if !filepath.IsAbs(base) {
		if home == "" {
			return "", nil, "no usable home directory and no absolute XDG_STATE_HOME"
		}
		base = filepath.Join(home, ".local", "state")
	}
	if err := os.MkdirAll(base, 0o700); err != nil {
		return "", nil, err.Error()
	}
	dir, err := os.MkdirTemp(base, "agentbox-doctor-")
	if err != nil {
		return "", nil, err.Error()
	}
	cleanup = func() { os.RemoveAll(dir) }
	if err := os.Mkdir(filepath.Join(dir, "work"), 0o700); err != nil {
		cleanup()
		return "", nil, err.Error()
	}
	return dir, cleanup, ""
}

// probeSandbox runs /bin/true in a real sandbox, from dir/work, with
// dir/root as session root. Landlock is best-effort here: the landlock
// finding judges the kernel's Landlock; this one judges the namespaces and
// mounts (and applies whatever Landlock there is, as a real run does).
func probeSandbox(vars []string, dir string) SandboxFacts {
	null, err := os.OpenFile(os.DevNull, os.O_RDWR, 0)
	if err != nil {
		return SandboxFacts{Skipped: err.Error()}
	}
	defer null.Close()
	argv0 := "/bin/true"
	if _, err := os.Stat(argv0); err != nil {
		argv0 = "true"
	}
	res, err := sandbox.Run(sandbox.Config{
		Argv:     []string{argv0},
		Env:      vars,
		Dir:      filepath.Join(dir, "work"),
		Root:     filepath.Join(dir, "root"),
		Landlock: string(landlock.BestEffort),
		Stdin:    null, Stdout: null, Stderr: null,
		Messages: io.Discard,
	})
	if err != nil {
		return SandboxFacts{Err: err.Error()}
	}
	if res.CleanupErr != nil {
		return SandboxFacts{Err: "cleanup: " + res.CleanupErr.Error()}
	}
	return SandboxFacts{Code: res.ExitCode}
}

// probeLandlock reads the ABI and checks the policy agentbox would use for
// /bin/true from dir (the user's config and mode included). With no dir,
// the default policy without rules stands in.
func probeLandlock(vars []string, dir string) LandlockFacts {
	var l LandlockFacts
	abi, err := landlock.ABI()
	if err != nil {
		l.ABIErr = err.Error()
	}
	l.ABI = abi
	pol := landlock.Policy{Mode: landlock.Require, Scopes: true}
	if dir != "" {
		p, err := sandbox.Prepare(sandbox.Config{Argv: []string{"/bin/true"}, Env: vars, Dir: dir})
		if err != nil {
			l.CheckErr = "policy: " + err.Error()
			return l
		}
		pol = p.Landlock
	}
	l.Mode = pol.Mode
	if l.Mode == "" {
		l.Mode = landlock.Require
	}
	plan, err := landlock.Check(pol)
	if err != nil {
		l.CheckErr = err.Error()
		return l
	}
	l.Summary, l.Unenforced, l.Enforced = plan.Summary(), plan.Unenforced, plan.Enforced
	if plan.ABI < l.ABI {
		// Check lowers the ABI of a kernel without an erratum fix.
		l.ABI = plan.ABI
	}
	return l
}

func probeNesting(vars []string) NestingFacts {
	var n NestingFacts
	switch {
	case exists("/.dockerenv"):
		n.Container = "docker: /.dockerenv exists"
	case exists("/run/.containerenv"):
		n.Container = "podman: /run/.containerenv exists"
	default:
		if b, err := os.ReadFile("/proc/1/cgroup"); err == nil {
			for _, l := range strings.Split(string(b), "\n") {
				for _, hint := range []string{"docker", "kubepods", "containerd", "libpod", "lxc"} {
					if strings.Contains(l, hint) && n.Container == "" {
						n.Container = "cgroup of PID 1: " + l
					}
				}
			}
		}
	}
	n.AgentboxSession, _ = env.Lookup(vars, "AGENTBOX_SESSION")
	if p, ok := env.Lookup(vars, sandbox.NestVar); ok {
		if st, err := os.Stat(p); err == nil && st.Mode()&os.ModeSocket != 0 {
			n.NestSocket = p
		}
	}
	if b, err := os.ReadFile("/proc/1/cmdline"); err == nil {
		arg0, _, _ := bytes.Cut(b, []byte{0})
		n.PID1Agentbox = string(arg0) == sandbox.InitArg0
	}
	return n
}

func probeRoot(flag string, vars []string) RootFacts {
	var r RootFacts
	root, err := sandbox.OpenRoot(flag, vars)
	if err != nil {
		r.Err = err.Error()
		return r
	}
	defer root.Close()
	r.Path, r.Source = root.Path, string(root.Source)
	var st unix.Stat_t
	if err := unix.Fstat(root.FD, &st); err != nil {
		r.Err = fmt.Sprintf("fstat %s: %v", root.Path, err)
		return r
	}
	r.Owner, r.Mode = int(st.Uid), st.Mode&0o7777
	var sfs unix.Statfs_t
	if err := unix.Fstatfs(root.FD, &sfs); err != nil {
		r.StatfsErr = err.Error()
	} else {
		r.FreeBytes = sfs.Bavail * uint64(sfs.Bsize)
	}
	infos, err := session.List(root.FD, false)
	if err != nil {
		r.ListErr = err.Error()
		return r
	}
	r.Sessions = len(infos)
	for _, in := range infos {
		switch {
		case in.Live:
			r.Live++
		case in.Record.State != session.Kept:
			r.Abandoned++
		}
	}
	return r
}

func probeRuntimeDir(vars []string) RuntimeDirFacts {
	var r RuntimeDirFacts
	r.Path, r.Set = env.Lookup(vars, "XDG_RUNTIME_DIR")
	if r.Path == "" {
		r.Set = false
		return r
	}
	if !filepath.IsAbs(r.Path) {
		return r
	}
	var st unix.Stat_t
	if err := unix.Lstat(r.Path, &st); err != nil {
		r.Err = "lstat: " + err.Error()
		return r
	}
	r.IsDir = st.Mode&unix.S_IFMT == unix.S_IFDIR
	r.Owner, r.Mode = int(st.Uid), st.Mode&0o7777
	return r
}

func probeBinary(home string) BinaryFacts {
	b := BinaryFacts{Home: home}
	b.WorkDir, _ = os.Getwd()
	exe, err := os.Executable()
	if err == nil {
		exe, err = filepath.EvalSymlinks(exe)
	}
	if err != nil {
		b.Err = err.Error()
		return b
	}
	b.Path = exe
	var st unix.Stat_t
	if err := unix.Stat(exe, &st); err != nil {
		b.Err = fmt.Sprintf("stat %s: %v", exe, err)
		return b
	}
	b.Owner, b.Mode = int(st.Uid), st.Mode&0o7777
	if err := unix.Stat(filepath.Dir(exe), &st); err != nil {
		b.Err = fmt.Sprintf("stat %s: %v", filepath.Dir(exe), err)
		return b
	}
	b.DirOwner, b.DirMode = int(st.Uid), st.Mode&0o7777
	return b
}

// procStatus parses the "Name:\tnumber" lines of a /proc status file. A
// missing or unparsable field is -1.
func procStatus(path string) map[string]int {
	out := map[string]int{"Seccomp": -1, "Seccomp_filters": -1, "NoNewPrivs": -1}
	b, err := os.ReadFile(path)
	if err != nil {
		return out
	}
	for _, l := range strings.Split(string(b), "\n") {
		k, v, ok := strings.Cut(l, ":")
		if _, want := out[k]; !ok || !want {
			continue
		}
		if n, err := strconv.Atoi(strings.TrimSpace(v)); err == nil {
			out[k] = n
		}
	}
	return out
}

func exists(p string) bool {
	_, err := os.Lstat(p)
	return err == nil
}
