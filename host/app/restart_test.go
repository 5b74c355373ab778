package app_test

import (
	"testing"
	"time"

	"github.com/wakeonchat/wakeonchat/host/internal/e2e"
	"github.com/wakeonchat/wakeonchat/host/internal/fakeclock"
	"github.com/wakeonchat/wakeonchat/host/sim"
)

// startSim runs a simulator of the pod qwen on clk, outside any host, so
// that several hosts can share it. It is closed at cleanup, after the hosts
// started later (cleanups run last-in first-out).
func startSim(t *testing.T, clk *fakeclock.Clock) *sim.Sim {
	t.Helper()
	s := sim.New(sim.Config{Pods: []string{"qwen"}, Clock: clk})
	if err := s.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Errorf("sim.Close: %v", err)
		}
	})
	return s
}

// TestRestartMidWake stops the host while a wake is in flight and starts a
// new one on the same data dir: the new host counts the elapsed minutes from
// the first host's wake, sends no second start, resumes the wake's watch and
// records it ready.
func TestRestartMidWake(t *testing.T) {
	t.Parallel()
	clk := fakeclock.New(t0)
	s := startSim(t, clk)
	o := hostOptions{
		conductorURL: s.URL(),
		dataDir:      t.TempDir(),
		apiKeyEnv:    "WAKE_E2E_QWEN_KEY",
		env:          map[string]string{"WAKE_E2E_QWEN_KEY": "e2e-key"},
		clock:        clk,
	}
	const session = "restart"

	a := startHost(t, o)
	if got := a.ask(t, session, "hello"); got != e2e.ReplyWaking {
		t.Fatalf("host A: reply %q, want %q", got, e2e.ReplyWaking)
	}
	// The start returned in flight and A's watch waits on the clock.
	e2e.WaitWatcher(t, clk, waitFor)
	if n := s.StartRequests("qwen"); n != 1 {
		t.Fatalf("start requests from host A: %d, want 1", n)
	}
	if err := a.Stop(); err != nil {
		t.Fatalf("host A: Shutdown: %v", err)
	}

	clk.Advance(2 * time.Minute)
	b := startHost(t, o)
	// B's resumed watch logs that it resumed, reads the pod, then waits on
	// the clock.
	e2e.WaitWatcher(t, clk, waitFor)
	resumed := b.logged(t, "wake watch resumed for pod qwen")
	if want := "wake watch resumed for pod qwen: wake requested at 12:26 UTC"; resumed.Msg != want {
		t.Errorf("host B resume line: %q, want %q", resumed.Msg, want)
	}
	if got, want := b.ask(t, session, "are you there?"), e2e.ReplyStillWaking(2); got != want {
		t.Errorf("host B at +2m: reply %q, want %q", got, want)
	}
	if n := s.StartRequests("qwen"); n != 1 {
		t.Errorf("start requests after host B's ask: %d, want 1", n)
	}
	if n := len(b.log.Matching(t, "wake requested for pod")); n != 0 {
		t.Errorf("host B logged %d \"wake requested\" lines, want 0", n)
	}

	// B's watch keeps A's wake's clock: it reads every 60 s until readySince.
	b.stepUntilState(t, "ready", time.Minute)
	p, raw := b.pod(t)
	if !p.Ready || p.State != "ready" || p.WakeRequestedAt == nil || !p.WakeRequestedAt.Equal(t0) {
		t.Errorf("host B: GET /api/pods/qwen: %s\nwant ready, state ready, wakeRequestedAt %s", raw, t0.Format(time.RFC3339))
	}
	if got, want := b.ask(t, session, "now?"), "echo: now?"; got != want {
		t.Errorf("host B once ready: reply %q, want %q", got, want)
	}
	if n := s.StartRequests("qwen"); n != 1 {
		t.Errorf("start requests over both hosts: %d, want 1", n)
	}
	// The ready line is logged after the change it reports: the log is
	// whole once the host stopped.
	b.stop(t)
	if ready, want := b.logged(t, lineReady), "wake ready for pod qwen: ready since 12:35 UTC"; ready.Msg != want {
		t.Errorf("host B ready line: %q, want %q", ready.Msg, want)
	}
}
