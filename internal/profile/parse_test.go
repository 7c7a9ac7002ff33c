package profile

import (
	"errors"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
)

const home = "/home/u"

func TestParse(t *testing.T) {
	doc := `# a profile
description = "my agent"
extends = "builtin:codex"
commands = ["myagent", "ma"]
rw = [
  "~/.myagent",
  "/srv/data/",   # cleaned
  "~/.myagent",   # listed twice: kept once
]
create = ["~/.local/share/myagent"]
create_files = ["~/.myagent.json"]
ro = ["~/.myagent/config.json"]
hide = ["~/.myagent/secrets"]
show = ["~/.ssh"]
notes = ["a note"]
`
	file := "/cfg/profiles/myagent.toml"
	got, err := Parse(file, []byte(doc), home)
	if err != nil {
		t.Fatal(err)
	}
	src := func(line int) string { return "profile myagent (/cfg/profiles/myagent.toml:" + itoa(line) + ")" }
	want := Profile{
		Name: "myagent", Description: "my agent", Origin: file, Extends: "builtin:codex",
		Commands: []string{"myagent", "ma"},
		RW: []Rule{
			{Path: "/home/u/.local/share/myagent", Source: src(10), Create: true},
			{Path: "/home/u/.myagent.json", Source: src(11), Create: true, File: true},
			{Path: "/home/u/.myagent", Source: src(6)},
			{Path: "/srv/data", Source: src(7)},
		},
		RO:    []Rule{{Path: "/home/u/.myagent/config.json", Source: src(12)}},
		Hide:  []Rule{{Path: "/home/u/.myagent/secrets", Source: src(13)}},
		Show:  []Rule{{Path: "/home/u/.ssh", Source: src(14)}},
		Notes: []string{"a note"},
	}
	got.file, got.extendsPos, got.commandPos = "", pos{}, nil
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Parse = %+v\nwant %+v", got, want)
	}
}

func itoa(i int) string { return strconv.Itoa(i) }

func TestParseExtendsDefault(t *testing.T) {
	for _, c := range []struct{ file, doc, want string }{
		{"/p/a.toml", ``, "default"},
		{"/p/a.toml", `extends = ""`, ""},
		{"/p/a.toml", `extends = "b"`, "b"},
		{"/p/default.toml", ``, "builtin:default"},
		{"/p/default.toml", `extends = "default"`, "default"}, // a cycle, found by Resolve
	} {
		p, err := Parse(c.file, []byte(c.doc), home)
		if err != nil || p.Extends != c.want {
			t.Errorf("Parse(%s, %q).Extends = %q, %v; want %q", c.file, c.doc, p.Extends, err, c.want)
		}
	}
}

func TestParseMergesCreateWithRW(t *testing.T) {
	p, err := Parse("/p/a.toml", []byte("rw = [\"~/x\"]\ncreate = [\"~/x/\"]\n"), home)
	if err != nil {
		t.Fatal(err)
	}
	want := []Rule{{Path: "/home/u/x", Source: "profile a (/p/a.toml:2)", Create: true}}
	if !reflect.DeepEqual(p.RW, want) {
		t.Errorf("Parse(rw and create of one path).RW = %+v, want %+v", p.RW, want)
	}
}

// TestParseErrors checks that every refusal names the file, line and column
// of the offending key or value.
func TestParseErrors(t *testing.T) {
	const f = "/cfg/profiles/p.toml"
	for _, c := range []struct {
		name, doc string
		where     string // "LINE:COL"
		msg       string // a substring of the message
	}{
		{"unknown key", "rw = []\n\nrws = [\"~/x\"]\n", "3:1", `unknown key "rws"; valid keys here: commands, create, create_files, description, extends, hide, notes, ro, rw, show`},
		{"unknown key, other case", "description = \"x\"\nRW = [\"~/x\"]\n", "2:1", `unknown key "RW"`},
		{"unknown table", "rw = []\n[extra]\nx = 1\n", "2:2", `unknown table "extra"`},
		{"unknown dotted key", "\nfoo.bar = 1\n", "2:1", `unknown key "foo"; valid keys here`},
		{"wrong type: list", "description = \"d\"\nrw = \"~/x\"\n", "2:6", "rw: expected a list of strings, found a string"},
		{"wrong type: element", "rw = [\n  \"~/x\",\n  42,\n]\n", "3:3", "rw: expected a list of strings, found an integer"},
		{"wrong type: string", "extends = [\"a\"]\n", "1:11", "extends: expected a string, found an array"},
		{"wrong type: bool", "description = true\n", "1:15", "description: expected a string, found a boolean"},
		{"wrong type: table", "[rw]\n", "1:2", "rw: expected a list of strings, found a table"},
		{"wrong type: dotted", "rw.x = 1\n", "1:4", "rw: expected a list of strings, found a table"},
		{"duplicate key", "rw = []\nrw = []\n", "2:1", "key rw is already defined"},
		{"syntax", "rw = [\"~/x\"\n", "1:12", "array is incomplete"},
		{"relative path", "\nhide = [\"~/a\", \"b/c\"]\n", "2:16", `hide: "b/c": relative path`},
		{"dot-relative path", "ro = [\"./x\"]\n", "1:7", `ro: "./x": relative path`},
		{"dot-dot", "rw = [\n  \"~/x/../../etc\"\n]\n", "2:3", `rw: "~/x/../../etc": path contains ".."`},
		{"dot-dot absolute", "show = [\"/a/..\"]\n", "1:9", `show: "/a/..": path contains ".."`},
		{"empty path", "create = [\"\"]\n", "1:11", `create: "": empty path`},
		{"NUL", "rw = [\"/a\\u0000b\"]\n", "1:7", "NUL"},
		{"tilde user", "rw = [\"~root/x\"]\n", "1:7", "not ~user"},
		{"variable", "rw = [\"$HOME/x\"]\n", "1:7", "relative path"},
		{"rw home", "rw = [\"~/\"]\n", "1:7", "whole home directory"},
		{"rw ancestor of home", "create_files = []\nrw = [\"/home\"]\n", "2:7", "whole home directory"},
		{"rw root", "rw = [\"/\"]\n", "1:7", "whole home directory"},
		{"create outside home", "create = [\"/opt/x\"]\n", "1:11", "only paths inside the home directory"},
		{"create home", "create = [\"~\"]\n", "1:11", "whole home directory"},
		{"hide root", "hide = [\"//\"]\n", "1:9", "cannot hide the root directory"},
		{"hide and show", "hide = [\"~/a\"]\nshow = [\"~/b\", \"~/a\"]\n", "2:16", "show: /home/u/a is also in hide (line 1)"},
		{"dir and file", "create = [\"~/a\"]\ncreate_files = [\"~/a\"]\n", "2:17", "create_files: /home/u/a is also in create (line 1)"},
		{"extends name", "extends = \"../x\"\n", "1:11", `extends: "../x": not a profile name`},
		{"extends file", "extends = \"x.toml\"\n", "1:11", `not a profile name`},
		{"command path", "commands = [\"ok\", \"/usr/bin/x\"]\n", "1:19", "a command's base name has no /"},
		{"command empty", "commands = [\"\"]\n", "1:13", "not a command name"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := Parse(f, []byte(c.doc), home)
			var pe *ParseError
			if !errors.As(err, &pe) {
				t.Fatalf("Parse(%q) = %v, want a *ParseError", c.doc, err)
			}
			prefix := f + ":" + c.where + ": "
			if !strings.HasPrefix(err.Error(), prefix) || !strings.Contains(err.Error(), c.msg) {
				t.Errorf("Parse(%q) = %q, want %q...%q", c.doc, err, prefix, c.msg)
			}
		})
	}
}

func TestParseTildeWithoutHome(t *testing.T) {
	_, err := Parse("/p/a.toml", []byte("rw = [\"/ok\", \"~/x\"]"), "")
	if err == nil || !strings.HasPrefix(err.Error(), "/p/a.toml:1:14: rw: \"~/x\": needs the home directory") {
		t.Errorf("Parse(~ path, home \"\") = %v, want an error at 1:14 about the home directory", err)
	}
	// A relative home is no home either.
	if _, err := Parse("/p/a.toml", []byte("rw = [\"~/x\"]"), "home/u"); err == nil {
		t.Errorf("Parse(~ path, home \"home/u\") = nil, want an error")
	}
	if p, err := Parse("/p/a.toml", []byte("rw = [\"/ok\"]"), ""); err != nil || len(p.RW) != 1 {
		t.Errorf("Parse(absolute path, home \"\") = %+v, %v; want it accepted", p.RW, err)
	}
}

func TestParseErrorFormat(t *testing.T) {
	for _, c := range []struct {
		e    ParseError
		want string
	}{
		{ParseError{"/f.toml", 3, 7, "m"}, "/f.toml:3:7: m"},
		{ParseError{"/f.toml", 3, 0, "m"}, "/f.toml:3: m"},
		{ParseError{"/f.toml", 0, 0, "m"}, "/f.toml: m"},
	} {
		if got := c.e.Error(); got != c.want {
			t.Errorf("%#v.Error() = %q, want %q", c.e, got, c.want)
		}
	}
}

func TestExpand(t *testing.T) {
	for _, c := range []struct{ raw, want string }{
		{"~", "/home/u"},
		{"~/", "/home/u"},
		{"~/.config//x/./y/", "/home/u/.config/x/y"},
		{"/a/b/", "/a/b"},
		{"//a", "/a"},
		{"/a/...", "/a/..."}, // not ".."
		{"/a/..b", "/a/..b"},
	} {
		got, err := expand(c.raw, home)
		if err != nil || got != c.want {
			t.Errorf("expand(%q) = %q, %v; want %q", c.raw, got, err, c.want)
		}
		if got != filepath.Clean(got) || !filepath.IsAbs(got) {
			t.Errorf("expand(%q) = %q: not absolute and clean", c.raw, got)
		}
	}
}

func TestWithin(t *testing.T) {
	for _, c := range []struct {
		p, dir string
		want   bool
	}{
		{"/home/alice", "/home/al", false},
		{"/home/al/x", "/home/al", true},
		{"/home/al", "/home/al", true},
		{"/x", "/", true},
	} {
		if got := within(c.p, c.dir); got != c.want {
			t.Errorf("within(%q, %q) = %v, want %v", c.p, c.dir, got, c.want)
		}
	}
}

func TestDefaultConfigDir(t *testing.T) {
	for _, c := range []struct{ home, xdg, want string }{
		{"/home/u", "", "/home/u/.config/agentbox"},
		{"/home/u", "/x/conf", "/x/conf/agentbox"},
		{"/home/u", "relative/conf", "/home/u/.config/agentbox"}, // the XDG spec: ignore relative
		{"", "", ""},
		{"relative", "", ""},
		{"", "/x/conf/", "/x/conf/agentbox"},
	} {
		if got := DefaultConfigDir(c.home, c.xdg); got != c.want {
			t.Errorf("DefaultConfigDir(%q, %q) = %q, want %q", c.home, c.xdg, got, c.want)
		}
	}
}
