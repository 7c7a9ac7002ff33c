package rootdir

import (
	"errors"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/agentbox/agentbox/internal/fserr"
)

func TestSelect(t *testing.T) {
	tests := []struct {
		name string
		in   Inputs
		want Choice
	}{
		{"flag wins over everything",
			Inputs{Flag: "/srv/ab", EnvRoot: "/env", XDGStateHome: "/x", Home: "/home/a", HomeUsable: true, UID: 1000, TempDir: "/tmp"},
			Choice{Path: "/srv/ab", Source: SourceFlag}},
		{"flag is cleaned",
			Inputs{Flag: "/srv//ab/../cd/", UID: 1000},
			Choice{Path: "/srv/cd", Source: SourceFlag}},
		{"env when no flag",
			Inputs{EnvRoot: "/env/root/", XDGStateHome: "/x", Home: "/home/a", HomeUsable: true, UID: 1000},
			Choice{Path: "/env/root", Source: SourceEnv}},
		{"XDG_STATE_HOME",
			Inputs{XDGStateHome: "/home/a/.state", Home: "/home/a", HomeUsable: true, UID: 1000},
			Choice{Path: "/home/a/.state/agentbox", Source: SourceXDG, MakeParents: true}},
		{"XDG_STATE_HOME is cleaned",
			Inputs{XDGStateHome: "/home/a//st/./", UID: 1000},
			Choice{Path: "/home/a/st/agentbox", Source: SourceXDG, MakeParents: true}},
		{"XDG_STATE_HOME without a usable home",
			Inputs{XDGStateHome: "/var/state", Home: "", HomeUsable: false, UID: 1000},
			Choice{Path: "/var/state/agentbox", Source: SourceXDG, MakeParents: true}},
		{"XDG_STATE_HOME / itself",
			Inputs{XDGStateHome: "/", UID: 1000},
			Choice{Path: "/agentbox", Source: SourceXDG, MakeParents: true}},
		{"relative XDG_STATE_HOME is ignored",
			Inputs{XDGStateHome: "state", Home: "/home/a", HomeUsable: true, UID: 1000},
			Choice{Path: "/home/a/.local/state/agentbox", Source: SourceHome, MakeParents: true}},
		{"home",
			Inputs{Home: "/home/a/", HomeUsable: true, UID: 1000, TempDir: "/tmp"},
			Choice{Path: "/home/a/.local/state/agentbox", Source: SourceHome, MakeParents: true}},
		{"unusable home falls back",
			Inputs{Home: "/home/a", HomeUsable: false, UID: 1000, TempDir: "/tmp"},
			Choice{Path: "/tmp/agentbox-1000", Source: SourceFallback}},
		{"relative home counts as unusable",
			Inputs{Home: "home/a", HomeUsable: true, UID: 1000, TempDir: "/tmp"},
			Choice{Path: "/tmp/agentbox-1000", Source: SourceFallback}},
		{"relative XDG and no home fall back",
			Inputs{XDGStateHome: "rel", UID: 0, TempDir: "/tmp"},
			Choice{Path: "/tmp/agentbox-0", Source: SourceFallback}},
		{"empty TempDir means /tmp",
			Inputs{UID: 1000},
			Choice{Path: "/tmp/agentbox-1000", Source: SourceFallback}},
		{"other TempDir",
			Inputs{UID: 4242, TempDir: "/var/tmp/"},
			Choice{Path: "/var/tmp/agentbox-4242", Source: SourceFallback}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Select(tt.in)
			if err != nil || got != tt.want {
				t.Errorf("Select(%+v) = %+v, %v, want %+v, nil", tt.in, got, err, tt.want)
			}
		})
	}
}

func TestSelectErrors(t *testing.T) {
	tests := []struct {
		name string
		in   Inputs
		want []string // substrings of the message
	}{
		{"relative flag", Inputs{Flag: "state/ab", UID: 1000},
			[]string{"session root state/ab", "--root is not an absolute path", "use an absolute path for --root", "uid 1000"}},
		{"relative env", Inputs{EnvRoot: "./ab", XDGStateHome: "/x", UID: 1000},
			[]string{"session root ./ab", "AGENTBOX_ROOT is not an absolute path", "use an absolute path for AGENTBOX_ROOT"}},
		{"flag /", Inputs{Flag: "/", UID: 1000}, []string{"session root /", "refusing / as the session root", "for --root"}},
		{"flag cleans to /", Inputs{Flag: "//a/..//", UID: 1000}, []string{"session root /", "refusing /"}},
		{"env /", Inputs{EnvRoot: "/", UID: 1000}, []string{"refusing /", "for AGENTBOX_ROOT"}},
		{"flag with NUL", Inputs{Flag: "/a\x00b", UID: 1000}, []string{`session root "/a\x00b"`, "--root contains a NUL byte"}},
		{"relative TempDir", Inputs{UID: 1000, TempDir: "tmp"}, []string{"not an absolute path"}},
		{"negative uid for the fallback", Inputs{UID: -1}, []string{"uid -1"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Select(tt.in)
			if err == nil {
				t.Fatalf("Select(%+v) = %+v, nil, want an error", tt.in, got)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("Select(%+v) = %q, want it to contain %q", tt.in, err, w)
				}
			}
			if errors.Is(err, fserr.ErrUnsafe) {
				t.Errorf("Select(%+v) = %v, which wraps ErrUnsafe; a bad setting is not an unsafe path", tt.in, err)
			}
		})
	}
}

func FuzzSelect(f *testing.F) {
	f.Add("", "", "", "", false, 1000, "/tmp")
	f.Add("/srv/ab", "", "", "", false, 1000, "/tmp")
	f.Add("rel", "/env", "/x", "/home/a", true, 0, "")
	f.Add("", "//", "", "", false, 1, "/tmp")
	f.Add("", "", "st", "/home/a/", true, 1000, "/tmp")
	f.Add("", "", "/", "", false, 1000, "/tmp")
	f.Add("", "", "", "home", true, 7, "tmp")
	f.Add("/a/../..", "", "", "", false, -3, "/")
	f.Fuzz(func(t *testing.T, flag, env, xdg, home string, usable bool, uid int, tmp string) {
		in := Inputs{Flag: flag, EnvRoot: env, XDGStateHome: xdg, Home: home, HomeUsable: usable, UID: uid, TempDir: tmp}
		c, err := Select(in)
		if err != nil {
			return
		}
		if !filepath.IsAbs(c.Path) || filepath.Clean(c.Path) != c.Path || c.Path == "/" || strings.ContainsRune(c.Path, 0) {
			t.Fatalf("Select(%+v) = %+v: path not absolute, clean, without NUL and below /", in, c)
		}
		switch c.Source {
		case SourceFlag, SourceEnv, SourceFallback:
			if c.MakeParents {
				t.Fatalf("Select(%+v) = %+v: MakeParents for %s", in, c, c.Source)
			}
		case SourceXDG, SourceHome:
			if !c.MakeParents {
				t.Fatalf("Select(%+v) = %+v: no MakeParents for %s", in, c, c.Source)
			}
		default:
			t.Fatalf("Select(%+v) = %+v: unknown source", in, c)
		}
		if flag != "" && c.Source != SourceFlag {
			t.Fatalf("Select(%+v) = %+v: --root given but not used", in, c)
		}
	})
}

// Every row of the remedy table renders without leftover placeholders and
// offers a way forward.
func TestRemedies(t *testing.T) {
	want := map[problem][]string{
		probRelative:       {"use an absolute path for {source}"},
		probBadValue:       {"NUL", "for {source}"},
		probSlash:          {"for {source}", "~/.local/state/agentbox"},
		probOtherOwner:     {"remove it", "--root DIR", "AGENTBOX_ROOT", "0700"},
		probOwnMode:        {"chmod 700 /s/root", "--root DIR"},
		probOwnSymlink:     {`--root "$(readlink -f /s/root)"`},
		probOwnNotDir:      {"--root DIR"},
		probCreateDenied:   {"make /s writable for uid 1000", "--root DIR"},
		probParentMissing:  {"mkdir -p -m 700 /s/root", "--root DIR"},
		probParentOwner:    {"--root DIR", "directory you own"},
		probParentWritable: {"chmod +t /s/root", "--root DIR"},
		probRaced:          {"/s/root", "try again"},
		probOther:          {"--root DIR"},
	}
	if len(want) != len(remedies) {
		t.Errorf("remedy table has %d rows, test covers %d", len(remedies), len(want))
	}
	for p, subs := range want {
		if remedies[p] == "" {
			t.Errorf("remedies[%d] is empty", p)
		}
		for _, src := range []Source{SourceFlag, SourceFallback} {
			got := remedy(p, remedyArgs{Path: "/s/root", UID: 1000, Source: src})
			if strings.ContainsAny(got, "{}") {
				t.Errorf("remedy(%d, %s) = %q, has a placeholder left", p, src, got)
			}
			for _, s := range subs {
				if s = strings.ReplaceAll(s, "{source}", string(src)); !strings.Contains(got, s) {
					t.Errorf("remedy(%d, %s) = %q, want it to contain %q", p, src, got, s)
				}
			}
			if hasNote := strings.Contains(got, "no usable home directory"); hasNote != (src == SourceFallback) {
				t.Errorf("remedy(%d, %s) = %q: fallback note present = %v, want %v", p, src, got, hasNote, src == SourceFallback)
			}
		}
	}
	got := remedy(probCreateDenied, remedyArgs{Path: "/tmp/agentbox-7", UID: 7, Source: SourceFallback})
	want1 := "make /tmp writable for uid 7 or pass --root DIR; agentbox uses /tmp/agentbox-7 only because it found no usable home directory: set HOME to your home directory (one you own and can write)"
	if got != want1 {
		t.Errorf("remedy(probCreateDenied, fallback) = %q, want %q", got, want1)
	}
}

func TestJudgeRoot(t *testing.T) {
	const me = 1000
	tests := []struct {
		seen   fserr.Seen
		ok     bool
		want   problem
		reason string
	}{
		{fserr.Seen{Kind: "directory", Owner: me, Mode: 0o700}, true, 0, ""},
		{fserr.Seen{Kind: "directory", Owner: me, Mode: 0o1700}, true, 0, ""},
		{fserr.Seen{Kind: "directory", Owner: me, Mode: 0o500}, true, 0, ""},
		{fserr.Seen{Kind: "directory", Owner: me, Mode: 0o755}, false, probOwnMode, "group or others"},
		{fserr.Seen{Kind: "directory", Owner: me, Mode: 0o701}, false, probOwnMode, "group or others"},
		{fserr.Seen{Kind: "directory", Owner: me, Mode: 0o710}, false, probOwnMode, "group or others"},
		{fserr.Seen{Kind: "directory", Owner: 1002, Mode: 0o777}, false, probOtherOwner, "refusing a directory another user controls"},
		{fserr.Seen{Kind: "directory", Owner: 0, Mode: 0o700}, false, probOtherOwner, "another user"},
		{fserr.Seen{Kind: "symbolic link", Owner: 1002, Mode: 0o777}, false, probOtherOwner, "refusing a symbolic link"},
		{fserr.Seen{Kind: "symbolic link", Owner: me, Mode: 0o777}, false, probOwnSymlink, "refusing a symbolic link"},
		{fserr.Seen{Kind: "FIFO", Owner: me, Mode: 0o600}, false, probOwnNotDir, "refusing a FIFO"},
		{fserr.Seen{Kind: "regular file", Owner: 1002, Mode: 0o644}, false, probOtherOwner, "refusing a regular file"},
		{fserr.Seen{Kind: "socket", Owner: me, Mode: 0o700}, false, probOwnNotDir, "refusing a socket"},
	}
	for _, tt := range tests {
		p, reason, ok := judgeRoot(&tt.seen, me)
		if ok != tt.ok || p != tt.want || !strings.Contains(reason, tt.reason) {
			t.Errorf("judgeRoot(%v, %d) = %d, %q, %v, want %d, %q, %v", &tt.seen, me, p, reason, ok, tt.want, tt.reason, tt.ok)
		}
	}
}

func TestJudgeParent(t *testing.T) {
	const me = 1000
	tests := []struct {
		seen fserr.Seen
		ok   bool
		want problem
	}{
		{fserr.Seen{Kind: "directory", Owner: 0, Mode: 0o1777}, true, 0},
		{fserr.Seen{Kind: "directory", Owner: 0, Mode: 0o755}, true, 0},
		{fserr.Seen{Kind: "directory", Owner: me, Mode: 0o700}, true, 0},
		{fserr.Seen{Kind: "directory", Owner: me, Mode: 0o1770}, true, 0},
		{fserr.Seen{Kind: "directory", Owner: 0, Mode: 0o777}, false, probParentWritable},
		{fserr.Seen{Kind: "directory", Owner: me, Mode: 0o770}, false, probParentWritable},
		{fserr.Seen{Kind: "directory", Owner: 0, Mode: 0o702}, false, probParentWritable},
		{fserr.Seen{Kind: "directory", Owner: 1002, Mode: 0o755}, false, probParentOwner},
		{fserr.Seen{Kind: "directory", Owner: 1002, Mode: 0o1777}, false, probParentOwner},
	}
	for _, tt := range tests {
		p, _, ok := judgeParent(&tt.seen, me, "/p/root")
		if ok != tt.ok || p != tt.want {
			t.Errorf("judgeParent(%v, %d) = %d, %v, want %d, %v", &tt.seen, me, p, ok, tt.want, tt.ok)
		}
	}
}

func TestDefaults(t *testing.T) {
	for _, tc := range []struct {
		in   Inputs
		want []string
	}{
		{Inputs{}, nil},
		{Inputs{EnvRoot: "/srv/ab/", XDGStateHome: "/x/state", Home: "/home/u"}, []string{"/srv/ab", "/x/state/agentbox", "/home/u/.local/state/agentbox"}},
		{Inputs{EnvRoot: "rel", XDGStateHome: "rel", Home: "rel"}, nil},
		{Inputs{Home: "/home/u", HomeUsable: false}, []string{"/home/u/.local/state/agentbox"}},
	} {
		if got := Defaults(tc.in); !slices.Equal(got, tc.want) {
			t.Errorf("Defaults(%+v) = %q, want %q", tc.in, got, tc.want)
		}
	}
}
