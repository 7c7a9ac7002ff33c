package tests

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestAllowDegraded: where user namespaces cannot be created (a container's
// seccomp filter, simulated) or cannot mount (Ubuntu's AppArmor
// restriction, simulated), --allow-degraded runs the command with Landlock
// alone: the temp variables name a private per-session directory, writing
// the host's /tmp fails loudly, background processes do not outlive the
// command, the session is removed, and agentbox says which guarantees hold.
// Without the flag the same host is refused (125).
func TestAllowDegraded(t *testing.T) {
	a, _ := users(t)
	for _, mode := range []string{"seccomp-nouserns-exec", "seccomp-nomount-exec"} {
		t.Run(mode, func(t *testing.T) {
			p := a.project(t)
			root := filepath.Join(p, "root")
			hardcoded := "/tmp/abtest-degraded-" + token(t)
			t.Cleanup(func() { os.Remove(hardcoded) })
			script := `echo "TMPDIR=$TMPDIR"; echo x > "$TMPDIR/a" && echo tmpdir-ok; (echo y > ` + hardcoded + `) 2>/dev/null || echo hostTmp-denied; echo "RUN=$XDG_RUNTIME_DIR"; sleep 300 & echo "$!" > bgpid`
			r := run(t, a.helperExec(p, mode, agentboxBin, "--allow-degraded", "--root", root, "--", "sh", "-c", script))
			wantCode(t, "agentbox --allow-degraded", r, 0)
			out := string(r.stdout)
			if !strings.Contains(out, "TMPDIR="+root+"/") || !strings.Contains(out, "tmpdir-ok") || !strings.Contains(out, "hostTmp-denied") || !strings.Contains(out, "RUN="+root+"/") {
				t.Errorf("degraded run printed %q; want TMPDIR and XDG_RUNTIME_DIR under %s, TMPDIR writable, the host's /tmp denied", out, root)
			}
			if _, err := os.Lstat(hardcoded); err == nil {
				t.Errorf("the command wrote %s in the host's /tmp", hardcoded)
			}
			for _, want := range []string{"degraded mode", "holds:", "does not:", "/tmp is not private"} {
				if !strings.Contains(string(r.stderr), want) {
					t.Errorf("stderr %q does not say %q", r.stderr, want)
				}
			}
			if left := sessionIDs(t, root); len(left) != 0 {
				t.Errorf("sessions left: %v", left)
			}
			if b, err := os.ReadFile(filepath.Join(p, "bgpid")); err == nil {
				if pid := strings.TrimSpace(string(b)); pid != "" {
					if _, err := os.Stat("/proc/" + pid); err == nil {
						if cmdline, _ := os.ReadFile("/proc/" + pid + "/cmdline"); strings.Contains(string(cmdline), "sleep") {
							t.Errorf("background sleep %s outlived the degraded session", pid)
						}
					}
				}
			}

			// Without the flag: refused.
			r = run(t, a.helperExec(p, mode, agentboxBin, "--root", root, "--", "true"))
			wantCode(t, "agentbox without --allow-degraded", r, 125)
		})
	}
}
