package clock_test

import (
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/wakeonchat/wakeonchat/host/clock"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

var t0 = time.Date(2026, 9, 9, 12, 0, 0, 0, time.UTC)

// fired reports what ch holds without waiting: its time, or false.
func fired(ch <-chan time.Time) (time.Time, bool) {
	select {
	case v := <-ch:
		return v, true
	default:
		return time.Time{}, false
	}
}

func TestRealClock(t *testing.T) {
	c := clock.Real()
	before := time.Now()
	now := c.Now()
	if now.Before(before) || now.Sub(before) > time.Second {
		t.Fatalf("Real().Now() = %v, want about %v", now, before)
	}
	select {
	case <-c.After(time.Millisecond):
	case <-time.After(5 * time.Second):
		t.Fatal("Real().After(1ms) did not fire within 5 s")
	}
}
