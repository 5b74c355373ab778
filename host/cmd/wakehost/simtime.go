package main

import (
	"context"
	"log/slog"
	"time"
)

// simTimeHandler adds sim_time, the simulated clock's now in UTC, to every
// record, at the top level. Under -simulate the replies, wakeRequestedAt
// and readySince count the simulated clock while a record's time is the
// wall clock; sim_time lets a reader match a log line to a reply. The wall
// clock stays in time, where log tooling expects it.
type simTimeHandler struct {
	now  func() time.Time
	base slog.Handler // the handler as wrapped, before any WithAttrs or WithGroup
	// ops are the WithAttrs and WithGroup calls since base, oldest first;
	// h is base with all of them applied.
	ops []func(slog.Handler) slog.Handler
	h   slog.Handler
	// grouped: a WithGroup is among ops, so a record's attributes land in
	// a group and sim_time must be added to base instead.
	grouped bool
}

func newSimTimeHandler(h slog.Handler, now func() time.Time) *simTimeHandler {
	return &simTimeHandler{now: now, base: h, h: h}
}

func (s *simTimeHandler) Enabled(ctx context.Context, l slog.Level) bool {
	return s.h.Enabled(ctx, l)
}

func (s *simTimeHandler) Handle(ctx context.Context, r slog.Record) error {
	at := slog.Time("sim_time", s.now().UTC())
	if !s.grouped {
		r = r.Clone()
		r.AddAttrs(at)
		return s.h.Handle(ctx, r)
	}
	// Rebuild the chain with sim_time first, outside every group. Only
	// a logger with a group pays for this; wakehost opens none.
	h := s.base.WithAttrs([]slog.Attr{at})
	for _, op := range s.ops {
		h = op(h)
	}
	return h.Handle(ctx, r)
}

func (s *simTimeHandler) with(op func(slog.Handler) slog.Handler, group bool) *simTimeHandler {
	return &simTimeHandler{
		now: s.now, base: s.base,
		ops:     append(append([]func(slog.Handler) slog.Handler(nil), s.ops...), op),
		h:       op(s.h),
		grouped: s.grouped || group,
	}
}

func (s *simTimeHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	return s.with(func(h slog.Handler) slog.Handler { return h.WithAttrs(attrs) }, false)
}

func (s *simTimeHandler) WithGroup(name string) slog.Handler {
	if name == "" {
		return s
	}
	return s.with(func(h slog.Handler) slog.Handler { return h.WithGroup(name) }, true)
}
