//go:build unix

package fserr

import (
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"
)

// The file type constants in fserr.go must be the kernel's.
func TestKindConstants(t *testing.T) {
	tests := []struct {
		mine, kernel uint32
	}{
		{sIFMT, unix.S_IFMT}, {sIFSOCK, unix.S_IFSOCK}, {sIFLNK, unix.S_IFLNK}, {sIFREG, unix.S_IFREG},
		{sIFBLK, unix.S_IFBLK}, {sIFDIR, unix.S_IFDIR}, {sIFCHR, unix.S_IFCHR}, {sIFIFO, unix.S_IFIFO},
	}
	for _, tt := range tests {
		if tt.mine != tt.kernel {
			t.Errorf("constant = %#o, want %#o", tt.mine, tt.kernel)
		}
	}
}

func TestSeenFromStat(t *testing.T) {
	dir := t.TempDir()
	if err := unix.Chmod(dir, 0o1750); err != nil { // os.Chmod wants os.ModeSticky, not 0o1000
		t.Fatal(err)
	}
	if err := os.Symlink("nowhere", filepath.Join(dir, "l")); err != nil {
		t.Fatal(err)
	}
	if err := unix.Mkfifo(filepath.Join(dir, "f"), 0o600); err != nil {
		t.Fatal(err)
	}
	uid := os.Geteuid()
	tests := []struct {
		name string
		want Seen
	}{
		{"", Seen{Kind: "directory", Owner: uid, Mode: 0o1750}},
		{"l", Seen{Kind: "symbolic link", Owner: uid, Mode: 0o777}},
		{"f", Seen{Kind: "FIFO", Owner: uid, Mode: 0o600}},
	}
	for _, tt := range tests {
		var st unix.Stat_t
		p := filepath.Join(dir, tt.name)
		if err := unix.Lstat(p, &st); err != nil {
			t.Fatal(err)
		}
		got := SeenFromStat(&st)
		if got == nil || *got != tt.want {
			t.Errorf("SeenFromStat(lstat %s) = %+v, want %+v", p, got, tt.want)
		}
	}
	if got := SeenFromStat(nil); got != nil {
		t.Errorf("SeenFromStat(nil) = %+v, want nil", got)
	}
}
