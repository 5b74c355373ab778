package clock

import (
	"cmp"
	"context"
	"slices"
	"sync"
	"time"
)

// Fake is a Clock that moves only when told to. It is safe for concurrent
// use: goroutines under test call Now and After while the test calls Advance.
// The zero value reads the zero time; NewFake starts it elsewhere.
type Fake struct {
	mu      sync.Mutex
	now     time.Time
	seq     uint64
	waiters []waiter
	changed chan struct{} // closed and replaced whenever a waiter is added
}

// waiter is one pending After.
type waiter struct {
	deadline time.Time
	seq      uint64 // registration order, to break deadline ties
	ch       chan time.Time
}

var _ Clock = (*Fake)(nil)

// NewFake returns a Fake reading t.
func NewFake(t time.Time) *Fake { return &Fake{now: t} }

// Now returns the fake's current reading.
func (f *Fake) Now() time.Time {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.now
}

// After returns a channel that receives its deadline (now + d) when Advance
// or Set moves the clock to or past it. A d of zero or less fires at once.
// The channel is buffered: a waiter nobody receives from never blocks the
// clock, but it stays pending (and counted by Waiters) until it fires.
func (f *Fake) After(d time.Duration) <-chan time.Time {
	ch := make(chan time.Time, 1)
	f.mu.Lock()
	defer f.mu.Unlock()
	if d <= 0 {
		ch <- f.now
		return ch
	}
	f.seq++
	f.waiters = append(f.waiters, waiter{deadline: f.now.Add(d), seq: f.seq, ch: ch})
	if f.changed != nil {
		close(f.changed)
		f.changed = nil
	}
	return ch
}

// Advance moves the clock forward by d and fires every waiter whose deadline
// it reaches, in deadline order (ties in the order After was called). A
// negative d moves the clock back and fires nothing.
func (f *Fake) Advance(d time.Duration) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.setLocked(f.now.Add(d))
}

// Set moves the clock to t, forward or back, and fires every waiter whose
// deadline is at or before t, in deadline order.
func (f *Fake) Set(t time.Time) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.setLocked(t)
}

func (f *Fake) setLocked(t time.Time) {
	f.now = t
	var due, pending []waiter
	for _, w := range f.waiters {
		if w.deadline.After(t) {
			pending = append(pending, w)
		} else {
			due = append(due, w)
		}
	}
	f.waiters = pending
	slices.SortFunc(due, func(a, b waiter) int {
		if c := a.deadline.Compare(b.deadline); c != 0 {
			return c
		}
		return cmp.Compare(a.seq, b.seq)
	})
	for _, w := range due {
		w.ch <- w.deadline // buffered, never blocks
	}
}

// Waiters returns how many After calls are pending.
func (f *Fake) Waiters() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.waiters)
}

// BlockUntilWaiters returns nil once at least n After calls are pending, or
// ctx's error if ctx ends first. A test calls it before Advance so that the
// goroutine it drives has registered its timer.
func (f *Fake) BlockUntilWaiters(ctx context.Context, n int) error {
	for {
		f.mu.Lock()
		if len(f.waiters) >= n {
			f.mu.Unlock()
			return nil
		}
		if f.changed == nil {
			f.changed = make(chan struct{})
		}
		changed := f.changed
		f.mu.Unlock()
		select {
		case <-changed:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}
