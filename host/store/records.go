package store

import (
	"encoding/json"
	"errors"
	"fmt"

	bolt "go.etcd.io/bbolt"

	"github.com/wakeonchat/wakeonchat/machines"
)

var errNoPod = errors.New("store: empty pod name")

// Record returns pod's wake-policy record, machines.NewRecord(pod) when none
// is stored.
func (s *Store) Record(pod string) (machines.Record, error) {
	if pod == "" {
		return machines.Record{}, errNoPod
	}
	r := machines.NewRecord(pod)
	err := s.view(func(tx *bolt.Tx) error {
		b, err := bucket(tx, bucketPods)
		if err != nil {
			return err
		}
		v := b.Get([]byte(pod))
		if v == nil {
			return nil
		}
		r, err = decodeRecord(pod, v)
		return err
	})
	if err != nil {
		return machines.Record{}, err
	}
	return r, nil
}

// PutRecord stores r under r.Pod, replacing what was there. Its times are
// stored in UTC.
func (s *Store) PutRecord(r machines.Record) error {
	if r.Pod == "" {
		return errNoPod
	}
	v, err := encodeRecord(r)
	if err != nil {
		return err
	}
	return s.update(func(tx *bolt.Tx) error {
		b, err := bucket(tx, bucketPods)
		if err != nil {
			return err
		}
		return b.Put([]byte(r.Pod), v)
	})
}

// Records returns every stored record, sorted by pod.
func (s *Store) Records() ([]machines.Record, error) {
	var rs []machines.Record
	err := s.view(func(tx *bolt.Tx) error {
		b, err := bucket(tx, bucketPods)
		if err != nil {
			return err
		}
		// bbolt keeps keys in byte order, which is Go's string order.
		return b.ForEach(func(k, v []byte) error {
			r, err := decodeRecord(string(k), v)
			rs = append(rs, r)
			return err
		})
	})
	if err != nil {
		return nil, err
	}
	return rs, nil
}

// encodeRecord is r as the store keeps it: JSON, its times in UTC.
func encodeRecord(r machines.Record) ([]byte, error) {
	r.WakeRequestedAt = utc(r.WakeRequestedAt)
	r.ModelLoadingSince = utc(r.ModelLoadingSince)
	r.ReadyAt = utc(r.ReadyAt)
	r.RunningAt = utc(r.RunningAt)
	v, err := json.Marshal(r)
	if err != nil {
		return nil, fmt.Errorf("store: record of pod %q: %w", r.Pod, err)
	}
	return v, nil
}

func decodeRecord(pod string, v []byte) (machines.Record, error) {
	var r machines.Record
	if err := json.Unmarshal(v, &r); err != nil {
		return machines.Record{}, fmt.Errorf("store: record of pod %q: %w", pod, err)
	}
	return r, nil
}
