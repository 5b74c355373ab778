package app_test

import (
	"testing"
	"time"

	"github.com/wakeonchat/wakeonchat/host/internal/e2e"
	"github.com/wakeonchat/wakeonchat/host/internal/fakeclock"
)

// TestTimeline20260909 replays the first live wake (the design's Sequence
// and its 2026-09-09 timeline) through the real host, the real plugins and
// the simulator, on a fake clock: asleep → waking → model loading → ready,
// with exactly one start request, and the wake's watch recording ready.
func TestTimeline20260909(t *testing.T) {
	t.Parallel()
	clk := fakeclock.New(t0)
	h := startHost(t, hostOptions{simulate: true, clock: clk})
	s := h.sim(t)
	const session = "timeline"

	// 12:26:25, message 1: the pod is EXITED. The reply says it is waking,
	// and the wake is fired in the background.
	if got := h.ask(t, session, "message 1"); got != e2e.ReplyWaking {
		t.Fatalf("first ask: reply %q, want %q", got, e2e.ReplyWaking)
	}
	// The simulator holds the start until RUNNING, like the real conductor,
	// so the plugin's 200 ms cap fires: the wake is in flight (#684).
	// The start returned and the wake's watch waits on the clock; the line
	// was logged before the watch began.
	e2e.WaitWatcher(t, clk, waitFor)
	line := h.logged(t, "wake requested for pod qwen")
	if line.Msg != lineInFlight || line.Level != "INFO" {
		t.Errorf("wake line: %s %q, want INFO %q", line.Level, line.Msg, lineInFlight)
	}
	if n := s.StartRequests("qwen"); n != 1 {
		t.Fatalf("start requests after the first ask: %d, want 1", n)
	}

	// 12:29:25, three minutes on: the replacement pod exists but is not
	// running. Still waking, no second start.
	stepTo(t, clk, t0.Add(3*time.Minute), time.Minute)
	if got, want := h.ask(t, session, "message 2"), e2e.ReplyStillWaking(3); got != want {
		t.Errorf("ask at +3m: reply %q, want %q", got, want)
	}
	if n := s.StartRequests("qwen"); n != 1 {
		t.Errorf("start requests at +3m: %d, want 1", n)
	}

	// 12:33:05, the conductor says RUNNING (BootDelay 6m30s) but vLLM is
	// still loading: the proxy answers 502 HTML, the one re-resolve returns
	// the same endpoint and the retry gets 502 again (D7).
	stepTo(t, clk, t0.Add(6*time.Minute+40*time.Second), time.Minute)
	if view := s.Snapshot("qwen"); view.Status != "RUNNING" || view.ReadySince != "" {
		t.Fatalf("simulator at +6m40s: status %s readySince %q, want RUNNING and not ready", view.Status, view.ReadySince)
	}
	if got, want := h.ask(t, session, "message 3"), replyLoadingWaking(6); got != want {
		t.Errorf("ask at +6m40s: reply %q, want %q", got, want)
	}
	if n := s.StartRequests("qwen"); n != 1 {
		t.Errorf("start requests at +6m40s: %d, want 1", n)
	}

	// 12:35:35, past nine minutes: vLLM serves and the turn answers.
	stepTo(t, clk, t0.Add(9*time.Minute+10*time.Second), time.Minute)
	if got, want := h.ask(t, session, "message 4"), "echo: message 4"; got != want {
		t.Errorf("ask at +9m10s: reply %q, want %q", got, want)
	}

	// The watch polls every 60 s of fake time and records the wake ready.
	h.stepUntilState(t, "ready", time.Minute)
	p, raw := h.pod(t)
	if !p.Ready || p.State != "ready" || !p.IsRunning || p.Status != "RUNNING" || p.FromCache {
		t.Errorf("GET /api/pods/qwen after the wake: %s\nwant ready true, state ready, RUNNING, not from cache", raw)
	}
	if p.WakeRequestedAt == nil || !p.WakeRequestedAt.Equal(t0) {
		t.Errorf("GET /api/pods/qwen: wakeRequestedAt %v, want %v", p.WakeRequestedAt, t0)
	}
	if p.ReadySince == nil || *p.ReadySince != "2026-09-09T12:35:25Z" {
		t.Errorf("GET /api/pods/qwen: readySince %v, want 2026-09-09T12:35:25Z", p.ReadySince)
	}
	if p.Outcome == nil || *p.Outcome != "ready" {
		t.Errorf("GET /api/pods/qwen: outcome %v, want ready", p.Outcome)
	}
	if hasURL(raw) {
		t.Errorf("GET /api/pods/qwen carries a URL: %s", raw)
	}
	if n := s.StartRequests("qwen"); n != 1 {
		t.Errorf("start requests over the whole wake: %d, want 1", n)
	}
	// The ready line is logged after the change it reports: the log is
	// whole once the host stopped.
	h.stop(t)
	ready := h.logged(t, lineReady)
	if want := "wake ready for pod qwen: ready since 12:35 UTC"; ready.Msg != want || ready.Level != "INFO" {
		t.Errorf("ready line: %s %q, want INFO %q", ready.Level, ready.Msg, want)
	}
	if n := len(h.log.Matching(t, "wake requested for pod")); n != 1 {
		t.Errorf("%d \"wake requested\" lines, want 1", n)
	}
	h.log.CheckUniqueKeys(t)
}
