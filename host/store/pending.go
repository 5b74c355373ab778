package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	bolt "go.etcd.io/bbolt"
)

// Pending is the marker a wakeMode "wait" turn leaves for its session: never
// the prompt itself.
type Pending struct {
	Key             string    `json:"key"`
	Pod             string    `json:"pod"`
	Provider        string    `json:"provider"`
	WakeRequestedAt time.Time `json:"wakeRequestedAt"`
	State           string    `json:"state"`
	CreatedAt       time.Time `json:"createdAt"`
}

var (
	// ErrNoPending is returned by TakePending when the session has no marker.
	ErrNoPending = errors.New("store: no pending wake")
	// ErrPendingMismatch is returned by TakePending when the session's
	// marker has another key; the marker is kept.
	ErrPendingMismatch = errors.New("store: pending wake key mismatch")
)

// Pending returns session's marker; ok is false when it has none, or only
// an expired one (older than Options.PendingTTL).
func (s *Store) Pending(ctx context.Context, session string) (p Pending, ok bool, err error) {
	if session == "" {
		return Pending{}, false, ErrEmptySession
	}
	now := s.now()
	err = s.view(ctx, func(tx *bolt.Tx) error {
		var err error
		p, ok, err = getPending(tx, session)
		ok = ok && !p.Expired(s.pendingTTL, now)
		return err
	})
	if err != nil {
		return Pending{}, false, err
	}
	return p, ok, nil
}

// PutPending sets session's marker, replacing any other. p.Key must not be
// empty. Its times are stored in UTC.
func (s *Store) PutPending(ctx context.Context, session string, p Pending) error {
	if session == "" {
		return ErrEmptySession
	}
	_, v, err := EncodePending(session, p)
	if err != nil {
		return err
	}
	return s.update(ctx, func(tx *bolt.Tx) error {
		b, err := bucket(tx, bucketPending)
		if err != nil {
			return err
		}
		return b.Put([]byte(session), v)
	})
}

// TakePending atomically returns session's marker and deletes it when its
// key is key. It returns ErrNoPending when the session has no marker (or
// only an expired one, which Prune deletes) and ErrPendingMismatch (keeping
// the marker) when the key differs; with either the Pending is zero. Of
// concurrent takes with the same key exactly one succeeds.
func (s *Store) TakePending(ctx context.Context, session, key string) (Pending, error) {
	if session == "" {
		return Pending{}, ErrEmptySession
	}
	var p Pending
	now := s.now()
	err := s.update(ctx, func(tx *bolt.Tx) error {
		got, ok, err := getPending(tx, session)
		switch {
		case err != nil:
			return err
		case !ok || got.Expired(s.pendingTTL, now):
			return ErrNoPending
		case got.Key != key:
			return ErrPendingMismatch
		}
		p = got
		return tx.Bucket(bucketPending).Delete([]byte(session))
	})
	if err != nil {
		return Pending{}, err
	}
	return p, nil
}

// DeletePending deletes session's marker; deleting none is not an error.
func (s *Store) DeletePending(ctx context.Context, session string) error {
	if session == "" {
		return ErrEmptySession
	}
	return s.update(ctx, func(tx *bolt.Tx) error {
		b, err := bucket(tx, bucketPending)
		if err != nil {
			return err
		}
		return b.Delete([]byte(session))
	})
}

// Expired reports whether p is older than ttl at now: whether ttl has
// passed since its CreatedAt. With a ttl of 0 or less it never expires.
func (p Pending) Expired(ttl time.Duration, now time.Time) bool {
	return ttl > 0 && !now.Before(p.CreatedAt.Add(ttl))
}

// EncodePending is session's marker p as a backend stores it: p with its
// times in UTC, and that as JSON. It fails when p has no key.
func EncodePending(session string, p Pending) (Pending, []byte, error) {
	if p.Key == "" {
		return Pending{}, nil, fmt.Errorf("store: pending wake for session %q has no key", session)
	}
	p.WakeRequestedAt, p.CreatedAt = UTC(p.WakeRequestedAt), UTC(p.CreatedAt)
	v, err := json.Marshal(p)
	if err != nil {
		return Pending{}, nil, fmt.Errorf("store: pending wake for session %q: %w", session, err)
	}
	return p, v, nil
}

// DecodePending is session's marker that EncodePending stored as v. Its
// error names session.
func DecodePending(session string, v []byte) (Pending, error) {
	var p Pending
	if err := json.Unmarshal(v, &p); err != nil {
		return Pending{}, fmt.Errorf("store: pending wake for session %q: %w", session, err)
	}
	return p, nil
}

func getPending(tx *bolt.Tx, session string) (Pending, bool, error) {
	b, err := bucket(tx, bucketPending)
	if err != nil {
		return Pending{}, false, err
	}
	v := b.Get([]byte(session))
	if v == nil {
		return Pending{}, false, nil
	}
	p, err := DecodePending(session, v)
	if err != nil {
		return Pending{}, false, err
	}
	return p, true, nil
}
