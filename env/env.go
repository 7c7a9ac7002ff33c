package env

import "strings"

// TempVars are the variables that name a temporary directory; each is set to
// the sandbox's private /tmp.
var TempVars = []string{"TMPDIR", "TMP", "TEMP", "TEMPDIR"}

// TmpDir is the value of every temp variable inside the sandbox.
const TmpDir = "/tmp"

// Session is what the environment says about the session.
type Session struct {
	ID         string // AGENTBOX_SESSION
	RuntimeDir string // XDG_RUNTIME_DIR, as seen inside the sandbox
	// Nest is AGENTBOX_NEST, the socket through which an agentbox run
	// inside gets its nested sandbox; "" removes the variable.
	Nest string
}

// Build returns base with the temp variables, XDG_RUNTIME_DIR,
// AGENTBOX_SESSION and AGENTBOX_NEST set for the session, every other variable unchanged and
// in its original order. Entries without '=' are dropped, and when a name
// occurs more than once the last one wins, as it would for getenv in most
// programs, so that the result holds each name once (execve does not
// de-duplicate).
func Build(base []string, s Session) []string {
	set := map[string]string{"XDG_RUNTIME_DIR": s.RuntimeDir, "AGENTBOX_SESSION": s.ID, "AGENTBOX_NEST": s.Nest}
	for _, v := range TempVars {
		set[v] = TmpDir
	}
	last := make(map[string]int, len(base))
	for i, kv := range base {
		if k, _, ok := strings.Cut(kv, "="); ok && k != "" {
			last[k] = i
		}
	}
	out := make([]string, 0, len(base)+len(set))
	for i, kv := range base {
		k, _, ok := strings.Cut(kv, "=")
		if !ok || k == "" || last[k] != i {
			continue
		}
		if _, ours := set[k]; ours {
			continue
		}
		out = append(out, kv)
	}
	for _, k := range append(append([]string{}, TempVars...), "XDG_RUNTIME_DIR", "AGENTBOX_SESSION", "AGENTBOX_NEST") {
		if k == "AGENTBOX_NEST" && s.Nest == "" {
			continue
		}
		out = append(out, k+"="+set[k])
	}
	return out
}

// Lookup returns the value of name in vars (the last occurrence).
func Lookup(vars []string, name string) (string, bool) {
	for i := len(vars) - 1; i >= 0; i-- {
		if k, v, ok := strings.Cut(vars[i], "="); ok && k == name {
			return v, true
		}
	}
	return "", false
}
