//go:build linux

package rmtree

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/agentbox/agentbox/internal/testenv"
)

// BenchmarkRemove compares RemoveAt with os.RemoveAll and rm -rf on the same
// trees of small files: the budget is RemoveAt within 1.2x of rm -rf, a
// figure the benchmark script reports, not one a test asserts. Creating the
// tree is not timed; run with -benchtime=3x or so, since one tree of 100 000
// files takes seconds to create.
func BenchmarkRemove(b *testing.B) {
	rm := testenv.RequireCommand(b, "rm", "coreutils")
	layouts := []struct {
		name       string
		dirs, each int // each directory of dirs holds each files; dirs == 0: the files sit in victim itself
	}{
		{"flat-10k", 0, 10_000},
		{"flat-100k", 0, 100_000},
		{"100x1000", 100, 1000},
	}
	impls := []struct {
		name   string
		remove func(b *testing.B, parent string) error
	}{
		{"rmtree", func(b *testing.B, parent string) error {
			fd, err := unix.Open(parent, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
			if err != nil {
				return err
			}
			defer unix.Close(fd)
			return RemoveAt(fd, "victim")
		}},
		{"os.RemoveAll", func(b *testing.B, parent string) error { return os.RemoveAll(filepath.Join(parent, "victim")) }},
		{"rm-rf", func(b *testing.B, parent string) error {
			out, err := exec.Command(rm, "-rf", "--", filepath.Join(parent, "victim")).CombinedOutput()
			if err != nil {
				return fmt.Errorf("rm -rf: %w: %s", err, out)
			}
			return nil
		}},
	}
	for _, l := range layouts {
		for _, impl := range impls {
			b.Run(l.name+"/"+impl.name, func(b *testing.B) {
				parent := b.TempDir()
				victim := filepath.Join(parent, "victim")
				for range b.N {
					b.StopTimer()
					if err := os.Mkdir(victim, 0o755); err != nil {
						b.Fatal(err)
					}
					if l.dirs == 0 {
						makeFiles(b, victim, l.each)
					}
					for d := range l.dirs {
						sub := filepath.Join(victim, fmt.Sprintf("d%04d", d))
						if err := os.Mkdir(sub, 0o755); err != nil {
							b.Fatal(err)
						}
						makeFiles(b, sub, l.each)
					}
					unix.Sync()
					b.StartTimer()
					if err := impl.remove(b, parent); err != nil {
						b.Fatalf("%s of %s: %v", impl.name, victim, err)
					}
				}
				files := max(l.dirs, 1) * l.each
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*files), "ns/file")
			})
		}
	}
}
