package postgres

import (
	"context"
	"errors"
	"log/slog"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/wakeonchat/wakeonchat/host/store"
)

// leases are the holds this store has taken in wake_leases, and the
// background renewal that keeps them. A row's expires is on the database's
// clock, so the replicas' clocks may differ; validUntil is on this
// process's monotonic clock, from the moment the statement that took or
// renewed the hold was sent: the database's expiry is no earlier than that
// plus the lease, so while validUntil is ahead no other store can have
// taken the hold.
type leases struct {
	mu   sync.Mutex
	held map[string]time.Time // name -> validUntil
	// taking serialises this store's takes of one name, so that a take
	// knows whether a row of this store's is a hold it has (held) or a
	// stray (TakeLease).
	taking store.KeyedMutex

	stop context.CancelFunc
	done chan struct{}
}

// LineLeaseRenewFailed is logged (WARN) when the background renewal of this
// replica's leases fails; its holds lapse after [store] lease unless a later
// renewal succeeds.
const LineLeaseRenewFailed = "store lease renewal failed"

// startRenewing runs the renewal every lease/3 until Close.
func (s *Store) startRenewing(log *slog.Logger) {
	ctx, stop := context.WithCancel(context.Background())
	s.leases.stop, s.leases.done = stop, make(chan struct{})
	go func() {
		defer close(s.leases.done)
		tick := time.NewTicker(s.lease / 3)
		defer tick.Stop()
		failing := false
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
			err := s.renew(ctx)
			switch {
			case err != nil && ctx.Err() == nil && !failing:
				log.Warn(LineLeaseRenewFailed, "err", err, "lease", s.lease)
				failing = true
			case err == nil:
				failing = false
			}
		}
	}()
}

// renew extends every hold this store has, and forgets the ones the
// database no longer gives it.
func (s *Store) renew(ctx context.Context) error {
	s.leases.mu.Lock()
	names := slices.Collect(maps.Keys(s.leases.held))
	s.leases.mu.Unlock()
	if len(names) == 0 {
		return nil
	}
	sent := time.Now()
	ctx, cancel := context.WithTimeout(ctx, s.opTimeout)
	defer cancel()
	rows, err := s.pool.Query(ctx, `UPDATE wake_leases SET expires = now() + make_interval(secs => $3)
		WHERE holder = $1 AND name = ANY($2) RETURNING name`, s.holder, names, s.lease.Seconds())
	if err != nil {
		return dbErr("renew the leases", err)
	}
	renewed, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return dbErr("renew the leases", err)
	}
	s.leases.mu.Lock()
	defer s.leases.mu.Unlock()
	for _, name := range names {
		if _, still := s.leases.held[name]; !still {
			continue // released meanwhile
		}
		if slices.Contains(renewed, name) {
			s.leases.held[name] = sent.Add(s.lease)
		} else {
			delete(s.leases.held, name) // lapsed, and another store took it
		}
	}
	return nil
}

// TakeLease takes name for this store unless a store holds it, live: a
// hold whose holder stopped renewing it is taken once it has expired. A
// row of this store's that it does not hold is taken too: a take whose
// caller gave up (its context ended) after the database had stored it,
// which nobody renews or releases (a turn that never ran, a watch never
// started); left, it would refuse its own name until it expired.
func (s *Store) TakeLease(ctx context.Context, name string) (bool, error) {
	ctx, cancel, err := s.op(ctx)
	if err != nil {
		return false, err
	}
	defer cancel()
	unlock, err := s.leases.taking.LockContext(ctx, name)
	if err != nil {
		return false, dbErr("take a lease", err)
	}
	defer unlock()
	s.leases.mu.Lock()
	_, mine := s.leases.held[name]
	s.leases.mu.Unlock()
	sent := time.Now()
	var holder string
	err = s.pool.QueryRow(ctx, `INSERT INTO wake_leases (name, holder, expires, state)
		VALUES ($1, $2, now() + make_interval(secs => $3), 'held')
		ON CONFLICT (name) DO UPDATE SET holder = EXCLUDED.holder, expires = EXCLUDED.expires, state = EXCLUDED.state
		WHERE wake_leases.expires < now() OR (wake_leases.holder = EXCLUDED.holder AND NOT $4)
		RETURNING holder`, name, s.holder, s.lease.Seconds(), mine).Scan(&holder)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return false, nil
	case err != nil:
		return false, s.closedOr(dbErr("take a lease", err))
	}
	s.leases.mu.Lock()
	s.leases.held[name] = sent.Add(s.lease)
	s.leases.mu.Unlock()
	return true, nil
}

// LeaseHeld reports whether this store still holds name, on its own clock:
// taken, not released, and renewed within the lease.
func (s *Store) LeaseHeld(name string) bool {
	s.leases.mu.Lock()
	defer s.leases.mu.Unlock()
	until, ok := s.leases.held[name]
	return ok && time.Now().Before(until)
}

// ReleaseLease gives name up. Releasing a hold this store does not have
// does nothing.
func (s *Store) ReleaseLease(ctx context.Context, name string) error {
	s.leases.mu.Lock()
	_, held := s.leases.held[name]
	delete(s.leases.held, name)
	s.leases.mu.Unlock()
	if !held {
		return nil
	}
	ctx, cancel, err := s.op(ctx)
	if err != nil {
		return err
	}
	defer cancel()
	_, err = s.pool.Exec(ctx, `DELETE FROM wake_leases WHERE name = $1 AND holder = $2`, name, s.holder)
	return s.closedOr(dbErr("release a lease", err))
}

// releaseAll gives up every hold of this store, at Close: another replica
// takes over at once instead of after the lease.
func (s *Store) releaseAll() {
	s.leases.mu.Lock()
	n := len(s.leases.held)
	clear(s.leases.held)
	s.leases.mu.Unlock()
	if n == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), s.opTimeout)
	defer cancel()
	s.pool.Exec(ctx, `DELETE FROM wake_leases WHERE holder = $1`, s.holder)
}

// stopRenewing stops the renewal and waits for it.
func (s *Store) stopRenewing() {
	if s.leases.stop != nil {
		s.leases.stop()
		<-s.leases.done
	}
}

var _ store.Leases = (*Store)(nil)
