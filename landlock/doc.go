// Package landlock will hold agentbox's write policy: a pure description of
// which paths the sandbox may write (compiled to go-landlock rules) and the
// irreversible step that applies it in the init stage, after the mounts.
//
// It is a placeholder until the Landlock issue lands: today the sandbox's
// guarantees come from the namespaces and mounts alone (see README, "What is
// guaranteed"). ABI reports the kernel's Landlock ABI so that `agentbox -v`
// and the docs can say what the kernel could enforce.
package landlock
