package app_test

import (
	"strings"
	"testing"
	"time"

	"github.com/wakeonchat/wakeonchat/host/clock"
	"github.com/wakeonchat/wakeonchat/host/internal/e2e"
)

// TestLargeTurnsKeepTheSessionUsable: three turns of 700 KB each, answered
// by the model's 700 KB echo, then "hi" on the same session. Sent whole,
// the history would outgrow the plugin boundary's limit on a request (4 MiB
// by gRPC's default; the simulated model takes 4 MiB too) and fail every
// later turn of the session; [agent] history_bytes keeps what is sent
// small, so every turn answers.
func TestLargeTurnsKeepTheSessionUsable(t *testing.T) {
	clk := clock.NewFake(t0)
	h := startHost(t, hostOptions{simulate: true, clock: clk})
	const session = "large"

	if got := h.ask(t, session, "hello"); got != e2e.ReplyWaking {
		t.Fatalf("first ask: reply %q, want %q", got, e2e.ReplyWaking)
	}
	h.log.WaitLine(t, lineInFlight, 1, waitFor)
	stepTo(t, clk, t0.Add(9*time.Minute), time.Minute)
	h.log.WaitLine(t, lineReady, 1, waitFor)

	for i, c := range []string{"a", "b", "c"} {
		large := strings.Repeat(c, 700<<10)
		if got := h.ask(t, session, large); got != "echo: "+large {
			t.Fatalf("large turn %d: reply of %d bytes starting %.20q, want the echo of %d bytes", i+1, len(got), got, len(large))
		}
	}
	if got, want := h.ask(t, session, "hi"), "echo: hi"; got != want {
		t.Errorf("after three large turns: reply %q, want %q", got, want)
	}
	if got, want := h.ask(t, session, "still there?"), "echo: still there?"; got != want {
		t.Errorf("the turn after that: reply %q, want %q", got, want)
	}
}
