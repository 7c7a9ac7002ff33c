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
