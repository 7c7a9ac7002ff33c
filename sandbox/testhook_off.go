//go:build linux && !agentbox_testhooks

package sandbox

// testHooksEnabled: a normal build has no test hooks (testhook.go).
const testHooksEnabled = false
