package session

import (
	"errors"
	"fmt"
)

// State is a session's place in its lifecycle.
//
//	created ──► running ──► exited ──► cleaning ──► removed
//	   │                       │          ▲  │
//	   └──► setup_failed ──────┼──────────┤  └──► cleanup_failed ──┐
//	                           └──► kept ─┘          ▲             │
//	                                                 └─────────────┘ (retry goes back to cleaning)
//
// A wrapper that dies leaves its session in whatever state it had reached; a
// reconcile (the next start, or `agentbox clean`) moves such an abandoned
// session from created, running, exited, setup_failed or cleanup_failed to
// cleaning, and resumes a session found in cleaning without a transition.
type State string

const (
	Created       State = "created"
	Running       State = "running"
	Exited        State = "exited"
	SetupFailed   State = "setup_failed"
	Cleaning      State = "cleaning"
	CleanupFailed State = "cleanup_failed"
	Kept          State = "kept"
	Removed       State = "removed"
)

// States lists every state, in lifecycle order.
var States = []State{Created, Running, Exited, SetupFailed, Cleaning, CleanupFailed, Kept, Removed}

// transitions is the whole state machine: a move not listed is illegal.
var transitions = map[State][]State{
	Created:       {Running, SetupFailed, Cleaning},
	Running:       {Exited, Cleaning},
	Exited:        {Cleaning, Kept},
	SetupFailed:   {Cleaning, Kept},
	Cleaning:      {Removed, CleanupFailed},
	CleanupFailed: {Cleaning},
	Kept:          {Cleaning},
	Removed:       nil,
}

// ErrIllegalTransition is wrapped by every *TransitionError.
var ErrIllegalTransition = errors.New("illegal state transition")

// TransitionError reports a move the state machine does not allow.
type TransitionError struct{ From, To State }

func (e *TransitionError) Error() string {
	return fmt.Sprintf("session state %s → %s: %v", e.From, e.To, ErrIllegalTransition)
}

func (e *TransitionError) Unwrap() error { return ErrIllegalTransition }

// Valid reports whether s is one of the known states.
func (s State) Valid() bool {
	_, ok := transitions[s]
	return ok
}

// CanMove returns nil when from → to is legal, else a *TransitionError.
func CanMove(from, to State) error {
	for _, s := range transitions[from] {
		if s == to {
			return nil
		}
	}
	return &TransitionError{From: from, To: to}
}

// Abandonable reports whether a session whose wrapper is gone, found in s, is
// cleaned by a reconcile without being asked for by id. Kept sessions are not:
// the user asked to keep them.
func (s State) Abandonable() bool {
	switch s {
	case Created, Running, Exited, SetupFailed, Cleaning, CleanupFailed:
		return true
	}
	return false
}
