package chat

import (
	"context"
	"sync"
)

// slots holds the single in-flight turn of each session. A turn that has
// sent its reply and is storing it is finishing: the session's next turn
// waits for it (the user can only have seen the reply) instead of being
// turned away, and then sees the stored turn in its history.
type slots struct {
	mu    sync.Mutex
	m     map[string]*slot
	empty chan struct{} // closed when m empties; nil until idle waits
}

type slot struct {
	// remember is what a finishing turn has left to do, store itself; nil
	// while the turn runs.
	remember func() error
	done     chan struct{}
}

// take claims session's slot. It fails at once while another turn runs,
// and waits (until ctx ends) while one is finishing.
func (s *slots) take(ctx context.Context, session string) bool {
	for {
		s.mu.Lock()
		if s.m == nil {
			s.m = make(map[string]*slot)
		}
		sl, busy := s.m[session]
		if !busy {
			s.m[session] = &slot{done: make(chan struct{})}
			s.mu.Unlock()
			return true
		}
		finishing, done := sl.remember != nil, sl.done
		s.mu.Unlock()
		if !finishing {
			return false
		}
		select {
		case <-done:
		case <-ctx.Done():
			return false
		}
	}
}

// finish marks session's turn as replied to: only storing it, with
// remember (not nil), remains.
func (s *slots) finish(session string, remember func() error) {
	s.mu.Lock()
	if sl, ok := s.m[session]; ok {
		sl.remember = remember
	}
	s.mu.Unlock()
}

// finishing returns what session's finishing turn has left to do, or nil
// when its turn never replied with a model's answer.
func (s *slots) finishing(session string) func() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if sl, ok := s.m[session]; ok {
		return sl.remember
	}
	return nil
}

// release frees session's slot and wakes any turn waiting for it.
func (s *slots) release(session string) {
	s.mu.Lock()
	sl, ok := s.m[session]
	delete(s.m, session)
	if len(s.m) == 0 && s.empty != nil {
		close(s.empty)
		s.empty = nil
	}
	s.mu.Unlock()
	if ok {
		close(sl.done)
	}
}

// idle returns when no session holds a slot, or ctx ends.
func (s *slots) idle(ctx context.Context) error {
	s.mu.Lock()
	if len(s.m) == 0 {
		s.mu.Unlock()
		return nil
	}
	if s.empty == nil {
		s.empty = make(chan struct{})
	}
	empty := s.empty
	s.mu.Unlock()
	select {
	case <-empty:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
