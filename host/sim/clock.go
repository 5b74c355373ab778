package sim

import "time"

// Clock tells the Sim what time it is. Handlers call Now concurrently.
type Clock interface {
	Now() time.Time
}

// realClock is the wall clock, the default.
type realClock struct{}

func (realClock) Now() time.Time { return time.Now() }
