// Package landlock is agentbox's write policy: a pure description of where
// the sandbox may write, compiled for the kernel's Landlock ABI, and the
// irreversible step that enforces it in the init stage.
//
// The policy: reading and executing stay allowed everywhere (the read rights
// are not handled, so Landlock never checks them); writing (write_file,
// truncate, create, remove, rename, link) is allowed only below Policy.Write;
// Policy.Devices may be opened for writing and ioctl'ed (/dev/null, the
// terminal); with Policy.Scopes the sandbox cannot connect to abstract unix
// sockets or signal processes outside its Landlock domain.
//
// Landlock is never silently absent. Mode Require (the default) fails with
// ErrUnsupported on a kernel below NeedABI; BestEffort enforces what the
// kernel supports and lists the rest in Plan.Unenforced; Off enforces
// nothing and says so. The ABI is read with ABI, never inferred from
// go-landlock's own best-effort mode, which can enforce nothing at all.
//
// Not for: hiding files or making them read-only (package mounts does that;
// Landlock cannot grant what a read-only mount denies), pathname unix
// sockets (ABI 9; hidden by mounts instead), or the network.
//
// Use, in the init stage, after the last mount and before the agent starts:
//
//	plan, err := landlock.Apply(landlock.Policy{
//		Mode:    landlock.Require,
//		Write:   []landlock.Rule{{Path: "/home/me/project", Source: "working directory"}},
//		Devices: []landlock.Rule{{Path: "/dev/null", Source: "default device"}},
//		Scopes:  true,
//	})
//	if err != nil {
//		return err // errors.Is(err, landlock.ErrUnsupported): print the remedy
//	}
//	log.Print(plan.Summary())
//
// Check reads the ABI and compiles as Apply does, without enforcing: the
// wrapper uses it to refuse early with the same message. Compile gives the
// Plan for a given ABI without any system call, for `agentbox policy` and
// for tests.
package landlock
