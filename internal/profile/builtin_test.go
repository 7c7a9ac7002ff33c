package profile

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestBuiltins checks each built-in: it exists, extends default (holds every
// rule of default), grants what its agent needs, and every path is
// absolute, clean and strictly inside the given home.
func TestBuiltins(t *testing.T) {
	def, ok := Builtin("default", home)
	if !ok {
		t.Fatal(`Builtin("default") not found`)
	}
	type want struct {
		path         string
		create, file bool
	}
	for _, c := range []struct {
		name string
		rw   []want
	}{
		{"default", []want{
			{"/home/u/.cache", true, false}, {"/home/u/.npm", true, false},
			{"/home/u/.bun/install/cache", false, false}, {"/home/u/go/pkg/mod", false, false},
			{"/home/u/.cargo/registry", false, false}, {"/home/u/.cargo/git", false, false},
		}},
		{"opencode", []want{
			{"/home/u/.config/opencode", true, false}, {"/home/u/.local/share/opencode", true, false},
			{"/home/u/.cache/opencode", true, false}, {"/home/u/.local/state/opencode", true, false},
		}},
		{"codex", []want{{"/home/u/.codex", true, false}}},
		{"claude", []want{
			{"/home/u/.claude", true, false}, {"/home/u/.claude.json", true, true},
			{"/home/u/.local/state/claude", true, false},
		}},
		{"gemini", []want{{"/home/u/.gemini", true, false}}},
	} {
		t.Run(c.name, func(t *testing.T) {
			p, ok := Builtin(c.name, home)
			if !ok {
				t.Fatalf("Builtin(%q) not found", c.name)
			}
			if p.Name != c.name || p.Origin != "builtin" || p.Description == "" {
				t.Errorf("Builtin(%q) = name %q, origin %q, description %q", c.name, p.Name, p.Origin, p.Description)
			}
			for _, w := range c.rw {
				i := slices.IndexFunc(p.RW, func(r Rule) bool { return r.Path == w.path })
				if i < 0 {
					t.Errorf("Builtin(%q).RW lacks %s", c.name, w.path)
					continue
				}
				if r := p.RW[i]; r.Create != w.create || r.File != w.file {
					t.Errorf("Builtin(%q) rule %s: create %v, file %v; want %v, %v", c.name, w.path, r.Create, r.File, w.create, w.file)
				}
			}
			if c.name != "default" {
				if p.Extends != "default" || p.Chain[len(p.Chain)-1] != "default (builtin)" {
					t.Errorf("Builtin(%q): extends %q, chain %v; want it to extend default", c.name, p.Extends, p.Chain)
				}
				if !slices.Contains(p.Commands, c.name) {
					t.Errorf("Builtin(%q).Commands = %v, want it to name %q", c.name, p.Commands, c.name)
				}
				for _, d := range def.RW {
					if !slices.Contains(p.RW, d) {
						t.Errorf("Builtin(%q).RW lacks default's %+v", c.name, d)
					}
				}
			}
			for _, list := range [][]Rule{p.RW, p.RO, p.Hide, p.Show} {
				for _, r := range list {
					if !filepath.IsAbs(r.Path) || filepath.Clean(r.Path) != r.Path || !strings.HasPrefix(r.Path, home+"/") {
						t.Errorf("Builtin(%q): path %q is not absolute, clean and inside %s", c.name, r.Path, home)
					}
					if !strings.HasPrefix(r.Source, "profile ") || !strings.HasSuffix(r.Source, " (builtin)") {
						t.Errorf("Builtin(%q): rule %s has source %q", c.name, r.Path, r.Source)
					}
				}
			}
		})
	}
}

// TestBuiltinsNeverGrantPrograms: a directory of installed programs that the
// host runs later must not be writable from inside.
func TestBuiltinsNeverGrantPrograms(t *testing.T) {
	for _, name := range BuiltinNames() {
		p, _ := Builtin(name, home)
		for _, r := range p.RW {
			for _, bin := range []string{"/home/u/.local/bin", "/home/u/.cargo/bin", "/home/u/go/bin", "/home/u/.bun/bin", "/home/u/.local/share/claude", "/home/u/.opencode"} {
				if within(bin, r.Path) {
					t.Errorf("Builtin(%q) grants %s (%s), which holds %s", name, r.Path, r.Source, bin)
				}
			}
		}
	}
}

func TestBuiltinNames(t *testing.T) {
	got := BuiltinNames()
	for _, n := range []string{"claude", "codex", "default", "gemini", "opencode"} {
		if !slices.Contains(got, n) {
			t.Errorf("BuiltinNames() = %v, lacks %q", got, n)
		}
	}
	if !slices.IsSorted(got) {
		t.Errorf("BuiltinNames() = %v, not sorted", got)
	}
	if _, ok := Builtin("nosuch", home); ok {
		t.Errorf(`Builtin("nosuch") found`)
	}
}

// TestBuiltinSourcesParse: the built-ins are valid user files too, so each
// is an example of the format.
func TestBuiltinSourcesParse(t *testing.T) {
	for _, name := range BuiltinNames() {
		src, ok := BuiltinSource(name)
		if !ok {
			t.Fatalf("BuiltinSource(%q) not found", name)
		}
		if _, err := Parse("/p/"+name+".toml", src, home); err != nil {
			t.Errorf("Parse(built-in %s) = %v", name, err)
		}
	}
}

func TestBuiltinWithoutHome(t *testing.T) {
	p, ok := Builtin("opencode", "")
	if !ok {
		t.Fatal(`Builtin("opencode", "") not found`)
	}
	if len(p.RW) != 0 || !slices.ContainsFunc(p.Notes, func(n string) bool { return strings.Contains(n, "home directory is unknown") }) {
		t.Errorf(`Builtin("opencode", "") = RW %v, notes %q; want no rules and a note`, p.RW, p.Notes)
	}
	if _, err := Resolve(Env{}, "", "claude"); err != nil {
		t.Errorf(`Resolve(no home, no config dir, claude) = %v, want the built-in without ~ paths`, err)
	}
}
