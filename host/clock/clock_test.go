package clock_test

import (
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/wakeonchat/wakeonchat/host/clock"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

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
