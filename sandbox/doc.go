// Package sandbox runs a command in a session: a private /tmp, /var/tmp and
// runtime directory in new user, mount and PID namespaces, and the session's
// lifecycle around it. It is the only package that starts processes or
// enters namespaces.
//
// Two sides live here. The wrapper (Run) stays on the host as the caller's
// uid: it opens the session root, creates and locks the session, starts the
// init stage, forwards signals, waits, and cleans up. The init stage
// (InitMain) is this same binary re-executed as PID 1 of the new namespaces:
// it mounts, drops every capability, sets the environment, starts the
// command and reaps until the command exits.
//
// Use:
//
//	func main() {
//		if sandbox.IsInit() {
//			os.Exit(sandbox.InitMain())
//		}
//		res, err := sandbox.Run(sandbox.Config{Argv: []string{"opencode"}, Env: os.Environ(), ...})
//		...
//	}
//
// It also joins the leaf packages into the effective policy (BuildPolicy,
// pure: profile, config and flags → writable, read-only and hidden paths and
// the Landlock rules; Prepare reads the files it needs), and runs degraded
// mode (Landlock alone) when asked to and namespaces are unavailable. It
// never parses flags: main does.
package sandbox
