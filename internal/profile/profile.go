package profile

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// Rule is one path of a profile or of the config.
type Rule struct {
	// Path is absolute and clean, ~ expanded, with no ".." component.
	Path string
	// Source says where the rule was written, for `agentbox policy` and
	// error messages: "profile opencode (builtin)",
	// "profile myagent (/home/u/.config/agentbox/profiles/myagent.toml:4)",
	// "config /home/u/.config/agentbox/config.toml:7".
	Source string
	// Create (RW rules only): create the path before the sandbox starts when
	// it is missing: a directory, mode 0700, or, with File, an empty regular
	// file, mode 0600. Missing parents are directories, mode 0700. Only set
	// for paths inside the home directory, never the home directory itself.
	Create bool
	// File (with Create): the path is a regular file, not a directory. A
	// false File says nothing about an existing path: its kind on disk
	// decides, as for --rw.
	File bool
}

// Profile is what one agent needs: where it may write beyond the session's
// private directories, what is read-only, hidden or shown again.
type Profile struct {
	Name        string
	Description string
	// Origin is "builtin" or the path of the file the profile came from.
	Origin string
	// Extends is the parent as written (Parse), or "default" when the file
	// has no extends key ("builtin:default" for a profile named default);
	// "" for none. After Resolve it is the leaf's parent.
	Extends string
	// Commands are the command base names the profile is chosen for,
	// besides its own name.
	Commands []string
	// RW grants write access (Landlock). RO makes paths read-only even
	// inside a writable tree (a read-only bind mount). Hide replaces paths
	// by an empty directory or file. Show un-hides paths hidden by
	// agentbox's defaults. After Resolve, Hide and Show are disjoint.
	RW, RO, Hide, Show []Rule
	// Notes are limitations worth telling the user (`agentbox policy`, -v).
	Notes []string
	// Chain lists the profiles merged by Resolve, leaf first, as
	// "NAME (ORIGIN)".
	Chain []string

	file       string // names the profile in errors: its path, or builtin:NAME
	extendsPos pos
	commandPos []pos
}

// Config is ~/.config/agentbox/config.toml: settings for every run.
type Config struct {
	Landlock string // "require", "best-effort", "off", or "" (not set)
	// AllowDegraded lets agentbox run with Landlock alone when user
	// namespaces are unavailable (--allow-degraded).
	AllowDegraded bool
	// Profile forces a profile (NAME or builtin:NAME) when --profile is not
	// given; LoadConfig has checked that it exists.
	Profile string
	// RW, RO, Hide and Show apply to every run, after the profile's.
	RW, RO, Hide, Show []Rule
	Path               string // the file read; "" when there is none
}

// Env is where profiles and config are looked for.
type Env struct {
	Home string // the user's home directory; ~ expands to it. "" or relative: unknown
	// ConfigDir holds config.toml and profiles/; "" for none. Compute it with
	// DefaultConfigDir. It must be absolute: nothing is ever read relative
	// to the working directory, which is the agent's project.
	ConfigDir string
}

const builtinPrefix = "builtin:"

// DefaultConfigDir is $XDG_CONFIG_HOME/agentbox when XDG_CONFIG_HOME is
// absolute (the XDG spec says to ignore a relative one), else
// HOME/.config/agentbox, else "" (no config: built-in profiles only).
func DefaultConfigDir(home, xdgConfigHome string) string {
	if filepath.IsAbs(xdgConfigHome) {
		return filepath.Join(xdgConfigHome, "agentbox")
	}
	if filepath.IsAbs(home) {
		return filepath.Join(home, ".config", "agentbox")
	}
	return ""
}

func checkEnv(e Env) error {
	if e.ConfigDir != "" && !filepath.IsAbs(e.ConfigDir) {
		return fmt.Errorf("agentbox config directory %q: not an absolute path; set XDG_CONFIG_HOME to an absolute path or unset it", e.ConfigDir)
	}
	return nil
}

// LoadConfig reads e.ConfigDir/config.toml. A missing file (or no
// ConfigDir) is the zero Config and no error. The file must be the user's
// own (see the package doc); it is decoded strictly, and its profile key
// must name a profile that exists.
func LoadConfig(e Env) (Config, error) {
	if err := checkEnv(e); err != nil || e.ConfigDir == "" {
		return Config{}, err
	}
	path := filepath.Join(e.ConfigDir, "config.toml")
	data, err := readTrusted("config file", path)
	if errors.Is(err, fs.ErrNotExist) {
		return Config{}, nil
	}
	if err != nil {
		return Config{}, err
	}
	cfg, at, err := parseConfig(path, data, cleanHome(e.Home))
	if err != nil {
		return Config{}, err
	}
	if cfg.Profile != "" {
		var missing *missingError
		if _, err := newLoader(e).lookup(cfg.Profile); errors.As(err, &missing) {
			return Config{}, &ParseError{path, at.line, at.col, fmt.Sprintf("defaults.profile: %v", err)}
		} else if err != nil {
			return Config{}, err // the profile's file is unreadable, unsafe or invalid: it says where
		}
	}
	return cfg, nil
}

// Resolve returns the profile for a run, merged with everything it extends.
//
// flag is --profile (or the config's profile): "" chooses by command, the
// base name of argv[0] (see the package doc for the order); a value with a
// "/" or ending in ".toml" is a file, read as given (an explicit choice, so
// a relative path is relative to the working directory; ~/ is the home
// directory); anything else is a
// NAME: e.ConfigDir/profiles/NAME.toml if it exists, else the built-in NAME;
// builtin:NAME is always the built-in.
//
// Rules are merged root first: a child's rules come after its parent's, a
// path listed twice keeps its first Source, Create and File are combined. A
// profile's show removes that path from the hides of its ancestors; a
// profile's hide removes it from the shows of its ancestors.
func Resolve(e Env, flag, command string) (Profile, error) {
	if err := checkEnv(e); err != nil {
		return Profile{}, err
	}
	l := newLoader(e)
	var leaf *Profile
	var err error
	switch {
	case flag == "":
		leaf, err = l.byCommand(command)
	case strings.Contains(flag, "/") || strings.HasSuffix(flag, ".toml"):
		path := flag
		if rest, ok := strings.CutPrefix(flag, "~/"); ok && l.home != "" {
			path = filepath.Join(l.home, rest) // --profile=~/x.toml: the shell leaves ~ alone after =
		}
		if path, err = filepath.Abs(path); err == nil {
			leaf, err = l.file(path)
		}
	default:
		leaf, err = l.lookup(flag)
		var missing *missingError
		if errors.As(err, &missing) {
			err = fmt.Errorf("--profile %s: %w", flag, err)
		}
	}
	if err != nil {
		return Profile{}, err
	}
	return l.resolve(leaf)
}

// Builtin returns the built-in profile name merged with the built-ins it
// extends, its paths under home (absolute; "" leaves out the ~ paths, with a
// note). Unlike Resolve, it never reads a user file.
func Builtin(name, home string) (Profile, bool) {
	l := &loader{home: cleanHome(home), cache: map[string]*Profile{}, builtinsOnly: true}
	p, err := l.builtin(name)
	if err != nil {
		return Profile{}, false
	}
	r, err := l.resolve(p)
	if err != nil {
		panic("built-in profile " + name + ": " + err.Error()) // the tests resolve every built-in
	}
	return r, true
}

// BuiltinNames lists the built-in profiles, sorted.
func BuiltinNames() []string {
	var names []string
	for name := range builtinSources() {
		names = append(names, name)
	}
	slices.Sort(names)
	return names
}

// loader finds, reads and parses profiles for one Resolve.
type loader struct {
	env          Env
	home         string
	cache        map[string]*Profile // by id: builtin:NAME or the file's path
	builtinsOnly bool                // Builtin: "default" is builtin:default
}

func newLoader(e Env) *loader {
	return &loader{env: e, home: cleanHome(e.Home), cache: map[string]*Profile{}}
}

func (l *loader) profilesDir() string {
	if l.env.ConfigDir == "" {
		return ""
	}
	return filepath.Join(l.env.ConfigDir, "profiles")
}

func (l *loader) builtin(name string) (*Profile, error) {
	id := builtinPrefix + name
	if p, ok := l.cache[id]; ok {
		return p, nil
	}
	src, ok := builtinSources()[name]
	if !ok {
		return nil, &missingError{fmt.Sprintf("no built-in profile %q (built-ins: %s)", name, strings.Join(BuiltinNames(), ", "))}
	}
	p, err := parse(id, name, "builtin", src, l.home, true)
	if err != nil {
		return nil, err
	}
	l.cache[id] = &p
	return &p, nil
}

func (l *loader) file(path string) (*Profile, error) {
	if p, ok := l.cache[path]; ok {
		return p, nil
	}
	data, err := readTrusted("profile file", path)
	if err != nil {
		return nil, err
	}
	p, err := Parse(path, data, l.home)
	if err != nil {
		return nil, err
	}
	l.cache[path] = &p
	return &p, nil
}

// lookup finds the profile NAME (user file first, then built-in) or
// builtin:NAME.
func (l *loader) lookup(ref string) (*Profile, error) {
	if name, ok := strings.CutPrefix(ref, builtinPrefix); ok {
		return l.builtin(name)
	}
	if l.builtinsOnly {
		return l.builtin(ref)
	}
	if !isName(ref) {
		return nil, &missingError{fmt.Sprintf("%q: not a profile name (letters, digits, ., _, +, -) nor a file (a path with / or ending in .toml)", ref)}
	}
	if dir := l.profilesDir(); dir != "" {
		path := filepath.Join(dir, ref+".toml")
		p, err := l.file(path)
		if err == nil || !errors.Is(err, fs.ErrNotExist) {
			return p, err
		}
	}
	if _, ok := builtinSources()[ref]; ok {
		return l.builtin(ref)
	}
	where := "no profiles directory"
	if dir := l.profilesDir(); dir != "" {
		where = "no file " + filepath.Join(dir, ref+".toml")
	}
	return nil, &missingError{fmt.Sprintf("no profile %q: %s and no built-in profile of that name (built-ins: %s)", ref, where, strings.Join(BuiltinNames(), ", "))}
}

// byCommand chooses the profile for argv[0]: a user profile that claims the
// command's base name (by its file name or its commands), else a built-in
// that does, else the profile named default.
func (l *loader) byCommand(command string) (*Profile, error) {
	base := filepath.Base(command)
	if command == "" || commandName(base) != nil {
		return l.lookup("default")
	}
	var claims []*Profile
	var why []string
	if dir := l.profilesDir(); dir != "" {
		entries, err := os.ReadDir(dir)
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("profiles directory %s: %w", dir, err)
		}
		for _, ent := range entries {
			name, ok := strings.CutSuffix(ent.Name(), ".toml")
			if !ok || strings.HasPrefix(name, ".") {
				continue // editor backups, hidden files
			}
			p, err := l.file(filepath.Join(dir, ent.Name()))
			if err != nil {
				return nil, err
			}
			if name == base {
				claims = append(claims, p)
				why = append(why, fmt.Sprintf("%s (its name)", p.file))
			} else if i := slices.Index(p.Commands, base); i >= 0 {
				claims = append(claims, p)
				why = append(why, fmt.Sprintf("%s:%d (commands)", p.file, p.commandPos[i].line))
			}
		}
	}
	switch len(claims) {
	case 0:
	case 1:
		return claims[0], nil
	default:
		return nil, fmt.Errorf("command %s: claimed by more than one profile: %s; keep it in one of them, or pass --profile", base, strings.Join(why, ", "))
	}
	for _, name := range BuiltinNames() {
		p, err := l.builtin(name)
		if err != nil {
			return nil, err
		}
		if slices.Contains(p.Commands, base) {
			return p, nil
		}
	}
	return l.lookup("default")
}

func (l *loader) id(p *Profile) string {
	if p.Origin == "builtin" {
		return builtinPrefix + p.Name
	}
	return p.Origin
}

func label(p *Profile) string { return fmt.Sprintf("%s (%s)", p.Name, p.Origin) }

// missingError is a profile name that names no profile.
type missingError struct{ msg string }

func (e *missingError) Error() string { return e.msg }

// maxDepth bounds an extends chain.
const maxDepth = 16

// resolve follows leaf's extends chain and merges it.
func (l *loader) resolve(leaf *Profile) (Profile, error) {
	chain := []*Profile{leaf}
	seen := map[string]bool{l.id(leaf): true}
	for cur := leaf; cur.Extends != ""; {
		parent, err := l.lookup(cur.Extends)
		var missing *missingError
		if errors.As(err, &missing) {
			return Profile{}, l.extendsError(cur, err.Error())
		}
		if err != nil {
			return Profile{}, err // the parent's file is unreadable, unsafe or invalid
		}
		if seen[l.id(parent)] {
			names := []string{}
			for _, p := range chain {
				names = append(names, label(p))
			}
			names = append(names, label(parent))
			msg := "cycle: " + strings.Join(names, " → ")
			if _, ok := builtinSources()[cur.Extends]; ok && parent.Origin != "builtin" {
				msg += fmt.Sprintf(`; to extend the built-in profile, write extends = "builtin:%s"`, cur.Extends)
			}
			return Profile{}, l.extendsError(cur, msg)
		}
		if len(chain) == maxDepth {
			return Profile{}, l.extendsError(cur, fmt.Sprintf("chain longer than %d profiles", maxDepth))
		}
		seen[l.id(parent)] = true
		chain = append(chain, parent)
		cur = parent
	}
	return merge(chain)
}

func (l *loader) extendsError(p *Profile, msg string) error {
	what := fmt.Sprintf("extends %q", p.Extends)
	if p.extendsPos == (pos{}) {
		what = fmt.Sprintf("extends %q (implied: the file has no extends key)", p.Extends)
	}
	return &ParseError{p.file, p.extendsPos.line, p.extendsPos.col, what + ": " + msg}
}

// merge merges chain (leaf first) root first.
func merge(chain []*Profile) (Profile, error) {
	leaf := chain[0]
	out := Profile{Name: leaf.Name, Description: leaf.Description, Origin: leaf.Origin, Extends: leaf.Extends,
		Commands: slices.Clone(leaf.Commands), file: leaf.file}
	for _, p := range chain {
		out.Chain = append(out.Chain, label(p))
		if out.Description == "" {
			out.Description = p.Description
		}
	}
	var rw, ro, hide, show ruleSet
	for i := len(chain) - 1; i >= 0; i-- {
		p := chain[i]
		if err := rw.add(p.RW); err != nil {
			return Profile{}, err
		}
		ro.add(p.RO)
		hide.add(p.Hide)
		show.remove(p.Hide)
		hide.remove(p.Show)
		show.add(p.Show)
		for _, n := range p.Notes {
			if !slices.Contains(out.Notes, n) {
				out.Notes = append(out.Notes, n)
			}
		}
	}
	out.RW, out.RO, out.Hide, out.Show = rw.list(), ro.list(), hide.list(), show.list()
	return out, nil
}

// ruleSet is rules in order, at most one per path.
type ruleSet struct {
	rules []Rule
	at    map[string]int // path → index in rules; -1 once removed
}

// add appends the rules whose paths are not in s yet, and combines Create
// and File of those that are.
func (s *ruleSet) add(more []Rule) error {
	if s.at == nil {
		s.at = map[string]int{}
	}
	for _, r := range more {
		i, ok := s.at[r.Path]
		if !ok || i < 0 {
			s.at[r.Path] = len(s.rules)
			s.rules = append(s.rules, r)
			continue
		}
		o := &s.rules[i]
		if o.Create && r.Create && o.File != r.File {
			return fmt.Errorf("%s: created as a %s by %s and as a %s by %s; a path is created either as a directory or as a file",
				r.Path, kind(o.File), o.Source, kind(r.File), r.Source)
		}
		o.Create = o.Create || r.Create
		o.File = o.File || r.File
	}
	return nil
}

// remove drops the rules whose paths are in drop.
func (s *ruleSet) remove(drop []Rule) {
	for _, d := range drop {
		if i, ok := s.at[d.Path]; ok && i >= 0 {
			s.rules[i].Path = "" // compacted by list
			s.at[d.Path] = -1
		}
	}
}

func (s *ruleSet) list() []Rule {
	var out []Rule
	for _, r := range s.rules {
		if r.Path != "" {
			out = append(out, r)
		}
	}
	return out
}

func kind(file bool) string {
	if file {
		return "file"
	}
	return "directory"
}

// remove drops the rules whose paths are in drop.
func remove(rules, drop []Rule) []Rule {
	return slices.DeleteFunc(rules, func(r Rule) bool {
		return slices.ContainsFunc(drop, func(d Rule) bool { return d.Path == r.Path })
	})
}
