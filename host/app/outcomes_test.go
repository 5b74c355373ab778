package app_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/wakeonchat/wakeonchat/host/internal/e2e"
	"github.com/wakeonchat/wakeonchat/host/internal/fakeclock"
)

// TestReadyThenIdleStop follows a wake past readiness into the pod's idle
// stop (D6, D12): the next turn goes to the held, pre-stop proxy URL first,
// gets its 404, re-resolves once, finds the pod EXITED and answers that the
// last wake was ready and then stopped, waking it again.
func TestReadyThenIdleStop(t *testing.T) {
	t.Parallel()
	clk := fakeclock.New(t0)
	h := startHost(t, hostOptions{simulate: true, clock: clk})
	s := h.sim(t)
	const session = "idle"

	if got := h.ask(t, session, "hello"); got != e2e.ReplyWaking {
		t.Fatalf("first ask: reply %q, want %q", got, e2e.ReplyWaking)
	}
	stepTo(t, clk, t0.Add(9*time.Minute), time.Minute)
	h.waitState(t, "ready")
	if got, want := h.ask(t, session, "ready?"), "echo: ready?"; got != want {
		t.Fatalf("ask once ready: reply %q, want %q", got, want)
	}

	// Fifteen idle minutes after that answer the pod stops itself.
	clk.Advance(16 * time.Minute)
	if view := s.Snapshot("qwen"); view.Status != "EXITED" {
		t.Fatalf("simulator 16 idle minutes on: status %s, want EXITED", view.Status)
	}
	want := "The GPU woke and was ready at 12:35 UTC, then stopped — it shuts down after 15 idle minutes. Waking it again — about 9 minutes."
	if got := h.ask(t, session, "still there?"); got != want {
		t.Errorf("ask after the idle stop: reply %q, want %q", got, want)
	}
	// The stale endpoint was tried first: the proxy turned a completion
	// away with 404 for the stopped pod.
	if n := s.CompletionsTurnedAway(http.StatusNotFound); n == 0 {
		t.Errorf("no completion answered 404 after the idle stop: the held proxy URL was not tried (D6)")
	}
	e2e.WaitCount(t, `StartRequests("qwen")`, 2, func() int { return s.StartRequests("qwen") }, waitFor)
	p, raw := h.pod(t)
	if p.State != "waking" || p.Outcome != nil || p.Ready ||
		p.WakeRequestedAt == nil || !p.WakeRequestedAt.Equal(t0.Add(25*time.Minute)) {
		t.Errorf("GET /api/pods/qwen after the second wake: %s\nwant state waking, no outcome, not ready, wakeRequestedAt %s",
			raw, t0.Add(25*time.Minute).Format(time.RFC3339))
	}
}

// TestNeverReady wakes a pod whose model never answers (a stuck vLLM): the
// replies go from loading to stuck at the 20-minute ceiling with an error
// line (D9), the watch records never-ready at 35 minutes with an error line
// (D12), and once the pod is down the next ask says the wake did not
// complete and wakes again.
func TestNeverReady(t *testing.T) {
	t.Parallel()
	clk := fakeclock.New(t0)
	h := startHost(t, hostOptions{simulate: true, clock: clk})
	s := h.sim(t)
	s.NeverReady("qwen", true)
	const session = "stuck"

	if got := h.ask(t, session, "hello"); got != e2e.ReplyWaking {
		t.Fatalf("first ask: reply %q, want %q", got, e2e.ReplyWaking)
	}

	stepTo(t, clk, t0.Add(10*time.Minute), time.Minute)
	if got, want := h.ask(t, session, "now?"), replyLoadingWaking(10); got != want {
		t.Errorf("ask at +10m: reply %q, want %q", got, want)
	}
	stepTo(t, clk, t0.Add(20*time.Minute), time.Minute)
	want := "The model server has been up for 20 minutes and still is not answering — it may be stuck. Someone needs to look at the pod."
	if got := h.ask(t, session, "now?"); got != want {
		t.Errorf("ask at +20m: reply %q, want %q", got, want)
	}
	// The turn's decision is logged before its reply is written.
	if l := h.logged(t, "provider not ready for pod qwen (status RUNNING, model loading) → wait — STUCK"); l.Level != "ERROR" {
		t.Errorf("stuck line at %s, want ERROR", l.Level)
	}

	h.stepUntilState(t, "never-ready", time.Minute)
	p, raw := h.pod(t)
	if p.State != "never-ready" || p.Outcome == nil || *p.Outcome != "never-ready" || p.Ready {
		t.Errorf("GET /api/pods/qwen after the watch: %s\nwant state and outcome never-ready, not ready", raw)
	}

	// Someone stops the stuck pod; the next ask names the failed wake and
	// wakes again, whatever the wake window says.
	stop, err := http.Post(s.URL()+"/api/pods/qwen/stop", "application/json", nil)
	if err != nil {
		t.Fatal(err)
	}
	stop.Body.Close()
	want = "The wake requested at 12:26 UTC did not complete — the GPU never became ready. Waking it again — about 9 minutes."
	if got := h.ask(t, session, "again?"); got != want {
		t.Errorf("ask after never-ready: reply %q, want %q", got, want)
	}
	e2e.WaitCount(t, `StartRequests("qwen")`, 2, func() int { return s.StartRequests("qwen") }, waitFor)

	// The watch logs never-ready after storing it: the log is whole once
	// the host stopped.
	h.stop(t)
	never := h.logged(t, "wake never-ready for pod qwen")
	if want := "wake never-ready for pod qwen: not ready 35 min after the request at 12:26 UTC"; never.Msg != want || never.Level != "ERROR" {
		t.Errorf("never-ready line: %s %q, want ERROR %q", never.Level, never.Msg, want)
	}
}
