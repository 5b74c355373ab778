package app_test

import (
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/wakeonchat/wakeonchat/host/internal/e2e"
	"github.com/wakeonchat/wakeonchat/host/internal/fakeclock"
	"github.com/wakeonchat/wakeonchat/host/sim"
)

// outageSim serves a simulator whose conductor endpoints (/api/...) answer
// 500 while down is set; the model behind the proxy keeps serving.
type outageSim struct {
	sim  *sim.Sim
	down atomic.Bool
}

func (o *outageSim) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if o.down.Load() && strings.HasPrefix(r.URL.Path, "/api/") {
		http.Error(w, "conductor down", http.StatusInternalServerError)
		return
	}
	o.sim.Handler().ServeHTTP(w, r)
}

// TestConductorOutage: while the conductor cannot be read, the host serves
// what it knows but never calls a pod ready or loading on stale evidence
// (D8): GET /api/pods/qwen says fromCache and not ready, a turn on the held
// endpoint still answers, and a turn whose endpoint has gone stale gets the
// generic 502 and wakes nothing. Once the conductor is back, the next turn
// finds the pod stopped and wakes it.
func TestConductorOutage(t *testing.T) {
	t.Parallel()
	clk := fakeclock.New(t0)
	s := sim.New(sim.Config{Pods: []string{"qwen"}, Clock: clk})
	o := &outageSim{sim: s}
	simURL := serveSim(t, s, o)
	h := startHost(t, hostOptions{
		conductorURL: simURL,
		apiKeyEnv:    keyEnv,
		env:          map[string]string{keyEnv: "e2e-key"},
		clock:        clk,
	})
	const session = "outage"

	if got := h.ask(t, session, "hello"); got != e2e.ReplyWaking {
		t.Fatalf("first ask: reply %q, want %q", got, e2e.ReplyWaking)
	}
	stepTo(t, clk, t0.Add(9*time.Minute), time.Minute)
	h.waitState(t, "ready")
	if got, want := h.ask(t, session, "ready?"), "echo: ready?"; got != want {
		t.Fatalf("ask once ready: reply %q, want %q", got, want)
	}

	o.down.Store(true)
	p, raw := h.pod(t)
	if !p.FromCache || p.Ready {
		t.Errorf("GET /api/pods/qwen with the conductor down: %s\nwant fromCache true, ready false", raw)
	}
	if hasURL(raw) {
		t.Errorf("GET /api/pods/qwen carries a URL: %s", raw)
	}
	// The held endpoint needs no conductor.
	if got, want := h.ask(t, session, "still?"), "echo: still?"; got != want {
		t.Errorf("ask on the held endpoint with the conductor down: reply %q, want %q", got, want)
	}

	// The pod idles out; its proxy URL now answers 404 and the re-resolve
	// cannot reach the conductor: the raw failure, no wake, no loading reply.
	clk.Advance(16 * time.Minute)
	status, body := h.do(t, http.MethodPost, "/api/chat", chatRequest{Message: "and now?", SessionID: session})
	if status != http.StatusBadGateway || body != e2e.ProviderFailed {
		t.Errorf("ask on a stale endpoint with the conductor down: %d %s, want 502 %s", status, body, e2e.ProviderFailed)
	}
	h.logged(t, "turn failed") // logged before the 502 was written
	if n := s.StartRequests("qwen"); n != 1 {
		t.Errorf("start requests during the outage: %d, want 1", n)
	}

	o.down.Store(false)
	want := "The GPU woke and was ready at 12:35 UTC, then stopped — it shuts down after 15 idle minutes. Waking it again — about 9 minutes."
	if got := h.ask(t, session, "back?"); got != want {
		t.Errorf("ask once the conductor is back: reply %q, want %q", got, want)
	}
	e2e.WaitCount(t, `StartRequests("qwen")`, 2, func() int { return s.StartRequests("qwen") }, waitFor)
}
