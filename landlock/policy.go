package landlock

import (
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"

	llsys "github.com/landlock-lsm/go-landlock/landlock/syscall"
)

// Mode says what to do when the kernel cannot enforce the whole policy.
type Mode string

const (
	// Require refuses to start unless the kernel enforces the whole policy.
	// It is the default: the zero Mode means Require.
	Require Mode = "require"
	// BestEffort enforces what the kernel supports and reports the rest in
	// Plan.Unenforced. It may enforce nothing at all (no Landlock).
	BestEffort Mode = "best-effort"
	// Off enforces nothing; the Plan says so.
	Off Mode = "off"
)

// Modes lists the valid modes, default first.
var Modes = []Mode{Require, BestEffort, Off}

// ParseMode parses the value of --landlock. The empty string is Require.
func ParseMode(s string) (Mode, error) {
	if s == "" {
		return Require, nil
	}
	for _, m := range Modes {
		if Mode(s) == m {
			return m, nil
		}
	}
	return "", fmt.Errorf("landlock mode %q: unknown; valid values are %s, %s (default) and %s", s, BestEffort, Require, Off)
}

// Rule grants access below Path: a directory, or a single file when IsFile
// (Apply also grants an existing non-directory as a file). Source says where the rule came from ("default", "profile opencode",
// "--rw", …) for `agentbox policy` and for error messages.
type Rule struct {
	Path   string
	IsFile bool
	Source string
}

// Policy is agentbox's Landlock policy: reading and executing stay allowed
// everywhere (the read rights are not handled at all), writing is allowed
// only below Write and Devices.
type Policy struct {
	Mode Mode // "" means Require
	// Write are the directories and files where writing (create, delete,
	// rename, link, truncate, write) is allowed.
	Write []Rule
	// Devices are character devices, or directories of them, where
	// write_file, truncate and ioctl_dev are allowed. Handling write_file
	// denies opening /dev/null for writing unless it is granted here,
	// which would break every shell redirect (`>/dev/null`).
	Devices []Rule
	// Scopes forbids connecting to abstract unix sockets and sending
	// signals outside the sandbox's Landlock domain.
	Scopes bool
}

// MinABI is the Landlock ABI the full policy needs:
//   - 1 (Linux 5.13) handles the write rights;
//   - 2 (5.19) adds refer: without it the kernel denies every rename or
//     link across directories, even inside a writable tree;
//   - 3 (6.2) adds truncate: before it, truncate(2) is not restricted;
//   - 5 (6.10) adds ioctl_dev: before it, ioctls on devices are not;
//   - 6 (6.12) adds the abstract unix socket and signal scopes.
//
// A policy without Scopes needs ABI 5 (NeedABI).
const MinABI = 6

// minKernel is the first Linux release of each Landlock ABI.
var minKernel = map[int]string{1: "5.13", 2: "5.19", 3: "6.2", 4: "6.7", 5: "6.10", 6: "6.12", 7: "6.15"}

// ErrUnsupported means the kernel has no Landlock, or one too old for the
// policy, and the mode is Require.
var ErrUnsupported = errors.New("landlock unavailable or too old")

// ErrInvalidRule means a rule's path is not an absolute, clean path.
var ErrInvalidRule = errors.New("invalid landlock rule")

// right is one access right agentbox handles, with the ABI that brought it.
type right struct {
	name string
	bit  uint64
	abi  int
}

// fsRights are the filesystem rights agentbox handles, in the kernel's bit
// order. The read rights (execute, read_file, read_dir) are deliberately
// absent: an unhandled right stays allowed everywhere. resolve_unix (ABI 9)
// is absent too: host sockets are hidden by mounts instead.
var fsRights = []right{
	{"write_file", llsys.AccessFSWriteFile, 1},
	{"remove_dir", llsys.AccessFSRemoveDir, 1},
	{"remove_file", llsys.AccessFSRemoveFile, 1},
	{"make_char", llsys.AccessFSMakeChar, 1},
	{"make_dir", llsys.AccessFSMakeDir, 1},
	{"make_reg", llsys.AccessFSMakeReg, 1},
	{"make_sock", llsys.AccessFSMakeSock, 1},
	{"make_fifo", llsys.AccessFSMakeFifo, 1},
	{"make_block", llsys.AccessFSMakeBlock, 1},
	{"make_sym", llsys.AccessFSMakeSym, 1},
	{"refer", llsys.AccessFSRefer, 2},
	{"truncate", llsys.AccessFSTruncate, 3},
	{"ioctl_dev", llsys.AccessFSIoctlDev, 5},
}

// scopeRights are the IPC scopes of Policy.Scopes.
var scopeRights = []right{
	{"scope:abstract_unix_socket", llsys.ScopeAbstractUnixSocket, 6},
	{"scope:signal", llsys.ScopeSignal, 6},
}

// fileRights are the rights the kernel accepts in a rule on a non-directory
// (landlock_add_rule returns EINVAL for directory rights on a file).
const fileRights = llsys.AccessFSWriteFile | llsys.AccessFSTruncate | llsys.AccessFSIoctlDev

// deviceRights are what a Devices rule grants: open for writing, O_TRUNC
// (implied by `>` in a shell) and ioctls such as the terminal's TCSETS.
const deviceRights = llsys.AccessFSWriteFile | llsys.AccessFSTruncate | llsys.AccessFSIoctlDev

// NeedABI is the Landlock ABI that p needs in Require mode: MinABI with
// scopes, 5 without.
func NeedABI(p Policy) int {
	if p.Scopes {
		return MinABI
	}
	return 5
}

// Plan is the pure result of compiling a policy for one Landlock ABI: what
// will be enforced and what not.
type Plan struct {
	ABI  int
	Mode Mode
	// Handled names the restricted access rights ("write_file", …,
	// "scope:signal"); an unlisted right is not restricted.
	Handled []string
	// Unenforced names the rights the policy wants that this ABI cannot
	// restrict (BestEffort), or all of them when Off or without Landlock.
	// "refer" here on ABI 1 means stricter, not weaker: that kernel denies
	// every rename or link across directories, granted or not.
	Unenforced []string
	// Enforced is true when anything at all will be restricted.
	Enforced bool
}

// compiled is a Plan and the bit sets Apply hands to go-landlock.
type compiled struct {
	plan   Plan
	fs     uint64 // handled filesystem rights
	scoped uint64 // handled scopes
}

// Compile checks p and works out what the kernel with Landlock ABI abi
// (0: no Landlock) would enforce. It makes no system call.
//
// Require with abi below NeedABI(p) returns an error wrapping
// ErrUnsupported; BestEffort keeps what abi supports and lists the rest in
// Plan.Unenforced; Off enforces nothing. An invalid rule is an error
// wrapping ErrInvalidRule in every mode.
func Compile(p Policy, abi int) (Plan, error) {
	c, err := compile(p, abi)
	return c.plan, err
}

func compile(p Policy, abi int) (compiled, error) {
	mode, err := ParseMode(string(p.Mode))
	if err != nil {
		return compiled{}, err
	}
	if abi < 0 {
		return compiled{}, fmt.Errorf("landlock ABI %d: not a version (0 means no Landlock)", abi)
	}
	if err := validate("write", p.Write); err != nil {
		return compiled{}, err
	}
	if err := validate("device", p.Devices); err != nil {
		return compiled{}, err
	}

	wanted := fsRights
	if p.Scopes {
		wanted = append(append([]right{}, fsRights...), scopeRights...)
	}
	c := compiled{plan: Plan{ABI: abi, Mode: mode}}
	if mode == Off {
		c.plan.Unenforced = names(wanted)
		return c, nil
	}
	var dropped []right
	for _, r := range wanted {
		switch {
		case r.abi > abi:
			dropped = append(dropped, r)
		case strings.HasPrefix(r.name, "scope:"):
			c.scoped |= r.bit
			c.plan.Handled = append(c.plan.Handled, r.name)
		default:
			c.fs |= r.bit
			c.plan.Handled = append(c.plan.Handled, r.name)
		}
	}
	if need := NeedABI(p); mode == Require && abi < need {
		return compiled{}, unsupportedError(abi, need, names(dropped))
	}
	c.plan.Unenforced = names(dropped)
	c.plan.Enforced = len(c.plan.Handled) > 0
	return c, nil
}

// unsupportedError explains a Require policy the kernel cannot enforce.
func unsupportedError(abi, need int, notEnforced []string) error {
	seen := fmt.Sprintf("this kernel offers Landlock ABI %d", abi)
	if abi == 0 {
		seen = "Landlock is unavailable (ABI 0)"
	}
	lose := "anything: the sandbox could write wherever file permissions allow"
	if abi > 0 {
		lose = strings.Join(notEnforced, ", ")
	}
	return fmt.Errorf("%w: %s, the policy needs ABI %d (write rights 1, refer 2, truncate 3, ioctl_dev 5, scopes 6); "+
		"run on Linux >= %s with Landlock enabled (CONFIG_SECURITY_LANDLOCK=y, and landlock in lsm=... on the kernel command line), "+
		"or pass --landlock=best-effort to run without enforcing %s",
		ErrUnsupported, seen, need, minKernel[need], lose)
}

// validate checks that every rule names an absolute, clean path.
func validate(kind string, rules []Rule) error {
	for _, r := range rules {
		if err := checkPath(r.Path); err != nil {
			src := r.Source
			if src == "" {
				src = "unknown source"
			}
			return fmt.Errorf("%w: %s rule %q (from %s): %s", ErrInvalidRule, kind, r.Path, src, err)
		}
	}
	return nil
}

func checkPath(p string) error {
	switch {
	case p == "":
		return errors.New("empty path")
	case strings.ContainsRune(p, 0):
		return errors.New("path contains a NUL byte")
	case !filepath.IsAbs(p):
		return errors.New("not an absolute path")
	case slices.Contains(strings.Split(p, "/"), ".."):
		return errors.New(`path contains ".."; name the directory itself`)
	case filepath.Clean(p) != p:
		return fmt.Errorf("not a clean path; use %q", filepath.Clean(p))
	}
	return nil
}

func names(rs []right) []string {
	if len(rs) == 0 {
		return nil
	}
	out := make([]string, len(rs))
	for i, r := range rs {
		out[i] = r.name
	}
	return out
}

// Summary is one line for logs and `agentbox policy`, e.g.
// "landlock ABI 7: enforced write rights (write_file, …), scopes abstract_unix_socket, signal".
func (p Plan) Summary() string {
	var b strings.Builder
	switch {
	case p.Mode == Off:
		fmt.Fprintf(&b, "landlock off: nothing enforced")
		if p.ABI > 0 {
			fmt.Fprintf(&b, " (the kernel offers ABI %d)", p.ABI)
		}
		return b.String()
	case !p.Enforced:
		fmt.Fprintf(&b, "landlock unavailable (ABI %d), %s: nothing enforced", p.ABI, p.Mode)
		return b.String()
	}
	var fs, scopes []string
	for _, h := range p.Handled {
		if s, ok := strings.CutPrefix(h, "scope:"); ok {
			scopes = append(scopes, s)
		} else {
			fs = append(fs, h)
		}
	}
	fmt.Fprintf(&b, "landlock ABI %d", p.ABI)
	if p.Mode == BestEffort {
		b.WriteString(" (best-effort)")
	}
	fmt.Fprintf(&b, ": enforced write rights (%s)", strings.Join(fs, ", "))
	if len(scopes) > 0 {
		fmt.Fprintf(&b, ", scopes %s", strings.Join(scopes, ", "))
	}
	if len(p.Unenforced) > 0 {
		fmt.Fprintf(&b, "; not enforced: %s", strings.Join(p.Unenforced, ", "))
	}
	return b.String()
}
