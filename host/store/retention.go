package store

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"slices"
	"time"

	bolt "go.etcd.io/bbolt"
)

// Retention bounds the history the store keeps. Its zero value keeps all of
// it.
type Retention struct {
	// HistoryMaxAge: a session whose last turn is older than this is
	// deleted, its whole history with it. 0 keeps every session.
	HistoryMaxAge time.Duration
	// HistoryMaxSessions: beyond this many sessions, those with the oldest
	// last turns are deleted. 0: no cap.
	HistoryMaxSessions int
}

// Pruned counts what one Prune did.
type Pruned struct {
	Sessions int // sessions deleted, with their history
	Pending  int // expired pending wakes deleted
	// Stamped counts sessions stored before turns were stamped (a store
	// from an older host): they get the time of this Prune as their last
	// turn, and age from it.
	Stamped int
}

// pruneBatch is the most sessions or markers one write transaction of
// Prune touches: a turn waits for at most one batch, a few milliseconds.
const pruneBatch = 200

// sessionAge is a session and its last turn, as Prune's scan saw it.
type sessionAge struct {
	name    []byte
	last    time.Time
	stamped bool // false: the session had no lastTurn; last is the scan's now
}

// pendingAge is an expired marker, as Prune's scan saw it.
type pendingAge struct {
	session []byte
	key     string
}

// Prune deletes, as of now: every session whose last turn is older than
// r.HistoryMaxAge; then, of the rest, all but the r.HistoryMaxSessions with
// the newest last turns (ties go to the lower session id); and every
// pending wake older than Options.PendingTTL. It scans in one read-only
// transaction and deletes in write transactions of at most pruneBatch
// sessions or markers each, re-checking each one: a session that got a
// turn since the scan is kept, as is a marker that was replaced. It stops
// between batches when ctx ends, returning what it did so far and ctx's
// error. The file does not shrink: bbolt reuses the freed pages.
func (s *Store) Prune(ctx context.Context, now time.Time, r Retention) (Pruned, error) {
	now = UTC(now)
	var all []sessionAge
	var expired []pendingAge
	err := s.view(ctx, func(tx *bolt.Tx) error {
		sessions, err := bucket(tx, bucketSessions)
		if err != nil {
			return err
		}
		c := sessions.Cursor()
		for k, v := c.First(); k != nil; k, v = c.Next() {
			sb := sessions.Bucket(k)
			if v != nil || sb == nil {
				continue // not a session (Open's check refuses such a store)
			}
			last, ok := lastTurn(sb)
			if !ok {
				last = now
			}
			all = append(all, sessionAge{name: bytes.Clone(k), last: last, stamped: ok})
		}
		if s.pendingTTL <= 0 {
			return nil
		}
		pending, err := bucket(tx, bucketPending)
		if err != nil {
			return err
		}
		return pending.ForEach(func(k, v []byte) error {
			var p Pending
			if json.Unmarshal(v, &p) == nil && p.Expired(s.pendingTTL, now) {
				expired = append(expired, pendingAge{session: bytes.Clone(k), key: p.Key})
			}
			return nil
		})
	})
	if err != nil {
		return Pruned{}, err
	}

	var done Pruned
	doomed, kept := doomedSessions(all, now, r)
	n, err := s.inBatches(ctx, len(doomed), func(tx *bolt.Tx, i int) (bool, error) {
		d := doomed[i]
		sessions := tx.Bucket(bucketSessions)
		sb := sessions.Bucket(d.name)
		if sb == nil {
			return false, nil
		}
		if last, ok := lastTurn(sb); ok != d.stamped || (ok && !last.Equal(d.last)) {
			return false, nil // a turn since the scan
		}
		if err := sessions.DeleteBucket(d.name); err != nil {
			return false, fmt.Errorf("store: prune session %q: %w", d.name, err)
		}
		return true, nil
	})
	done.Sessions = n
	if err != nil {
		return done, err
	}
	unstamped := slices.DeleteFunc(kept, func(sa sessionAge) bool { return sa.stamped })
	n, err = s.inBatches(ctx, len(unstamped), func(tx *bolt.Tx, i int) (bool, error) {
		sb := tx.Bucket(bucketSessions).Bucket(unstamped[i].name)
		if sb == nil || sb.Get(keyLastTurn) != nil {
			return false, nil
		}
		if err := sb.Put(keyLastTurn, timeValue(now)); err != nil {
			return false, fmt.Errorf("store: stamp session %q: %w", unstamped[i].name, err)
		}
		return true, nil
	})
	done.Stamped = n
	if err != nil {
		return done, err
	}
	n, err = s.inBatches(ctx, len(expired), func(tx *bolt.Tx, i int) (bool, error) {
		e := expired[i]
		p, ok, err := getPending(tx, string(e.session))
		if err != nil || !ok || p.Key != e.key || !p.Expired(s.pendingTTL, now) {
			return false, nil // gone, replaced or unreadable: left alone
		}
		if err := tx.Bucket(bucketPending).Delete(e.session); err != nil {
			return false, fmt.Errorf("store: prune pending wake of session %q: %w", e.session, err)
		}
		return true, nil
	})
	done.Pending = n
	return done, err
}

// doomedSessions splits all into the sessions r deletes as of now and the
// ones it keeps.
func doomedSessions(all []sessionAge, now time.Time, r Retention) (doomed, kept []sessionAge) {
	all = slices.Clone(all)
	slices.SortFunc(all, func(a, b sessionAge) int {
		if c := b.last.Compare(a.last); c != 0 {
			return c // newest first
		}
		return bytes.Compare(a.name, b.name)
	})
	for _, sa := range all {
		tooOld := r.HistoryMaxAge > 0 && now.Sub(sa.last) > r.HistoryMaxAge
		tooMany := r.HistoryMaxSessions > 0 && len(kept) >= r.HistoryMaxSessions
		if tooOld || tooMany {
			doomed = append(doomed, sa)
		} else {
			kept = append(kept, sa)
		}
	}
	return doomed, kept
}

// inBatches calls fn for items 0 to n-1, pruneBatch of them in each write
// transaction, and counts the calls that did something. It stops before a
// batch when ctx has ended.
func (s *Store) inBatches(ctx context.Context, n int, fn func(tx *bolt.Tx, i int) (bool, error)) (int, error) {
	count := 0
	for start := 0; start < n; start += pruneBatch {
		inBatch := 0
		err := s.update(ctx, func(tx *bolt.Tx) error {
			inBatch = 0
			for i := start; i < min(start+pruneBatch, n); i++ {
				did, err := fn(tx, i)
				if err != nil {
					return err
				}
				if did {
					inBatch++
				}
			}
			return nil
		})
		if err != nil {
			return count, err
		}
		count += inBatch
	}
	return count, nil
}

// StartPruning runs Prune in the background with r: once at once, then
// every interval, with the store's clock (Options.Now), until Close. A pass
// that did something logs LinePruned at INFO with its counts, then gives
// them to pruned (when not nil); a pass that fails logs LinePruneFailed at
// ERROR, and the next one tries again. It fails when interval is not
// positive, when pruning already runs and after Close. A nil log is
// slog.Default().
func (s *Store) StartPruning(r Retention, interval time.Duration, log *slog.Logger, pruned func(Pruned)) error {
	return s.pruning.Start(s.Prune, s.now, r, interval, log, pruned)
}

// stopPruning stops the background pruning and waits for it; later
// StartPruning calls fail.
func (s *Store) stopPruning() { s.pruning.Stop() }
