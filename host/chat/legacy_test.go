package chat_test

import (
	"context"
	"fmt"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/wakeonchat/wakeonchat/plugins/pluginapi"
)

// TestLegacyWakeSequence is the design's sequence (chat.test.js, #712): ask,
// wake, ask again inside the window, the inclusive 15-minute edge, the
// re-wake after it, and a fresh cooldown measured from the new wake.
func TestLegacyWakeSequence(t *testing.T) {
	t.Parallel()
	h := newHarness(t)

	// 12:26:25, the pod is EXITED: the first ask wakes it, and the turn is
	// answered 200 in a model answer's shape.
	got := h.api.ask("s1", "hello?")
	if diff := cmp.Diff(chatReply{Reply: replyWaking, SessionID: "s1"}, got); diff != "" {
		t.Errorf("first ask (-want +got):\n%s", diff)
	}
	h.waitStart(t)
	if n := len(h.logs.find(t, "provider not ready for pod qwen (status EXITED) → wake")); n != 1 {
		t.Errorf("%d wake decision lines, want 1; the log:\n%s", n, h.logs)
	}
	h.waitOutcome(t)
	h.logs.one(t, inFlightLine)

	// The conductor creates the replacement pod. Three minutes on, the
	// second ask waits and starts nothing.
	h.gpu.set(creatingPod())
	h.armed(t, 1) // the wake's watch
	h.clock.Advance(3 * time.Minute)
	if diff := cmp.Diff(chatReply{Reply: replyStillWaking(3), SessionID: "s1"}, h.api.ask("s1", "hello?")); diff != "" {
		t.Errorf("ask at 3 min (-want +got):\n%s", diff)
	}
	if n := len(h.logs.find(t, "provider not ready for pod qwen (status CREATED) → wait")); n != 1 {
		t.Errorf("%d wait decision lines, want 1; the log:\n%s", n, h.logs)
	}

	// Exactly 15 minutes after the wake: the edge is inside the window.
	h.gpu.set(asleepPod())
	h.clock.Advance(12 * time.Minute)
	if diff := cmp.Diff(chatReply{Reply: replyStillWaking(15), SessionID: "s1"}, h.api.ask("s1", "hello?")); diff != "" {
		t.Errorf("ask at exactly 15 min (-want +got):\n%s", diff)
	}
	if got := h.gpu.startCount(); got != 1 {
		t.Errorf("%d starts inside the window, want 1", got)
	}

	// 15 min + 1 ms: beyond the window, wake again with #712's reply.
	h.clock.Advance(time.Millisecond)
	if diff := cmp.Diff(chatReply{Reply: replyRewake, SessionID: "s1"}, h.api.ask("s1", "hello?")); diff != "" {
		t.Errorf("ask at 15 min + 1 ms (-want +got):\n%s", diff)
	}
	h.waitStart(t)

	// A minute later the cooldown counts from the new wake.
	h.clock.Advance(time.Minute)
	if diff := cmp.Diff(chatReply{Reply: replyStillWaking(1), SessionID: "s1"}, h.api.ask("s1", "hello?")); diff != "" {
		t.Errorf("ask 1 min after the re-wake (-want +got):\n%s", diff)
	}
	rec, err := h.coord.Record(t.Context(), "qwen")
	if err != nil {
		t.Fatal(err)
	}
	if want := t0.Add(15*time.Minute + time.Millisecond); !rec.WakeRequestedAt.Equal(want) {
		t.Errorf("wakeRequestedAt %v, want %v", rec.WakeRequestedAt, want)
	}
	if got := h.provA.calls(); got != 0 {
		t.Errorf("the prompt was sent %d times to a sleeping pod, want 0", got)
	}
	if got := h.history(t, "s1"); got != nil {
		t.Errorf("not-ready turns stored %v, want nothing", got)
	}
	if got := h.startsInTheEnd(t); got != 2 {
		t.Errorf("%d starts, want 2", got)
	}
}

// TestLegacyWakeAgainBeyondTheWindow: every gap beyond the window wakes
// exactly once more. Without an outcome the reply is #712's neutral one; a
// gap past the 35-minute watch lets the watch record never-ready first, and
// the reply names that wake (D12).
func TestLegacyWakeAgainBeyondTheWindow(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		gap       time.Duration
		watchLine string // the line the watch logs first, "" for none
		want      string
	}{
		{"15 min + 1 ms", 15*time.Minute + time.Millisecond, "", replyRewake},
		{"22 min", 22 * time.Minute, "", replyRewake},
		{"647 min", 647 * time.Minute, "wake never-ready for pod qwen: not ready 647 min after the request at 12:26 UTC",
			replyNeverReady("12:26 UTC")},
		{"2796 min", 2796 * time.Minute, "wake never-ready for pod qwen: not ready 2796 min after the request at 2026-09-09 12:26 UTC",
			replyNeverReady("2026-09-09 12:26 UTC")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t)
			h.api.on(t).ask("s1", "hi")
			h.waitStart(t)
			h.armed(t, 1)
			h.clock.Advance(tt.gap)
			if tt.watchLine != "" {
				h.waitWatchEnd(t)
				if l := h.logs.one(t, tt.watchLine); l.Level != "ERROR" {
					t.Errorf("never-ready logged at %s, want ERROR", l.Level)
				}
			}
			if diff := cmp.Diff(chatReply{Reply: tt.want, SessionID: "s1"}, h.api.on(t).ask("s1", "hi")); diff != "" {
				t.Errorf("ask after %v (-want +got):\n%s", tt.gap, diff)
			}
			h.waitStart(t)
			// The new wake has its own window.
			h.clock.Advance(2 * time.Minute)
			if diff := cmp.Diff(chatReply{Reply: replyStillWaking(2), SessionID: "s1"}, h.api.on(t).ask("s1", "hi")); diff != "" {
				t.Errorf("ask 2 min after the new wake (-want +got):\n%s", diff)
			}
			if got := h.provA.calls(); got != 0 {
				t.Errorf("the prompt was replayed: %d completion(s), want 0", got)
			}
			if got := h.startsInTheEnd(t); got != 2 {
				t.Errorf("%d starts, want exactly one more than the first: 2", got)
			}
		})
	}
}

// TestLegacyNotReadyReplies: the first not-ready turn in each state.
func TestLegacyNotReadyReplies(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		pod       pluginapi.Pod
		complete  func(context.Context, string, pluginapi.CompletionRequest) (string, error)
		want      string
		wantLine  string
		wantCalls int // completions
		wantStart int
	}{
		{"asleep", asleepPod(), nil, replyWaking,
			"provider not ready for pod qwen (status EXITED) → wake", 0, 1},
		{"being created", creatingPod(), nil, replyWaking,
			"provider not ready for pod qwen (status CREATED) → wake", 0, 1},
		{"unreadable", unreadablePod(), nil, replyUnreadable,
			"provider not ready for pod qwen (status unknown) → wait", 0, 0},
		// D7: RUNNING, and the proxy's 502 survives the one re-resolve.
		{"model loading (502)", loadingPod(), fail(pluginapi.CompletionError{Status: 502, Message: "502 Bad Gateway"}), replyLoading,
			"provider not ready for pod qwen (status RUNNING, model loading) → wait", 2, 0},
		{"model loading (reset)", loadingPod(), fail(pluginapi.CompletionError{TransportFailure: true, Message: "ECONNRESET"}), replyLoading,
			"provider not ready for pod qwen (status RUNNING, model loading) → wait", 2, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t)
			h.gpu.set(tt.pod)
			h.provA.set(tt.complete)
			if diff := cmp.Diff(chatReply{Reply: tt.want, SessionID: "s1"}, h.api.on(t).ask("s1", "hi")); diff != "" {
				t.Errorf("reply (-want +got):\n%s", diff)
			}
			if l := h.logs.find(t, tt.wantLine); len(l) != 1 || l[0].Level != "INFO" {
				t.Errorf("decision lines %+v, want one INFO %q; the log:\n%s", l, tt.wantLine, h.logs)
			}
			if got := h.provA.calls(); got != tt.wantCalls {
				t.Errorf("%d completions, want %d", got, tt.wantCalls)
			}
			if got := h.history(t, "s1"); got != nil {
				t.Errorf("history %v, want none", got)
			}
			if got := h.startsInTheEnd(t); got != tt.wantStart {
				t.Errorf("%d starts, want %d", got, tt.wantStart)
			}
		})
	}
}

// TestLegacyLoadingThenStuck follows a wake whose pod comes up RUNNING but
// whose model never answers: loading with the wake's clock, then, past the
// 20-minute ceiling, the stuck reply and an error-level line (D7, D9).
func TestLegacyLoadingThenStuck(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	h.api.ask("s1", "hi")
	h.waitStart(t)

	h.gpu.set(loadingPod())
	h.provA.set(fail(pluginapi.CompletionError{Status: 502, Message: "<!DOCTYPE html>"}))
	h.advance(t, 6*time.Minute)
	if diff := cmp.Diff(chatReply{Reply: replyLoadingWaking(6), SessionID: "s1"}, h.api.ask("s1", "hi")); diff != "" {
		t.Errorf("ask at 6 min (-want +got):\n%s", diff)
	}
	h.advance(t, 19*time.Minute)
	if diff := cmp.Diff(chatReply{Reply: replyStuck(25), SessionID: "s1"}, h.api.ask("s1", "hi")); diff != "" {
		t.Errorf("ask at 25 min (-want +got):\n%s", diff)
	}
	const stuck = "provider not ready for pod qwen (status RUNNING, model loading) → wait — STUCK: up but not answering"
	if l := h.logs.find(t, stuck); len(l) != 1 || l[0].Level != "ERROR" {
		t.Errorf("stuck lines %+v, want one at ERROR; the log:\n%s", l, h.logs)
	}
	if got := h.provA.calls(); got != 4 {
		t.Errorf("%d completions, want 4 (one try and one retry per turn)", got)
	}
	if got := h.startsInTheEnd(t); got != 1 {
		t.Errorf("%d starts, want 1: loading never wakes", got)
	}
}

// TestLegacyStartOutcomes: each start outcome gets its operator line (#684),
// the turn is answered 200 whatever the plugin does, and the next ask reads
// the outcome: a wake in flight (also one whose answer was lost) keeps
// waiting, a refused or failed one wakes again at once (D12).
func TestLegacyStartOutcomes(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name         string
		start        func(context.Context, string) (pluginapi.StartResult, error)
		wantLine     string // "(*X*)" stands for any parenthesis naming X
		wantLevel    string
		wantPanicked bool
		wantNext     string
		wantStarts   int
	}{
		{"in flight after the client's timeout", nil, inFlightLine, "INFO", false, replyStillWaking(1), 1},
		{"accepted", func(context.Context, string) (pluginapi.StartResult, error) {
			return pluginapi.StartResult{Requested: true, Status: 202}, nil
		}, "wake requested for pod qwen: accepted status=202", "INFO", false, replyStillWaking(1), 1},
		{"refused", func(context.Context, string) (pluginapi.StartResult, error) {
			return pluginapi.StartResult{Status: 409}, nil
		}, "wake refused for pod qwen: status=409", "ERROR", false, replyRefused(409), 2},
		{"refused for want of the token", func(context.Context, string) (pluginapi.StartResult, error) {
			return pluginapi.StartResult{Status: 401}, nil
		}, "wake refused for pod qwen: status=401 (*RIG_WAKE_TOKEN*)", "ERROR", false, replyRefused(401), 2},
		{"never sent", func(context.Context, string) (pluginapi.StartResult, error) {
			return pluginapi.StartResult{Error: "ECONNREFUSED"}, nil
		}, "wake failed for pod qwen: ECONNREFUSED", "ERROR", false, replyWakeFailed, 2},
		// The plugin died with the request in its hands: whether it went out
		// is unknown, so it is in flight and watched, like a client timeout.
		{"the start's answer was lost", func(context.Context, string) (pluginapi.StartResult, error) {
			return pluginapi.StartResult{}, fmt.Errorf("dial tcp 10.0.0.7:8080: %w", syscall.ECONNREFUSED)
		}, "wake requested for pod qwen: in flight (the start's answer was lost: the GPU plugin stopped during the call; watching the pod)",
			"INFO", false, replyStillWaking(1), 1},
		{"the plugin panics", func(context.Context, string) (pluginapi.StartResult, error) {
			panic("gpu plugin crashed")
		}, "wake failed for pod qwen: no result", "ERROR", true, replyWakeFailed, 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t)
			h.gpu.onStart(tt.start)
			if diff := cmp.Diff(chatReply{Reply: replyWaking, SessionID: "s1"}, h.api.on(t).ask("s1", "hi")); diff != "" {
				t.Errorf("first ask (-want +got):\n%s", diff)
			}
			h.waitOutcome(t)
			l := h.logs.logged(t, tt.wantLine, func(l logLine) bool { return lineMatches(tt.wantLine, l.Msg) })
			if l.Level != tt.wantLevel {
				t.Errorf("%q at %s, want %s", tt.wantLine, l.Level, tt.wantLevel)
			}
			if got := l.Attrs["panicked"] == true; got != tt.wantPanicked {
				t.Errorf("panicked attribute %v, want %v", l.Attrs["panicked"], tt.wantPanicked)
			}
			if res := h.api.on(t).do("GET", "/healthz", "", ""); res.Status != 200 {
				t.Errorf("healthz %d after the start, want 200", res.Status)
			}
			h.clock.Advance(time.Minute)
			if diff := cmp.Diff(chatReply{Reply: tt.wantNext, SessionID: "s1"}, h.api.on(t).ask("s1", "hi")); diff != "" {
				t.Errorf("next ask (-want +got):\n%s", diff)
			}
			if got := h.startsInTheEnd(t); got != tt.wantStarts {
				t.Errorf("%d starts, want %d", got, tt.wantStarts)
			}
		})
	}
}

// TestLegacyReadyThenStopped: the watch records that the wake became ready;
// a turn runs; the pod idles out and the old proxy answers 404; the next ask
// says when it was ready and wakes it again (D6, D12).
func TestLegacyReadyThenStopped(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	h.api.ask("s1", "hi")
	h.waitStart(t)

	h.gpu.set(readyPod("2026-09-09T12:34:10Z"))
	h.armed(t, 1)
	h.clock.Advance(8 * time.Minute)
	h.waitWatchEnd(t)
	if l := h.logs.one(t, "wake ready for pod qwen: ready since 12:34 UTC"); l.Level != "INFO" {
		t.Errorf("ready line at %s, want INFO", l.Level)
	}
	if diff := cmp.Diff(chatReply{Reply: answerTo("hi again"), SessionID: "s1"}, h.api.ask("s1", "hi again")); diff != "" {
		t.Errorf("turn on the ready pod (-want +got):\n%s", diff)
	}

	h.gpu.set(asleepPod())
	h.provA.set(fail(pluginapi.CompletionError{Status: 404, Message: "404 Not Found"}))
	h.clock.Advance(30 * time.Minute)
	if diff := cmp.Diff(chatReply{Reply: replyReadyThenStopped("12:34 UTC", 9), SessionID: "s1"}, h.api.ask("s1", "still there?")); diff != "" {
		t.Errorf("ask after the idle stop (-want +got):\n%s", diff)
	}
	h.waitStart(t)
	if got := h.provA.calls(); got != 2 {
		t.Errorf("%d completions, want 2 (the answered turn, the stale proxy's 404)", got)
	}
	if got := len(h.history(t, "s1")); got != 2 {
		t.Errorf("%d stored messages, want 2 (only the answered turn)", got)
	}
	if got := h.startsInTheEnd(t); got != 2 {
		t.Errorf("%d starts, want 2", got)
	}
}

// lineMatches reports whether msg is want, where a trailing "(*X*)" in want
// stands for any parenthesised remark naming X: the wording of the token
// hint (rig-conductor#2369) is machines' to choose, naming the variable is
// the contract.
func lineMatches(want, msg string) bool {
	head, hint, ok := strings.Cut(want, "(*")
	if !ok {
		return want == msg
	}
	hint = strings.TrimSuffix(hint, "*)")
	rest, ok := strings.CutPrefix(msg, head+"(")
	return ok && strings.HasSuffix(rest, ")") && strings.Contains(rest, hint)
}

// TestLegacyCrashed: the wake's boot answered a turn; then the RUNNING
// pod's model stops answering (the proxy's 502 survives the re-resolve).
// Each such turn is told the model crashed, with when it last answered, at
// ERROR with CRASHED, and wakes nothing. An answer, or the readySince of a
// later boot, makes it ready again; a readySince of the boot that crashed
// does not.
func TestLegacyCrashed(t *testing.T) {
	t.Parallel()
	const crashedLine = "provider not ready for pod qwen (status RUNNING, model loading) → wait — CRASHED: was answering, stopped while RUNNING"
	tests := []struct {
		name      string
		then      func(t *testing.T, h *harness)
		wantState string
	}{
		{"an answer", func(t *testing.T, h *harness) {
			h.provA.set(nil)
			if diff := cmp.Diff(chatReply{Reply: answerTo("and now?"), SessionID: "s1"}, h.api.on(t).ask("s1", "and now?")); diff != "" {
				t.Errorf("ask once it answers (-want +got):\n%s", diff)
			}
		}, "ready"},
		{"a readySince of a later boot", func(t *testing.T, h *harness) {
			h.gpu.set(readyPod(rfc3339(h.clock.Now())))
		}, "ready"},
		{"a readySince of the boot that crashed", func(t *testing.T, h *harness) {
			h.gpu.set(readyPod("2026-09-09T12:35:00Z"))
		}, "crashed"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t)
			crashedPod(t, h) // answered at 12:35, then a 502 turn
			h.clock.Advance(2 * time.Minute)
			if diff := cmp.Diff(chatReply{Reply: replyCrashed("12:35 UTC"), SessionID: "s1"}, h.api.on(t).ask("s1", "hello?")); diff != "" {
				t.Errorf("second ask on the crashed model (-want +got):\n%s", diff)
			}
			if l := h.logs.find(t, crashedLine); len(l) != 2 || l[0].Level != "ERROR" || l[1].Level != "ERROR" ||
				!strings.Contains(l[0].Msg, "CRASHED") {
				t.Errorf("crashed lines %+v, want two at ERROR with CRASHED; the log:\n%s", l, h.logs)
			}
			if got := h.gpu.startCount(); got != 1 {
				t.Errorf("%d starts, want 1: a crashed model is not woken", got)
			}
			tt.then(t, h)
			if got := getPod(t, h.api.on(t), "qwen")["state"]; got != tt.wantState {
				t.Errorf("state %v, want %s", got, tt.wantState)
			}
			if got := h.startsInTheEnd(t); got != 1 {
				t.Errorf("%d starts in the end, want 1", got)
			}
		})
	}
}
