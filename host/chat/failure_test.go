package chat_test

import (
	"context"
	"fmt"
	"net/http"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/wakeonchat/wakeonchat/host/resolve"
	"github.com/wakeonchat/wakeonchat/plugins/pluginapi"
)

// TestProviderFailedIs502: config-class failures, not-ready errors the policy
// may not act on and plain provider failures answer the generic 502 byte for
// byte, log the failure once, store nothing and never wake (D5, D8).
func TestProviderFailedIs502(t *testing.T) {
	t.Parallel()
	notRetryable := func(h *harness) error {
		nr := resolve.NewNotReadyError("qwen", resolve.Resolution{Pod: "qwen", Status: "EXITED"}, false)
		nr.Retryable = false
		return fmt.Errorf("openai-api: %w", nr)
	}
	tests := []struct {
		name string
		// setup scripts the harness and returns the chain to serve.
		setup     func(t *testing.T, h *harness) []string
		wantCalls int // completions that reached provider a
	}{
		{"not ready, retryable false", func(t *testing.T, h *harness) []string {
			h.models["x"] = &fakeModel{complete: func(context.Context, []pluginapi.Message) (string, error) {
				return "", notRetryable(h)
			}}
			return []string{"x"}
		}, 0},
		{"not ready about a pod that is not configured", func(t *testing.T, h *harness) []string {
			h.models["x"] = &fakeModel{complete: func(context.Context, []pluginapi.Message) (string, error) {
				return "", resolve.NewNotReadyError("other", resolve.Resolution{Pod: "other", Status: "EXITED"}, false)
			}}
			return []string{"x"}
		}, 0},
		{"provider 500", func(t *testing.T, h *harness) []string {
			h.gpu.set(readyPod(rfc3339(t0)))
			h.provA.set(fail(pluginapi.CompletionError{Status: 500, Message: "internal error"}))
			return []string{"a"}
		}, 1},
		{"a 200 whose body does not parse", func(t *testing.T, h *harness) []string {
			h.gpu.set(readyPod(rfc3339(t0)))
			h.provA.set(fail(pluginapi.CompletionError{Status: 200, Message: "unexpected end of JSON input"}))
			return []string{"a"}
		}, 1},
		{"aborted twice", func(t *testing.T, h *harness) []string {
			h.gpu.set(readyPod(rfc3339(t0)))
			h.provA.set(fail(pluginapi.CompletionError{Aborted: true, Message: "context deadline exceeded"}))
			return []string{"a"}
		}, 2},
		// D8: the conductor went away after a good lookup. The cached
		// resolution is no evidence the pod is up, so the proxy's 502 is
		// the raw failure, never "the model is loading".
		{"502 while the conductor is down", func(t *testing.T, h *harness) []string {
			h.gpu.set(readyPod(rfc3339(t0)))
			if res := h.api.on(t).do(http.MethodGet, "/api/pods/qwen", "", ""); res.Status != 200 {
				t.Fatalf("priming lookup: %d %s", res.Status, res.Body)
			}
			h.gpu.setDown()
			h.provA.set(fail(pluginapi.CompletionError{Status: 502, Message: "502 Bad Gateway"}))
			return []string{"a"}
		}, 1},
		{"conductor down, nothing cached", func(t *testing.T, h *harness) []string {
			h.gpu.setDown()
			return []string{"a"}
		}, 0},
		{"config error", func(t *testing.T, h *harness) []string {
			h.models["c"] = &resolve.Model{Name: "c", Provider: h.provA, Resolver: h.resolver,
				ConfigErr: &resolve.ConfigError{Provider: "c", Reason: "api_key_env OPENAI_KEY is not set"}}
			return []string{"c"}
		}, 0},
		{"no provider in the chain", func(t *testing.T, h *harness) []string { return nil }, 0},
		// Shutting down: the coordinator is closed and decides nothing.
		{"coordinator closed", func(t *testing.T, h *harness) []string {
			h.closeCoordinator(t)
			return []string{"a"}
		}, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t)
			srv := h.serve(t, tt.setup(t, h), nil).on(t)
			res := srv.post(chatReq{Message: "hi", SessionID: "s1"})
			if res.Status != http.StatusBadGateway {
				t.Errorf("status %d, want 502", res.Status)
			}
			if res.Body != providerFailed {
				t.Errorf("body %q, want exactly %q", res.Body, providerFailed)
			}
			if got := res.Header.Get("Content-Type"); got != "application/json" {
				t.Errorf("Content-Type %q, want application/json", got)
			}
			if got := h.provA.calls(); got != tt.wantCalls {
				t.Errorf("%d completions, want %d", got, tt.wantCalls)
			}
			if l := h.logs.find(t, "turn failed"); len(l) != 1 || l[0].Level != "ERROR" || l[0].Attrs["session"] != "s1" {
				t.Errorf("turn failed lines %+v, want one at ERROR for s1; the log:\n%s", l, h.logs)
			}
			if got := h.history(t, "s1"); got != nil {
				t.Errorf("history %v, want none", got)
			}
			if got := h.startsInTheEnd(t); got != 0 {
				t.Errorf("%d starts, want 0", got)
			}
			// The slot was released: the session can ask again.
			if res := srv.post(chatReq{Message: "hi", SessionID: "s1"}); res.Status == http.StatusConflict {
				t.Errorf("the session's slot was kept after a failure: %s", res.Body)
			}
		})
	}
}

// TestPanicReleasesTheSlot: a crashing provider or conductor plugin answers
// the generic 502, is logged, and the same session's next turn runs.
func TestPanicReleasesTheSlot(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		crash   func(h *harness)
		recover func(h *harness)
	}{
		{"provider panics",
			func(h *harness) {
				h.provA.set(func(context.Context, string, pluginapi.CompletionRequest) (string, error) {
					panic("provider plugin crashed")
				})
			},
			func(h *harness) { h.provA.set(nil) }},
		{"conductor lookup panics",
			func(h *harness) {
				h.gpu.onGet(func(context.Context, string) (pluginapi.Pod, error) { panic("gpu plugin crashed") })
			},
			func(h *harness) { h.gpu.onGet(nil) }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t)
			srv := h.api.on(t)
			h.gpu.set(readyPod(rfc3339(t0)))
			tt.crash(h)
			res := srv.post(chatReq{Message: "hi", SessionID: "s1"})
			if res.Status != http.StatusBadGateway || res.Body != providerFailed {
				t.Errorf("crashed turn: %d %q, want 502 %q", res.Status, res.Body, providerFailed)
			}
			if l := h.logs.find(t, "turn panicked"); len(l) != 1 || l[0].Level != "ERROR" {
				t.Errorf("panic lines %+v, want one at ERROR", l)
			}
			tt.recover(h)
			if diff := cmp.Diff(chatReply{Reply: answerTo("again"), SessionID: "s1"}, srv.ask("s1", "again")); diff != "" {
				t.Errorf("next turn (-want +got):\n%s", diff)
			}
			if got := h.startsInTheEnd(t); got != 0 {
				t.Errorf("%d starts, want 0", got)
			}
		})
	}
}

// TestTurnInFlightIs409: one turn per session at a time; other sessions go
// on, and the slot is free again once the turn ends.
func TestTurnInFlightIs409(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	h.gpu.set(readyPod(rfc3339(t0)))
	entered, release := make(chan struct{}), make(chan struct{})
	h.provA.set(func(ctx context.Context, _ string, req pluginapi.CompletionRequest) (string, error) {
		msg := req.Messages[len(req.Messages)-1].Content
		if msg == "slow" {
			close(entered)
			select {
			case <-release:
			case <-ctx.Done():
				return "", &pluginapi.CompletionError{Aborted: true, Message: "canceled"}
			}
		}
		return answerTo(msg), nil
	})

	slow := h.api.postAsync(chatReq{Message: "slow", SessionID: "s1"})
	<-entered
	res := h.api.post(chatReq{Message: "meanwhile", SessionID: "s1"})
	if want := `{"error":"a turn is already in flight for this session"}` + "\n"; res.Status != http.StatusConflict || res.Body != want {
		t.Errorf("second turn of s1: %d %q, want 409 %q", res.Status, res.Body, want)
	}
	if diff := cmp.Diff(chatReply{Reply: answerTo("other"), SessionID: "s2"}, h.api.ask("s2", "other")); diff != "" {
		t.Errorf("s2 while s1 is busy (-want +got):\n%s", diff)
	}
	close(release)
	r := receive(t, slow)
	if r.Status != http.StatusOK {
		t.Fatalf("slow turn: %d %s", r.Status, r.Body)
	}
	if diff := cmp.Diff(chatReply{Reply: answerTo("slow"), SessionID: "s1"}, decodeReply(t, r.Body)); diff != "" {
		t.Errorf("slow turn (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(chatReply{Reply: answerTo("after"), SessionID: "s1"}, h.api.ask("s1", "after")); diff != "" {
		t.Errorf("s1 after its turn ended (-want +got):\n%s", diff)
	}
	if got := h.provA.calls(); got != 3 {
		t.Errorf("%d completions, want 3: the 409 never ran", got)
	}
}

// TestLegacyFallback: a legacy turn falls back along the chain on a
// fallback-eligible failure, but never while the model loads (D11).
func TestLegacyFallback(t *testing.T) {
	t.Parallel()
	t.Run("a 500 falls back to b", func(t *testing.T) {
		h := newHarness(t)
		srv := h.serve(t, []string{"a", "b"}, nil).on(t)
		h.gpu.set(readyPod(rfc3339(t0)))
		h.provA.set(fail(pluginapi.CompletionError{Status: 500, Message: "internal error"}))
		if diff := cmp.Diff(chatReply{Reply: answerTo("hi"), SessionID: "s1"}, srv.ask("s1", "hi")); diff != "" {
			t.Errorf("reply (-want +got):\n%s", diff)
		}
		if diff := cmp.Diff([]string{"https://api.example.com/v1"}, h.provB.endpointsSeen()); diff != "" {
			t.Errorf("b's endpoints (-want +got):\n%s", diff)
		}
	})
	t.Run("model loading stays on a", func(t *testing.T) {
		h := newHarness(t)
		srv := h.serve(t, []string{"a", "b"}, nil).on(t)
		h.gpu.set(loadingPod())
		h.provA.set(fail(pluginapi.CompletionError{Status: 502, Message: "502 Bad Gateway"}))
		if diff := cmp.Diff(chatReply{Reply: replyLoading, SessionID: "s1"}, srv.ask("s1", "hi")); diff != "" {
			t.Errorf("reply (-want +got):\n%s", diff)
		}
		if got := h.provB.calls(); got != 0 {
			t.Errorf("b got %d completions, want 0", got)
		}
	})
	t.Run("asleep stays on a", func(t *testing.T) {
		h := newHarness(t)
		srv := h.serve(t, []string{"a", "b"}, nil).on(t)
		if diff := cmp.Diff(chatReply{Reply: replyWaking, SessionID: "s1"}, srv.ask("s1", "hi")); diff != "" {
			t.Errorf("reply (-want +got):\n%s", diff)
		}
		if got := h.provB.calls(); got != 0 {
			t.Errorf("b got %d completions, want 0", got)
		}
		h.waitStart(t)
	})
}

// TestStoreUnavailable: with the store gone from under the server, every
// turn is the generic 502 and a pod report the documented 503; nothing runs
// or wakes.
func TestStoreUnavailable(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	srv := h.api
	waitAsleep(t, h, srv)
	h.closeCoordinator(t)
	h.gpu.set(readyPod("2026-09-09T12:34:56Z"))
	if err := h.store.Close(); err != nil {
		t.Fatal(err)
	}
	for _, req := range []chatReq{
		{Message: "hi", SessionID: "s1"},
		waitReq("s1"),
		resumeReq("s1", "tok-1"),
	} {
		res := srv.post(req)
		if res.Status != http.StatusBadGateway || res.Body != providerFailed {
			t.Errorf("%+v: %d %q, want 502 %q", req, res.Status, res.Body, providerFailed)
		}
	}
	res := srv.do(http.MethodGet, "/api/pods/qwen", "", "")
	if want := `{"error":"the pod's record could not be read: the store is unavailable"}` + "\n"; res.Status != http.StatusServiceUnavailable || res.Body != want {
		t.Errorf("pod report: %d %q, want 503 %q", res.Status, res.Body, want)
	}
	if got := len(h.logs.find(t, "turn failed")); got != 3 {
		t.Errorf("%d turn failed lines, want 3", got)
	}
	if got := h.provA.calls(); got != 0 {
		t.Errorf("%d completions, want 0", got)
	}
	if got := h.gpu.startCount(); got != 1 {
		t.Errorf("%d starts, want only the wait's 1", got)
	}
}
