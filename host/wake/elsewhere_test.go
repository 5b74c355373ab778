package wake_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/wakeonchat/wakeonchat/host/wake"
	"github.com/wakeonchat/wakeonchat/machines"
)

// TestElsewhere: two coordinators on one store are two hosts sharing it. A
// wake host A logged counts in host B's estimate once B is told of the
// change (Elsewhere), which hands B's callback the record as stored now;
// B's next wake quotes the estimate. After Close, Elsewhere is ErrClosed.
func TestElsewhere(t *testing.T) {
	a := newEnv(t, wake.Config{WatchPoll: time.Hour})
	b := newEnv(t, wake.Config{WatchPoll: time.Hour, Records: a.recs, Clock: a.clk})
	expected := machines.Estimate{Wake: 9 * time.Minute}
	if diff := cmp.Diff(expected, b.c.Estimate("qwen")); diff != "" {
		t.Fatalf("B's estimate before any wake (-want +got):\n%s", diff)
	}

	wakeFor(t, a, 4*time.Minute)
	a.accepted(t, 1)
	// B holds the estimate it read until it is told.
	if diff := cmp.Diff(expected, b.c.Estimate("qwen")); diff != "" {
		t.Errorf("B's estimate before it was told of A's wake (-want +got):\n%s", diff)
	}
	var seen []machines.Record
	if err := b.c.Elsewhere("qwen", func(r machines.Record) { seen = append(seen, r) }); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]machines.Record{a.record(t)}, seen); diff != "" {
		t.Errorf("the records Elsewhere handed on (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(machines.Estimate{Wake: 4 * time.Minute, Wakes: 1}, b.c.Estimate("qwen")); diff != "" {
		t.Errorf("B's estimate after Elsewhere (-want +got):\n%s", diff)
	}

	// The next wake, decided on B, quotes A's measured wake.
	a.clk.Set(t0.Add(time.Hour))
	b.c.Observe(context.Background(), "qwen", exited())
	want := "The GPU woke and was ready at 12:04 UTC, then stopped — it shuts down after 15 idle minutes. Waking it again — about 4 minutes."
	if d := b.notReady(t); d.Action != machines.ActionWake || d.Text != want {
		t.Errorf("B's wake: %s %q, want a wake quoting %q", d.Action, d.Text, want)
	}
	b.accepted(t, 1)

	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	defer cancel()
	if err := b.c.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if err := b.c.Elsewhere("qwen", func(machines.Record) { t.Error("Elsewhere after Close called back") }); !errors.Is(err, wake.ErrClosed) {
		t.Errorf("Elsewhere after Close: %v, want ErrClosed", err)
	}
}
