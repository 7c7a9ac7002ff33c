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
// command, then, after Config.Grace, SIGKILL to the sandbox's PID 1, which
// ends every process in it. The wrapper still removes the session, and Wait
// reports it. If the orchestrator itself dies, the wrapper gets SIGTERM and
// forwards it to the command (Pdeathsig); a session left behind by a
// SIGKILLed wrapper is removed by the next agentbox start or by
// `agentbox clean`.
package client
