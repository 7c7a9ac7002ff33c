//go:build linux && agentbox_testhooks

package sandbox

// testHooksEnabled: this binary honours AGENTBOX_TEST_PAUSE (testhook.go).
const testHooksEnabled = true
