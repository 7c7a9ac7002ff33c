package landlock

import "testing"

// benchPolicy is a realistic policy: ~20 write rules (the project, its git
// dir, the session's private directories, a profile's directories, --rw
// flags and a few single files) and the default devices, with scopes.
func benchPolicy() Policy {
	p := Policy{Mode: Require, Scopes: true}
	for _, w := range []struct {
		path, source string
		file         bool
	}{
		{"/home/alice/src/project", "working directory", false},
		{"/home/alice/src/.git-common", "git common dir of the working directory", false},
		{"/tmp", "session (private)", false},
		{"/var/tmp", "session (private)", false},
		{"/dev/shm", "session (private)", false},
		{"/run/user/1000", "session (private runtime dir)", false},
		{"/home/alice/.config/opencode", "profile opencode (builtin)", false},
		{"/home/alice/.local/share/opencode", "profile opencode (builtin)", false},
		{"/home/alice/.cache/opencode", "profile opencode (builtin)", false},
		{"/home/alice/.local/state/opencode", "profile opencode (builtin)", false},
		{"/home/alice/.claude", "profile claude (builtin)", false},
		{"/home/alice/.claude.json", "profile claude (builtin)", true},
		{"/home/alice/.claude.json.backup", "profile claude (builtin)", true},
		{"/home/alice/.npm", "config", false},
		{"/home/alice/.cache/go-build", "config", false},
		{"/home/alice/go/pkg/mod", "config", false},
		{"/home/alice/.cargo/registry", "config", false},
		{"/home/alice/src/shared-lib", "--rw", false},
		{"/srv/data/scratch", "--rw", false},
		{"/home/alice/.gitconfig", "--rw", true},
	} {
		p.Write = append(p.Write, Rule{Path: w.path, IsFile: w.file, Source: w.source})
	}
	for _, d := range []string{"/dev/null", "/dev/zero", "/dev/full", "/dev/tty", "/dev/ptmx", "/dev/pts", "/dev/random", "/dev/urandom", "/proc"} {
		p.Devices = append(p.Devices, Rule{Path: d, Source: "default device"})
	}
	return p
}

func BenchmarkCompileABI7(b *testing.B) {
	p := benchPolicy()
	b.ReportAllocs()
	for b.Loop() {
		plan, err := Compile(p, 7)
		if err != nil {
			b.Fatal(err)
		}
		if !plan.Enforced {
			b.Fatal("nothing enforced")
		}
	}
}
