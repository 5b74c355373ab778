// Package clock is the host's source of time: what time it is, and a channel
// that fires after a duration. Everything in host/ that waits takes a Clock:
// Real is the wall clock, Scaled the demo's faster one; tests run in a
// testing/synctest bubble, or drive host/internal/fakeclock where processes
// are involved.
//
// What this package must not do: start goroutines or keep state, or offer a
// Sleep (a sleeping host cannot be stopped; callers select on After and
// their own done channel).
package clock
