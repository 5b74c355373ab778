package store

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"

	bolt "go.etcd.io/bbolt"

	"github.com/wakeonchat/wakeonchat/host/store/internal/filecheck"
	"github.com/wakeonchat/wakeonchat/machines"
)

// WakeLogSize is how many wakes a pod's wake log keeps: the newest, by
// request time. The estimate reads the last machines.EstimateWakes of them;
// the rest are history for whoever shows it.
const WakeLogSize = 50

// bucketWakes holds one nested bucket per pod: its wake log.
var bucketWakes = filecheck.BucketWakes

// wakeKey is the key of the wake requested at w.RequestedAt: big-endian
// Unix nanoseconds, so that byte order is time order.
func wakeKey(w machines.Wake) []byte {
	return binary.BigEndian.AppendUint64(nil, uint64(w.RequestedAt.UnixNano()))
}

// LogEntry is w as a backend stores it in the log of r's pod
// (WakeLog.PutRecordWake): its pod r.Pod when empty, its times in UTC. It
// fails when w is of another pod or has no request time.
func LogEntry(r machines.Record, w machines.Wake) (machines.Wake, error) {
	if w.Pod == "" {
		w.Pod = r.Pod
	}
	if w.Pod != r.Pod {
		return machines.Wake{}, fmt.Errorf("store: wake of pod %q with the record of pod %q", w.Pod, r.Pod)
	}
	if w.RequestedAt.IsZero() {
		return machines.Wake{}, fmt.Errorf("store: wake of pod %q has no request time", w.Pod)
	}
	w.RequestedAt, w.RunningAt, w.ReadyAt = UTC(w.RequestedAt), UTC(w.RunningAt), UTC(w.ReadyAt)
	return w, nil
}

// PutRecordWake stores r, as PutRecord does, and w in r.Pod's wake log, in
// one transaction: w replaces the entry of the same wake (its RequestedAt)
// or is added, and the log then keeps its newest WakeLogSize entries. w.Pod
// is r.Pod (an empty one is set to it). Its times are stored in UTC.
func (s *Store) PutRecordWake(ctx context.Context, r machines.Record, w machines.Wake) error {
	if r.Pod == "" {
		return ErrEmptyPod
	}
	w, err := LogEntry(r, w)
	if err != nil {
		return err
	}
	rv, err := EncodeRecord(r)
	if err != nil {
		return err
	}
	wv, err := json.Marshal(w)
	if err != nil {
		return fmt.Errorf("store: wake of pod %q: %w", w.Pod, err)
	}
	return s.update(ctx, func(tx *bolt.Tx) error {
		pods, err := bucket(tx, bucketPods)
		if err != nil {
			return err
		}
		if err := pods.Put([]byte(r.Pod), rv); err != nil {
			return err
		}
		wakes, err := bucket(tx, bucketWakes)
		if err != nil {
			return err
		}
		log, err := wakes.CreateBucketIfNotExists([]byte(w.Pod))
		if err != nil {
			return fmt.Errorf("store: wake log of pod %q: %w", w.Pod, err)
		}
		if err := log.Put(wakeKey(w), wv); err != nil {
			return err
		}
		// The oldest go first, until WakeLogSize are left.
		c := log.Cursor()
		n := 0
		for k, _ := c.First(); k != nil; k, _ = c.Next() {
			n++
		}
		for ; n > WakeLogSize; n-- {
			c.First()
			if err := c.Delete(); err != nil {
				return err
			}
		}
		return nil
	})
}

// Wakes returns pod's wake log, oldest first (by request time); none for a
// pod with no logged wake, or a store from before the log was kept.
func (s *Store) Wakes(ctx context.Context, pod string) ([]machines.Wake, error) {
	if pod == "" {
		return nil, ErrEmptyPod
	}
	var ws []machines.Wake
	err := s.view(ctx, func(tx *bolt.Tx) error {
		wakes, err := bucket(tx, bucketWakes)
		if err != nil {
			return err
		}
		log := wakes.Bucket([]byte(pod))
		if log == nil {
			return nil
		}
		return log.ForEach(func(k, v []byte) error {
			var w machines.Wake
			if err := json.Unmarshal(v, &w); err != nil {
				return fmt.Errorf("store: wake log of pod %q: entry %x: %w", pod, k, err)
			}
			ws = append(ws, w)
			return nil
		})
	})
	if err != nil {
		return nil, err
	}
	return ws, nil
}
