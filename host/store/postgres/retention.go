package postgres

import (
	"context"
	"log/slog"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/wakeonchat/wakeonchat/host/store"
)

// pruneBatch is the most sessions or markers one statement of Prune
// deletes, so that no turn waits long behind it.
const pruneBatch = 200

// Prune deletes, as of now: every session whose last turn is older than
// r.HistoryMaxAge (its messages with it); then, of the rest, all but the
// r.HistoryMaxSessions with the newest last turns (ties go to the lower
// session id, in byte order); and every pending wake older than
// Options.PendingTTL. Each batch of at most pruneBatch is one statement that
// re-checks what it deletes: a session that got a turn since it was chosen
// is kept. Replicas pruning at once delete each session once. It stops
// between batches when ctx ends, returning what it did so far and ctx's
// error.
func (s *Store) Prune(ctx context.Context, now time.Time, r store.Retention) (store.Pruned, error) {
	if s.closed.Load() {
		return store.Pruned{}, store.ErrClosed
	}
	now = store.UTC(now)
	var done store.Pruned
	if r.HistoryMaxAge > 0 {
		n, err := s.batches(ctx, "prune old sessions", `SELECT session, last_turn FROM wake_sessions
			WHERE last_turn < $1 ORDER BY last_turn, session COLLATE "C" LIMIT $2`, now.Add(-r.HistoryMaxAge))
		done.Sessions += n
		if err != nil {
			return done, err
		}
	}
	if r.HistoryMaxSessions > 0 {
		n, err := s.batches(ctx, "prune sessions beyond the cap", `SELECT session, last_turn FROM wake_sessions
			ORDER BY last_turn DESC, session COLLATE "C" OFFSET $1 LIMIT $2`, r.HistoryMaxSessions)
		done.Sessions += n
		if err != nil {
			return done, err
		}
	}
	if s.pendingTTL > 0 {
		cut := now.Add(-s.pendingTTL)
		for {
			if err := ctx.Err(); err != nil {
				return done, err
			}
			tag, err := s.exec(ctx, "prune expired pending wakes", `DELETE FROM wake_pending WHERE session IN (
					SELECT session FROM wake_pending WHERE created_at <= $1 LIMIT $2
				) AND created_at <= $1`, cut, pruneBatch)
			if err != nil {
				return done, err
			}
			done.Pending += int(tag)
			if tag < pruneBatch {
				break
			}
		}
	}
	// Leases whose holders died and that nobody took over (the watch of a
	// wake that ended meanwhile) are kept an hour, for an operator to see.
	if _, err := s.exec(ctx, "prune stale leases", `DELETE FROM wake_leases WHERE expires < now() - interval '1 hour'`); err != nil {
		return done, err
	}
	return done, nil
}

// batches deletes, pruneBatch at a time, the sessions that choose (a
// query of session and last_turn, its last parameter the batch size)
// lists, each only while its last turn is still the one chosen, until
// choose lists fewer than a batch. It counts the sessions deleted.
func (s *Store) batches(ctx context.Context, what, choose string, arg any) (int, error) {
	deleted := 0
	for {
		if err := ctx.Err(); err != nil {
			return deleted, err
		}
		n, chosen, err := s.deleteChosen(ctx, what, choose, arg)
		deleted += n
		if err != nil || chosen < pruneBatch {
			return deleted, err
		}
	}
}

func (s *Store) deleteChosen(ctx context.Context, what, choose string, arg any) (deleted, chosen int, err error) {
	octx, cancel := context.WithTimeout(ctx, s.opTimeout)
	defer cancel()
	rows, err := s.pool.Query(octx, choose, arg, pruneBatch)
	if err != nil {
		return 0, 0, s.closedOr(dbErr(what, err))
	}
	var sessions []string
	var lasts []time.Time
	var session string
	var last time.Time
	_, err = pgx.ForEachRow(rows, []any{&session, &last}, func() error {
		sessions, lasts = append(sessions, session), append(lasts, last)
		return nil
	})
	if err != nil {
		return 0, 0, s.closedOr(dbErr(what, err))
	}
	if len(sessions) == 0 {
		return 0, 0, nil
	}
	tag, err := s.pool.Exec(octx, `DELETE FROM wake_sessions s USING unnest($1::text[], $2::timestamptz[]) AS d(session, last_turn)
		WHERE s.session = d.session AND s.last_turn = d.last_turn`, sessions, lasts)
	if err != nil {
		return 0, len(sessions), s.closedOr(dbErr(what, err))
	}
	return int(tag.RowsAffected()), len(sessions), nil
}

// exec runs one statement within OpTimeout and returns the rows it
// affected.
func (s *Store) exec(ctx context.Context, what, sql string, args ...any) (int64, error) {
	octx, cancel := context.WithTimeout(ctx, s.opTimeout)
	defer cancel()
	tag, err := s.pool.Exec(octx, sql, args...)
	if err != nil {
		return 0, s.closedOr(dbErr(what, err))
	}
	return tag.RowsAffected(), nil
}

// StartPruning runs Prune in the background with r: once at once, then
// every interval, with the store's clock, until Close (store.PruneLoop).
func (s *Store) StartPruning(r store.Retention, interval time.Duration, log *slog.Logger, pruned func(store.Pruned)) error {
	if s.closed.Load() {
		return store.ErrClosed
	}
	return s.pruning.Start(s.Prune, s.now, r, interval, log, pruned)
}
