//go:build unix

package fserr

import "golang.org/x/sys/unix"

// SeenFromStat builds a Seen from a stat buffer filled by fstat, fstatat or
// lstat. It returns nil for a nil buffer.
func SeenFromStat(st *unix.Stat_t) *Seen {
	if st == nil {
		return nil
	}
	return SeenFromMode(uint32(st.Mode), st.Uid)
}
