package app_test

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/wakeonchat/wakeonchat/host/internal/e2e"
	"github.com/wakeonchat/wakeonchat/host/internal/fakeclock"
	"github.com/wakeonchat/wakeonchat/host/sim"
)

// noReadySince serves a simulator as a conductor from before readySince
// (#2056): its pod views never carry one. It counts the model's probes.
type noReadySince struct {
	sim *sim.Sim

	mu     sync.Mutex
	probes int
}

func (n *noReadySince) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method == http.MethodGet && strings.HasSuffix(r.URL.Path, "/v1/models") {
		n.mu.Lock()
		n.probes++
		n.mu.Unlock()
	}
	if r.Method != http.MethodGet || !strings.HasPrefix(r.URL.Path, "/api/pods/") {
		n.sim.Handler().ServeHTTP(w, r)
		return
	}
	rec := httptest.NewRecorder()
	n.sim.Handler().ServeHTTP(rec, r)
	var view map[string]any
	body := rec.Body.Bytes()
	if rec.Code == http.StatusOK && json.Unmarshal(body, &view) == nil {
		delete(view, "readySince")
		body, _ = json.Marshal(view)
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(rec.Code)
	w.Write(bytes.TrimSpace(body))
}

func (n *noReadySince) count() int {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.probes
}

// TestReadinessFromTheProbe: when the conductor never says readySince, the
// wake's watch learns readiness from the provider plugin's probe of the
// model (GET /v1/models), within a probe_interval of the model's first
// answer and long before any turn, and then stops probing.
func TestReadinessFromTheProbe(t *testing.T) {
	t.Parallel()
	clk := fakeclock.New(t0)
	s := sim.New(sim.Config{Pods: []string{"qwen"}, Clock: clk})
	cond := &noReadySince{sim: s}
	simURL := serveSim(t, s, cond)
	h := startHost(t, hostOptions{conductorURL: simURL, clock: clk})

	if got := h.ask(t, "probe", "hello"); got != e2e.ReplyWaking {
		t.Fatalf("first ask: reply %q, want %q", got, e2e.ReplyWaking)
	}
	stepTo(t, clk, t0.Add(6*time.Minute), time.Minute)
	if n := cond.count(); n != 0 {
		t.Errorf("%d probes before the pod runs, want none", n)
	}
	// The model answers from 9 minutes after the wake (12:35:25): the
	// probes, a second apart from 6 min 30 s, find it at once.
	stepTo(t, clk, t0.Add(9*time.Minute), time.Second)
	h.waitState(t, "ready")
	if n := cond.count(); n < 100 {
		t.Errorf("%d probes from 6 min 30 s to 9 min, want one a second", n)
	}

	p, raw := h.pod(t)
	if p.State != "ready" || !p.Ready || p.ReadySince != nil {
		t.Errorf("GET /api/pods/qwen after the probe's answer: %s; want ready, without a readySince", raw)
	}
	// The watch ends with the wake: nothing waits on the clock any more,
	// so nothing can probe when it moves on.
	e2e.WaitIdle(t, clk, waitFor)
	probes := cond.count()
	clk.Advance(time.Hour)
	if n := cond.count(); n != probes {
		t.Errorf("%d probes after readiness, want none", n-probes)
	}
	// The ready line is logged after the change it reports: the log is
	// whole once the host stopped.
	h.stop(t)
	if line, want := h.logged(t, lineReady), "wake ready for pod qwen: ready since 12:35 UTC"; line.Msg != want {
		t.Errorf("ready line %q, want %q", line.Msg, want)
	}
	h.logged(t, "wake watch for pod qwen: the pod is RUNNING; probing its model every 1s")
}
