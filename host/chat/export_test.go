package chat

import "context"

// NewOnTurns is New with ts running every turn in place of Config.Service:
// the tests of the door's codec run it on a recording fake of the turn
// service.
func NewOnTurns(cfg Config, ts turns) *Server {
	s := New(cfg)
	s.turns = ts
	return s
}

// Wait returns when session has no turn in flight: a turn that answered
// stores itself after its reply is sent, before its slot is released, and
// every turn is counted in the metrics before that. For tests that read a
// session's history (or the metrics) outside a turn.
func (s *Server) Wait(ctx context.Context, session string) error {
	return s.slots.wait(ctx, session)
}

// wait returns when session has no turn in flight, or ctx ends.
func (s *slots) wait(ctx context.Context, session string) error {
	for {
		s.mu.Lock()
		sl, busy := s.m[session]
		s.mu.Unlock()
		if !busy {
			return nil
		}
		select {
		case <-sl.done:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}
