package chat_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/wakeonchat/wakeonchat/host/store"
	"github.com/wakeonchat/wakeonchat/plugins/pluginapi"
)

// TestWaitMode: the first wakeMode "wait" turn in each pod state. A turn
// that can run, runs; one that finds the model not ready gets the policy's
// reply and a marker, and its prompt is neither run nor stored.
func TestWaitMode(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name       string
		pod        pluginapi.Pod
		complete   func(context.Context, string, pluginapi.CompletionRequest) (string, error)
		want       chatReply
		wantCalls  int
		wantStarts int
	}{
		{"ready: runs at once", readyPod(rfc3339(t0)), nil,
			chatReply{Reply: answerTo(prompt), SessionID: "s1"}, 1, 0},
		{"being created: wakes and holds the prompt", creatingPod(), nil,
			chatReply{Reply: replyWaking, SessionID: "s1", PendingWake: firstMarker()}, 0, 1},
		{"model loading: holds the prompt, no wake", loadingPod(), fail(pluginapi.CompletionError{Status: 502, Message: "502 Bad Gateway"}),
			chatReply{Reply: replyLoading, SessionID: "s1",
				PendingWake: &pendingWake{Key: "tok-1", Pod: "qwen", Provider: "a", State: "loading", Events: "/api/pods/qwen/events"}}, 2, 0},
		{"unreadable: holds the prompt, no wake", unreadablePod(), nil,
			chatReply{Reply: replyUnreadable, SessionID: "s1",
				PendingWake: &pendingWake{Key: "tok-1", Pod: "qwen", Provider: "a", State: "asleep", Events: "/api/pods/qwen/events"}}, 0, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t)
			h.gpu.set(tt.pod)
			h.provA.set(tt.complete)
			got := h.api.on(t).turn(waitReq("s1"))
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("wait turn (-want +got):\n%s", diff)
			}
			if got := h.provA.calls(); got != tt.wantCalls {
				t.Errorf("%d completions, want %d", got, tt.wantCalls)
			}
			var wantHist []store.Message
			if tt.want.PendingWake == nil {
				wantHist = []store.Message{{Role: "user", Content: prompt}, {Role: "assistant", Content: tt.want.Reply}}
			}
			if diff := cmp.Diff(wantHist, h.history(t, "s1")); diff != "" {
				t.Errorf("history (-want +got):\n%s", diff)
			}
			if got := h.pending(t, "s1") != nil; got != (tt.want.PendingWake != nil) {
				t.Errorf("marker stored: %v, want %v", got, tt.want.PendingWake != nil)
			}
			if got := h.startsInTheEnd(t); got != tt.wantStarts {
				t.Errorf("%d starts, want %d", got, tt.wantStarts)
			}
		})
	}
}

// TestWaitAgainReplacesTheMarker: a second wait turn inside the window waits
// on the same wake under a new key; only the newest key resumes.
func TestWaitAgainReplacesTheMarker(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	waitAsleep(t, h, h.api)

	h.gpu.set(creatingPod())
	h.advance(t, 3*time.Minute)
	second := &pendingWake{Key: "tok-2", Pod: "qwen", Provider: "a", WakeRequestedAt: ptr("2026-09-09T12:26:25Z"), State: "waking", Events: "/api/pods/qwen/events"}
	if diff := cmp.Diff(chatReply{Reply: replyStillWaking(3), SessionID: "s1", PendingWake: second}, h.api.turn(waitReq("s1"))); diff != "" {
		t.Errorf("second wait (-want +got):\n%s", diff)
	}

	h.advance(t, 6*time.Minute)
	h.gpu.set(readyPod("2026-09-09T12:34:56Z"))
	res := h.api.post(resumeReq("s1", "tok-1"))
	if want := `{"error":"pendingWake does not match this session's pending wake"}` + "\n"; res.Status != http.StatusConflict || res.Body != want {
		t.Errorf("resume with the replaced key: %d %q, want 409 %q", res.Status, res.Body, want)
	}
	if diff := cmp.Diff(chatReply{Reply: answerTo(prompt), SessionID: "s1"}, h.api.turn(resumeReq("s1", "tok-2"))); diff != "" {
		t.Errorf("resume with the new key (-want +got):\n%s", diff)
	}
	if got := h.provA.calls(); got != 1 {
		t.Errorf("%d completions, want 1", got)
	}
	if got := h.startsInTheEnd(t); got != 1 {
		t.Errorf("%d starts, want 1", got)
	}
}

// TestWaitNeverResendsAnAbortedCompletion: "neither mode retries a failed
// completion" (#715). An aborted completion may have been processed by the
// model (D10), so a wait turn must not send it a second time.
func TestWaitNeverResendsAnAbortedCompletion(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	h.gpu.set(readyPod(rfc3339(t0)))
	h.provA.set(fail(pluginapi.CompletionError{Aborted: true, Message: "context deadline exceeded"}))
	res := h.api.post(waitReq("s1"))
	if res.Status != http.StatusBadGateway || res.Body != providerFailed {
		t.Errorf("got %d %q, want 502 %q", res.Status, res.Body, providerFailed)
	}
	if got := h.provA.calls(); got != 1 {
		t.Errorf("an aborted wait-mode completion was sent again: %d completions, want 1", got)
	}
}

// TestProviderPinning is wake-provider.test.js: wait pins the chain's first
// provider; a resume runs on it even after the chain changed, and a failure
// there never falls back to another provider, in either mode.
func TestProviderPinning(t *testing.T) {
	t.Parallel()
	// waitOnAB waits on the asleep pod through chain [a, b], then the pod
	// becomes ready and the chain is reordered to [b, a].
	waitOnAB := func(t *testing.T, h *harness) *api {
		t.Helper()
		ab := h.serve(t, []string{"a", "b"}, nil).on(t)
		got := ab.turn(waitReq("s1"))
		if got.PendingWake == nil || got.PendingWake.Provider != "a" {
			t.Fatalf("wait on [a b] pinned %+v, want provider a", got.PendingWake)
		}
		h.waitStart(t)
		h.advance(t, 9*time.Minute)
		h.gpu.set(readyPod("2026-09-09T12:34:56Z"))
		return h.serve(t, []string{"b", "a"}, nil).on(t)
	}
	tests := []struct {
		name       string
		complete   func(h *harness) func(context.Context, string, pluginapi.CompletionRequest) (string, error)
		wantStatus int
		wantKept   bool
	}{
		{"resume runs on the pinned provider", func(*harness) func(context.Context, string, pluginapi.CompletionRequest) (string, error) {
			return nil
		}, http.StatusOK, false},
		{"a fallback-eligible failure does not fall back", func(*harness) func(context.Context, string, pluginapi.CompletionRequest) (string, error) {
			return fail(pluginapi.CompletionError{Status: 500, Message: "internal error"})
		}, http.StatusBadGateway, false},
		{"a stop race keeps the marker and does not fall back", func(h *harness) func(context.Context, string, pluginapi.CompletionRequest) (string, error) {
			return func(ctx context.Context, ep string, req pluginapi.CompletionRequest) (string, error) {
				h.gpu.set(asleepPod())
				return fail(pluginapi.CompletionError{Status: 503, Message: "503 Service Unavailable"})(ctx, ep, req)
			}
		}, http.StatusOK, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t)
			ba := waitOnAB(t, h)
			h.provA.set(tt.complete(h))
			res := ba.post(resumeReq("s1", "tok-1"))
			if res.Status != tt.wantStatus {
				t.Errorf("resume: %d %s, want %d", res.Status, res.Body, tt.wantStatus)
			}
			if tt.wantStatus == http.StatusOK && !tt.wantKept {
				if diff := cmp.Diff(chatReply{Reply: answerTo(prompt), SessionID: "s1"}, decodeReply(t, res.Body)); diff != "" {
					t.Errorf("resume (-want +got):\n%s", diff)
				}
			}
			if got := h.provA.calls(); got != 1 {
				t.Errorf("a: %d completions, want 1", got)
			}
			if got := h.provB.calls(); got != 0 {
				t.Errorf("b: %d completions, want 0", got)
			}
			if got := h.pending(t, "s1") != nil; got != tt.wantKept {
				t.Errorf("marker kept: %v, want %v", got, tt.wantKept)
			}
			if got := h.startsInTheEnd(t); got != 1 {
				t.Errorf("%d starts, want 1", got)
			}
		})
	}

	t.Run("wait does not fall back", func(t *testing.T) {
		h := newHarness(t)
		ab := h.serve(t, []string{"a", "b"}, nil).on(t)
		h.gpu.set(readyPod(rfc3339(t0)))
		h.provA.set(fail(pluginapi.CompletionError{Status: 500, Message: "internal error"}))
		res := ab.post(waitReq("s1"))
		if res.Status != http.StatusBadGateway || res.Body != providerFailed {
			t.Errorf("got %d %q, want 502 %q", res.Status, res.Body, providerFailed)
		}
		if got := h.provB.calls(); got != 0 {
			t.Errorf("b: %d completions, want 0", got)
		}
	})
}
