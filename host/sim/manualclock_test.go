package sim

import (
	"sync"
	"time"
)

// ManualClock is the tests' Clock: it moves only when told to. It is safe for
// concurrent use, so a test can advance it while held starts poll it.
type ManualClock struct {
	mu  sync.Mutex
	now time.Time
}

var _ Clock = (*ManualClock)(nil)

// NewManualClock returns a ManualClock reading start.
func NewManualClock(start time.Time) *ManualClock {
	return &ManualClock{now: start}
}

// Now returns the clock's current reading.
func (c *ManualClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// Advance moves the clock forward by d and returns the new reading.
func (c *ManualClock) Advance(d time.Duration) time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
	return c.now
}

// Set moves the clock to t, forward or back.
func (c *ManualClock) Set(t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = t
}
