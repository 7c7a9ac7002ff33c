//go:build linux

package sandbox

import (
	"os"
	"time"

	"github.com/agentbox/agentbox/internal/session"
)

// Test hooks let the integration tests stop the wrapper in a known session
// state and SIGKILL it there (tests/faults_test.go). They exist only in a
// binary built with -tags agentbox_testhooks (testhook_on.go); in any other
// build testHooksEnabled is a false constant and the compiler drops them, so
// no environment variable can pause a released agentbox.
//
// With the hooks built in, AGENTBOX_TEST_PAUSE=STATE makes the wrapper, on
// reaching STATE, write STATE to the file named by AGENTBOX_TEST_PAUSE_FILE
// and then never return.

// testHook pauses the wrapper forever when the hooks are built in and
// AGENTBOX_TEST_PAUSE names state. Otherwise it does nothing.
func testHook(state string) {
	if !testHooksEnabled || os.Getenv("AGENTBOX_TEST_PAUSE") != state {
		return
	}
	if f := os.Getenv("AGENTBOX_TEST_PAUSE_FILE"); f != "" {
		os.WriteFile(f, []byte(state), 0o600)
	}
	// Not select{}: with no other goroutine runnable and no timer pending,
	// the runtime would end the process with "all goroutines are asleep".
	for {
		time.Sleep(time.Hour)
	}
}

// testHookCleaning is the hook of state cleaning, called just before
// sess.Remove: Remove moves to cleaning itself, so to pause inside that state
// the hook makes the move first (Remove skips it when already in cleaning).
// Without the hooks, or when another state is asked for, it changes nothing.
func testHookCleaning(sess *session.Session) {
	if !testHooksEnabled || os.Getenv("AGENTBOX_TEST_PAUSE") != string(session.Cleaning) {
		return
	}
	if sess.Move(session.Cleaning, nil) == nil {
		testHook(string(session.Cleaning))
	}
}
