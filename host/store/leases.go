package store

import (
	"context"
	"sync"
)

// leases are the bbolt store's: one process holds the file, so a set of
// names in memory is every holder there is.
type leases struct {
	mu   sync.Mutex
	held map[string]bool
}

// TakeLease takes name unless it is held.
func (s *Store) TakeLease(ctx context.Context, name string) (bool, error) {
	if s.isClosed() {
		return false, ErrClosed
	}
	if err := ctxErr(ctx); err != nil {
		return false, err
	}
	s.leases.mu.Lock()
	defer s.leases.mu.Unlock()
	if s.leases.held[name] {
		return false, nil
	}
	if s.leases.held == nil {
		s.leases.held = make(map[string]bool)
	}
	s.leases.held[name] = true
	return true, nil
}

// LeaseHeld reports whether name is held.
func (s *Store) LeaseHeld(name string) bool {
	s.leases.mu.Lock()
	defer s.leases.mu.Unlock()
	return s.leases.held[name]
}

// ReleaseLease gives name up.
func (s *Store) ReleaseLease(_ context.Context, name string) error {
	s.leases.mu.Lock()
	defer s.leases.mu.Unlock()
	delete(s.leases.held, name)
	return nil
}
