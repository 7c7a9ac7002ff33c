package sandbox

import (
	"fmt"
	"path/filepath"
	"sort"
	"strings"

	"github.com/agentbox/agentbox/internal/profile"
	"github.com/agentbox/agentbox/landlock"
)

// Entry is one path of the effective policy and the rule it came from.
type Entry struct {
	Path   string `json:"path"`
	Source string `json:"source"`
	File   bool   `json:"file,omitempty"`
}

// Policy is what the sandbox may do beyond its private directories: where
// it may write (Landlock), what is hidden and what is read-only (mounts),
// and what must exist before it starts.
type Policy struct {
	Profile  string          `json:"profile"`
	Landlock landlock.Policy `json:"-"`
	Write    []Entry         `json:"write"`
	Devices  []Entry         `json:"devices"`
	ReadOnly []Entry         `json:"read_only"`
	Hide     []Entry         `json:"hide"`
	Create   []Entry         `json:"create"`
	Mode     landlock.Mode   `json:"landlock"`
	Notes    []string        `json:"notes,omitempty"` // the profile's known limitations
	// AllowDegraded: run with Landlock alone when namespaces are unavailable.
	AllowDegraded bool `json:"allow_degraded"`
}

// PolicyInput is everything the policy is computed from. BuildPolicy is
// pure: the caller reads the environment, the profile files and the git
// layout.
type PolicyInput struct {
	Home       string // the caller's home directory
	Dir        string // the working directory: the project
	GitDir     string // the git common dir of the project, "" if none
	RuntimeDir string // XDG_RUNTIME_DIR inside the sandbox
	// HostRuntimeDir is the caller's XDG_RUNTIME_DIR on the host; hidden
	// when the sandbox's own runtime directory does not already cover it.
	HostRuntimeDir string
	Profile        profile.Profile
	Config         profile.Config
	RW, RO, Hide   []string // --rw, --ro, --hide
	Show           []string // --show
	Mode           landlock.Mode
}

// DefaultHidden are hidden in every session: credentials in the home
// directory, and host sockets that lead out of the sandbox on kernels
// where Landlock does not cover pathname unix sockets (ABI < 9).
var DefaultHidden = []string{
	"~/.ssh", "~/.gnupg", "~/.aws", "~/.azure", "~/.config/gcloud", "~/.kube", "~/.docker",
	"~/.netrc", "~/.git-credentials", "~/.password-store",
	"/run/docker.sock", "/var/run/docker.sock", "/run/podman",
}

// DefaultDevices may be written (and ioctl'ed) by every session.
var DefaultDevices = []string{"/dev/null", "/dev/zero", "/dev/full", "/dev/tty", "/dev/ptmx", "/dev/pts", "/dev/random", "/dev/urandom"}

// PolicyError is a policy the user asked for that agentbox refuses.
type PolicyError struct{ Msg string }

func (e *PolicyError) Error() string { return e.Msg }

func expand(home, p string) string {
	if p == "~" {
		return home
	}
	if rest, ok := strings.CutPrefix(p, "~/"); ok {
		return filepath.Join(home, rest)
	}
	return p
}

// within reports whether p is dir or inside it, on a separator boundary.
func within(p, dir string) bool {
	return p == dir || dir == "/" || strings.HasPrefix(p, dir+"/")
}

func flagPaths(home, flag string, in []string) ([]Entry, error) {
	out := make([]Entry, 0, len(in))
	for _, p := range in {
		if home == "" && strings.HasPrefix(p, "~") {
			return nil, &PolicyError{fmt.Sprintf("%s %s: no usable home directory to expand ~ (HOME is unset or not yours); pass an absolute path", flag, p)}
		}
		x := expand(home, p)
		if !filepath.IsAbs(x) {
			return nil, &PolicyError{fmt.Sprintf("%s %s: not an absolute path; pass an absolute path or one starting with ~/", flag, p)}
		}
		out = append(out, Entry{Path: filepath.Clean(x), Source: flag})
	}
	return out, nil
}

// profileEntries converts profile rules; rules that did not resolve to an
// absolute path (a ~ path without a usable home) are dropped.
func profileEntries(rules []profile.Rule) []Entry {
	out := make([]Entry, 0, len(rules))
	for _, r := range rules {
		if !filepath.IsAbs(r.Path) {
			continue
		}
		out = append(out, Entry{Path: r.Path, Source: r.Source, File: r.File})
	}
	return out
}

// BuildPolicy computes the effective policy. It refuses (a *PolicyError) a
// working directory that is /, the home directory or one of its ancestors,
// unless --rw names it: granting the whole home would void the policy.
func BuildPolicy(in PolicyInput) (Policy, error) {
	p := Policy{Profile: in.Profile.Name, Mode: in.Mode, Notes: in.Profile.Notes}
	if in.Mode == "" {
		p.Mode = landlock.Require
	}
	// Without a usable home directory (HOME unset, relative, or not the
	// caller's), nothing is granted, hidden or refused relative to it.
	home := ""
	if filepath.IsAbs(in.Home) {
		home = filepath.Clean(in.Home)
	}
	rw, err := flagPaths(home, "--rw", in.RW)
	if err != nil {
		return p, err
	}
	ro, err := flagPaths(home, "--ro", in.RO)
	if err != nil {
		return p, err
	}
	hide, err := flagPaths(home, "--hide", in.Hide)
	if err != nil {
		return p, err
	}
	show, err := flagPaths(home, "--show", in.Show)
	if err != nil {
		return p, err
	}
	if !filepath.IsAbs(in.Dir) {
		return p, &PolicyError{fmt.Sprintf("working directory %q is not an absolute path", in.Dir)}
	}
	dir := filepath.Clean(in.Dir)
	if dir == "/" || (home != "" && within(home, dir)) {
		named := false
		for _, e := range rw {
			named = named || e.Path == dir
		}
		if !named {
			return p, &PolicyError{fmt.Sprintf("working directory %s is / or your home directory or one of its ancestors: letting the sandbox write there would void the policy; run agentbox from your project directory, or pass --rw %s to grant it explicitly", dir, dir)}
		}
	} else {
		p.Write = append(p.Write, Entry{Path: dir, Source: "working directory"})
	}
	// Never /, the home directory or an ancestor, however it was found.
	if in.GitDir != "" && !within(in.GitDir, dir) && filepath.IsAbs(in.GitDir) && in.GitDir != "/" && (home == "" || !within(home, in.GitDir)) {
		p.Write = append(p.Write, Entry{Path: filepath.Clean(in.GitDir), Source: "git common dir of the working directory"})
	}
	for _, d := range []string{"/tmp", "/var/tmp", "/dev/shm"} {
		p.Write = append(p.Write, Entry{Path: d, Source: "session (private)"})
	}
	if in.RuntimeDir != "" {
		p.Write = append(p.Write, Entry{Path: in.RuntimeDir, Source: "session (private runtime dir)"})
	}
	for _, r := range in.Profile.RW {
		e := profileEntries([]profile.Rule{r})
		p.Write = append(p.Write, e...)
		if r.Create {
			p.Create = append(p.Create, e...)
		}
	}
	p.Write = append(p.Write, profileEntries(in.Config.RW)...)
	p.Write = append(p.Write, rw...)
	for _, d := range DefaultDevices {
		p.Devices = append(p.Devices, Entry{Path: d, Source: "default device"})
	}
	// The sandbox's own /proc (it shows only the sandbox's processes):
	// writing /proc/self/uid_map (nested user namespaces, as bubblewrap in
	// Codex needs), oom_score_adj or a thread's comm. File permissions
	// still apply: /proc/sys belongs to the host's root.
	p.Devices = append(p.Devices, Entry{Path: "/proc", Source: "the sandbox's own /proc"})

	p.ReadOnly = append(append(profileEntries(in.Profile.RO), profileEntries(in.Config.RO)...), ro...)

	var hidden []Entry
	for _, h := range DefaultHidden {
		if x := expand(home, h); filepath.IsAbs(x) && (home != "" || !strings.HasPrefix(h, "~")) {
			hidden = append(hidden, Entry{Path: x, Source: "default hidden"})
		}
	}
	if in.HostRuntimeDir != "" && filepath.IsAbs(in.HostRuntimeDir) && filepath.Clean(in.HostRuntimeDir) != in.RuntimeDir && !within(in.HostRuntimeDir, "/run/user") {
		hidden = append(hidden, Entry{Path: filepath.Clean(in.HostRuntimeDir), Source: "default hidden (host runtime dir)"})
	}
	hidden = append(hidden, profileEntries(in.Profile.Hide)...)
	hidden = append(hidden, profileEntries(in.Config.Hide)...)
	hidden = append(hidden, hide...)
	shown := append(append(profileEntries(in.Profile.Show), profileEntries(in.Config.Show)...), show...)
	for _, h := range hidden {
		keep := true
		for _, s := range shown {
			keep = keep && s.Path != h.Path
		}
		// A path granted for writing explicitly is shown too.
		for _, w := range rw {
			keep = keep && w.Path != h.Path
		}
		if keep {
			p.Hide = append(p.Hide, h)
		}
	}
	p.Write = dedupe(p.Write)
	p.Hide = dedupe(p.Hide)
	p.ReadOnly = dedupe(p.ReadOnly)

	p.Landlock = landlock.Policy{Mode: p.Mode, Scopes: true}
	for _, e := range p.Write {
		p.Landlock.Write = append(p.Landlock.Write, landlock.Rule{Path: e.Path, IsFile: e.File, Source: e.Source})
	}
	for _, e := range p.Devices {
		p.Landlock.Devices = append(p.Landlock.Devices, landlock.Rule{Path: e.Path, Source: e.Source})
	}
	return p, nil
}

// dedupe keeps the first entry for each path (its source wins), in order.
func dedupe(in []Entry) []Entry {
	seen := map[string]bool{}
	out := in[:0]
	for _, e := range in {
		if !seen[e.Path] {
			seen[e.Path] = true
			out = append(out, e)
		}
	}
	return out
}

// Verdict is what the sandbox can do with one path, and why.
type Verdict struct {
	Path    string `json:"path"`
	Visible bool   `json:"visible"`
	Read    bool   `json:"read"`
	Write   bool   `json:"write"`
	Rule    string `json:"rule"`
}

// Explain says whether the sandbox could see, read and write path under p,
// and which rule decides. Hidden and read-only paths win over write grants:
// they are mounts, and Landlock cannot grant what a read-only mount denies.
func (p Policy) Explain(path string) Verdict {
	path = filepath.Clean(path)
	v := Verdict{Path: path, Visible: true, Read: true}
	for _, h := range longestFirst(p.Hide) {
		if within(path, h.Path) {
			v.Visible, v.Read = path == h.Path, false
			v.Rule = fmt.Sprintf("hidden: %s (%s)", h.Path, h.Source)
			return v
		}
	}
	for _, r := range longestFirst(p.ReadOnly) {
		if within(path, r.Path) {
			v.Rule = fmt.Sprintf("read-only mount: %s (%s)", r.Path, r.Source)
			return v
		}
	}
	if p.Mode == landlock.Off {
		v.Write = true
		v.Rule = "landlock off: writes limited only by file permissions"
		return v
	}
	for _, w := range longestFirst(append(append([]Entry{}, p.Write...), p.Devices...)) {
		if within(path, w.Path) {
			v.Write = true
			v.Rule = fmt.Sprintf("write granted below %s (%s)", w.Path, w.Source)
			return v
		}
	}
	v.Rule = "read-only: no write rule covers it (landlock)"
	return v
}

func longestFirst(in []Entry) []Entry {
	out := append([]Entry{}, in...)
	sort.SliceStable(out, func(i, j int) bool { return len(out[i].Path) > len(out[j].Path) })
	return out
}

// notGranted returns the write rules that some enclosing policy does not
// cover: a nested sandbox asks for them, but the enclosing sandbox's
// Landlock layer and read-only mounts still deny them. Paths of the
// sandbox's own private directories are covered by definition (each
// level has its own).
func notGranted(write []landlock.Rule, outer []landlock.Policy) []landlock.Rule {
	var out []landlock.Rule
	for _, r := range write {
		if r.Path == "/tmp" || r.Path == "/var/tmp" || r.Path == "/dev/shm" || strings.HasPrefix(r.Path, "/run/user/") || r.Path == "/proc" {
			continue
		}
		for _, o := range outer {
			if o.Mode == landlock.Off {
				continue
			}
			if !coveredBy(r.Path, o.Write) {
				out = append(out, r)
				break
			}
		}
	}
	return out
}

// coveredBy reports whether p is at or below one of rules' paths.
func coveredBy(p string, rules []landlock.Rule) bool {
	for _, r := range rules {
		if p == r.Path || r.Path == "/" || strings.HasPrefix(p, r.Path+"/") {
			return true
		}
	}
	return false
}
