package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/wakeonchat/wakeonchat/host/store"
	"github.com/wakeonchat/wakeonchat/machines"
)

// Record returns pod's record, machines.NewRecord(pod) when none is stored.
func (s *Store) Record(ctx context.Context, pod string) (machines.Record, error) {
	if pod == "" {
		return machines.Record{}, store.ErrEmptyPod
	}
	ctx, cancel, err := s.op(ctx)
	if err != nil {
		return machines.Record{}, err
	}
	defer cancel()
	r, err := readRecord(ctx, s.pool, pod)
	if err != nil {
		return machines.Record{}, s.closedOr(err)
	}
	return r, nil
}

// querier is a pool or a transaction.
type querier interface {
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

// readRecord reads pod's record with q.
func readRecord(ctx context.Context, q querier, pod string) (machines.Record, error) {
	var v []byte
	err := q.QueryRow(ctx, `SELECT record FROM wake_pods WHERE pod = $1`, pod).Scan(&v)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return machines.NewRecord(pod), nil
	case err != nil:
		return machines.Record{}, dbErr(fmt.Sprintf("read the record of pod %s", pod), err)
	case v == nil:
		return machines.NewRecord(pod), nil
	}
	return store.DecodeRecord(pod, v)
}

// PutRecord stores r under r.Pod, replacing what was there. Its times are
// stored in UTC.
func (s *Store) PutRecord(ctx context.Context, r machines.Record) error {
	return s.put(ctx, r, nil)
}

// put stores r, and w in its pod's wake log when w is not nil, in one
// transaction under the lock of its row.
func (s *Store) put(ctx context.Context, r machines.Record, w *machines.Wake) error {
	if r.Pod == "" {
		return store.ErrEmptyPod
	}
	return s.tx(ctx, fmt.Sprintf("store the record of pod %s", r.Pod), func(ctx context.Context, tx pgx.Tx) error {
		before, err := lockRecord(ctx, tx, r.Pod)
		if err != nil {
			return err
		}
		_, err = s.write(ctx, tx, before, r, w)
		return err
	})
}

// Records returns every stored record, sorted by pod (byte order, as the
// bbolt store sorts them).
func (s *Store) Records(ctx context.Context) ([]machines.Record, error) {
	ctx, cancel, err := s.op(ctx)
	if err != nil {
		return nil, err
	}
	defer cancel()
	rows, err := s.pool.Query(ctx, `SELECT pod, record FROM wake_pods WHERE record IS NOT NULL ORDER BY pod COLLATE "C"`)
	if err != nil {
		return nil, s.closedOr(dbErr("list the records", err))
	}
	var recs []machines.Record
	var pod string
	var v []byte
	_, err = pgx.ForEachRow(rows, []any{&pod, &v}, func() error {
		r, err := store.DecodeRecord(pod, v)
		recs = append(recs, r)
		return err
	})
	if err != nil {
		return nil, s.closedOr(dbErr("list the records", err))
	}
	return recs, nil
}

// UpdateRecord runs fn on pod's record and stores what fn returns unless it
// is Equal to what fn was given, with the wake log entry fn names, if any,
// in one transaction, decided under a lock on the pod's row that holds
// across every replica of the database (SELECT … FOR UPDATE). Its caller,
// the wake coordinator, calls it only for an event that changed the record
// on a plain read (most asks change nothing and never come here). It
// returns the record fn was given and the one now stored. When fn fails
// nothing is stored and its error is returned as it is.
func (s *Store) UpdateRecord(ctx context.Context, pod string, fn func(machines.Record) (machines.Record, *machines.Wake, error)) (before, after machines.Record, err error) {
	if pod == "" {
		return machines.Record{}, machines.Record{}, store.ErrEmptyPod
	}
	what := fmt.Sprintf("update the record of pod %s", pod)
	err = s.tx(ctx, what, func(ctx context.Context, tx pgx.Tx) error {
		rec, err := lockRecord(ctx, tx, pod)
		if err != nil {
			return err
		}
		next, w, err := fn(rec)
		if err != nil {
			return err
		}
		before, after = rec, next
		if next.Equal(rec) {
			return nil
		}
		if next.Pod != pod {
			return fmt.Errorf("store: update of pod %s returned a record of pod %q", pod, next.Pod)
		}
		after, err = s.write(ctx, tx, rec, next, w)
		return err
	})
	if err != nil {
		return machines.Record{}, machines.Record{}, s.closedOr(err)
	}
	return before, after, nil
}

// write stores next, the record of a pod whose row tx has locked, and w in
// its wake log when w is not nil, and notifies the change from before: in
// one batch, one round trip. It returns next as a read gives it back.
func (s *Store) write(ctx context.Context, tx pgx.Tx, before, next machines.Record, w *machines.Wake) (machines.Record, error) {
	pod := next.Pod
	v, err := store.EncodeRecord(next)
	if err != nil {
		return machines.Record{}, err
	}
	// after is what was stored, decoded, rather than next with its times in
	// UTC: json.Marshal replaces invalid UTF-8 in a pod name or a state,
	// and after must be what a read gives back.
	after, err := store.DecodeRecord(pod, v)
	if err != nil {
		return machines.Record{}, err
	}
	nt, err := s.notice(before, after)
	if err != nil {
		return machines.Record{}, err
	}
	b := &pgx.Batch{}
	b.Queue(`INSERT INTO wake_pods (pod, record) VALUES ($1, $2)
		ON CONFLICT (pod) DO UPDATE SET record = EXCLUDED.record`, pod, v)
	what := fmt.Sprintf("store the record of pod %s", pod)
	if w != nil {
		entry, err := store.LogEntry(next, *w)
		if err != nil {
			return machines.Record{}, err
		}
		wv, err := json.Marshal(entry)
		if err != nil {
			return machines.Record{}, fmt.Errorf("store: wake of pod %q: %w", pod, err)
		}
		queueWake(b, pod, entry.RequestedAt.UnixNano(), wv)
		what = fmt.Sprintf("store the record and a wake of pod %s", pod)
	}
	b.Queue(`SELECT pg_notify($1, $2)`, s.channel(), nt)
	if err := tx.SendBatch(ctx, b).Close(); err != nil {
		return machines.Record{}, dbErr(what, err)
	}
	return after, nil
}

// lockRecord reads pod's record in tx and locks its row until tx ends. A
// pod nothing was stored about has no row to lock yet: it gets one, empty
// (of replicas making it at once, one inserts and the others wait for its
// commit), and that is locked.
func lockRecord(ctx context.Context, tx pgx.Tx, pod string) (machines.Record, error) {
	var v []byte
	for attempt := 0; ; attempt++ {
		err := tx.QueryRow(ctx, `SELECT record FROM wake_pods WHERE pod = $1 FOR UPDATE`, pod).Scan(&v)
		switch {
		case errors.Is(err, pgx.ErrNoRows) && attempt == 0:
			if _, err := tx.Exec(ctx, `INSERT INTO wake_pods (pod) VALUES ($1) ON CONFLICT (pod) DO NOTHING`, pod); err != nil {
				return machines.Record{}, dbErr(fmt.Sprintf("make the row of pod %s", pod), err)
			}
			continue
		case err != nil:
			return machines.Record{}, dbErr(fmt.Sprintf("lock the record of pod %s", pod), err)
		case v == nil:
			return machines.NewRecord(pod), nil
		}
		return store.DecodeRecord(pod, v)
	}
}

// closedOr is ErrClosed when the store was closed while the call ran,
// else err.
func (s *Store) closedOr(err error) error {
	if s.closed.Load() {
		return store.ErrClosed
	}
	return err
}
