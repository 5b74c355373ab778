package clock

import (
	"testing"
	"time"
)

func TestScaled(t *testing.T) {
	if _, ok := Scaled(1).(*scaled); ok {
		t.Error("Scaled(1) should be the wall clock")
	}
	c := Scaled(1000)
	start := c.Now()
	// 10 s of scaled time is 10 ms of wall time; allow generous slack for a
	// loaded machine, but it must be far below 10 s of wall time.
	wall := time.Now()
	select {
	case got := <-c.After(10 * time.Second):
		if got.Sub(start) < 10*time.Second {
			t.Errorf("After fired at +%v of scaled time, want >= 10s", got.Sub(start))
		}
	case <-time.After(5 * time.Second):
		t.Fatal("After(10s) at scale 1000 did not fire within 5 s of wall time")
	}
	if time.Since(wall) > 5*time.Second {
		t.Error("scaled After waited like the wall clock")
	}
}
