package app_test

import (
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/wakeonchat/wakeonchat/host/internal/e2e"
	"github.com/wakeonchat/wakeonchat/host/internal/fakeclock"
	"github.com/wakeonchat/wakeonchat/host/sim"
)

// TestMeasuredEstimate, end to end: a pod whose wakes take 4 minutes, not
// the configured 9. After one such wake the next wake's reply, GET
// /api/pods/qwen and the pod event stream all quote the measured figure;
// and a restarted host on the same store still does.
func TestMeasuredEstimate(t *testing.T) {
	t.Parallel()
	clk := fakeclock.New(t0)
	s := sim.New(sim.Config{Pods: []string{"qwen"}, Clock: clk, BootDelay: 3 * time.Minute, LoadDelay: time.Minute, IdleStop: 5 * time.Minute})
	simURL := serveSim(t, s, s.Handler())
	opts := hostOptions{conductorURL: simURL, apiKeyEnv: keyEnv, env: map[string]string{keyEnv: "e2e-key"}, clock: clk,
		dataDir: t.TempDir()}
	h := startHost(t, opts)

	if got := h.ask(t, "s1", "hello"); got != e2e.ReplyWaking {
		t.Fatalf("first ask: %q, want the design's waking reply", got)
	}
	stepTo(t, clk, t0.Add(4*time.Minute), time.Minute)
	h.waitState(t, "ready")

	// The pod idles out 5 minutes after it was ready; half an hour on the
	// next ask finds it down and wakes it again.
	clk.Set(t0.Add(30 * time.Minute))
	want := "The GPU woke and was ready at 12:30 UTC, then stopped — it shuts down after 15 idle minutes. Waking it again — about 4 minutes."
	if got := h.ask(t, "s1", "again"); got != want {
		t.Errorf("second wake's reply: %q, want %q", got, want)
	}
	// The second start returned and its watch waits on the clock (the
	// first wake's watch ended when it was ready).
	e2e.WaitWatcher(t, clk, waitFor)

	type estimate struct {
		State           string     `json:"state"`
		EstimateSeconds int64      `json:"estimateSeconds"`
		EstimateWakes   int        `json:"estimateWakes"`
		EtaAt           *time.Time `json:"etaAt"`
		EtaSeconds      *int64     `json:"etaSeconds"`
	}
	second := t0.Add(30 * time.Minute)
	wantEst := estimate{State: "waking", EstimateSeconds: 240, EstimateWakes: 1, EtaAt: ptr(second.Add(4 * time.Minute)), EtaSeconds: ptr[int64](240)}
	readEstimate := func(h *testHost) estimate {
		t.Helper()
		_, raw := h.pod(t)
		var got estimate
		if err := json.Unmarshal([]byte(raw), &got); err != nil {
			t.Fatal(err)
		}
		return got
	}
	if diff := cmp.Diff(wantEst, readEstimate(h)); diff != "" {
		t.Errorf("GET /api/pods/qwen (-want +got):\n%s", diff)
	}
	stream := h.openEvents(t, "/api/pods/qwen/events")
	if got := stream.nextPod(t); got.EtaSeconds == nil || *got.EtaSeconds != 240 {
		t.Errorf("event stream's first event %+v, want etaSeconds 240", got)
	}
	stream.close()

	// A restart on the same store: the wake log is the store's.
	if err := h.Stop(); err != nil {
		t.Fatal(err)
	}
	h2 := startHost(t, opts)
	if diff := cmp.Diff(wantEst, readEstimate(h2)); diff != "" {
		t.Errorf("GET /api/pods/qwen after a restart (-want +got):\n%s", diff)
	}
	if status, _ := h2.do(t, http.MethodGet, "/readyz", nil); status != http.StatusOK {
		t.Errorf("/readyz %d after the restart", status)
	}
}
