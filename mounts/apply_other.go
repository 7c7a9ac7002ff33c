//go:build !linux

package mounts

import "errors"

// Apply is only implemented on Linux.
func Apply(ops []Op) error { return errors.New("agentbox: mount namespaces need Linux") }
