package sim_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/wakeonchat/wakeonchat/host/sim"
)

// TestTimeline replays the 2026-09-09 wake with a fake clock and the default
// delays, then an idle stop and a second wake kept up by a completion.
func TestTimeline(t *testing.T) {
	clk := sim.NewManualClock(t0)
	s := startSim(t, sim.Config{Clock: clk, NoStartHold: true})
	at := func(d time.Duration) { clk.Set(t0.Add(d)) }
	start := func() response { return do(t, http.MethodPost, s.URL()+"/api/pods/qwen/start", "{}") }
	proxy1 := s.URL() + "/proxy/pod-1"
	proxy2 := s.URL() + "/proxy/pod-2"

	// 12:26:25 — asleep: EXITED, no pod ever.
	wantPod(t, "asleep", s, sim.PodView{Name: "qwen", Status: "EXITED", Lookup: "FOUND"})

	// The wake. Without the hold, start answers 202 at once.
	if r := start(); r.code != http.StatusAccepted {
		t.Fatalf("start: status = %d, want 202 (body %q)", r.code, r.body)
	}

	// The replacement pod does not exist for the first 15 s.
	at(15*time.Second - time.Millisecond)
	wantPod(t, "creating", s, sim.PodView{Name: "qwen", Status: "EXITED", Lookup: "FOUND"})

	// 12:26:40 — the conductor created the replacement pod.
	at(15 * time.Second)
	wantPod(t, "created", s, sim.PodView{Name: "qwen", Status: "CREATED", PodID: "pod-1", Lookup: "FOUND"})
	at(390*time.Second - time.Millisecond)
	wantPod(t, "still created", s, sim.PodView{Name: "qwen", Status: "CREATED", PodID: "pod-1", Lookup: "FOUND"})

	// +6m30s — RUNNING with a proxy URL, but vLLM is still loading: the proxy
	// answers its 502 HTML page, and keeps doing so until +9m.
	running := sim.PodView{Name: "qwen", Status: "RUNNING", IsRunning: true, ProxyURL: proxy1, PodID: "pod-1", Lookup: "FOUND"}
	at(390 * time.Second)
	wantPod(t, "running, loading", s, running)
	wantLoading(t, "completion while loading", complete(t, proxy1, "hi"))
	at(9*time.Minute - time.Millisecond)
	wantPod(t, "loading until 9m", s, running)
	wantLoading(t, "completion just before ready", complete(t, proxy1, "hi"))

	// +9m — the model answers, and GET says since when.
	ready := running
	ready.ReadySince = "2026-09-09T12:35:25Z"
	at(9 * time.Minute)
	wantPod(t, "ready", s, ready)
	wantReply(t, "completion when ready", complete(t, proxy1, "hi"), "echo: hi")

	// No completion for 15 minutes after the last one (at +9m): the pod stops.
	at(24*time.Minute - time.Millisecond)
	wantPod(t, "ready until the idle stop", s, ready)
	at(24 * time.Minute)
	wantPod(t, "idle stop", s, sim.PodView{
		Name: "qwen", Status: "EXITED", PodID: "pod-1", ReadySince: "2026-09-09T12:35:25Z", Lookup: "FOUND",
	})
	// The resolver still holds the pre-stop proxy URL: it answers 404.
	wantGone(t, "old proxy URL after the idle stop", complete(t, proxy1, "hi"))

	// A second wake at +24m: pod-2. While it is being created GET shows the
	// last pod without its readySince.
	if r := start(); r.code != http.StatusAccepted {
		t.Fatalf("second start: status = %d, want 202 (body %q)", r.code, r.body)
	}
	wantPod(t, "second wake creating", s, sim.PodView{Name: "qwen", Status: "EXITED", PodID: "pod-1", Lookup: "FOUND"})

	// Ready at +33m; a completion at +44m (20m into the wake) resets the idle
	// stop, so at +54m (30m into the wake) it is still up.
	ready2 := sim.PodView{
		Name: "qwen", Status: "RUNNING", IsRunning: true, ProxyURL: proxy2, PodID: "pod-2",
		ReadySince: "2026-09-09T12:59:25Z", Lookup: "FOUND",
	}
	at(33 * time.Minute)
	wantPod(t, "second wake ready", s, ready2)
	wantGone(t, "first pod's proxy URL during the second wake", complete(t, proxy1, "hi"))
	at(44 * time.Minute)
	wantReply(t, "completion 20m into the wake", complete(t, proxy2, "still there?"), "echo: still there?")
	at(54 * time.Minute)
	wantPod(t, "30m into the wake, kept up by the completion", s, ready2)
	at(59*time.Minute - time.Millisecond)
	wantPod(t, "one instant before the idle stop", s, ready2)
	at(59 * time.Minute)
	wantPod(t, "second idle stop", s, sim.PodView{
		Name: "qwen", Status: "EXITED", PodID: "pod-2", ReadySince: "2026-09-09T12:59:25Z", Lookup: "FOUND",
	})

	if got := s.StartRequests("qwen"); got != 2 {
		t.Errorf("StartRequests = %d, want 2", got)
	}
}

// TestStartJoinsWakeInFlight: a start while waking or running creates no new
// pod, and every start is counted.
func TestStartJoinsWakeInFlight(t *testing.T) {
	clk := sim.NewManualClock(t0)
	s := startSim(t, sim.Config{Clock: clk, NoStartHold: true})
	start := func() response { return do(t, http.MethodPost, s.URL()+"/api/pods/qwen/start", "{}") }

	steps := []struct {
		at       time.Duration
		wantCode int
		wantBody string
	}{
		{at: 0, wantCode: http.StatusAccepted, wantBody: `{"status":"STARTING"}`},                     // wakes
		{at: 5 * time.Second, wantCode: http.StatusAccepted, wantBody: `{"status":"STARTING"}`},       // creating: joins
		{at: time.Minute, wantCode: http.StatusAccepted, wantBody: `{"status":"STARTING"}`},           // created: joins
		{at: 7 * time.Minute, wantCode: http.StatusOK, wantBody: `{"status":"RUNNING"}`},              // loading: already RUNNING
		{at: 10 * time.Minute, wantCode: http.StatusOK, wantBody: `{"status":"RUNNING"}`},             // ready
		{at: 24*time.Minute - time.Second, wantCode: http.StatusOK, wantBody: `{"status":"RUNNING"}`}, // just before the idle stop
	}
	for i, st := range steps {
		clk.Set(t0.Add(st.at))
		r := start()
		if r.code != st.wantCode || strings.TrimSpace(r.body) != st.wantBody {
			t.Errorf("start %d at +%s: got %d %q, want %d %q", i+1, st.at, r.code, r.body, st.wantCode, st.wantBody)
		}
		if got := s.StartRequests("qwen"); got != i+1 {
			t.Errorf("after start %d: StartRequests = %d, want %d", i+1, got, i+1)
		}
	}
	// The starts at 10m and 24m-1s are not completions: the pod still stops
	// 15 minutes after it became ready, and it was pod-1 all along.
	clk.Set(t0.Add(24 * time.Minute))
	wantPod(t, "after the joined starts", s, sim.PodView{
		Name: "qwen", Status: "EXITED", PodID: "pod-1", ReadySince: "2026-09-09T12:35:25Z", Lookup: "FOUND",
	})
}

// TestHeldStartRealClock: with the hold (the default) and a fast real clock,
// start answers 200 once the pod is RUNNING.
func TestHeldStartRealClock(t *testing.T) {
	// Scale 5000: RUNNING 78 ms after the start; IdleStop 24h keeps it up.
	s := startSim(t, sim.Config{Scale: 5000, IdleStop: 24 * time.Hour})
	begin := time.Now()
	r := do(t, http.MethodPost, s.URL()+"/api/pods/qwen/start", "{}")
	elapsed := time.Since(begin)
	if r.code != http.StatusOK || strings.TrimSpace(r.body) != `{"status":"RUNNING"}` {
		t.Fatalf("held start: got %d %q, want 200 {\"status\":\"RUNNING\"}", r.code, r.body)
	}
	if elapsed < 78*time.Millisecond {
		t.Errorf("held start answered after %s, before the pod could be RUNNING (78ms)", elapsed)
	}
	if got := s.Snapshot("qwen"); got.Status != "RUNNING" || !got.IsRunning {
		t.Errorf("after the held start: Snapshot = %+v, want RUNNING", got)
	}
}

// TestHeldStartFakeClock: a held start waits for the test to advance the
// clock past BootDelay, and not before.
func TestHeldStartFakeClock(t *testing.T) {
	clk := sim.NewManualClock(t0)
	s := startSim(t, sim.Config{Clock: clk})
	done := startAsync(s.URL() + "/api/pods/qwen/start")
	waitFor(t, "the start request", func() bool { return s.StartRequests("qwen") == 1 })

	clk.Set(t0.Add(390*time.Second - time.Millisecond))
	select {
	case r := <-done:
		t.Fatalf("start answered %d %q before the pod was RUNNING", r.code, r.body)
	case <-time.After(50 * time.Millisecond):
	}

	clk.Set(t0.Add(390 * time.Second))
	select {
	case r := <-done:
		if r.code != http.StatusOK {
			t.Errorf("held start: status = %d (%s), want 200", r.code, r.body)
		}
	case <-time.After(time.Second):
		t.Fatal("held start did not answer within 1s of the pod being RUNNING")
	}
}

// TestHeldStartCancelled: a held start whose request ends returns promptly.
func TestHeldStartCancelled(t *testing.T) {
	s := sim.New(sim.Config{Clock: sim.NewManualClock(t0)}) // the clock never moves
	t.Cleanup(func() { s.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	req := httptest.NewRequestWithContext(ctx, http.MethodPost, "/api/pods/qwen/start", strings.NewReader("{}"))
	rec := httptest.NewRecorder()

	done := make(chan struct{})
	go func() {
		s.Handler().ServeHTTP(rec, req)
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(time.Second):
		t.Fatal("held start did not return within 1s of its request being cancelled")
	}
	if rec.Code != http.StatusServiceUnavailable {
		t.Errorf("cancelled start: status = %d, want 503", rec.Code)
	}
	// The wake it began goes on, like the real conductor's.
	if got := s.Snapshot("qwen").Status; got != "EXITED" {
		t.Errorf("status right after the cancelled start = %q, want EXITED (creating)", got)
	}
	if got := s.StartRequests("qwen"); got != 1 {
		t.Errorf("StartRequests = %d, want 1", got)
	}
}

// TestCloseUnblocksHeldStart: Close answers held starts and returns promptly.
func TestCloseUnblocksHeldStart(t *testing.T) {
	s := sim.New(sim.Config{Clock: sim.NewManualClock(t0)}) // the clock never moves
	if err := s.Start(); err != nil {
		t.Fatalf("Start: %v", err)
	}
	done := startAsync(s.URL() + "/api/pods/qwen/start")
	waitFor(t, "the start request", func() bool { return s.StartRequests("qwen") == 1 })

	begin := time.Now()
	if err := s.Close(); err != nil {
		t.Errorf("Close: %v", err)
	}
	if d := time.Since(begin); d > time.Second {
		t.Errorf("Close took %s with a held start, want well under 1s", d)
	}
	select {
	case r := <-done:
		// 503 from the handler, or a closed connection if Shutdown won the race.
		if r.code != 0 && r.code != http.StatusServiceUnavailable {
			t.Errorf("held start after Close: got %d %q, want 503", r.code, r.body)
		}
	case <-time.After(time.Second):
		t.Fatal("held start still blocked 1s after Close")
	}
	if err := s.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
	if err := s.Start(); err == nil {
		t.Error("Start after Close succeeded, want an error")
	}
}

// TestScale: Scale 27 turns the 9-minute wake into 20 s of clock time and the
// 15-minute idle stop into 33.3 s.
func TestScale(t *testing.T) {
	clk := sim.NewManualClock(t0)
	s := startSim(t, sim.Config{Clock: clk, Scale: 27, NoStartHold: true})
	if r := do(t, http.MethodPost, s.URL()+"/api/pods/qwen/start", "{}"); r.code != http.StatusAccepted {
		t.Fatalf("start: status = %d, want 202", r.code)
	}
	proxy := s.URL() + "/proxy/pod-1"
	steps := []struct {
		at         time.Duration
		wantStatus string
		wantCode   int // completion; 0 = no proxy yet
	}{
		{at: 555 * time.Millisecond, wantStatus: "EXITED"},                                     // 15s/27 = 0.556s
		{at: 556 * time.Millisecond, wantStatus: "CREATED"},                                    //
		{at: 14444 * time.Millisecond, wantStatus: "CREATED"},                                  // 6m30s/27 = 14.444s
		{at: 14445 * time.Millisecond, wantStatus: "RUNNING", wantCode: http.StatusBadGateway}, //
		{at: 20*time.Second - time.Millisecond, wantStatus: "RUNNING", wantCode: http.StatusBadGateway},
		{at: 20 * time.Second, wantStatus: "RUNNING", wantCode: http.StatusOK},              // 9m/27: ready, and one completion
		{at: 53333 * time.Millisecond, wantStatus: "RUNNING", wantCode: http.StatusOK},      // 15m/27 = 33.333s after it
		{at: 86667 * time.Millisecond, wantStatus: "EXITED", wantCode: http.StatusNotFound}, // idle stop 33.333s after that
	}
	for _, st := range steps {
		clk.Set(t0.Add(st.at))
		if got := s.Snapshot("qwen").Status; got != st.wantStatus {
			t.Errorf("+%s: status = %q, want %q", st.at, got, st.wantStatus)
		}
		if st.wantCode == 0 {
			continue
		}
		if r := complete(t, proxy, "hi"); r.code != st.wantCode {
			t.Errorf("+%s: completion status = %d, want %d", st.at, r.code, st.wantCode)
		}
	}
	if got, want := s.Snapshot("qwen").ReadySince, "2026-09-09T12:26:45Z"; got != want {
		t.Errorf("readySince = %q, want %q (20 s after the start)", got, want)
	}
}

// TestWakesAndLookups: Wakes lists each wake with when it started, when its
// model could first answer, when it stopped (by itself here) and what it
// answered, and when last; Lookups counts the conductor reads.
func TestWakesAndLookups(t *testing.T) {
	clk := sim.NewManualClock(t0)
	s := startSim(t, sim.Config{Clock: clk, NoStartHold: true})
	if got := s.Wakes("qwen"); len(got) != 0 {
		t.Fatalf("Wakes before any start = %v, want none", got)
	}
	do(t, http.MethodPost, s.URL()+"/api/pods/qwen/start", "{}")
	clk.Set(t0.Add(10 * time.Minute)) // ready since 9m
	v := s.Snapshot("qwen")
	do(t, http.MethodPost, v.ProxyURL+"/v1/chat/completions", `{"messages":[{"role":"user","content":"hi"}]}`)
	do(t, http.MethodPost, v.ProxyURL+"/v1/chat/completions", `{"messages":[{"role":"user","content":"hi"}]}`)
	clk.Set(t0.Add(40 * time.Minute)) // idle since 10m: stopped at 25m
	do(t, http.MethodGet, s.URL()+"/api/pods/qwen", "")
	do(t, http.MethodPost, s.URL()+"/api/pods/qwen/start", "{}")
	do(t, http.MethodGet, s.URL()+"/api/pods/qwen", "")

	want := []sim.WakeReport{
		{PodID: "pod-1", StartedAt: t0, ReadyAt: t0.Add(9 * time.Minute), EndedAt: t0.Add(25 * time.Minute), Answered: 2,
			LastAnswerAt: t0.Add(10 * time.Minute), FirstAnswerAt: t0.Add(10 * time.Minute)},
		{PodID: "pod-2", StartedAt: t0.Add(40 * time.Minute), ReadyAt: t0.Add(49 * time.Minute)},
	}
	got := s.Wakes("qwen")
	if len(got) == 2 && got[0].FirstAnswerWall.IsZero() {
		t.Error("pod-1 answered, but its first answer has no wall-clock time")
	}
	if diff := cmp.Diff(want, got, cmpopts.IgnoreFields(sim.WakeReport{}, "FirstAnswerWall")); diff != "" {
		t.Errorf("Wakes (-want +got):\n%s", diff)
	}
	if got := s.Lookups("qwen"); got != 2 {
		t.Errorf("Lookups = %d, want 2 (Snapshot is not a lookup)", got)
	}
	if s.Wakes("nope") != nil || s.Lookups("nope") != 0 {
		t.Error("an unknown pod has wakes or lookups")
	}
}
