//go:build linux

package landlock

import (
	"testing"

	"github.com/agentbox/agentbox/internal/testenv"
)

func TestABI(t *testing.T) {
	v, err := ABI()
	if err != nil {
		testenv.RequireLandlock(t)
		t.Fatalf("ABI() = %v", err)
	}
	if v < 1 {
		t.Errorf("ABI() = %d, want ≥ 1", v)
	}
}
