//go:build linux

package tests

import (
	"bytes"
	"crypto/rand"
	"crypto/sha256"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestBinaryRoundTrip pipes 8 MiB of random bytes through cat inside the
// sandbox: stdin and stdout reach the command as they are, byte for byte.
func TestBinaryRoundTrip(t *testing.T) {
	t.Parallel()
	a, _ := users(t)
	in := make([]byte, 8<<20)
	if _, err := rand.Read(in); err != nil {
		t.Fatal(err)
	}
	cmd := a.agentbox(nil, "--", "cat")
	cmd.Stdin = bytes.NewReader(in)
	r := run(t, cmd)
	wantCode(t, "agentbox -- cat", r, 0)
	if !bytes.Equal(r.stdout, in) {
		t.Fatalf("cat through agentbox: %d bytes out (sha256 %x), want the %d bytes in (sha256 %x)",
			len(r.stdout), sha256.Sum256(r.stdout), len(in), sha256.Sum256(in))
	}
	if len(r.stderr) != 0 {
		t.Errorf("stderr %q, want nothing", r.stderr)
	}
}

// TestNoOutputOfItsOwn checks that agentbox itself prints nothing on stdout
// or stderr in run mode when all goes well, and that the command's stdout
// and stderr reach the caller unchanged and unmixed.
func TestNoOutputOfItsOwn(t *testing.T) {
	t.Parallel()
	a, _ := users(t)
	for _, tc := range []struct {
		name           string
		args           []string
		stdout, stderr string
		code           int
	}{
		{"true", []string{"--", "true"}, "", "", 0},
		{"run true", []string{"run", "--", "true"}, "", "", 0},
		{"false", []string{"--", "false"}, "", "", 1},
		{"streams", []string{"--", "sh", "-c", `printf 'to out'; printf 'to err\n' >&2; printf ' more' ; exit 5`}, "to out more", "to err\n", 5},
		{"verbose", []string{"-v", "--", "true"}, "", "", 0},
		{"stdin is the caller's", []string{"--", "sh", "-c", `if read x; then echo "read $x"; else echo eof; fi`}, "eof\n", "", 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r := a.box(t, nil, tc.args...)
			if tc.name == "verbose" {
				// -v talks, on stderr only.
				if !strings.Contains(string(r.stderr), "agentbox: ") {
					t.Errorf("agentbox -v: stderr %q, want agentbox's messages", r.stderr)
				}
				r.stderr = nil
			}
			if r.code != tc.code || string(r.stdout) != tc.stdout || string(r.stderr) != tc.stderr {
				t.Errorf("agentbox %q: %v; want exit %d, stdout %q, stderr %q", tc.args, r, tc.code, tc.stdout, tc.stderr)
			}
		})
	}
}

// TestNoInheritedDescriptors starts agentbox with five extra descriptors
// open and not close-on-exec, as a careless caller (a shell, an IDE) may: the
// command must get only stdin, stdout and stderr. ls lists its own
// /proc/self/fd, which holds 0, 1, 2 and the descriptor ls reads it with.
func TestNoInheritedDescriptors(t *testing.T) {
	t.Parallel()
	a, _ := users(t)
	p := a.project(t)
	cmd := a.agentbox(nil, "--root", filepath.Join(p, "root"), "--", "ls", "/proc/self/fd")
	for i := 0; i < 5; i++ {
		f, err := os.Open(p)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		cmd.ExtraFiles = append(cmd.ExtraFiles, f)
	}
	r := run(t, cmd)
	wantCode(t, "agentbox -- ls /proc/self/fd", r, 0)
	if got := strings.Fields(string(r.stdout)); !slices.Equal(got, []string{"0", "1", "2", "3"}) {
		t.Errorf("descriptors open in the command: %q, want 0 1 2 and ls's own 3", got)
	}
}
