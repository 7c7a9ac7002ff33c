package rootdir

import (
	"fmt"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/agentbox/agentbox/internal/fserr"
)

// ErrUnsafeRoot is wrapped by every refusal of a session root, or of its
// parent, because of its owner, mode or kind. It is fserr.ErrUnsafe itself, so
// errors.Is(err, ErrUnsafeRoot) and errors.Is(err, fserr.ErrUnsafe) agree.
var ErrUnsafeRoot = fserr.ErrUnsafe

// Source says where a session root path came from.
type Source string

// The sources, in the order Select tries them.
const (
	SourceFlag     Source = "--root"
	SourceEnv      Source = "AGENTBOX_ROOT"
	SourceXDG      Source = "XDG_STATE_HOME"
	SourceHome     Source = "HOME"
	SourceFallback Source = "fallback"
)

// What names the session root in errors.
const what = "session root"

// Inputs is everything Select decides from. The caller reads the flag and
// the environment; Select never does. An empty string means unset: the CLI
// should refuse an explicitly empty --root itself if it wants to.
type Inputs struct {
	Flag         string // --root
	EnvRoot      string // $AGENTBOX_ROOT
	XDGStateHome string // $XDG_STATE_HOME
	Home         string // the caller's home directory ($HOME)
	HomeUsable   bool   // HomeUsable(Home, UID)
	UID          int    // the caller's uid
	TempDir      string // where the fallback goes: "/tmp"; empty means "/tmp"
}

// Choice is the path Select picked.
type Choice struct {
	Path   string // absolute, clean, never "/"
	Source Source
	// MakeParents asks Open to create missing ancestors (mode 0700): true for
	// XDG_STATE_HOME and HOME, where ~/.local/state may not exist yet; false
	// for --root, AGENTBOX_ROOT (the user named a place; a typo should not
	// grow a tree) and the fallback (its parent is /tmp).
	MakeParents bool
}

// Root is a verified, open session root.
type Root struct {
	Path    string // as chosen; for messages only, reach entries through FD
	FD      int    // O_RDONLY|O_DIRECTORY|O_CLOEXEC descriptor of the verified directory
	Dev     uint64 // st_dev of FD, to refuse crossing into another file system below it
	Ino     uint64 // st_ino of FD
	Source  Source
	Created bool // Open made the directory itself (not its parents)
}

// Select picks the session root path. It is pure.
//
// --root wins, then AGENTBOX_ROOT; either must be absolute, must not contain
// a NUL byte and must not be "/" once cleaned. Then $XDG_STATE_HOME/agentbox
// when XDG_STATE_HOME is absolute (the XDG spec says to ignore relative
// values), whether or not the home is usable. Then Home/.local/state/agentbox
// when HomeUsable (and Home is absolute). Last TempDir/agentbox-<uid>.
//
// Postcondition: on success, Path is absolute, clean and not "/".
func Select(in Inputs) (Choice, error) {
	if in.Flag != "" {
		return explicit(in.Flag, SourceFlag, in.UID)
	}
	if in.EnvRoot != "" {
		return explicit(in.EnvRoot, SourceEnv, in.UID)
	}
	if plainAbs(in.XDGStateHome) {
		return Choice{Path: xdgRoot(in.XDGStateHome), Source: SourceXDG, MakeParents: true}, nil
	}
	if in.HomeUsable && plainAbs(in.Home) {
		return Choice{Path: homeRoot(in.Home), Source: SourceHome, MakeParents: true}, nil
	}
	if in.UID < 0 {
		return Choice{}, fmt.Errorf("rootdir: no uid to name the fallback session root (uid %d)", in.UID)
	}
	tmp := in.TempDir
	if tmp == "" {
		tmp = "/tmp"
	}
	if !plainAbs(tmp) {
		return Choice{}, fmt.Errorf("rootdir: temporary directory %q for the fallback session root is not an absolute path", tmp)
	}
	return Choice{Path: filepath.Join(tmp, "agentbox-"+strconv.Itoa(in.UID)), Source: SourceFallback}, nil
}

// plainAbs reports whether p is an absolute path the kernel can take.
// Defaults lists the roots that runs of this user may select without
// --root, from the same environment and whichever this run selects:
// AGENTBOX_ROOT, $XDG_STATE_HOME/agentbox and ~/.local/state/agentbox,
// each when its input is an absolute path, cleaned. The fallback under
// TempDir is not listed. It is pure.
func Defaults(in Inputs) []string {
	var out []string
	if plainAbs(in.EnvRoot) {
		out = append(out, filepath.Clean(in.EnvRoot))
	}
	if plainAbs(in.XDGStateHome) {
		out = append(out, xdgRoot(in.XDGStateHome))
	}
	if plainAbs(in.Home) {
		out = append(out, homeRoot(in.Home))
	}
	return out
}

func xdgRoot(stateHome string) string { return filepath.Join(stateHome, "agentbox") }
func homeRoot(home string) string     { return filepath.Join(home, ".local", "state", "agentbox") }

func plainAbs(p string) bool {
	return filepath.IsAbs(p) && !strings.ContainsRune(p, 0)
}

func explicit(p string, src Source, uid int) (Choice, error) {
	e := &fserr.PathError{What: what, Path: p, UID: uid}
	switch {
	case strings.ContainsRune(p, 0):
		e.Path = strconv.Quote(p)
		e.Reason = string(src) + " contains a NUL byte"
		e.Remedy = remedy(probBadValue, remedyArgs{Path: p, UID: uid, Source: src})
		return Choice{}, e
	case !filepath.IsAbs(p):
		e.Reason = string(src) + " is not an absolute path"
		e.Remedy = remedy(probRelative, remedyArgs{Path: p, UID: uid, Source: src})
		return Choice{}, e
	}
	p = filepath.Clean(p)
	if p == "/" {
		e.Path = p
		e.Reason = "refusing / as the session root: it must be a directory of its own, for agentbox only"
		e.Remedy = remedy(probSlash, remedyArgs{Path: p, UID: uid, Source: src})
		return Choice{}, e
	}
	return Choice{Path: p, Source: src}, nil
}

// problem is a row of the remedy table.
type problem int

const (
	probRelative       problem = iota // --root or AGENTBOX_ROOT is relative
	probBadValue                      // --root or AGENTBOX_ROOT contains a NUL byte
	probSlash                         // --root or AGENTBOX_ROOT is /
	probOtherOwner                    // the root exists and another user owns it
	probOwnMode                       // the caller's own directory, with group/other bits (or unreadable)
	probOwnSymlink                    // the caller's own symbolic link
	probOwnNotDir                     // the caller's own FIFO, file, socket or device
	probCreateDenied                  // mkdirat: EACCES or EPERM
	probParentMissing                 // the parent does not exist and Open may not create it
	probParentOwner                   // the parent is owned by another (non-root) user
	probParentWritable                // others can write the parent and it lacks the sticky bit
	probRaced                         // the entry vanished or changed while Open looked at it
	probOther                         // any other errno
)

// remedies is the one table of remedies this package prints. Placeholders:
// {path} the path the error is about, {parent} its parent directory, {uid}
// the caller's uid, {source} where the path came from.
var remedies = map[problem]string{
	probRelative:       "use an absolute path for {source}",
	probBadValue:       "use an absolute path without NUL bytes for {source}",
	probSlash:          "use a directory of its own for {source}, such as ~/.local/state/agentbox",
	probOtherOwner:     "remove it (as its owner or root) or pass --root DIR / set AGENTBOX_ROOT to a directory you own with mode 0700",
	probOwnMode:        "chmod 700 {path}, or pass --root DIR",
	probOwnSymlink:     `pass the directory it points to (--root "$(readlink -f {path})") or replace the link with a directory of mode 0700`,
	probOwnNotDir:      "move it out of the way (it is yours) or pass --root DIR",
	probCreateDenied:   "make {parent} writable for uid {uid} or pass --root DIR",
	probParentMissing:  "create it (mkdir -p -m 700 {path}) or pass --root DIR naming a directory whose parent exists",
	probParentOwner:    "pass --root DIR / set AGENTBOX_ROOT to a path inside a directory you own",
	probParentWritable: "restore the sticky bit (chmod +t {path}) or pass --root DIR / set AGENTBOX_ROOT to a path inside a directory only you can write",
	probRaced:          "another process changed {path} while agentbox was checking it: find out what did, then try again",
	probOther:          "fix the cause above or pass --root DIR",
}

// fallbackNote is added to every remedy about the fallback root.
const fallbackNote = "; agentbox uses {root} only because it found no usable home directory: set HOME to your home directory (one you own and can write)"

type remedyArgs struct {
	Path   string // what the error is about
	Parent string // its parent; filepath.Dir(Path) when empty
	Root   string // the session root; Path when empty
	UID    int
	Source Source
}

// remedy renders row p of the remedy table.
func remedy(p problem, a remedyArgs) string {
	if a.Parent == "" {
		a.Parent = filepath.Dir(a.Path)
	}
	if a.Root == "" {
		a.Root = a.Path
	}
	s := remedies[p]
	if a.Source == SourceFallback {
		s += fallbackNote
	}
	return strings.NewReplacer(
		"{path}", a.Path,
		"{parent}", a.Parent,
		"{root}", a.Root,
		"{uid}", strconv.Itoa(a.UID),
		"{source}", string(a.Source),
	).Replace(s)
}

// judgeRoot decides whether what was seen at the session root may be used by
// uid. ok is true when it may; otherwise p and reason say why not.
func judgeRoot(s *fserr.Seen, uid int) (p problem, reason string, ok bool) {
	switch {
	case s.Kind != "directory" && s.Owner != uid:
		return probOtherOwner, "refusing " + aKind(s.Kind) + " another user controls", false
	case s.Kind == "symbolic link":
		return probOwnSymlink, "refusing a symbolic link: the session root must be a real directory", false
	case s.Kind != "directory":
		return probOwnNotDir, "refusing " + aKind(s.Kind) + ": the session root must be a directory", false
	case s.Owner != uid:
		return probOtherOwner, "refusing a directory another user controls", false
	case s.Mode&0o077 != 0:
		return probOwnMode, "refusing a directory that group or others can access", false
	}
	return 0, "", true
}

// judgeParent decides whether the directory that holds the session root
// keeps it safe: only its owner, root and (without the sticky bit) anyone who
// can write it may rename or replace the root's entry.
func judgeParent(s *fserr.Seen, uid int, root string) (p problem, reason string, ok bool) {
	switch {
	case s.Owner != uid && s.Owner != 0:
		return probParentOwner, "refusing to keep the session root " + root + " in a directory another user controls", false
	case s.Mode&0o022 != 0 && s.Mode&0o1000 == 0:
		return probParentWritable, "refusing to keep the session root " + root + " in a directory that others can write and that lacks the sticky bit (they could rename it away)", false
	}
	return 0, "", true
}

func aKind(kind string) string {
	if kind != "" && strings.ContainsRune("aeiou", rune(kind[0])) {
		return "an " + kind
	}
	return "a " + kind
}
