package chat_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/wakeonchat/wakeonchat/host/wake"
	"github.com/wakeonchat/wakeonchat/plugins/pluginapi"
)

// getPod reads GET /api/pods/{name}, which must answer 200 JSON without any
// URL, and decodes it.
func getPod(t *testing.T, srv *api, name string) map[string]any {
	t.Helper()
	res := srv.on(t).do(http.MethodGet, "/api/pods/"+name, "", "")
	if res.Status != http.StatusOK {
		t.Fatalf("GET /api/pods/%s: %d %s, want 200", name, res.Status, res.Body)
	}
	if ct := res.Header.Get("Content-Type"); ct != "application/json" {
		t.Errorf("Content-Type %q, want application/json", ct)
	}
	if strings.Contains(res.Body, "http") || strings.Contains(res.Body, "runpod") {
		t.Errorf("the pod report holds a URL: %s", res.Body)
	}
	var m map[string]any
	if err := json.Unmarshal([]byte(res.Body), &m); err != nil {
		t.Fatalf("decoding %s: %v", res.Body, err)
	}
	return m
}

// report is a pod report with defaults for what the test does not set.
func report(fields map[string]any) map[string]any {
	m := map[string]any{
		"pod": "qwen", "status": "EXITED", "isRunning": false, "readySince": nil, "lookup": "FOUND",
		"fromCache": false, "state": "asleep", "wakeRequestedAt": nil, "outcome": nil, "ready": false,
		"estimateSeconds": float64(540), "estimateWakes": float64(0), "etaAt": nil, "etaSeconds": nil,
	}
	for k, v := range fields {
		m[k] = v
	}
	return m
}

// TestPodReport follows one pod through its states as GET /api/pods/qwen
// reports them: the conductor's view, the machine's state as that view left
// it, and "ready" only for a fresh view of a pod in state ready.
func TestPodReport(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	srv := h.api
	check := func(step string, want map[string]any) {
		t.Helper()
		if diff := cmp.Diff(want, getPod(t, srv, "qwen")); diff != "" {
			t.Errorf("%s (-want +got):\n%s", step, diff)
		}
	}
	check("asleep", report(nil))

	h.api.ask("s1", "hi")
	h.waitStart(t)
	h.gpu.set(creatingPod())
	wake := "2026-09-09T12:26:25Z"
	// A wake in progress is expected ready expected_wake (9 min) after it
	// was requested: no wake of this pod is measured yet.
	eta := "2026-09-09T12:35:25Z"
	check("waking", report(map[string]any{"status": "CREATED", "state": "waking", "wakeRequestedAt": wake,
		"etaAt": eta, "etaSeconds": float64(540)}))

	// The view's RUNNING reaches the machine before the record is read.
	h.advance(t, 6*time.Minute)
	h.gpu.set(loadingPod())
	loading := map[string]any{"status": "RUNNING", "isRunning": true, "state": "loading", "wakeRequestedAt": wake,
		"etaAt": eta, "etaSeconds": float64(180)}
	check("loading", report(loading))

	earlier := rfc3339(t0.Add(-61 * time.Second))
	h.gpu.set(readyPod(earlier))
	loading["readySince"] = earlier
	check("readySince of an earlier boot", report(loading))

	// The plugin drops a readySince it cannot parse.
	h.gpu.set(readyPod("yesterday"))
	loading["readySince"] = nil
	check("readySince not a time", report(loading))

	// The view, not the watch, records the wake ready.
	h.gpu.set(readyPod("2026-09-09T12:34:56Z"))
	ready := map[string]any{"status": "RUNNING", "isRunning": true, "readySince": "2026-09-09T12:34:56Z",
		"state": "ready", "wakeRequestedAt": wake, "outcome": "ready", "ready": true}
	check("ready", report(ready))
	if l := h.logs.find(t, "wake ready for pod qwen: ready since 12:34 UTC"); len(l) != 1 || l[0].Level != "INFO" {
		t.Errorf("ready lines %+v, want one at INFO; the log:\n%s", l, h.logs)
	}

	// D8: the conductor is down; the last view is served, and is not ready.
	h.gpu.setDown()
	ready["fromCache"], ready["ready"] = true, false
	check("conductor down", report(ready))

	h.gpu.set(asleepPod())
	check("stopped", report(map[string]any{"state": "stopped", "outcome": "ready", "wakeRequestedAt": wake}))

	if got := h.startsInTheEnd(t); got != 1 {
		t.Errorf("%d starts, want 1: reading a pod never wakes it", got)
	}
}

// The machine's states by what the conductor says of a pod it reads: a pod
// that does not run is in one of podDownStates, a RUNNING one in one of
// podUpStates. A wake that never became ready stays never-ready whether the
// pod is down or up with a model that never answered.
var (
	podDownStates = []string{"asleep", "waking", "stopped", "refused", "start-failed", "never-ready"}
	podUpStates   = []string{"loading", "stuck", "ready", "crashed", "never-ready"}
)

// podAgrees says how a pod report's state, status and ready disagree, or
// "". Only a fresh view (read now, lookup not UNREADABLE) is evidence: it
// puts the state on the conductor's side of RUNNING, and ready is state
// ready on a fresh view (machines.Reports).
func podAgrees(rep map[string]any) string {
	state, status := rep["state"].(string), rep["status"].(string)
	fresh := rep["lookup"] != "UNREADABLE" && rep["fromCache"] == false
	if want := state == "ready" && fresh; rep["ready"] != want {
		return fmt.Sprintf("ready %v with state %s on a view fresh=%v", rep["ready"], state, fresh)
	}
	switch {
	case !fresh:
	case status == "RUNNING" && !slices.Contains(podUpStates, state):
		return fmt.Sprintf("state %s while the conductor says RUNNING", state)
	case status != "RUNNING" && !slices.Contains(podDownStates, state):
		return fmt.Sprintf("state %s while the conductor says %q", state, status)
	}
	return ""
}

// The steps that bring a harness's pod to a state. Each leaves the clock,
// the conductor and the provider as the state's case needs them.

// wakeAsk is the first ask on the asleep pod: it wakes it, and the start is
// answered in flight (watched).
func wakeAsk(t *testing.T, h *harness) {
	t.Helper()
	if diff := cmp.Diff(chatReply{Reply: replyWaking, SessionID: "s1"}, h.api.on(t).ask("s1", "hi")); diff != "" {
		t.Fatalf("waking ask (-want +got):\n%s", diff)
	}
	h.waitStart(t)
	h.waitOutcome(t)
	h.logs.one(t, inFlightLine)
}

// readyByView wakes the pod; 9 minutes on, the conductor reports the
// readySince of this boot (12:34:56) and a view records it.
func readyByView(t *testing.T, h *harness) {
	t.Helper()
	wakeAsk(t, h)
	h.advance(t, 9*time.Minute)
	h.gpu.set(readyPod("2026-09-09T12:34:56Z"))
	if rep := getPod(t, h.api, "qwen"); rep["state"] != "ready" {
		t.Fatalf("priming: the pod is %v, not ready", rep["state"])
	}
}

// readyByAnswer wakes the pod; 9 minutes on it is RUNNING without a
// readySince and a turn is answered (ready since 12:35 UTC).
func readyByAnswer(t *testing.T, h *harness) {
	t.Helper()
	wakeAsk(t, h)
	h.advance(t, 9*time.Minute)
	h.gpu.set(loadingPod())
	if diff := cmp.Diff(chatReply{Reply: answerTo("hi again"), SessionID: "s1"}, h.api.on(t).ask("s1", "hi again")); diff != "" {
		t.Fatalf("answered ask (-want +got):\n%s", diff)
	}
}

// crashedPod is answered, then a turn's retry gets the proxy's 502 from the
// RUNNING pod: crashed.
func crashedPod(t *testing.T, h *harness) {
	t.Helper()
	readyByAnswer(t, h)
	h.provA.set(fail(pluginapi.CompletionError{Status: 502, Message: "502 Bad Gateway"}))
	if diff := cmp.Diff(chatReply{Reply: replyCrashed("12:35 UTC"), SessionID: "s1"}, h.api.on(t).ask("s1", "hello?")); diff != "" {
		t.Fatalf("ask on the crashed model (-want +got):\n%s", diff)
	}
}

// startOutcome wakes the pod with the start answered res and waits for its
// operator line.
func startOutcome(res pluginapi.StartResult, line string) func(t *testing.T, h *harness) {
	return func(t *testing.T, h *harness) {
		t.Helper()
		h.gpu.onStart(func(context.Context, string) (pluginapi.StartResult, error) { return res, nil })
		h.api.on(t).ask("s1", "hi")
		h.waitStart(t)
		h.waitOutcome(t)
		h.logs.one(t, line)
	}
}

// neverReadyPod wakes the pod, which stays CREATED past the 35-minute watch.
func neverReadyPod(t *testing.T, h *harness) {
	t.Helper()
	wakeAsk(t, h)
	h.gpu.set(creatingPod())
	h.armed(t, 1)
	h.clock.Advance(35 * time.Minute)
	h.waitWatchEnd(t)
	h.logs.logged(t, "wake never-ready", func(l logLine) bool { return strings.HasPrefix(l.Msg, "wake never-ready for pod qwen: ") })
}

// TestPodReportAgrees: in every state, GET /api/pods/qwen's state, status
// and ready agree (podAgrees), the report is what the state says, and no
// number of reads changes it or starts the pod.
func TestPodReportAgrees(t *testing.T) {
	t.Parallel()
	const wake = "2026-09-09T12:26:25Z"
	running := map[string]any{"status": "RUNNING", "isRunning": true, "wakeRequestedAt": wake}
	// A wake in progress, read when it was requested: expected_wake to go.
	const eta = "2026-09-09T12:35:25Z"
	inProgress := map[string]any{"etaAt": eta, "etaSeconds": float64(540)}
	with := func(base map[string]any, fields map[string]any) map[string]any {
		m := report(base)
		for k, v := range fields {
			m[k] = v
		}
		return m
	}
	notFound := pluginapi.Pod{Name: "qwen", Lookup: pluginapi.LookupNotFound}
	tests := []struct {
		name  string
		setup func(t *testing.T, h *harness)
		want  map[string]any
		// then runs after the reads; wantStarts counts every start in the end.
		then       func(t *testing.T, h *harness)
		wantStarts int
	}{
		{"asleep, EXITED", func(*testing.T, *harness) {}, report(nil), nil, 0},
		{"waking, CREATED", func(t *testing.T, h *harness) {
			wakeAsk(t, h)
			h.gpu.set(creatingPod())
		}, with(inProgress, map[string]any{"status": "CREATED", "state": "waking", "wakeRequestedAt": wake}), nil, 1},
		{"RUNNING, no readySince", func(t *testing.T, h *harness) {
			wakeAsk(t, h)
			h.gpu.set(loadingPod())
		}, with(with(running, inProgress), map[string]any{"state": "loading"}), nil, 1},
		{"RUNNING, readySince of this wake", func(t *testing.T, h *harness) {
			wakeAsk(t, h)
			h.advance(t, 9*time.Minute)
			h.gpu.set(readyPod("2026-09-09T12:34:56Z"))
		}, with(running, map[string]any{"readySince": "2026-09-09T12:34:56Z", "state": "ready", "outcome": "ready", "ready": true}), nil, 1},
		{"RUNNING, readySince ready_slack before the wake", func(t *testing.T, h *harness) {
			wakeAsk(t, h)
			h.gpu.set(readyPod(rfc3339(t0.Add(-60 * time.Second))))
		}, with(running, map[string]any{"readySince": "2026-09-09T12:25:25Z", "state": "ready", "outcome": "ready", "ready": true}), nil, 1},
		{"RUNNING, readySince of an earlier boot", func(t *testing.T, h *harness) {
			wakeAsk(t, h)
			h.gpu.set(readyPod(rfc3339(t0.Add(-61 * time.Second))))
		}, with(with(running, inProgress), map[string]any{"readySince": "2026-09-09T12:25:24Z", "state": "loading"}), nil, 1},
		{"RUNNING after an answered turn, no readySince", readyByAnswer,
			with(running, map[string]any{"state": "ready", "outcome": "ready", "ready": true}), nil, 1},
		{"ready, then EXITED", func(t *testing.T, h *harness) {
			readyByView(t, h)
			h.gpu.set(asleepPod())
		}, report(map[string]any{"state": "stopped", "outcome": "ready", "wakeRequestedAt": wake}),
			func(t *testing.T, h *harness) {
				// The view kept when the wake was ready: the next ask says so,
				// and wakes the pod again, once.
				h.provA.set(fail(pluginapi.CompletionError{Status: 404, Message: "404 Not Found"}))
				if diff := cmp.Diff(chatReply{Reply: replyReadyThenStopped("12:34 UTC", 9), SessionID: "s1"},
					h.api.on(t).ask("s1", "still there?")); diff != "" {
					t.Errorf("ask after the stop (-want +got):\n%s", diff)
				}
			}, 2},
		{"ready, then NOT_FOUND", func(t *testing.T, h *harness) {
			readyByView(t, h)
			h.gpu.set(notFound)
		}, report(map[string]any{"status": "", "lookup": "NOT_FOUND", "state": "stopped", "outcome": "ready", "wakeRequestedAt": wake}), nil, 1},
		{"crashed: RUNNING after an answer, then a 502 turn", crashedPod,
			with(running, map[string]any{"state": "crashed", "outcome": "ready"}), nil, 1},
		{"stuck", func(t *testing.T, h *harness) {
			wakeAsk(t, h)
			h.gpu.set(loadingPod())
			h.provA.set(fail(pluginapi.CompletionError{Status: 502, Message: "502 Bad Gateway"}))
			h.advance(t, 20*time.Minute)
			if diff := cmp.Diff(chatReply{Reply: replyStuck(20), SessionID: "s1"}, h.api.on(t).ask("s1", "hi")); diff != "" {
				t.Fatalf("ask at 20 min (-want +got):\n%s", diff)
			}
			// Past the estimate: when it was due, and no time left, never
			// a negative one.
		}, with(running, map[string]any{"state": "stuck", "etaAt": eta, "etaSeconds": float64(0)}), nil, 1},
		{"refused", startOutcome(pluginapi.StartResult{Status: 409}, "wake refused for pod qwen: status=409"),
			report(map[string]any{"state": "refused", "outcome": "refused", "wakeRequestedAt": wake}), nil, 1},
		{"start failed", startOutcome(pluginapi.StartResult{Error: "ECONNREFUSED"}, "wake failed for pod qwen: ECONNREFUSED"),
			report(map[string]any{"state": "start-failed", "outcome": "start-failed", "wakeRequestedAt": wake}), nil, 1},
		{"never ready", neverReadyPod,
			report(map[string]any{"status": "CREATED", "state": "never-ready", "outcome": "never-ready", "wakeRequestedAt": wake}), nil, 1},
		{"never ready, then RUNNING", func(t *testing.T, h *harness) {
			neverReadyPod(t, h)
			h.gpu.set(loadingPod())
		}, with(running, map[string]any{"state": "never-ready", "outcome": "never-ready"}), nil, 1},
		{"NOT_FOUND, nothing on record", func(t *testing.T, h *harness) { h.gpu.set(notFound) },
			report(map[string]any{"status": "", "lookup": "NOT_FOUND"}), nil, 0},
		{"UNREADABLE after ready", func(t *testing.T, h *harness) {
			readyByView(t, h)
			h.gpu.set(unreadablePod())
		}, report(map[string]any{"status": "", "lookup": "UNREADABLE", "state": "ready", "outcome": "ready", "wakeRequestedAt": wake}), nil, 1},
		{"conductor down after ready", func(t *testing.T, h *harness) {
			readyByView(t, h)
			h.gpu.setDown()
		}, with(running, map[string]any{"readySince": "2026-09-09T12:34:56Z", "fromCache": true, "state": "ready", "outcome": "ready"}), nil, 1},
		// Nothing known and nothing cached still answers 200, so a polling
		// client keeps polling.
		{"conductor down, nothing known", func(t *testing.T, h *harness) { h.gpu.setDown() },
			report(map[string]any{"status": "", "lookup": "UNREADABLE", "fromCache": true}), nil, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t)
			tt.setup(t, h)
			starts, decisions := h.gpu.startCount(), len(decisionLines(t, h))
			for i := range 5 {
				got := getPod(t, h.api, "qwen")
				if problem := podAgrees(got); problem != "" {
					t.Errorf("read %d: %s: %v", i+1, problem, got)
				}
				if diff := cmp.Diff(tt.want, got); diff != "" {
					t.Errorf("read %d (-want +got):\n%s", i+1, diff)
				}
			}
			if got := h.gpu.startCount() - starts; got != 0 {
				t.Errorf("%d starts during the reads, want 0", got)
			}
			if got := len(decisionLines(t, h)) - decisions; got != 0 {
				t.Errorf("%d wake policy decisions during the reads, want 0", got)
			}
			if tt.then != nil {
				tt.then(t, h)
			}
			if got := h.startsInTheEnd(t); got != tt.wantStarts {
				t.Errorf("%d starts in the end, want %d", got, tt.wantStarts)
			}
		})
	}
}

// decisionLines are the wake policy's decision lines logged so far.
func decisionLines(t *testing.T, h *harness) []logLine {
	t.Helper()
	var out []logLine
	for _, l := range parseLog(t, h.logs.String()) {
		if strings.HasPrefix(l.Msg, "provider not ready for pod ") {
			out = append(out, l)
		}
	}
	return out
}

// TestPodViewNeverWakes: from every state in which a turn would wake the
// pod, the conductor's every answer read any number of times through GET
// /api/pods/qwen starts nothing and decides nothing.
func TestPodViewNeverWakes(t *testing.T) {
	t.Parallel()
	views := []struct {
		name string
		set  func(h *harness)
	}{
		{"EXITED", func(h *harness) { h.gpu.set(asleepPod()) }},
		{"CREATED", func(h *harness) { h.gpu.set(creatingPod()) }},
		{"NOT_FOUND", func(h *harness) { h.gpu.set(pluginapi.Pod{Name: "qwen", Lookup: pluginapi.LookupNotFound}) }},
		{"UNREADABLE", func(h *harness) { h.gpu.set(unreadablePod()) }},
		{"the conductor down", func(h *harness) { h.gpu.setDown() }},
		{"RUNNING, no readySince", func(h *harness) { h.gpu.set(loadingPod()) }},
		{"RUNNING, an earlier boot's readySince", func(h *harness) { h.gpu.set(readyPod(rfc3339(t0.Add(-3 * time.Hour)))) }},
		{"RUNNING, readySince now", func(h *harness) { h.gpu.set(readyPod(rfc3339(h.clock.Now()))) }},
	}
	tests := []struct {
		name  string
		setup func(t *testing.T, h *harness)
	}{
		{"asleep", func(*testing.T, *harness) {}},
		{"waking, beyond the window", func(t *testing.T, h *harness) {
			wakeAsk(t, h)
			h.advance(t, 16*time.Minute)
		}},
		{"stopped", func(t *testing.T, h *harness) {
			readyByView(t, h)
			h.gpu.set(asleepPod())
			getPod(t, h.api, "qwen")
		}},
		{"crashed", crashedPod},
		{"refused", startOutcome(pluginapi.StartResult{Status: 409}, "wake refused for pod qwen: status=409")},
		{"start failed", startOutcome(pluginapi.StartResult{Error: "ECONNREFUSED"}, "wake failed for pod qwen: ECONNREFUSED")},
		{"never ready", neverReadyPod},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t)
			tt.setup(t, h)
			starts, decisions := h.gpu.startCount(), len(decisionLines(t, h))
			for range 3 {
				for _, v := range views {
					v.set(h)
					for range 3 {
						if problem := podAgrees(getPod(t, h.api, "qwen")); problem != "" {
							t.Errorf("the conductor says %s: %s", v.name, problem)
						}
					}
				}
			}
			if got := len(decisionLines(t, h)) - decisions; got != 0 {
				t.Errorf("%d wake policy decisions during the reads, want 0", got)
			}
			if got := h.startsInTheEnd(t) - starts; got != 0 {
				t.Errorf("%d starts during the reads, want 0", got)
			}
		})
	}
}

// TestPodRoute: unknown pods, methods and names.
func TestPodRoute(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	tests := []struct {
		name       string
		method     string
		path       string
		wantStatus int
		wantBody   string
		wantAllow  string
	}{
		{"unknown pod", http.MethodGet, "/api/pods/llama", 404, `{"error":"unknown pod: llama"}` + "\n", ""},
		{"control characters are not echoed", http.MethodGet, "/api/pods/bad%0Aname%7F", 404,
			`{"error":"unknown pod (not a valid pod name)"}` + "\n", ""},
		{"a name too long for a pod is not echoed", http.MethodGet, "/api/pods/" + strings.Repeat("p", 64), 404,
			`{"error":"unknown pod (not a valid pod name)"}` + "\n", ""},
		{"POST", http.MethodPost, "/api/pods/qwen", 405, `{"error":"method POST not allowed; use GET"}` + "\n", "GET"},
		{"DELETE", http.MethodDelete, "/api/pods/qwen", 405, `{"error":"method DELETE not allowed; use GET"}` + "\n", "GET"},
		{"HEAD", http.MethodHead, "/api/pods/qwen", 200, "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := h.api.on(t).do(tt.method, tt.path, "", "")
			if res.Status != tt.wantStatus {
				t.Errorf("status %d, want %d", res.Status, tt.wantStatus)
			}
			if diff := cmp.Diff(tt.wantBody, res.Body); diff != "" {
				t.Errorf("body (-want +got):\n%s", diff)
			}
			if got := res.Header.Get("Allow"); got != tt.wantAllow {
				t.Errorf("Allow %q, want %q", got, tt.wantAllow)
			}
		})
	}
	if got := h.startsInTheEnd(t); got != 0 {
		t.Errorf("%d starts, want 0", got)
	}
}

// TestPodReportEstimate: with a wake log, GET /api/pods/qwen carries the
// estimate measured from the pod's wakes, and for a wake in progress when
// it is due and how long that is (never below zero); a resume that finds
// the wake past its estimate hears that it is late, as an ask does.
func TestPodReportEstimate(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	// The harness's coordinator, over the same store, now with its log.
	h.closeCoordinator(t)
	cfg := h.wakeConfig()
	cfg.Wakes = h.store
	h.coord = wake.New(cfg)
	h.resolver.SetObserver(h.coord)
	h.api = h.serve(t, []string{"a"}, nil)
	field := func(rep map[string]any, names ...string) []any {
		var out []any
		for _, n := range names {
			out = append(out, rep[n])
		}
		return out
	}
	eta := func(step string, want ...any) {
		t.Helper()
		got := field(getPod(t, h.api, "qwen"), "state", "estimateSeconds", "estimateWakes", "etaAt", "etaSeconds")
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("%s: state, estimateSeconds, estimateWakes, etaAt, etaSeconds (-want +got):\n%s", step, diff)
		}
	}

	eta("nothing measured", "asleep", float64(540), float64(0), nil, nil)
	// A wake ready 4 minutes after its request.
	wakeAsk(t, h)
	h.advance(t, 4*time.Minute)
	h.gpu.set(readyPod(rfc3339(h.clock.Now())))
	eta("after one 4-minute wake", "ready", float64(240), float64(1), nil, nil)

	// An hour on it has stopped; the next wait turn wakes it, with the
	// measured figure (the endpoint the resolver held answers 404 now; no
	// watch runs, the wake being over).
	h.gpu.set(asleepPod())
	h.provA.set(fail(pluginapi.CompletionError{Status: 404, Message: "404 Not Found"}))
	h.clock.Advance(time.Hour)
	woke := h.clock.Now()
	got := h.api.on(t).turn(waitReq("s1"))
	if want := replyReadyThenStopped("12:30 UTC", 4); got.Reply != want {
		t.Errorf("wait turn: %q, want %q", got.Reply, want)
	}
	h.waitStart(t)
	eta("the second wake", "waking", float64(240), float64(1), rfc3339(woke.Add(4*time.Minute)), float64(240))
	h.advance(t, 150*time.Second)
	eta("2.5 min into it", "waking", float64(240), float64(1), rfc3339(woke.Add(4*time.Minute)), float64(90))

	// 6 minutes in, past the estimate: nothing left, and the resume's reply
	// says the wake is late.
	h.advance(t, 210*time.Second)
	eta("past the estimate", "waking", float64(240), float64(1), rfc3339(woke.Add(4*time.Minute)), float64(0))
	res := h.api.turn(resumeReq("s1", got.PendingWake.Key))
	if want := replyStillWakingLate(6, 4); res.Reply != want {
		t.Errorf("resume past the estimate: %q, want %q", res.Reply, want)
	}
}
