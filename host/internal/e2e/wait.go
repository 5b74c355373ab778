package e2e

import (
	"context"
	"testing"
	"time"

	"github.com/wakeonchat/wakeonchat/host/internal/fakeclock"
)

// WaitWatcher waits until a goroutine (a wake's watch) waits on the fake
// clock, and fails the test after within.
func WaitWatcher(t testing.TB, c *fakeclock.Clock, within time.Duration) {
	t.Helper()
	WaitWaiters(t, c, 1, within)
}

// WaitWaiters waits until at least n goroutines wait on the fake clock (a
// wake's watch, a held request's timers), and fails the test after within.
// A wake's watch waits on the clock only once its start returned.
func WaitWaiters(t testing.TB, c *fakeclock.Clock, n int, within time.Duration) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), within)
	defer cancel()
	if err := c.BlockUntilWaiters(ctx, n); err != nil {
		t.Fatalf("at %s %d wait on the fake clock after %v, want %d: no wake watch is running", c.Now().Format(time.TimeOnly), c.Waiters(), within, n)
	}
}

// WaitIdle waits until nothing waits on the fake clock c: every wake watch
// has ended. Still something after within fails the test.
func WaitIdle(t testing.TB, c *fakeclock.Clock, within time.Duration) {
	t.Helper()
	deadline := time.Now().Add(within)
	for c.Waiters() > 0 {
		if time.Now().After(deadline) {
			t.Fatalf("at %s %d still wait on the fake clock after %v: a wake watch is still running", c.Now().Format(time.TimeOnly), c.Waiters(), within)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// WaitCount polls get until it returns want. More than want, or still
// less after within, fails the test.
func WaitCount(t testing.TB, what string, want int, get func() int, within time.Duration) {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		got := get()
		if got == want {
			return
		}
		if got > want || time.Now().After(deadline) {
			t.Fatalf("%s = %d, want %d", what, got, want)
		}
		time.Sleep(5 * time.Millisecond)
	}
}
