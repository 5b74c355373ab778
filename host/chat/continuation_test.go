package chat_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/wakeonchat/wakeonchat/host/agent"
	"github.com/wakeonchat/wakeonchat/host/resolve"
	"github.com/wakeonchat/wakeonchat/host/store"
	"github.com/wakeonchat/wakeonchat/machines"
	"github.com/wakeonchat/wakeonchat/plugins/pluginapi"
)

// prompt is the message a wakeMode "wait" turn holds and "resume" runs.
const prompt = "Summarise the design of wake-on-chat in one line."

func ptr[T any](v T) *T { return &v }

// firstMarker is the marker the first wait turn of a harness leaves.
func firstMarker() *pendingWake {
	return &pendingWake{Key: "tok-1", Pod: "qwen", Provider: "a", WakeRequestedAt: ptr("2026-09-09T12:26:25Z"), State: "waking", Events: "/api/pods/qwen/events"}
}

func waitReq(session string) chatReq {
	return chatReq{Message: prompt, SessionID: session, WakeMode: "wait"}
}

func resumeReq(session string, key any) chatReq {
	return chatReq{Message: prompt, SessionID: session, WakeMode: "resume", PendingWake: key}
}

// waitAsleep runs the first wait turn on the asleep pod and checks it: the
// waking reply, the marker, one start, nothing run and nothing stored.
func waitAsleep(t *testing.T, h *harness, srv *api) {
	t.Helper()
	got := srv.turn(waitReq("s1"))
	if diff := cmp.Diff(chatReply{Reply: replyWaking, SessionID: "s1", PendingWake: firstMarker()}, got); diff != "" {
		t.Fatalf("wait turn (-want +got):\n%s", diff)
	}
	h.waitStart(t)
	if got := h.provA.calls(); got != 0 {
		t.Errorf("the wait turn ran %d completions on an asleep pod", got)
	}
	if got := h.history(t, "s1"); got != nil {
		t.Errorf("the wait turn stored %v", got)
	}
	want := &store.Pending{Key: "tok-1", Pod: "qwen", Provider: "a", WakeRequestedAt: t0, State: "waking", CreatedAt: t0}
	if diff := cmp.Diff(want, h.pending(t, "s1")); diff != "" {
		t.Errorf("stored marker (-want +got):\n%s", diff)
	}
}

// TestWaitThenResume is wake-continuation.test.js's main line: asleep, wait,
// the pod wakes through its states, and one resume runs the exact original
// prompt on the same session, once.
func TestWaitThenResume(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	srv := h.api
	waitAsleep(t, h, srv)
	if got := podReady(t, srv); got {
		t.Error("GET /api/pods/qwen: ready while asleep")
	}

	// 3 min: the pod is being created. A resume is told so and keeps its marker.
	h.gpu.set(creatingPod())
	h.advance(t, 3*time.Minute)
	if diff := cmp.Diff(chatReply{Reply: replyStillWaking(3), SessionID: "s1", PendingWake: firstMarker()},
		srv.turn(resumeReq("s1", "tok-1"))); diff != "" {
		t.Errorf("resume while waking (-want +got):\n%s", diff)
	}
	if podReady(t, srv) {
		t.Error("GET /api/pods/qwen: ready while waking")
	}

	// 6 min: RUNNING, the model still loading.
	h.advance(t, 3*time.Minute)
	h.gpu.set(loadingPod())
	if diff := cmp.Diff(chatReply{Reply: replyLoadingWaking(6), SessionID: "s1", PendingWake: firstMarker()},
		srv.turn(resumeReq("s1", "tok-1"))); diff != "" {
		t.Errorf("resume while loading (-want +got):\n%s", diff)
	}
	if podReady(t, srv) {
		t.Error("GET /api/pods/qwen: ready while loading")
	}
	if got := h.provA.calls(); got != 0 {
		t.Errorf("%d completions before the pod was ready, want 0", got)
	}

	// 9 min: the conductor reports readySince, after the wake.
	h.advance(t, 3*time.Minute)
	h.gpu.set(readyPod("2026-09-09T12:34:56Z"))
	if !podReady(t, srv) {
		t.Error("GET /api/pods/qwen: not ready with a fresh readySince")
	}
	if diff := cmp.Diff(chatReply{Reply: answerTo(prompt), SessionID: "s1"}, srv.turn(resumeReq("s1", "tok-1"))); diff != "" {
		t.Errorf("resume when ready (-want +got):\n%s", diff)
	}
	wantReqs := []pluginapi.CompletionRequest{{Model: modelName, Messages: []pluginapi.Message{
		{Role: "system", Content: systemPrompt},
		{Role: "user", Content: prompt},
	}}}
	if diff := cmp.Diff(wantReqs, h.provA.requests()); diff != "" {
		t.Errorf("completion requests (-want +got):\n%s", diff)
	}
	wantHist := []store.Message{{Role: "user", Content: prompt}, {Role: "assistant", Content: answerTo(prompt)}}
	if diff := cmp.Diff(wantHist, h.history(t, "s1")); diff != "" {
		t.Errorf("history (-want +got):\n%s", diff)
	}
	if p := h.pending(t, "s1"); p != nil {
		t.Errorf("marker %+v left after the resume ran", p)
	}

	// The key is consumed: the same resume again is refused and runs nothing.
	res := srv.post(resumeReq("s1", "tok-1"))
	if want := `{"error":"no pending wake for this session"}` + "\n"; res.Status != http.StatusConflict || res.Body != want {
		t.Errorf("second resume: %d %q, want 409 %q", res.Status, res.Body, want)
	}
	if got := h.provA.calls(); got != 1 {
		t.Errorf("%d completions, want exactly 1", got)
	}
	if got := h.startsInTheEnd(t); got != 1 {
		t.Errorf("%d starts, want 1: resume never wakes", got)
	}
}

// podReady reads GET /api/pods/qwen's "ready".
func podReady(t *testing.T, srv *api) bool {
	t.Helper()
	return getPod(t, srv, "qwen")["ready"] == true
}

// TestResumeRuns: a resume on a freshly ready pod runs once, whichever form
// the key comes in; a readySince exactly ready_slack before the wake counts.
func TestResumeRuns(t *testing.T) {
	t.Parallel()
	ready := func(since string) func(t *testing.T, h *harness) {
		return func(t *testing.T, h *harness) { h.gpu.set(readyPod(since)) }
	}
	tests := []struct {
		name      string
		setup     func(t *testing.T, h *harness)
		key       any
		wantCalls int
	}{
		{"readySince after the wake", ready("2026-09-09T12:34:56Z"), "tok-1", 1},
		{"readySince exactly ready_slack before the wake", ready(rfc3339(t0.Add(-60 * time.Second))), "tok-1", 1},
		{"readySince with an offset", ready("2026-09-09T14:34:56+02:00"), "tok-1", 1},
		{"pendingWake as the object the wait returned", ready("2026-09-09T12:34:56Z"), firstMarker(), 1},
		// The machine's readiness: a boot that answered a turn is ready
		// without a readySince.
		{"another session's turn answered, no readySince", func(t *testing.T, h *harness) {
			h.gpu.set(loadingPod())
			if diff := cmp.Diff(chatReply{Reply: answerTo("hi"), SessionID: "s2"}, h.api.on(t).ask("s2", "hi")); diff != "" {
				t.Fatalf("s2's turn (-want +got):\n%s", diff)
			}
		}, "tok-1", 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t)
			srv := h.api.on(t)
			waitAsleep(t, h, srv)
			h.advance(t, 9*time.Minute)
			tt.setup(t, h)
			if diff := cmp.Diff(chatReply{Reply: answerTo(prompt), SessionID: "s1"}, srv.turn(resumeReq("s1", tt.key))); diff != "" {
				t.Errorf("resume (-want +got):\n%s", diff)
			}
			if got := h.provA.calls(); got != tt.wantCalls {
				t.Errorf("%d completions, want %d", got, tt.wantCalls)
			}
			if p := h.pending(t, "s1"); p != nil {
				t.Errorf("marker %+v left", p)
			}
			if got := h.startsInTheEnd(t); got != 1 {
				t.Errorf("%d starts, want 1", got)
			}
		})
	}
}

// TestResumeNotFresh: every resume that finds the pod not freshly ready
// answers 200 with the state's reply and the same marker, runs nothing,
// stores nothing and wakes nothing (#715, D8).
func TestResumeNotFresh(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		after time.Duration // since the wake, before the pod changes
		setup func(t *testing.T, h *harness)
		want  string
	}{
		{"being created", 3 * time.Minute, func(t *testing.T, h *harness) { h.gpu.set(creatingPod()) }, replyStillWaking(3)},
		{"model loading", 6 * time.Minute, func(t *testing.T, h *harness) { h.gpu.set(loadingPod()) }, replyLoadingWaking(6)},
		{"readySince not a time", 9 * time.Minute, func(t *testing.T, h *harness) { h.gpu.set(readyPod("yesterday")) },
			replyLoadingWaking(9)},
		{"readySince of an earlier boot", 9 * time.Minute,
			func(t *testing.T, h *harness) { h.gpu.set(readyPod(rfc3339(t0.Add(-61 * time.Second)))) }, replyLoadingWaking(9)},
		{"loading past the ceiling", 25 * time.Minute, func(t *testing.T, h *harness) { h.gpu.set(loadingPod()) }, replyStuck(25)},
		{"unreadable", 3 * time.Minute, func(t *testing.T, h *harness) { h.gpu.set(unreadablePod()) }, replyUnreadable},
		// D8: the conductor confirmed the pod ready, then went away. The
		// cached answer is not fresh: no completion.
		{"conductor down after a ready lookup", 9 * time.Minute, func(t *testing.T, h *harness) {
			h.gpu.set(readyPod("2026-09-09T12:34:56Z"))
			if !podReady(t, h.api.on(t)) {
				t.Fatal("priming: the pod is not ready")
			}
			h.gpu.setDown()
		}, replyUnreadable},
		{"conductor down, last seen asleep", 3 * time.Minute, func(t *testing.T, h *harness) { h.gpu.setDown() }, replyUnreadable},
		// Resume never wakes: past the window with the pod still down, it
		// says so and asks for a new message.
		{"asleep past the window", 16 * time.Minute, func(t *testing.T, h *harness) {}, replyResumeWaiting},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t)
			srv := h.api.on(t)
			waitAsleep(t, h, srv)
			h.advance(t, tt.after)
			tt.setup(t, h)
			if diff := cmp.Diff(chatReply{Reply: tt.want, SessionID: "s1", PendingWake: firstMarker()},
				srv.turn(resumeReq("s1", "tok-1"))); diff != "" {
				t.Errorf("resume (-want +got):\n%s", diff)
			}
			if err := machines.CheckPlain(tt.want); err != nil {
				t.Errorf("reply not plain: %v", err)
			}
			if got := h.provA.calls(); got != 0 {
				t.Errorf("%d completions, want 0", got)
			}
			if h.pending(t, "s1") == nil {
				t.Error("the marker was consumed by a resume that did not run")
			}
			if got := h.history(t, "s1"); got != nil {
				t.Errorf("history %v, want none", got)
			}
			if got := h.startsInTheEnd(t); got != 1 {
				t.Errorf("%d starts, want 1: resume never wakes", got)
			}
		})
	}
}

// TestResumeRefused: a resume without its session's marker is a 409 that
// asks nobody anything.
func TestResumeRefused(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		serve    func(t *testing.T, h *harness) *api
		req      chatReq
		wantBody string
		wantKept bool // s1's marker survives
	}{
		{"unknown key", nil, resumeReq("s1", "tok-999"),
			`{"error":"pendingWake does not match this session's pending wake"}`, true},
		{"no marker for the session", nil, resumeReq("s2", "tok-1"),
			`{"error":"no pending wake for this session"}`, true},
		{"pinned provider no longer configured", func(t *testing.T, h *harness) *api {
			delete(h.models, "a")
			return h.serve(t, []string{"b"}, nil)
		}, resumeReq("s1", "tok-1"),
			`{"error":"the provider this wake was pinned to is no longer configured"}`, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t)
			waitAsleep(t, h, h.api.on(t))
			h.advance(t, 9*time.Minute)
			h.gpu.set(readyPod("2026-09-09T12:34:56Z"))
			srv := h.api
			if tt.serve != nil {
				srv = tt.serve(t, h)
			}
			gets := h.gpu.getCount()
			res := srv.on(t).post(tt.req)
			if res.Status != http.StatusConflict || res.Body != tt.wantBody+"\n" {
				t.Errorf("got %d %q, want 409 %q", res.Status, res.Body, tt.wantBody)
			}
			if got := h.gpu.getCount() - gets; got != 0 {
				t.Errorf("%d conductor lookups, want 0", got)
			}
			if got := h.provA.calls() + h.provB.calls(); got != 0 {
				t.Errorf("%d completions, want 0", got)
			}
			if got := h.pending(t, "s1") != nil; got != tt.wantKept {
				t.Errorf("marker kept: %v, want %v", got, tt.wantKept)
			}
			if got := h.startsInTheEnd(t); got != 1 {
				t.Errorf("%d starts, want 1", got)
			}
		})
	}
}

// TestResumeCompletionFails: the pod is ready at the check, and the one
// completion fails. A failure that proves the prompt never reached a model
// keeps the marker; any other is the generic 502 with the key consumed. The
// completion is never retried (#715).
func TestResumeCompletionFails(t *testing.T) {
	t.Parallel()
	// stopping answers like a proxy whose pod has just stopped.
	stopping := func(h *harness, ce pluginapi.CompletionError) func(context.Context, string, pluginapi.CompletionRequest) (string, error) {
		return func(ctx context.Context, ep string, req pluginapi.CompletionRequest) (string, error) {
			h.gpu.set(asleepPod())
			return fail(ce)(ctx, ep, req)
		}
	}
	tests := []struct {
		name     string
		complete func(h *harness) func(context.Context, string, pluginapi.CompletionRequest) (string, error)
		wantKept bool // 200 with the marker, else the generic 502
	}{
		{"stop race: 502", func(h *harness) func(context.Context, string, pluginapi.CompletionRequest) (string, error) {
			return stopping(h, pluginapi.CompletionError{Status: 502, Message: "502 Bad Gateway"})
		}, true},
		{"stop race: connection reset", func(h *harness) func(context.Context, string, pluginapi.CompletionRequest) (string, error) {
			return stopping(h, pluginapi.CompletionError{TransportFailure: true, Message: "ECONNRESET"})
		}, true},
		{"stop race: 404", func(h *harness) func(context.Context, string, pluginapi.CompletionRequest) (string, error) {
			return stopping(h, pluginapi.CompletionError{Status: 404, Message: "404 Not Found"})
		}, true},
		{"aborted", func(h *harness) func(context.Context, string, pluginapi.CompletionRequest) (string, error) {
			return fail(pluginapi.CompletionError{Aborted: true, Message: "context deadline exceeded"})
		}, false},
		{"a 200 with a bad body", func(h *harness) func(context.Context, string, pluginapi.CompletionRequest) (string, error) {
			return fail(pluginapi.CompletionError{Status: 200, Message: "unexpected end of JSON input"})
		}, false},
		{"500", func(h *harness) func(context.Context, string, pluginapi.CompletionRequest) (string, error) {
			return fail(pluginapi.CompletionError{Status: 500, Message: "internal error"})
		}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t)
			srv := h.api.on(t)
			waitAsleep(t, h, srv)
			h.advance(t, 9*time.Minute)
			h.gpu.set(readyPod("2026-09-09T12:34:56Z"))
			h.provA.set(tt.complete(h))

			res := srv.post(resumeReq("s1", "tok-1"))
			if tt.wantKept {
				if res.Status != http.StatusOK {
					t.Fatalf("status %d %s, want 200", res.Status, res.Body)
				}
				// The lookup after the failure saw the pod stopped after it was
				// ready: nothing wakes it.
				want := chatReply{Reply: replyResumeWaiting, SessionID: "s1", PendingWake: firstMarker()}
				if diff := cmp.Diff(want, decodeReply(t, res.Body)); diff != "" {
					t.Errorf("resume (-want +got):\n%s", diff)
				}
				if l := h.logs.find(t, "resume: the pod stopped before the turn ran; pending wake kept"); len(l) != 1 || l[0].Level != "WARN" {
					t.Errorf("kept lines %+v, want one at WARN", l)
				}
			} else if res.Status != http.StatusBadGateway || res.Body != providerFailed {
				t.Errorf("got %d %q, want 502 %q", res.Status, res.Body, providerFailed)
			}
			if got := h.provA.calls(); got != 1 {
				t.Errorf("%d completions, want exactly 1: no retry", got)
			}
			if got := h.pending(t, "s1") != nil; got != tt.wantKept {
				t.Errorf("marker kept: %v, want %v", got, tt.wantKept)
			}
			if got := h.history(t, "s1"); got != nil {
				t.Errorf("history %v, want none", got)
			}

			// Once the pod is back, a kept marker resumes; a consumed one
			// never runs again.
			h.provA.set(nil)
			h.gpu.set(readyPod("2026-09-09T12:38:00Z"))
			again := srv.post(resumeReq("s1", "tok-1"))
			switch {
			case tt.wantKept && again.Status != http.StatusOK:
				t.Errorf("resume after the pod came back: %d %s, want 200", again.Status, again.Body)
			case !tt.wantKept && again.Status != http.StatusConflict:
				t.Errorf("second resume of a consumed key: %d %s, want 409", again.Status, again.Body)
			}
			if got, want := h.provA.calls(), map[bool]int{true: 2, false: 1}[tt.wantKept]; got != want {
				t.Errorf("%d completions in all, want %d", got, want)
			}
			if got := h.startsInTheEnd(t); got != 1 {
				t.Errorf("%d starts, want 1: resume never wakes", got)
			}
		})
	}
}

// TestResumeFailsWhileConductorSaysReady: the completion fails with a proxy
// status that proves the prompt was never processed, but the conductor still
// reports the pod freshly ready. The marker is kept, and the reply must
// still say something.
func TestResumeFailsWhileConductorSaysReady(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	srv := h.api
	waitAsleep(t, h, srv)
	h.advance(t, 9*time.Minute)
	h.gpu.set(readyPod("2026-09-09T12:34:56Z"))
	h.provA.set(fail(pluginapi.CompletionError{Status: 502, Message: "502 Bad Gateway"}))

	// The state stays ready (the conductor says so); a ready pod whose
	// model did not answer this turn is described as loading.
	want := chatReply{Reply: replyLoadingWaking(9), SessionID: "s1", PendingWake: firstMarker()}
	if diff := cmp.Diff(want, srv.turn(resumeReq("s1", "tok-1"))); diff != "" {
		t.Errorf("resume (-want +got):\n%s", diff)
	}
	if got := h.provA.calls(); got != 1 {
		t.Errorf("%d completions, want 1", got)
	}
	if n := len(decisionLines(t, h)); n != 1 {
		t.Errorf("%d decision lines, want 1 (the wait's): a resume runs no wake policy", n)
	}
	if got := h.startsInTheEnd(t); got != 1 {
		t.Errorf("%d starts, want 1: resume never wakes", got)
	}
}

// TestResumeModelLoading: a resume whose completion re-resolves (a model
// that sends Once as Retry) and finds the RUNNING pod's model not answering gets a
// not-ready error with modelLoading. It is the machine's modelLoading
// event, which never wakes: on the ready boot the model crashed. The marker
// is kept.
func TestResumeModelLoading(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	h.models["a"] = retrying{h.models["a"]}
	srv := h.serve(t, []string{"a"}, nil)
	waitAsleep(t, h, srv)
	h.advance(t, 9*time.Minute)
	h.gpu.set(readyPod("2026-09-09T12:34:56Z"))
	h.provA.set(fail(pluginapi.CompletionError{Status: 502, Message: "502 Bad Gateway"}))

	want := chatReply{Reply: replyCrashed("12:34 UTC"), SessionID: "s1", PendingWake: firstMarker()}
	if diff := cmp.Diff(want, srv.turn(resumeReq("s1", "tok-1"))); diff != "" {
		t.Errorf("resume (-want +got):\n%s", diff)
	}
	if got := h.provA.calls(); got != 2 {
		t.Errorf("%d completions, want 2 (the try and the retry after the re-resolve)", got)
	}
	if h.pending(t, "s1") == nil {
		t.Error("the marker was consumed by a turn that reached no model")
	}
	lines := decisionLines(t, h)
	if len(lines) != 2 || !strings.HasSuffix(lines[1].Msg, "CRASHED: was answering, stopped while RUNNING") || lines[1].Level != "ERROR" {
		t.Errorf("decision lines %+v, want the wait's and one CRASHED at ERROR", lines)
	}
	if got := h.startsInTheEnd(t); got != 1 {
		t.Errorf("%d starts, want 1: resume never wakes", got)
	}
}

// retrying is a model that sends every completion with resolve.Retry,
// whatever its send mode.
type retrying struct{ agent.Model }

func (m retrying) Complete(ctx context.Context, msgs []pluginapi.Message, _ resolve.Send) (string, error) {
	return m.Model.Complete(ctx, msgs, resolve.Retry)
}
