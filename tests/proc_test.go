package tests

import (
	"os"
	"strings"
	"testing"
)

// TestHostSysctlsReadOnly: a caller who is root is uid 0 inside, and uid 0
// may write many /proc/sys files by file permissions alone. The test writes
// the value the host already has (harmless if the write went through) and
// wants it refused, with Landlock on and off.
func TestHostSysctlsReadOnly(t *testing.T) {
	users(t) // the suite's requirements
	cur, err := os.ReadFile("/proc/sys/vm/swappiness")
	if err != nil {
		t.Fatal(err)
	}
	val := strings.TrimSpace(string(cur))
	for _, flags := range [][]string{nil, {"--landlock=off"}} {
		script := `echo ` + val + ` > /proc/sys/vm/swappiness && echo written; (: > /proc/sysrq-trigger) && echo sysrq; true`
		r := rootUser.box(t, nil, append(append([]string{}, flags...), "--", "sh", "-c", script)...)
		wantCode(t, "agentbox -- sh (write /proc/sys as root)", r, 0)
		if strings.Contains(string(r.stdout), "written") || strings.Contains(string(r.stdout), "sysrq") {
			t.Errorf("agentbox %q: root inside wrote host /proc files: %s", flags, r)
		}
		if !strings.Contains(string(r.stderr), "Read-only file system") {
			t.Errorf("agentbox %q: stderr %q, want the write refused as read-only", flags, r.stderr)
		}
	}
}
