package clock

import "time"

// Clock tells the time and waits for it. Implementations are safe for
// concurrent use.
type Clock interface {
	// Now returns the current time.
	Now() time.Time
	// After returns a channel that receives the time once d has passed. A d
	// of zero or less fires at once.
	After(d time.Duration) <-chan time.Time
}

// Real returns the wall clock: time.Now and time.After.
func Real() Clock { return realClock{} }

type realClock struct{}

var _ Clock = realClock{}

func (realClock) Now() time.Time                         { return time.Now() }
func (realClock) After(d time.Duration) <-chan time.Time { return time.After(d) }
