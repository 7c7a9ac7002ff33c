// Package mounts turns a sandbox's mount configuration into an ordered plan
// of operations (pure, unit-tested, fuzzed) and applies such a plan inside a
// new mount namespace.
//
// It is not for deciding policy (which paths are private or hidden is
// decided by the caller) and never starts processes.
//
//	ops, err := mounts.Plan(mounts.Config{TmpSource: "/proc/self/fd/5", ...})
//	if err == nil {
//		err = mounts.Apply(ops) // in the init stage, before Landlock
//	}
package mounts
