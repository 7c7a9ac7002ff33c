//go:build linux

package remedy

import (
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"

	"github.com/agentbox/agentbox/internal/testenv"
)

// probeChildEnv marks the copy of this test binary that TestProbe runs in a
// new user namespace.
const probeChildEnv = "REMEDY_TEST_PROBE_NESTED"

func TestProbe(t *testing.T) {
	f := Probe()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	if f.Binary != self {
		t.Errorf("Probe().Binary = %q, want %q", f.Binary, self)
	}
	if f.Seccomp < 0 || f.Seccomp > 2 {
		t.Errorf("Probe().Seccomp = %d, want 0, 1 or 2 (from /proc/self/status)", f.Seccomp)
	}
	if f.MaxUserNamespaces < -1 {
		t.Errorf("Probe().MaxUserNamespaces = %d, want ≥ -1", f.MaxUserNamespaces)
	}
	if os.Getenv(probeChildEnv) == "1" {
		if f.NestedUserns != 1 {
			t.Errorf("in a new user namespace: Probe().NestedUserns = %d, want 1", f.NestedUserns)
		}
		return
	}
	if f.NestedUserns != 0 && f.NestedUserns != 1 {
		t.Errorf("Probe().NestedUserns = %d, want 0 or 1 (from /proc/self/uid_map)", f.NestedUserns)
	}
	// The same test, again, in a child of its own user namespace (never in
	// this process: entering one is irreversible).
	cmd := exec.Command(self, "-test.run=^TestProbe$", "-test.count=1")
	cmd.Env = append(os.Environ(), probeChildEnv+"=1")
	cmd.SysProcAttr = &syscall.SysProcAttr{
		Cloneflags:  syscall.CLONE_NEWUSER,
		UidMappings: []syscall.SysProcIDMap{{ContainerID: 0, HostID: os.Getuid(), Size: 1}},
		GidMappings: []syscall.SysProcIDMap{{ContainerID: 0, HostID: os.Getgid(), Size: 1}},
	}
	testenv.RequireUserns(t)
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "PASS") {
		t.Errorf("TestProbe in a new user namespace: %v\n%s", err, out)
	}
}
