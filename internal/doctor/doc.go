// Package doctor checks whether this host lets agentbox run with all its
// guarantees, and says what to change when it does not.
//
// It is two halves. Evaluate is pure: it turns the Facts that were observed
// into Findings, each with a Status and, when not StatusOK, a remedy; every
// rule is unit-tested with good and bad facts. Probe (Linux) gathers the
// Facts: it starts one real sandbox (/bin/true, through sandbox.Run, with a
// private session root it removes afterwards) so the namespace finding
// reflects the exact code path agentbox uses, and reads the rest from /proc,
// statfs and stat.
//
// It is not a fixer: it changes nothing on the host except the probe's own
// temporary directory, and (like agentbox ps) creating the session root
// when it is missing.
//
//	facts := doctor.Probe(doctor.Options{Root: rootFlag, Env: os.Environ()})
//	findings := doctor.Evaluate(facts)
//	if !doctor.OK(findings) { ... exit 1 }
package doctor
