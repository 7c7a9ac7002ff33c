package sandbox

import (
	"strings"
	"testing"

	"github.com/agentbox/agentbox/internal/profile"
	"github.com/agentbox/agentbox/landlock"
)

// benchPolicyInput is a realistic run: `agentbox opencode` in a git project
// below the home directory, with the built-in opencode profile and a few
// --rw, --ro, --hide and --show flags.
func benchPolicyInput(b *testing.B) PolicyInput {
	b.Helper()
	const home = "/home/alice"
	prof, ok := profile.Builtin("opencode", home)
	if !ok {
		b.Fatal(`profile.Builtin("opencode") not found`)
	}
	return PolicyInput{
		Home:           home,
		Dir:            home + "/src/project",
		GitDir:         home + "/src/project/.git",
		RuntimeDir:     "/run/user/1000",
		HostRuntimeDir: "/run/user/1000",
		Profile:        prof,
		RW:             []string{"~/src/shared-lib", "~/.cache/go-build", "/srv/data/scratch"},
		RO:             []string{"~/src/project/.git/hooks"},
		Hide:           []string{"~/.config/secrets", "~/src/project/.env", "/etc/agentbox-private"},
		Show:           []string{"~/.docker"},
		Mode:           landlock.Require,
	}
}

func BenchmarkBuildPolicy(b *testing.B) {
	in := benchPolicyInput(b)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := BuildPolicy(in); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkExplain(b *testing.B) {
	p, err := BuildPolicy(benchPolicyInput(b))
	if err != nil {
		b.Fatal(err)
	}
	// One path for each rule kind Explain can stop at.
	cases := []struct{ name, path, rule string }{
		{"hidden", "/home/alice/.ssh/id_ed25519", "hidden: "},
		{"read-only-mount", "/home/alice/src/project/.git/hooks/pre-commit", "read-only mount: "},
		{"write-granted", "/home/alice/src/project/internal/main.go", "write granted below /home/alice/src/project "},
		{"device", "/dev/null", "write granted below /dev/null "},
		{"no-rule", "/usr/lib/x86_64-linux-gnu/libc.so.6", "read-only: "},
	}
	for _, c := range cases {
		if v := p.Explain(c.path); !strings.HasPrefix(v.Rule, c.rule) {
			b.Fatalf("Explain(%s).Rule = %q, want prefix %q", c.path, v.Rule, c.rule)
		}
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if v := p.Explain(c.path); v.Rule == "" {
					b.Fatal("no rule")
				}
			}
		})
	}
}
