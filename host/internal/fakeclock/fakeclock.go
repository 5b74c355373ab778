// Package fakeclock is a clock.Clock for tests that run the host's
// processes (plugins, the simulator's HTTP servers) and so cannot use
// testing/synctest: it moves only when the test calls Advance or Set, and
// fires each pending After whose deadline it passes, in deadline order.
// BlockUntilWaiters lets a test wait until a goroutine under test has
// registered its timer, so that advancing the clock never races it.
package fakeclock

import (
	"cmp"
	"context"
	"slices"
	"sync"
	"time"

	"github.com/wakeonchat/wakeonchat/host/clock"
)

// Clock moves only when told to. It is safe for concurrent
// use: goroutines under test call Now and After while the test calls Advance.
// The zero value reads the zero time; New starts it elsewhere.
type Clock struct {
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

var _ clock.Clock = (*Clock)(nil)

// New returns a Clock reading t.
func New(t time.Time) *Clock { return &Clock{now: t} }

// Now returns the fake's current reading.
func (f *Clock) Now() time.Time {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.now
}

// After returns a channel that receives its deadline (now + d) when Advance
// or Set moves the clock to or past it. A d of zero or less fires at once.
// The channel is buffered: a waiter nobody receives from never blocks the
// clock, but it stays pending (and counted by Waiters) until it fires.
func (f *Clock) After(d time.Duration) <-chan time.Time {
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
func (f *Clock) Advance(d time.Duration) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.setLocked(f.now.Add(d))
}

// Set moves the clock to t, forward or back, and fires every waiter whose
// deadline is at or before t, in deadline order.
func (f *Clock) Set(t time.Time) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.setLocked(t)
}

func (f *Clock) setLocked(t time.Time) {
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
func (f *Clock) Waiters() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.waiters)
}

// BlockUntilWaiters returns nil once at least n After calls are pending, or
// ctx's error if ctx ends first. A test calls it before Advance so that the
// goroutine it drives has registered its timer.
func (f *Clock) BlockUntilWaiters(ctx context.Context, n int) error {
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

// Rate is 0: the Clock moves only when told to (clock.Rate).
func (*Clock) Rate() float64 { return 0 }
