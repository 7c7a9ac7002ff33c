//go:build !linux

package profile

import "errors"

// readTrusted is Linux-only: agentbox runs only there.
func readTrusted(what, path string) ([]byte, error) {
	return nil, errors.New(what + " " + path + ": reading profiles is supported on Linux only")
}
