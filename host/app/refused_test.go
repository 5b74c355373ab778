package app_test

import (
	"strings"
	"testing"
	"time"

	"github.com/wakeonchat/wakeonchat/host/internal/e2e"
	"github.com/wakeonchat/wakeonchat/host/internal/fakeclock"
)

// TestRefusedStart has the conductor refuse the start with 401 (an enforced
// operator-token gate, rig-conductor#2369, and no RIG_WAKE_TOKEN): the user
// still gets the waking reply, the operator an error line naming
// RIG_WAKE_TOKEN, and the next ask says the wake was refused and wakes again.
func TestRefusedStart(t *testing.T) {
	t.Parallel()
	clk := fakeclock.New(t0)
	h := startHost(t, hostOptions{simulate: true, clock: clk})
	s := h.sim(t)
	s.ForceStartStatus("qwen", 401)
	const session = "refused"

	if got := h.ask(t, session, "hello"); got != e2e.ReplyWaking {
		t.Fatalf("first ask: reply %q, want %q", got, e2e.ReplyWaking)
	}
	h.waitState(t, "refused")
	if n := s.StartRequests("qwen"); n != 1 {
		t.Fatalf("start requests after the first ask: %d, want 1", n)
	}
	p, raw := h.pod(t)
	if p.State != "refused" || p.Outcome == nil || *p.Outcome != "refused" || p.Ready {
		t.Errorf("GET /api/pods/qwen after the refusal: %s\nwant state and outcome refused, not ready", raw)
	}

	// The operator sets the token; a minute later the user asks again. The
	// refusal is on record, so the reply names it and a new start goes out,
	// whatever the wake window says.
	s.ForceStartStatus("qwen", 0)
	clk.Advance(time.Minute)
	if got, want := h.ask(t, session, "hello again"), e2e.ReplyRefused(401); got != want {
		t.Errorf("ask after the refusal: reply %q, want %q", got, want)
	}
	e2e.WaitCount(t, `StartRequests("qwen")`, 2, func() int { return s.StartRequests("qwen") }, waitFor)
	e2e.WaitWatcher(t, clk, waitFor) // the second start returned; its watch runs
	p, raw = h.pod(t)
	if p.State != "waking" || p.Outcome != nil || p.WakeRequestedAt == nil || !p.WakeRequestedAt.Equal(t0.Add(time.Minute)) {
		t.Errorf("GET /api/pods/qwen after the second wake: %s\nwant state waking, no outcome, wakeRequestedAt %s", raw, t0.Add(time.Minute).Format(time.RFC3339))
	}

	// The refusal is logged after it is stored: the log is whole once the
	// host stopped. The refused start logged no "wake requested" line; the
	// second, in flight, did.
	h.stop(t)
	line := h.logged(t, "wake refused for pod qwen: status=401")
	if line.Level != "ERROR" || !strings.Contains(line.Msg, "RIG_WAKE_TOKEN") {
		t.Errorf("refused line: %s %q, want ERROR naming RIG_WAKE_TOKEN", line.Level, line.Msg)
	}
	if got := h.log.Matching(t, "wake requested for pod"); len(got) != 1 || got[0].Msg != lineInFlight {
		t.Errorf("\"wake requested\" lines %v, want one, the second wake's %q", got, lineInFlight)
	}
}
