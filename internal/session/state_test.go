package session

import (
	"errors"
	"testing"
)

func TestCanMoveEveryPair(t *testing.T) {
	legal := map[[2]State]bool{
		{Created, Running}: true, {Created, SetupFailed}: true, {Created, Cleaning}: true,
		{Running, Exited}: true, {Running, Cleaning}: true,
		{Exited, Cleaning}: true, {Exited, Kept}: true,
		{SetupFailed, Cleaning}: true, {SetupFailed, Kept}: true,
		{Cleaning, Removed}: true, {Cleaning, CleanupFailed}: true,
		{CleanupFailed, Cleaning}: true,
		{Kept, Cleaning}:          true,
	}
	all := append(append([]State{}, States...), State("bogus"), State(""))
	for _, from := range all {
		for _, to := range all {
			err := CanMove(from, to)
			if legal[[2]State{from, to}] {
				if err != nil {
					t.Errorf("CanMove(%s, %s) = %v, want nil", from, to, err)
				}
				continue
			}
			var te *TransitionError
			if !errors.As(err, &te) || !errors.Is(err, ErrIllegalTransition) || te.From != from || te.To != to {
				t.Errorf("CanMove(%s, %s) = %v, want *TransitionError{%s, %s}", from, to, err, from, to)
			}
		}
	}
}

func TestAbandonable(t *testing.T) {
	want := map[State]bool{Created: true, Running: true, Exited: true, SetupFailed: true, Cleaning: true, CleanupFailed: true}
	for _, s := range States {
		if got := s.Abandonable(); got != want[s] {
			t.Errorf("%s.Abandonable() = %v, want %v", s, got, want[s])
		}
	}
}
