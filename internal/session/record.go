package session

import (
	"bytes"
	"encoding/json"
	"fmt"
	"time"
)

// RecordVersion is the format version of the state file.
const RecordVersion = 1

// Record is the content of a session's state file (JSON, 0600, replaced
// atomically on every change).
type Record struct {
	Version    int    `json:"version"`
	ID         string `json:"id"`
	State      State  `json:"state"`
	UID        int    `json:"uid"`
	WrapperPID int    `json:"wrapper_pid"`
	// InitPID and InitStart (field 22 of /proc/PID/stat) identify the
	// sandbox's init on the host. A reconcile that finds the lock free but
	// that process still alive leaves the session alone: the kernel releases
	// the wrapper's lock before it has finished killing the sandbox.
	InitPID    int       `json:"init_pid,omitempty"`
	InitStart  uint64    `json:"init_start,omitempty"`
	Command    string    `json:"command"`
	Created    time.Time `json:"created"`
	Updated    time.Time `json:"updated"`
	ExitStatus *int      `json:"exit_status,omitempty"`
	Error      string    `json:"error,omitempty"`
}

// maxRecordSize bounds what is read from a state file.
const maxRecordSize = 64 << 10

// ParseRecord decodes a state file strictly: unknown keys, trailing data, an
// unknown version or state, or an id that is not a session id are errors.
func ParseRecord(b []byte) (Record, error) {
	var r Record
	if len(b) > maxRecordSize {
		return r, fmt.Errorf("state file is %d bytes, more than %d", len(b), maxRecordSize)
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&r); err != nil {
		return Record{}, fmt.Errorf("state file: %w", err)
	}
	if dec.More() {
		return Record{}, fmt.Errorf("state file: trailing data after the record")
	}
	if r.Version != RecordVersion {
		return Record{}, fmt.Errorf("state file: version %d, want %d", r.Version, RecordVersion)
	}
	if !r.State.Valid() {
		return Record{}, fmt.Errorf("state file: unknown state %q", r.State)
	}
	if !ValidID(r.ID) {
		return Record{}, fmt.Errorf("state file: invalid session id %q", r.ID)
	}
	return r, nil
}

// Marshal encodes the record as written to the state file.
func (r Record) Marshal() []byte {
	b, err := json.Marshal(r)
	if err != nil { // only unsupported types can fail; Record has none
		panic(err)
	}
	return append(b, '\n')
}

// IDLen is the length of a session id: 12 lowercase hex digits (48 random bits).
const IDLen = 12

// ValidID reports whether s has the form of a session id. Directory entries
// of the root that are not session ids are never touched.
func ValidID(s string) bool {
	if len(s) != IDLen {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return false
		}
	}
	return true
}
