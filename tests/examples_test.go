package tests

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestExamples runs every script in examples/ as a real non-root user,
// with the binary under test as its first argument. Each example exits 0
// and prints "ok" when what it demonstrates holds.
func TestExamples(t *testing.T) {
	scripts, err := filepath.Glob("../examples/*.sh")
	if err != nil || len(scripts) == 0 {
		t.Fatalf("no examples found in ../examples: %v", err)
	}
	a, _ := users(t)
	for _, script := range scripts {
		t.Run(filepath.Base(script), func(t *testing.T) {
			body, err := os.ReadFile(script)
			if err != nil {
				t.Fatal(err)
			}
			// A copy the user can read wherever the checkout lives.
			p := a.project(t)
			copyPath := filepath.Join(p, filepath.Base(script))
			a.writeFile(t, copyPath, string(body), 0o755)
			cmd := a.Cmd(copyPath, agentboxBin)
			cmd.Dir = p // a project directory: agentbox refuses the home directory
			r := run(t, cmd)
			wantCode(t, script, r, 0)
			if strings.TrimSpace(string(r.stdout)) != "ok" {
				t.Errorf("%s printed %q, want ok", script, r.stdout)
			}
		})
	}
}

// TestExampleOrchestrator runs examples/orchestrator, the Go API's example,
// as a real non-root user: eight sub-agents at once, each in its own
// session, none seeing another's /tmp.
func TestExampleOrchestrator(t *testing.T) {
	t.Parallel()
	a, _ := users(t)
	p := a.project(t)
	cmd := a.Cmd(orchestratorBin, "-agentbox", agentboxBin, "-n", "8")
	cmd.Dir = p
	r := run(t, cmd)
	wantCode(t, "orchestrator", r, 0)
	lines := strings.Split(strings.TrimSpace(string(r.stdout)), "\n")
	if len(lines) != 9 || lines[8] != "ok" {
		t.Fatalf("orchestrator printed %q, want 8 sub-agent lines and ok", r.stdout)
	}
	for _, l := range lines[:8] {
		if !strings.Contains(l, "holds [agent-owner]") || !strings.Contains(l, "cleanup removed") {
			t.Errorf("sub-agent line %q: want only its own file in /tmp and the session removed", l)
		}
	}
}
