//go:build linux

package doctor

import (
	"os"
	"path/filepath"
	"testing"
)

func TestProcStatus(t *testing.T) {
	p := filepath.Join(t.TempDir(), "status")
	if err := os.WriteFile(p, []byte("Name:\tx\nNoNewPrivs:\t1\nSeccomp:\t2\nSeccomp_filters:\tbad\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	got := procStatus(p)
	want := map[string]int{"NoNewPrivs": 1, "Seccomp": 2, "Seccomp_filters": -1}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("procStatus(%q)[%s] = %d, want %d", p, k, got[k], v)
		}
	}
	missing := procStatus(filepath.Join(t.TempDir(), "none"))
	for k := range want {
		if missing[k] != -1 {
			t.Errorf("procStatus(missing)[%s] = %d, want -1", k, missing[k])
		}
	}
}
