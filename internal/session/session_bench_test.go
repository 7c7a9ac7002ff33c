//go:build linux

package session

import (
	"os"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
)

// BenchmarkLifecycle is the whole life of a session's state: Create (the
// directory, its three subdirectories, the lock and the first state file),
// Move to running and to exited (each an atomic state-file replace), then
// Remove (cleaning, the tree removed, removed) and Close, in a b.TempDir()
// root, under umask 077 as the wrapper sets it.
func BenchmarkLifecycle(b *testing.B) {
	dir := b.TempDir()
	fd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		b.Fatal(err)
	}
	defer unix.Close(fd)
	old := syscall.Umask(0o077)
	defer syscall.Umask(old)
	uid, pid := os.Getuid(), os.Getpid()
	b.ReportAllocs()
	for b.Loop() {
		s, err := Create(fd, dir, uid, pid, "opencode")
		if err != nil {
			b.Fatalf("Create = %v", err)
		}
		if err := s.Move(Running, func(r *Record) { r.InitPID, r.InitStart = pid, 1 }); err != nil {
			b.Fatalf("Move(running) = %v", err)
		}
		if err := s.Move(Exited, func(r *Record) { status := 0; r.ExitStatus = &status }); err != nil {
			b.Fatalf("Move(exited) = %v", err)
		}
		if err := s.Remove(); err != nil {
			b.Fatalf("Remove = %v", err)
		}
		if err := s.Close(); err != nil {
			b.Fatalf("Close = %v", err)
		}
	}
	if ents, err := os.ReadDir(dir); err != nil || len(ents) != 0 {
		b.Fatalf("root not empty after the lifecycles: %d entries, %v", len(ents), err)
	}
}
