package profile

import (
	"bytes"
	"errors"
	"fmt"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"

	"github.com/pelletier/go-toml/v2"
	"github.com/pelletier/go-toml/v2/unstable"
)

// maxFileSize bounds what is read of one profile or config file.
const maxFileSize = 1 << 20

// fileProfile is the TOML schema of a profile file. Pointers tell an absent
// key from an empty value: an absent extends means "default", extends = ""
// means no parent.
type fileProfile struct {
	Description *string  `toml:"description"`
	Extends     *string  `toml:"extends"`
	Commands    []string `toml:"commands"`
	Notes       []string `toml:"notes"`
	pathKeys
}

// pathKeys are the path lists shared by profiles and [defaults].
type pathKeys struct {
	RW          []string `toml:"rw"`
	RO          []string `toml:"ro"`
	Hide        []string `toml:"hide"`
	Show        []string `toml:"show"`
	Create      []string `toml:"create"`
	CreateFiles []string `toml:"create_files"`
}

// fileConfig is the TOML schema of config.toml.
type fileConfig struct {
	Defaults *fileDefaults `toml:"defaults"`
}

type fileDefaults struct {
	Landlock      *string `toml:"landlock"`
	Profile       *string `toml:"profile"`
	AllowDegraded *bool   `toml:"allow_degraded"`
	pathKeys
}

// schema maps each valid dotted key of a file kind to what its value must be,
// in words for error messages. go-toml matches keys case-insensitively; the
// walk over the syntax tree holds keys to these exact spellings.
type schema map[string]string

const (
	wantString = "a string"
	wantList   = "a list of strings"
	wantTable  = "a table"
)

var pathSchema = schema{
	"rw": wantList, "ro": wantList, "hide": wantList, "show": wantList,
	"create": wantList, "create_files": wantList,
}

var profileSchema = merged(pathSchema, schema{
	"description": wantString, "extends": wantString, "commands": wantList, "notes": wantList,
})

var configSchema = merged(prefixed("defaults.", pathSchema), schema{
	"defaults": wantTable, "defaults.landlock": wantString, "defaults.profile": wantString,
	"defaults.allow_degraded": "a boolean",
})

func merged(a, b schema) schema {
	out := schema{}
	for k, v := range a {
		out[k] = v
	}
	for k, v := range b {
		out[k] = v
	}
	return out
}

func prefixed(p string, s schema) schema {
	out := schema{}
	for k, v := range s {
		out[p+k] = v
	}
	return out
}

// keys lists the valid keys directly under prefix ("" for the top level).
func (s schema) keys(prefix string) string {
	var ks []string
	for k := range s {
		if rest, ok := strings.CutPrefix(k, prefix); ok && !strings.Contains(rest, ".") {
			ks = append(ks, rest)
		}
	}
	slices.Sort(ks)
	return strings.Join(ks, ", ")
}

// pos is a 1-based line and column in a file.
type pos struct{ line, col int }

// index is where each key and value of a decoded document is: the decoder
// does not keep positions, so the syntax tree is walked once more.
type index struct {
	keys   map[string]pos   // dotted key → position of the key
	values map[string][]pos // dotted key → position of the value, or of each element of a list
}

func (x *index) value(key string, i int) pos {
	if vs := x.values[key]; i < len(vs) {
		return vs[i]
	}
	return x.keys[key]
}

// decode strictly decodes data into v and indexes the positions of its keys
// and values. file names the document in errors; s is its schema.
func decode(file string, data []byte, v any, s schema) (*index, error) {
	dec := toml.NewDecoder(bytes.NewReader(data)).DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return nil, decodeError(file, err, s)
	}
	return walk(file, data, s)
}

var mismatch = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`cannot decode TOML ([a-z ]+?) into`) })

// decodeError turns go-toml's errors into a ParseError with the position
// they carry and a message in the words of the schema.
func decodeError(file string, err error, s schema) error {
	var strict *toml.StrictMissingError
	if errors.As(err, &strict) && len(strict.Errors) > 0 {
		e := &strict.Errors[0]
		line, col := e.Position()
		key := e.Key()
		if len(key) == 0 {
			return &ParseError{file, line, col, strings.TrimPrefix(e.Error(), "toml: ")}
		}
		// The first part of the key that the schema does not know.
		n := 1
		for n < len(key) && s[strings.Join(key[:n], ".")] == wantTable {
			n++
		}
		if n < len(key) && s[strings.Join(key[:n], ".")] != "" {
			parent := strings.Join(key[:n], ".")
			return &ParseError{file, line, col, fmt.Sprintf("%s: expected %s, found a table", parent, s[parent])}
		}
		key = key[:n]
		name := strings.Join(key, ".")
		parent := strings.Join(key[:n-1], ".")
		what := "key"
		if strings.Contains(e.Error(), "table") {
			what = "table"
		}
		prefix := ""
		if parent != "" {
			prefix = parent + "."
		}
		return &ParseError{file, line, col, fmt.Sprintf("unknown %s %q; valid keys here: %s", what, name, s.keys(prefix))}
	}
	var de *toml.DecodeError
	if errors.As(err, &de) {
		line, col := de.Position()
		msg := strings.TrimPrefix(de.Error(), "toml: ")
		// The key in the schema that holds the bad value: a.b = 1 where a
		// is a list reports the key a.b.
		k := de.Key()
		for len(k) > 0 && s[strings.Join(k, ".")] == "" {
			k = k[:len(k)-1]
		}
		key := strings.Join(k, ".")
		found := ""
		if m := mismatch().FindStringSubmatch(msg); m != nil {
			found = article(m[1])
		} else if strings.HasPrefix(msg, "cannot store a table") {
			found = "a table"
		}
		if found != "" && key != "" {
			if len(k) < len(de.Key()) {
				found = "a table" // a dotted key below a non-table
			}
			msg = fmt.Sprintf("%s: expected %s, found %s", key, s[key], found)
		}
		return &ParseError{file, line, col, msg}
	}
	return &ParseError{File: file, Msg: err.Error()}
}

func article(kind string) string {
	if kind != "" && strings.ContainsRune("aeiou", rune(kind[0])) {
		return "an " + kind
	}
	return "a " + kind
}

// walk indexes the positions of every key and value of data, which the
// decoder accepted, and refuses keys that are not spelled exactly as in s.
func walk(file string, data []byte, s schema) (*index, error) {
	x := &index{keys: map[string]pos{}, values: map[string][]pos{}}
	// lineStarts[i] is the offset of line i+1: positions in O(log n), as a
	// 1 MiB file can hold a list of 100 000 paths.
	lineStarts := []int{0}
	for i, c := range data {
		if c == '\n' {
			lineStarts = append(lineStarts, i+1)
		}
	}
	at := func(r unstable.Range) pos {
		off := min(int(r.Offset), len(data))
		i, found := slices.BinarySearch(lineStarts, off)
		if !found {
			i--
		}
		return pos{i + 1, off - lineStarts[i] + 1} // columns count bytes, as go-toml's do
	}
	var p unstable.Parser
	p.Reset(data)
	var table []string
	var walkValue func(key []string, keyPos pos, v *unstable.Node) error
	addKey := func(prefix []string, n *unstable.Node) ([]string, pos, error) {
		key := slices.Clone(prefix)
		var first pos
		it := n.Key()
		for i := 0; it.Next(); i++ {
			k := it.Node()
			key = append(key, string(k.Data))
			if i == 0 {
				first = at(k.Raw)
			}
			name := strings.Join(key, ".")
			if _, ok := s[name]; !ok {
				return nil, first, &ParseError{file, first.line, first.col,
					fmt.Sprintf("unknown key %q; valid keys here: %s", name, s.keys(strings.Join(key[:len(key)-1], ".")+dot(len(key) > 1)))}
			}
			x.keys[name] = first
		}
		return key, first, nil
	}
	walkValue = func(key []string, keyPos pos, v *unstable.Node) error {
		name := strings.Join(key, ".")
		switch v.Kind {
		case unstable.Array:
			x.values[name] = []pos{}
			it := v.Children()
			for it.Next() {
				if c := it.Node(); c.Kind != unstable.Comment {
					x.values[name] = append(x.values[name], at(c.Raw))
				}
			}
		case unstable.InlineTable:
			it := v.Children()
			for it.Next() {
				kv := it.Node()
				k, kp, err := addKey(key, kv)
				if err != nil {
					return err
				}
				if err := walkValue(k, kp, kv.Value()); err != nil {
					return err
				}
			}
		default:
			if v.Raw.Length > 0 {
				x.values[name] = []pos{at(v.Raw)}
			} else {
				x.values[name] = []pos{keyPos}
			}
		}
		return nil
	}
	for p.NextExpression() {
		e := p.Expression()
		switch e.Kind {
		case unstable.Table, unstable.ArrayTable:
			k, _, err := addKey(nil, e)
			if err != nil {
				return nil, err
			}
			table = k
		case unstable.KeyValue:
			k, kp, err := addKey(table, e)
			if err != nil {
				return nil, err
			}
			if err := walkValue(k, kp, e.Value()); err != nil {
				return nil, err
			}
		}
	}
	if err := p.Error(); err != nil {
		// The decoder parsed the same bytes without error.
		return nil, &ParseError{File: file, Msg: err.Error()}
	}
	return x, nil
}

func dot(b bool) string {
	if b {
		return "."
	}
	return ""
}

// ruleKind says how a list of paths becomes rules.
type ruleKind struct {
	key    string
	create bool // create = dirs, create_files = files: made before the sandbox starts
	file   bool
	write  bool // grants write access: refused for / and the home directory and its ancestors
}

// converter turns decoded path lists into Rules, checking each path, with
// Sources naming the file and line.
type converter struct {
	file   string
	source func(pos) string
	home   string // absolute and clean, or "" when unknown
	// skipTilde drops ~ paths when home is unknown instead of refusing them:
	// built-in profiles must work for a user without a home directory.
	skipTilde bool
	skipped   bool
	x         *index
	prefix    string // "defaults." for the config file
}

func (c *converter) errAt(p pos, format string, args ...any) error {
	return &ParseError{c.file, p.line, p.col, fmt.Sprintf(format, args...)}
}

// placed is a Rule and where in the file it was written.
type placed struct {
	Rule
	at  pos
	key string
}

// rules converts the list under key k.
func (c *converter) rules(k ruleKind, paths []string) ([]placed, error) {
	var out []placed
	for i, raw := range paths {
		p := c.x.value(c.prefix+k.key, i)
		path, err := expand(raw, c.home)
		if errors.Is(err, errNoHome) && c.skipTilde {
			c.skipped = true
			continue
		}
		if err != nil {
			return nil, c.errAt(p, "%s%s: %q: %v", c.prefix, k.key, raw, err)
		}
		if k.write && (path == "/" || (c.home != "" && within(c.home, path))) {
			return nil, c.errAt(p, "%s%s: %q: grants write access to %s, which holds your whole home directory; list the directories the agent needs instead",
				c.prefix, k.key, raw, path)
		}
		if k.create && (c.home == "" || path == c.home || !within(path, c.home)) {
			return nil, c.errAt(p, "%s%s: %q: only paths inside the home directory (~/...) are created; a path elsewhere must exist already (use rw)",
				c.prefix, k.key, raw)
		}
		if k.key == "hide" && path == "/" {
			return nil, c.errAt(p, "%shide: %q: cannot hide the root directory", c.prefix, raw)
		}
		out = append(out, placed{Rule{Path: path, Source: c.source(p), Create: k.create, File: k.file}, p, k.key})
	}
	return out, nil
}

// pathRules converts all the path lists of one file into RW, RO, Hide and
// Show, each without duplicates (the first mention's Source is kept).
// create and create_files entries are RW rules with Create set.
func (c *converter) pathRules(pk pathKeys) (rw, ro, hide, show []Rule, err error) {
	lists := []struct {
		k     ruleKind
		paths []string
		dst   *[]placed
	}{
		{ruleKind{key: "create", create: true, write: true}, pk.Create, new([]placed)},
		{ruleKind{key: "create_files", create: true, file: true, write: true}, pk.CreateFiles, nil},
		{ruleKind{key: "rw", write: true}, pk.RW, nil},
		{ruleKind{key: "ro"}, pk.RO, new([]placed)},
		{ruleKind{key: "hide"}, pk.Hide, new([]placed)},
		{ruleKind{key: "show"}, pk.Show, new([]placed)},
	}
	lists[1].dst, lists[2].dst = lists[0].dst, lists[0].dst
	seen := map[*[]placed]map[string]int{} // list → path → index
	for _, l := range lists {
		rs, err := c.rules(l.k, l.paths)
		if err != nil {
			return nil, nil, nil, nil, err
		}
		if seen[l.dst] == nil {
			seen[l.dst] = map[string]int{}
		}
		for _, r := range rs {
			i, ok := seen[l.dst][r.Path]
			if !ok {
				seen[l.dst][r.Path] = len(*l.dst)
				*l.dst = append(*l.dst, r)
				continue
			}
			o := &(*l.dst)[i]
			if o.Create && r.Create && o.File != r.File {
				return nil, nil, nil, nil, c.errAt(r.at, "%s%s: %s is also in %s%s (line %d): a path is created either as a directory or as a file",
					c.prefix, r.key, r.Path, c.prefix, o.key, o.at.line)
			}
			o.Create = o.Create || r.Create
			o.File = o.File || r.File
		}
	}
	hidden, shown := *lists[4].dst, *lists[5].dst
	for _, s := range shown {
		if i, ok := seen[lists[4].dst][s.Path]; ok {
			return nil, nil, nil, nil, c.errAt(s.at, "%sshow: %s is also in %shide (line %d): a path is either hidden or shown",
				c.prefix, s.Path, c.prefix, hidden[i].at.line)
		}
	}
	strip := func(ps []placed) []Rule {
		var out []Rule
		for _, p := range ps {
			out = append(out, p.Rule)
		}
		return out
	}
	return strip(*lists[0].dst), strip(*lists[3].dst), strip(hidden), strip(shown), nil
}

var errNoHome = errors.New("needs the home directory, which is unknown (HOME is unset or not an absolute path)")

// expand checks one path as written in a file and returns it absolute and
// clean: "~" and "~/..." are under home, other paths must be absolute. A ".."
// component is refused rather than resolved: a profile names the paths it
// grants as they are.
func expand(raw, home string) (string, error) {
	switch {
	case raw == "":
		return "", errors.New("empty path")
	case strings.ContainsRune(raw, 0):
		return "", errors.New("path contains a NUL byte")
	case len(raw) > 4095:
		return "", errors.New("path longer than PATH_MAX")
	case slices.Contains(strings.Split(raw, "/"), ".."):
		return "", errors.New(`path contains "..": name the path itself`)
	}
	if raw == "~" || strings.HasPrefix(raw, "~/") {
		if home == "" {
			return "", errNoHome
		}
		return filepath.Join(home, raw[1:]), nil
	}
	if strings.HasPrefix(raw, "~") {
		return "", errors.New("only ~/ (your home directory) is expanded, not ~user")
	}
	if !strings.HasPrefix(raw, "/") {
		return "", errors.New("relative path: write an absolute path or one starting with ~/")
	}
	return filepath.Clean(raw), nil
}

// within reports whether p is dir or inside it, on a separator boundary:
// /home/al is not inside /home/alice.
func within(p, dir string) bool {
	return p == dir || dir == "/" || strings.HasPrefix(p, dir+"/")
}

// nameRE is what --profile NAME, extends and profiles/NAME.toml accept.
var nameRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._+-]{0,63}$`) })

// isName reports whether s is a profile name. A name ending in .toml would
// be a file to --profile.
func isName(s string) bool { return nameRE().MatchString(s) && !strings.HasSuffix(s, ".toml") }

// commandName is a command base name in commands.
func commandName(s string) error {
	switch {
	case s == "" || s == "." || s == "..":
		return errors.New("not a command name")
	case strings.ContainsAny(s, "/\x00"):
		return errors.New("a command's base name has no / (write opencode, not /usr/bin/opencode)")
	}
	return nil
}

// Parse decodes one profile file strictly. path names it in errors and
// Sources and gives its name (the base name without .toml); home (absolute)
// expands ~. An unknown key, a value of the wrong type, an empty, relative
// or ".." path, a bad extends or command name is a *ParseError naming
// path, line and column. Parse reads no other file: extends is checked for
// its form, not resolved.
//
// The result has only this file's rules; Extends is the parent as written,
// or "default" when the key is absent ("builtin:default" for a profile
// named default), and "" for extends = "".
func Parse(path string, data []byte, home string) (Profile, error) {
	name := strings.TrimSuffix(filepath.Base(path), ".toml")
	return parse(path, name, path, data, cleanHome(home), false)
}

// cleanHome returns home clean when it is absolute, else "" (unknown).
func cleanHome(home string) string {
	if !filepath.IsAbs(home) {
		return ""
	}
	return filepath.Clean(home)
}

// parse is Parse for a file (origin = its path) or a built-in (origin =
// "builtin", file = "builtin:NAME"). home is clean and absolute, or "".
func parse(file, name, origin string, data []byte, home string, builtin bool) (Profile, error) {
	if len(data) > maxFileSize {
		return Profile{}, &ParseError{File: file, Msg: "larger than 1 MiB"}
	}
	var fp fileProfile
	x, err := decode(file, data, &fp, profileSchema)
	if err != nil {
		return Profile{}, err
	}
	p := Profile{Name: name, Origin: origin, file: file}
	source := func(at pos) string {
		if builtin {
			return fmt.Sprintf("profile %s (builtin)", name)
		}
		return fmt.Sprintf("profile %s (%s:%d)", name, file, at.line)
	}
	c := &converter{file: file, source: source, home: home, skipTilde: builtin, x: x}
	if fp.Description != nil {
		p.Description = *fp.Description
	}
	switch {
	case fp.Extends != nil:
		p.Extends = *fp.Extends
		p.extendsPos = x.value("extends", 0)
		if p.Extends != "" {
			target, _ := strings.CutPrefix(p.Extends, builtinPrefix)
			if !isName(target) {
				return Profile{}, c.errAt(p.extendsPos, "extends: %q: not a profile name (letters, digits, ., _, +, -; or builtin:NAME for a built-in)", p.Extends)
			}
		}
	case builtin && name == "default":
		// The root of every chain.
	case name == "default":
		p.Extends = builtinPrefix + "default"
	default:
		p.Extends = "default"
	}
	for i, cmd := range fp.Commands {
		if err := commandName(cmd); err != nil {
			return Profile{}, c.errAt(x.value("commands", i), "commands: %q: %v", cmd, err)
		}
		if !slices.Contains(p.Commands, cmd) {
			p.Commands = append(p.Commands, cmd)
			p.commandPos = append(p.commandPos, x.value("commands", i))
		}
	}
	for _, n := range fp.Notes {
		if !slices.Contains(p.Notes, n) {
			p.Notes = append(p.Notes, n)
		}
	}
	if p.RW, p.RO, p.Hide, p.Show, err = c.pathRules(fp.pathKeys); err != nil {
		return Profile{}, err
	}
	if c.skipped {
		p.Notes = append(p.Notes, "the home directory is unknown (HOME unset or not absolute): this profile's paths under ~ were left out")
	}
	return p, nil
}

// parseConfig decodes config.toml strictly.
func parseConfig(path string, data []byte, home string) (Config, pos, error) {
	var fc fileConfig
	x, err := decode(path, data, &fc, configSchema)
	if err != nil {
		return Config{}, pos{}, err
	}
	cfg := Config{Path: path}
	if fc.Defaults == nil {
		return cfg, pos{}, nil
	}
	d := fc.Defaults
	c := &converter{file: path, home: home, x: x, prefix: "defaults.",
		source: func(at pos) string { return fmt.Sprintf("config %s:%d", path, at.line) }}
	if d.AllowDegraded != nil {
		cfg.AllowDegraded = *d.AllowDegraded
	}
	if d.Landlock != nil {
		switch *d.Landlock {
		case "require", "best-effort", "off":
			cfg.Landlock = *d.Landlock
		default:
			return Config{}, pos{}, c.errAt(x.value("defaults.landlock", 0), `defaults.landlock: %q: valid values are "require" (the default), "best-effort" and "off"`, *d.Landlock)
		}
	}
	var profilePos pos
	if d.Profile != nil && *d.Profile != "" { // "": not set, as if absent
		profilePos = x.value("defaults.profile", 0)
		target, _ := strings.CutPrefix(*d.Profile, builtinPrefix)
		if !isName(target) {
			return Config{}, pos{}, c.errAt(profilePos, "defaults.profile: %q: not a profile name (letters, digits, ., _, +, -; or builtin:NAME)", *d.Profile)
		}
		cfg.Profile = *d.Profile
	}
	if cfg.RW, cfg.RO, cfg.Hide, cfg.Show, err = c.pathRules(d.pathKeys); err != nil {
		return Config{}, pos{}, err
	}
	return cfg, profilePos, nil
}
