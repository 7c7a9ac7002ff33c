//go:build linux

// Package client starts commands in agentbox sandboxes from Go, for
// orchestrators that run each sub-agent in its own session:
//
//	sb, err := client.Start(ctx, client.Config{Argv: []string{"opencode", "run", task}, Dir: repo})
//	if err != nil { ... }                 // agentbox could not even create the session
//	log.Printf("session %s", sb.ID())
//	res, err := sb.Wait()                 // res.ExitStatus, res.Cleanup, ...
//
// It runs the agentbox binary, not the sandbox code in the calling process:
// setting up a sandbox changes process-wide state (the umask, signal
// dispositions, a locked thread, a child subreaper in degraded mode) that a
// library must not impose on its host program, and a separate wrapper
// process keeps one session's failure from touching the others. What the
// binary reports comes back over --status-fd as typed events (Event), never
// by parsing stderr. Each Sandbox costs one more process start (about a
// millisecond and a half).
//
// Cancelling the context given to Start ends the sandbox: SIGTERM to the
// command, then, after Config.Grace, SIGKILL to the sandbox's PID 1 (through
// a pidfd), which ends every process in it; the wrapper still removes the
// session, and Wait reports it. A nested sandbox (an orchestrator that runs
// inside agentbox) is outside the caller's reach: there the wrapper is
// killed instead, and the enclosing session's init kills the command and
// removes the session. If the orchestrator itself dies, the wrapper gets
// SIGKILL (Pdeathsig) and the sandbox dies with it; its session directory
// is removed by the next agentbox start or by `agentbox clean`. An OnEvent
// callback must not call Wait (it runs before Wait can return).
package client
