package postgres

import (
	"context"
	"errors"

	"github.com/jackc/pgx/v5"

	"github.com/wakeonchat/wakeonchat/host/store"
)

// Pending returns session's marker; ok is false when it has none, or only an
// expired one (older than Options.PendingTTL).
func (s *Store) Pending(ctx context.Context, session string) (p store.Pending, ok bool, err error) {
	if session == "" {
		return store.Pending{}, false, store.ErrEmptySession
	}
	ctx, cancel, err := s.op(ctx)
	if err != nil {
		return store.Pending{}, false, err
	}
	defer cancel()
	now := s.now()
	var v []byte
	err = s.pool.QueryRow(ctx, `SELECT marker FROM wake_pending WHERE session = $1`, session).Scan(&v)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return store.Pending{}, false, nil
	case err != nil:
		return store.Pending{}, false, s.closedOr(dbErr("read a pending wake", err))
	}
	if p, err = store.DecodePending(session, v); err != nil {
		return store.Pending{}, false, err
	}
	if p.Expired(s.pendingTTL, now) {
		return store.Pending{}, false, nil
	}
	return p, true, nil
}

// PutPending sets session's marker, replacing any other. p.Key must not be
// empty. Its times are stored in UTC.
func (s *Store) PutPending(ctx context.Context, session string, p store.Pending) error {
	if session == "" {
		return store.ErrEmptySession
	}
	p, v, err := store.EncodePending(session, p)
	if err != nil {
		return err
	}
	ctx, cancel, err := s.op(ctx)
	if err != nil {
		return err
	}
	defer cancel()
	_, err = s.pool.Exec(ctx, `INSERT INTO wake_pending (session, marker, created_at) VALUES ($1, $2, $3)
		ON CONFLICT (session) DO UPDATE SET marker = EXCLUDED.marker, created_at = EXCLUDED.created_at`,
		session, v, p.CreatedAt)
	return s.closedOr(dbErr("store a pending wake", err))
}

// TakePending atomically returns session's marker and deletes it when its
// key is key. It returns store.ErrNoPending when the session has no marker
// (or only an expired one) and store.ErrPendingMismatch (keeping the
// marker) when the key differs. Of concurrent takes with the same key, on
// any replicas, exactly one succeeds.
func (s *Store) TakePending(ctx context.Context, session, key string) (store.Pending, error) {
	if session == "" {
		return store.Pending{}, store.ErrEmptySession
	}
	now := s.now()
	var p store.Pending
	err := s.tx(ctx, "take a pending wake", func(ctx context.Context, tx pgx.Tx) error {
		var v []byte
		err := tx.QueryRow(ctx, `SELECT marker FROM wake_pending WHERE session = $1 FOR UPDATE`, session).Scan(&v)
		switch {
		case errors.Is(err, pgx.ErrNoRows):
			return store.ErrNoPending
		case err != nil:
			return dbErr("take a pending wake", err)
		}
		got, err := store.DecodePending(session, v)
		if err != nil {
			return err
		}
		switch {
		case got.Expired(s.pendingTTL, now):
			return store.ErrNoPending
		case got.Key != key:
			return store.ErrPendingMismatch
		}
		if _, err := tx.Exec(ctx, `DELETE FROM wake_pending WHERE session = $1`, session); err != nil {
			return dbErr("take a pending wake", err)
		}
		p = got
		return nil
	})
	if err != nil {
		return store.Pending{}, s.closedOr(err)
	}
	return p, nil
}

// DeletePending deletes session's marker; deleting none is not an error.
func (s *Store) DeletePending(ctx context.Context, session string) error {
	if session == "" {
		return store.ErrEmptySession
	}
	ctx, cancel, err := s.op(ctx)
	if err != nil {
		return err
	}
	defer cancel()
	_, err = s.pool.Exec(ctx, `DELETE FROM wake_pending WHERE session = $1`, session)
	return s.closedOr(dbErr("delete a pending wake", err))
}
