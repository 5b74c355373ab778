package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	bolt "go.etcd.io/bbolt"

	"github.com/wakeonchat/wakeonchat/machines"
)

// ErrEmptyPod is returned by every method of a backend given an empty pod
// name.
var ErrEmptyPod = errors.New("store: empty pod name")

// Record returns pod's wake-policy record, machines.NewRecord(pod) when none
// is stored.
func (s *Store) Record(ctx context.Context, pod string) (machines.Record, error) {
	if pod == "" {
		return machines.Record{}, ErrEmptyPod
	}
	r := machines.NewRecord(pod)
	err := s.view(ctx, func(tx *bolt.Tx) error {
		b, err := bucket(tx, bucketPods)
		if err != nil {
			return err
		}
		v := b.Get([]byte(pod))
		if v == nil {
			return nil
		}
		r, err = DecodeRecord(pod, v)
		return err
	})
	if err != nil {
		return machines.Record{}, err
	}
	return r, nil
}

// PutRecord stores r under r.Pod, replacing what was there. Its times are
// stored in UTC.
func (s *Store) PutRecord(ctx context.Context, r machines.Record) error {
	if r.Pod == "" {
		return ErrEmptyPod
	}
	v, err := EncodeRecord(r)
	if err != nil {
		return err
	}
	return s.update(ctx, func(tx *bolt.Tx) error {
		b, err := bucket(tx, bucketPods)
		if err != nil {
			return err
		}
		return b.Put([]byte(r.Pod), v)
	})
}

// Records returns every stored record, sorted by pod.
func (s *Store) Records(ctx context.Context) ([]machines.Record, error) {
	var rs []machines.Record
	err := s.view(ctx, func(tx *bolt.Tx) error {
		b, err := bucket(tx, bucketPods)
		if err != nil {
			return err
		}
		// bbolt keeps keys in byte order, which is Go's string order.
		return b.ForEach(func(k, v []byte) error {
			r, err := DecodeRecord(string(k), v)
			rs = append(rs, r)
			return err
		})
	})
	if err != nil {
		return nil, err
	}
	return rs, nil
}

// EncodeRecord is r as a backend stores it: JSON, with its times in UTC.
func EncodeRecord(r machines.Record) ([]byte, error) {
	v, err := json.Marshal(stored(r))
	if err != nil {
		return nil, fmt.Errorf("store: record of pod %q: %w", r.Pod, err)
	}
	return v, nil
}

// DecodeRecord is the record of pod that EncodeRecord stored as v. Its
// error names pod.
func DecodeRecord(pod string, v []byte) (machines.Record, error) {
	var r machines.Record
	if err := json.Unmarshal(v, &r); err != nil {
		return machines.Record{}, fmt.Errorf("store: record of pod %q: %w", pod, err)
	}
	return r, nil
}

// UpdateRecord runs fn on pod's record under the pod's lock and stores what
// fn returns unless it is Equal to what fn was given (an ask that changes
// nothing costs no write, and no fsync); the wake log entry fn names, if
// any, is stored with it in one transaction (PutRecordWake). It returns the
// record fn was given and the one now stored; when fn fails nothing is
// stored and its error is returned as it is. One process holds the file, so
// an in-process lock per pod is a lock across every writer; PutRecord does
// not take it. Waiting for the lock ends with ctx, and a ctx that ended
// while fn ran stores nothing.
func (s *Store) UpdateRecord(ctx context.Context, pod string, fn func(machines.Record) (machines.Record, *machines.Wake, error)) (before, after machines.Record, err error) {
	if pod == "" {
		return machines.Record{}, machines.Record{}, ErrEmptyPod
	}
	unlock, err := s.podLocks.LockContext(ctx, pod)
	if err != nil {
		return machines.Record{}, machines.Record{}, fmt.Errorf("store: %w", err)
	}
	defer unlock()
	rec, err := s.Record(ctx, pod)
	if err != nil {
		return machines.Record{}, machines.Record{}, err
	}
	next, w, err := fn(rec)
	if err != nil {
		return machines.Record{}, machines.Record{}, err
	}
	if next.Equal(rec) {
		return rec, next, nil
	}
	if next.Pod != pod {
		return machines.Record{}, machines.Record{}, fmt.Errorf("store: update of pod %s returned a record of pod %q", pod, next.Pod)
	}
	if w != nil {
		err = s.PutRecordWake(ctx, next, *w)
	} else {
		err = s.PutRecord(ctx, next)
	}
	if err != nil {
		return machines.Record{}, machines.Record{}, err
	}
	return rec, stored(next), nil
}

// stored is r as a read gives it back: its times in UTC.
func stored(r machines.Record) machines.Record {
	r.WakeRequestedAt = UTC(r.WakeRequestedAt)
	r.ModelLoadingSince = UTC(r.ModelLoadingSince)
	r.ReadyAt = UTC(r.ReadyAt)
	r.RunningAt = UTC(r.RunningAt)
	r.StoppedAt = UTC(r.StoppedAt)
	r.AnsweredAt = UTC(r.AnsweredAt)
	return r
}
