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

// TestSpareProcUnreachable: each sandbox keeps a spare, complete proc
// instance (so that a nested sandbox may mount its own /proc) on a mode-0
// directory of the tmpfs that hides the session root. A root caller's
// command, uid 0 inside but without capabilities, must not reach it: not
// list it, not read through it, not write /proc/sys through it.
func TestSpareProcUnreachable(t *testing.T) {
	users(t)
	root := rootUser.project(t) + "/spare-root"
	script := `
grep -q " $1/proc " /proc/self/mountinfo && echo mounted
ls "$1/proc" >/dev/null 2>&1 && echo listed
cat "$1/proc/sys/vm/swappiness" 2>/dev/null && echo read
echo 60 > "$1/proc/sys/vm/swappiness" 2>/dev/null && echo written
chmod 755 "$1" "$1/proc" 2>/dev/null && echo chmod
true`
	for _, flags := range [][]string{nil, {"--landlock=off"}} {
		args := append(append([]string{"--root", root}, flags...), "--", "sh", "-c", script, "sh", root)
		r := rootUser.box(t, nil, args...)
		wantCode(t, "agentbox -- sh (reach the spare proc)", r, 0)
		if got := strings.TrimSpace(string(r.stdout)); got != "mounted" {
			t.Errorf("agentbox %q: %q, want only \"mounted\" (the spare exists but cannot be reached)", flags, got)
		}
	}
}
