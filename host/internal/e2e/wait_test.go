package e2e

import (
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/wakeonchat/wakeonchat/host/internal/fakeclock"
)

func TestWaitCount(t *testing.T) {
	var n atomic.Int64
	go func() {
		for range 3 {
			time.Sleep(5 * time.Millisecond)
			n.Add(1)
		}
	}()
	WaitCount(t, "n", 3, func() int { return int(n.Load()) }, 5*time.Second)

	for name, c := range map[string]struct {
		got int
		msg string
	}{
		"too many": {4, "n = 4, want 3"},
		"too few":  {2, "n = 2, want 3"},
	} {
		r := record(t, func(tb testing.TB) { WaitCount(tb, "n", 3, func() int { return c.got }, 20*time.Millisecond) })
		if !r.fatal || len(r.errors) != 1 || r.errors[0] != c.msg {
			t.Errorf("%s: fatal %v, errors %q; want %q", name, r.fatal, r.errors, c.msg)
		}
	}
}

func TestWaitWatcher(t *testing.T) {
	c := fakeclock.New(time.Date(2026, 9, 9, 12, 26, 25, 0, time.UTC))
	r := record(t, func(tb testing.TB) { WaitWatcher(tb, c, 20*time.Millisecond) })
	if !r.fatal || len(r.errors) != 1 || !strings.Contains(r.errors[0], "at 12:26:25 0 wait on the fake clock after 20ms, want 1") {
		t.Errorf("no waiter: fatal %v, errors %q", r.fatal, r.errors)
	}
	go c.After(time.Minute)
	WaitWatcher(t, c, 5*time.Second)

	// One waiter is not two.
	r = record(t, func(tb testing.TB) { WaitWaiters(tb, c, 2, 20*time.Millisecond) })
	if !r.fatal || len(r.errors) != 1 || !strings.Contains(r.errors[0], "at 12:26:25 1 wait on the fake clock after 20ms, want 2") {
		t.Errorf("one waiter of two: fatal %v, errors %q", r.fatal, r.errors)
	}
	go c.After(time.Minute)
	WaitWaiters(t, c, 2, 5*time.Second)
}
