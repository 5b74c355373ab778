package postgres

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/wakeonchat/wakeonchat/host/store"
	"github.com/wakeonchat/wakeonchat/machines"
)

// Each pod's wake log is its rows in wake_wakes, keyed by the wake's
// request time in Unix nanoseconds (the bbolt store's key, and finer than
// timestamptz's microseconds), written only with the record in its
// transaction.

// PutRecordWake stores r, as PutRecord does, and w in r.Pod's wake log, in
// one transaction: w replaces the entry of the same wake (its RequestedAt)
// or is added, and the log then keeps its newest store.WakeLogSize entries.
func (s *Store) PutRecordWake(ctx context.Context, r machines.Record, w machines.Wake) error {
	return s.put(ctx, r, &w)
}

// queueWake queues the statements that put v, the wake of pod requested at
// requested (Unix nanoseconds), in its log and bound the log: the oldest go
// until store.WakeLogSize are left.
func queueWake(b *pgx.Batch, pod string, requested int64, v []byte) {
	b.Queue(`INSERT INTO wake_wakes (pod, requested, wake) VALUES ($1, $2, $3)
		ON CONFLICT (pod, requested) DO UPDATE SET wake = EXCLUDED.wake`, pod, requested, v)
	b.Queue(`DELETE FROM wake_wakes WHERE pod = $1 AND requested < (
			SELECT requested FROM wake_wakes WHERE pod = $1 ORDER BY requested DESC OFFSET $2 LIMIT 1)`,
		pod, store.WakeLogSize-1)
}

// Wakes returns pod's wake log, oldest first (by request time); none for a
// pod with no logged wake.
func (s *Store) Wakes(ctx context.Context, pod string) ([]machines.Wake, error) {
	if pod == "" {
		return nil, store.ErrEmptyPod
	}
	ctx, cancel, err := s.op(ctx)
	if err != nil {
		return nil, err
	}
	defer cancel()
	what := fmt.Sprintf("read the wake log of pod %s", pod)
	rows, err := s.pool.Query(ctx, `SELECT wake FROM wake_wakes WHERE pod = $1 ORDER BY requested`, pod)
	if err != nil {
		return nil, s.closedOr(dbErr(what, err))
	}
	var ws []machines.Wake
	var v []byte
	_, err = pgx.ForEachRow(rows, []any{&v}, func() error {
		var w machines.Wake
		if err := json.Unmarshal(v, &w); err != nil {
			return fmt.Errorf("store: wake log of pod %q: %w", pod, err)
		}
		ws = append(ws, w)
		return nil
	})
	if err != nil {
		return nil, s.closedOr(dbErr(what, err))
	}
	return ws, nil
}
