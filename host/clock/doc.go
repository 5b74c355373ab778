// Package clock is the host's source of time: what time it is, and a channel
// that fires after a duration. Everything in host/ that waits takes a Clock,
// so tests drive timers with a Fake instead of sleeping.
//
// Real is the wall clock. Fake moves only when a test calls Advance or Set,
// and fires each pending After whose deadline it passes, in deadline order.
// BlockUntilWaiters lets a test wait until a goroutine under test has
// registered its timer, so that advancing the clock never races the goroutine
// it is meant to wake.
//
// What this package must not do: start goroutines or keep state beyond the
// Fake's pending waiters, or offer a Sleep (a sleeping host cannot be stopped;
// callers select on After and their own done channel).
package clock
