package postgres

import (
	"context"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/wakeonchat/wakeonchat/host/store"
)

// A session's turn is a lease named turnLease(session): held while the turn
// runs, finishing once it was replied to (its history being stored), and
// renewed with the store's other leases, so that a turn of any length keeps
// it and a host that dies mid-turn frees the session after the lease.

var _ store.Turns = (*Store)(nil)

func turnLease(session string) string { return "turn/" + session }

// finishingPoll is how often TakeTurn looks again while another host's turn
// of the session is finishing: storing a turn takes milliseconds.
const finishingPoll = 5 * time.Millisecond

// TakeTurn claims session's turn: false at once while a turn of it runs on
// any host, a wait (until ctx ends) while one is finishing.
func (s *Store) TakeTurn(ctx context.Context, session string) (bool, error) {
	if session == "" {
		return false, store.ErrEmptySession
	}
	name := turnLease(session)
	for seen := false; ; seen = true {
		ok, err := s.TakeLease(ctx, name)
		switch {
		case err != nil && seen && ctx.Err() != nil:
			// The session's turn was finishing when last looked at, and
			// the caller stopped waiting for it: still not ours.
			return false, nil
		case err != nil || ok:
			return ok, err
		}
		state, err := s.leaseState(ctx, name)
		switch {
		case err != nil && ctx.Err() != nil:
			return false, nil // another turn holds it: not ours
		case err != nil:
			return false, err
		case state == "held":
			return false, nil
		}
		// Finishing, or released since: look again.
		select {
		case <-ctx.Done():
			return false, nil
		case <-time.After(finishingPoll):
		}
	}
}

// leaseState is the state of the lease name, "" when there is none.
func (s *Store) leaseState(ctx context.Context, name string) (string, error) {
	ctx, cancel, err := s.op(ctx)
	if err != nil {
		return "", err
	}
	defer cancel()
	var state string
	err = s.pool.QueryRow(ctx, `SELECT state FROM wake_leases WHERE name = $1 AND expires >= now()`, name).Scan(&state)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return "", nil
	case err != nil:
		return "", s.closedOr(dbErr("read a session's turn", err))
	}
	return state, nil
}

// FinishTurn marks this store's turn of session as replied to: a turn of
// the session on another host waits for it instead of being refused.
func (s *Store) FinishTurn(ctx context.Context, session string) error {
	ctx, cancel, err := s.op(ctx)
	if err != nil {
		return err
	}
	defer cancel()
	_, err = s.pool.Exec(ctx, `UPDATE wake_leases SET state = 'finishing' WHERE name = $1 AND holder = $2`,
		turnLease(session), s.holder)
	return s.closedOr(dbErr("mark a session's turn replied to", err))
}

// ReleaseTurn frees session's turn.
func (s *Store) ReleaseTurn(ctx context.Context, session string) error {
	return s.ReleaseLease(ctx, turnLease(session))
}
