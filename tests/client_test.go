//go:build linux

package tests

import (
	"bytes"
	"context"
	"errors"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agentbox/agentbox/client"
)

// rootEnv is a minimal environment for the API tests, which run agentbox as
// the test process itself (root).
var rootEnv = []string{"HOME=/root", "USER=root", "LOGNAME=root", "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"}

// clientConfig is a Config for argv in a fresh project of root's.
func clientConfig(t *testing.T, argv ...string) (client.Config, *bytes.Buffer, *bytes.Buffer) {
	var stdout, stderr bytes.Buffer
	return client.Config{Binary: agentboxBin, Argv: argv, Dir: rootUser.project(t), Env: rootEnv, Stdout: &stdout, Stderr: &stderr}, &stdout, &stderr
}

// TestClientLifecycle checks the Go API end to end: Start returns once the
// session exists, with its id and path; stdin and stdout are the command's;
// Wait gives the command's status and the cleanup outcome; the session is
// gone afterwards.
func TestClientLifecycle(t *testing.T) {
	t.Parallel()
	cfg, stdout, stderr := clientConfig(t, "sh", "-c", `echo "$AGENTBOX_SESSION"; cat; exit 5`)
	cfg.Stdin = strings.NewReader("from stdin\n")
	var started bool
	cfg.OnEvent = func(e client.Event) { started = started || e.Event == "started" }
	sb, err := client.Start(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if len(sb.ID()) != 12 || !strings.HasSuffix(sb.Path(), "/"+sb.ID()) {
		t.Fatalf("id %q path %q: want a 12-character id naming the session directory", sb.ID(), sb.Path())
	}
	res, err := sb.Wait()
	if err != nil {
		t.Fatal(err)
	}
	if res.ExitStatus != 5 || res.Cleanup != "removed" || res.SessionID != sb.ID() || res.Canceled || res.SetupError != "" {
		t.Errorf("result %+v: want exit 5, removed, session %s", res, sb.ID())
	}
	if want := sb.ID() + "\nfrom stdin\n"; stdout.String() != want || stderr.Len() != 0 {
		t.Errorf("stdout %q stderr %q, want %q and nothing", stdout, stderr, want)
	}
	if !started {
		t.Error("OnEvent never saw started")
	}
	if _, err := os.Lstat(sb.Path()); !os.IsNotExist(err) {
		t.Errorf("session %s left behind: %v", sb.Path(), err)
	}
	if err := sb.Signal(syscall.SIGTERM); !errors.Is(err, os.ErrProcessDone) {
		t.Errorf("Signal after the end: %v, want os.ErrProcessDone", err)
	}
}

// TestClientSignal checks that Signal reaches the command.
func TestClientSignal(t *testing.T) {
	t.Parallel()
	cfg, _, _ := clientConfig(t, "sh", "-c", `trap 'exit 42' USR1; echo ready; while :; do sleep 0.05; done`)
	sb, err := startReady(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := sb.Signal(syscall.SIGUSR1); err != nil {
		t.Fatal(err)
	}
	res, err := sb.Wait()
	if err != nil || res.ExitStatus != 42 || res.Cleanup != "removed" {
		t.Fatalf("result %+v, %v: want 42 from the trap, removed", res, err)
	}
}

// TestClientCancel checks context cancellation: SIGTERM first; a command
// that ignores it is killed, with everything it started, after the grace
// period; the session is removed in both cases.
func TestClientCancel(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		script string
		status int
		signal string
	}{
		{"cooperative", `trap 'exit 7' TERM; echo ready; while :; do sleep 0.05; done`, 7, ""},
		{"ignores TERM", `trap '' TERM; sleep 300 & echo ready; wait`, 128 + 9, "SIGKILL"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			cfg, _, _ := clientConfig(t, "sh", "-c", tc.script)
			cfg.Grace = 300 * time.Millisecond
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			sb, err := startReady(ctx, cfg) // nested_helpers_test.go
			if err != nil {
				t.Fatal(err)
			}
			initPID := sb.InitPID()
			start := time.Now()
			cancel()
			res, err := sb.Wait()
			if err != nil {
				t.Fatal(err)
			}
			if !res.Canceled || res.ExitStatus != tc.status || res.Signal != tc.signal || res.Cleanup != "removed" {
				t.Errorf("result %+v: want canceled, status %d, signal %q, removed", res, tc.status, tc.signal)
			}
			if d := time.Since(start); d > 10*time.Second {
				t.Errorf("cancel took %v", d)
			}
			if initPID <= 0 {
				t.Fatalf("no init pid")
			}
			if err := syscall.Kill(initPID, 0); !errors.Is(err, syscall.ESRCH) {
				t.Errorf("sandbox PID 1 (%d) still there: %v", initPID, err)
			}
			if _, err := os.Lstat(sb.Path()); !os.IsNotExist(err) {
				t.Errorf("session %s left behind: %v", sb.Path(), err)
			}
		})
	}
}

// TestClientErrors checks that agentbox's refusals come back typed: no
// session at all is an *client.Error from Start, a command that cannot run
// is a Result with 127 and the message.
func TestClientErrors(t *testing.T) {
	t.Parallel()
	cfg, _, stderr := clientConfig(t, "true")
	cfg.Root = "relative/root"
	_, err := client.Start(context.Background(), cfg)
	var ce *client.Error
	if !errors.As(err, &ce) || ce.ExitStatus != 125 || !strings.Contains(ce.Message, "relative/root") {
		t.Errorf("Start with a relative root: %v, want *client.Error 125 naming it (stderr %q)", err, stderr)
	}

	cfg, _, _ = clientConfig(t, "abtest-no-such-command")
	sb, err := client.Start(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	res, err := sb.Wait()
	if err != nil || res.ExitStatus != 127 || !strings.Contains(res.SetupError, "abtest-no-such-command") || res.Cleanup != "removed" {
		t.Errorf("result %+v, %v: want 127 naming the command, removed", res, err)
	}

	cfg, _, _ = clientConfig(t, "true")
	cfg.Binary = "/nonexistent/agentbox"
	if _, err := client.Start(context.Background(), cfg); err == nil || !strings.Contains(err.Error(), "/nonexistent/agentbox") {
		t.Errorf("Start with a missing binary: %v, want an error naming it", err)
	}
}
