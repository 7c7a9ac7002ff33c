//go:build !linux

package doctor

// Options are the inputs of Probe.
type Options struct {
	Root string
	Env  []string
}

// Probe reports, on systems other than Linux, that agentbox cannot run.
func Probe(opt Options) Facts {
	return Facts{Sandbox: SandboxFacts{Skipped: "agentbox needs Linux"}, Landlock: LandlockFacts{ABIErr: "not Linux"},
		Root: RootFacts{Err: "agentbox needs Linux"}, ProtectedSymlinks: -1, LegacyTIOCSTI: -1, Seccomp: -1}
}
