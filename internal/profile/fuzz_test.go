package profile

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func fuzzSeeds(f *testing.F) {
	for _, name := range BuiltinNames() {
		src, _ := BuiltinSource(name)
		f.Add(src)
	}
	for _, s := range []string{
		"", "rw = [\"~\"]", "rw = [\"~/a/../b\"]", "hide = [\"/\"]", "create = [\"/x\"]",
		"extends = \"builtin:x\"\ncommands = [\"a/b\"]", "[defaults]\nrw = [\"/x\"]",
		"rw = [\"/a\", 1]", "rw = { a = 1 }", "show = [\"~/..\"]", "rw = [\"~//./x/\"]",
		"defaults = { rw = [\"~/x\"], profile = \"default\" }", "rw = [\"\"\"\n~/x\"\"\"]",
	} {
		f.Add([]byte(s))
	}
}

// checkRules is what every accepted file guarantees about its rules.
func checkRules(t *testing.T, what string, lists ...[]Rule) {
	t.Helper()
	for _, list := range lists {
		for _, r := range list {
			if !filepath.IsAbs(r.Path) || filepath.Clean(r.Path) != r.Path || slices.Contains(strings.Split(r.Path, "/"), "..") || r.Source == "" {
				t.Fatalf("%s accepted rule %+v: not an absolute clean path without ..", what, r)
			}
			if r.Create && !strings.HasPrefix(r.Path, home+"/") {
				t.Fatalf("%s creates %s, outside %s", what, r.Path, home)
			}
			if r.File && !r.Create {
				t.Fatalf("%s: File without Create: %+v", what, r)
			}
		}
	}
}

func FuzzParse(f *testing.F) {
	fuzzSeeds(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		p, err := Parse("/p/fuzz.toml", data, home)
		if err != nil {
			if !strings.HasPrefix(err.Error(), "/p/fuzz.toml") {
				t.Fatalf("Parse error %q does not name the file", err)
			}
			return
		}
		checkRules(t, "Parse", p.RW, p.RO, p.Hide, p.Show)
		for _, r := range p.RW {
			if r.Path == "/" || within(home, r.Path) {
				t.Fatalf("Parse grants write access to %s", r.Path)
			}
		}
		if p.Extends != "" {
			target, _ := strings.CutPrefix(p.Extends, builtinPrefix)
			if !isName(target) {
				t.Fatalf("Parse accepted extends %q", p.Extends)
			}
		}
		for _, c := range p.Commands {
			if commandName(c) != nil {
				t.Fatalf("Parse accepted command %q", c)
			}
		}
	})
}

func FuzzParseConfig(f *testing.F) {
	fuzzSeeds(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		c, _, err := parseConfig("/c/config.toml", data, home)
		if err != nil {
			if !strings.HasPrefix(err.Error(), "/c/config.toml") {
				t.Fatalf("parseConfig error %q does not name the file", err)
			}
			return
		}
		checkRules(t, "parseConfig", c.RW, c.RO, c.Hide, c.Show)
		if !slices.Contains([]string{"", "require", "best-effort", "off"}, c.Landlock) {
			t.Fatalf("parseConfig accepted landlock %q", c.Landlock)
		}
	})
}
