//go:build linux

package landlock

import (
	"errors"
	"fmt"
	"os"

	ll "github.com/landlock-lsm/go-landlock/landlock"
	llsys "github.com/landlock-lsm/go-landlock/landlock/syscall"
	"golang.org/x/sys/unix"
)

// Apply enforces p on every thread of the calling process and returns the
// Plan that was enforced. It is irreversible: the process and everything it
// forks or executes afterwards stay restricted.
//
// Preconditions: every mount is done (a landlocked task can never mount or
// unmount), and the rule paths resolve as the sandbox will see them.
// It restricts the calling OS thread only (the caller holds
// runtime.LockOSThread and forks the command from that thread, which
// inherits the domain). Every landlock_restrict_self makes a new domain, so
// restricting each thread of a Go process gives sibling domains, and a
// signal-scoped domain refuses signals from a sibling: init's other threads
// could then no longer forward signals to the command. They stay outside the
// domain instead; they run only init's own code. no_new_privs is set on the
// calling thread.
//
// Apply reads the ABI itself (ABI, and the errata go-landlock also checks)
// and compiles the policy for it; go-landlock's BestEffort is never used,
// since it can silently enforce nothing. Rule paths that do not exist are
// skipped. Files opened before Apply keep the access they were opened with.
//
// Errors: ErrUnsupported (Require on a kernel without the needed ABI; the
// errno of the ABI probe is wrapped too), ErrInvalidRule, or the failure
// of a rule or of the restriction. On any error no Landlock domain has been
// enforced, though no_new_privs may already be set on the thread.
func Apply(p Policy) (Plan, error) {
	c, err := check(p)
	if err != nil {
		return Plan{}, err
	}
	if !c.plan.Enforced {
		return c.plan, nil
	}
	isFile, err := fileRules(p.Write)
	if err != nil {
		return Plan{}, err
	}

	rules := make([]ll.Rule, 0, len(p.Write)+len(p.Devices))
	for i, r := range p.Write {
		access := c.fs // every handled right, refer and ioctl_dev included
		if isFile[i] {
			access &= fileRights
		}
		rules = append(rules, ll.PathAccess(ll.AccessFSSet(access), r.Path).IgnoreIfMissing())
	}
	for _, r := range p.Devices {
		rules = append(rules, ll.PathAccess(ll.AccessFSSet(c.fs&deviceRights), r.Path).IgnoreIfMissing())
	}
	cfg := ll.Config{HandledAccessFS: ll.AccessFSSet(c.fs), Scoped: ll.ScopedSet(c.scoped)}
	fd, flags, err := cfg.NewRulesetFD(rules...)
	if err != nil {
		return Plan{}, fmt.Errorf("landlock: ruleset %s: %w", cfg, err)
	}
	if fd < 0 {
		return c.plan, nil
	}
	defer unix.Close(fd)
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return Plan{}, fmt.Errorf("landlock: prctl(PR_SET_NO_NEW_PRIVS): %w", err)
	}
	if _, _, e := unix.Syscall(unix.SYS_LANDLOCK_RESTRICT_SELF, uintptr(fd), uintptr(flags), 0); e != 0 {
		return Plan{}, fmt.Errorf("landlock: landlock_restrict_self %s: %w", cfg, e)
	}
	return c.plan, nil
}

// Check returns the Plan that Apply would enforce here, and the error it
// would return for the kernel or the rules, without enforcing anything: it
// reads the ABI as Apply does and compiles p for it. The wrapper calls it to
// refuse early, with the same message, before it starts the sandbox. It
// does not look at the rule paths, which the sandbox sees after its mounts.
func Check(p Policy) (Plan, error) {
	c, err := check(p)
	return c.plan, err
}

func check(p Policy) (compiled, error) {
	abi, probeErr := kernelABI()
	c, err := compile(p, abi)
	if err != nil && probeErr != nil && errors.Is(err, ErrUnsupported) {
		err = fmt.Errorf("%w (%w)", err, probeErr)
	}
	return c, err
}

// kernelABI is the ABI to compile for: ABI(), or 0 and the probe's error.
// Like go-landlock, it treats an ABI >= 6 kernel without the fix for
// Landlock erratum 2 (signal scoping denied signals between threads of one
// process) as ABI 5: go-landlock would refuse the scopes there anyway.
func kernelABI() (int, error) {
	abi, err := ABI()
	if err != nil {
		why := "Landlock is not built into this kernel, or a seccomp filter hides it"
		if errors.Is(err, unix.EOPNOTSUPP) {
			why = "Landlock is built in but not enabled at boot"
		}
		return 0, fmt.Errorf("landlock_create_ruleset(LANDLOCK_CREATE_RULESET_VERSION): %w: %s", err, why)
	}
	if abi >= 6 {
		const erratumSignalScoping = 1 << 1
		errata, err := llsys.LandlockGetErrata()
		if err != nil || errata&erratumSignalScoping == 0 {
			return 5, fmt.Errorf("landlock ABI %d without the fix for erratum 2 (signal scoping between threads, errata %#x, %v): treated as ABI 5; update the kernel", abi, errata, err)
		}
	}
	return abi, nil
}

// fileRules returns, for each rule, whether it must be added with file
// rights only: IsFile rules, and rules whose path exists and is not a
// directory (`--rw ~/.bash_history`), since the kernel rejects directory
// rights on a file with a bare EINVAL. A file rule whose path is a
// directory is refused: it would grant less than the rule's author meant.
// Missing paths are left to IgnoreIfMissing.
func fileRules(rules []Rule) ([]bool, error) {
	out := make([]bool, len(rules))
	for i, r := range rules {
		fi, err := os.Stat(r.Path)
		switch {
		case errors.Is(err, os.ErrNotExist):
			out[i] = r.IsFile
		case err != nil:
			return nil, fmt.Errorf("landlock rule %s (from %s): %w", r.Path, r.Source, err)
		case r.IsFile && fi.IsDir():
			return nil, fmt.Errorf("%w: landlock rule %s (from %s): a directory, granted as a file; grant it as a directory", ErrInvalidRule, r.Path, r.Source)
		default:
			out[i] = !fi.IsDir()
		}
	}
	return out, nil
}
