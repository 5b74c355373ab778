package chat_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/wakeonchat/wakeonchat/host/store"
	"github.com/wakeonchat/wakeonchat/plugins/pluginapi"
)

// TestHistory: a not-ready turn stores neither the message nor the policy's
// reply; an answered turn stores both; the next turn sends the system
// prompt, the history and the new message, to the pod's endpoint.
func TestHistory(t *testing.T) {
	h := newHarness(t)

	if got := h.api.ask("s1", "are you there?").Reply; got != replyWaking {
		t.Fatalf("asleep: reply %q, want the waking reply", got)
	}
	if got := h.history(t, "s1"); got != nil {
		t.Errorf("after a not-ready turn: history %v, want none", got)
	}

	h.gpu.set(readyPod(rfc3339(t0)))
	if diff := cmp.Diff(chatReply{Reply: answerTo("what is 2+2?"), SessionID: "s1"}, h.api.ask("s1", "what is 2+2?")); diff != "" {
		t.Errorf("first answered turn (-want +got):\n%s", diff)
	}
	want := []store.Message{
		{Role: "user", Content: "what is 2+2?"},
		{Role: "assistant", Content: answerTo("what is 2+2?")},
	}
	if diff := cmp.Diff(want, h.history(t, "s1")); diff != "" {
		t.Errorf("history after one turn (-want +got):\n%s", diff)
	}

	h.api.ask("s1", "and 3+3?")
	h.api.ask("s2", "hello")
	wantReqs := []pluginapi.CompletionRequest{
		{Model: modelName, Messages: []pluginapi.Message{
			{Role: "system", Content: systemPrompt},
			{Role: "user", Content: "what is 2+2?"},
		}},
		{Model: modelName, Messages: []pluginapi.Message{
			{Role: "system", Content: systemPrompt},
			{Role: "user", Content: "what is 2+2?"},
			{Role: "assistant", Content: answerTo("what is 2+2?")},
			{Role: "user", Content: "and 3+3?"},
		}},
		// Another session sees none of s1's history.
		{Model: modelName, Messages: []pluginapi.Message{
			{Role: "system", Content: systemPrompt},
			{Role: "user", Content: "hello"},
		}},
	}
	if diff := cmp.Diff(wantReqs, h.provA.requests()); diff != "" {
		t.Errorf("completion requests (-want +got):\n%s", diff)
	}
	ep := proxyURL + "/v1"
	if diff := cmp.Diff([]string{ep, ep, ep}, h.provA.endpointsSeen()); diff != "" {
		t.Errorf("endpoints (-want +got):\n%s", diff)
	}
	want = append(want,
		store.Message{Role: "user", Content: "and 3+3?"},
		store.Message{Role: "assistant", Content: answerTo("and 3+3?")})
	if diff := cmp.Diff(want, h.history(t, "s1")); diff != "" {
		t.Errorf("history after two turns (-want +got):\n%s", diff)
	}
	if got := h.startsInTheEnd(t); got != 1 {
		t.Errorf("%d starts, want 1", got)
	}
}

// TestConcurrentAsksWakeOnce: 500 sessions ask an asleep pod at once while
// the start hangs. Exactly one start goes out; every turn is answered 200
// without waiting for it — one waking reply, the rest still waking.
func TestConcurrentAsksWakeOnce(t *testing.T) {
	h := newHarness(t)
	release := make(chan struct{})
	h.gpu.onStart(func(ctx context.Context, _ string) (pluginapi.StartResult, error) {
		select {
		case <-release:
		case <-ctx.Done():
		}
		return pluginapi.StartResult{Requested: true, TimedOut: true, TimeoutMs: 3000}, nil
	})

	const n = 500
	results := make([]<-chan asyncResult, n)
	for i := range n {
		results[i] = h.api.postAsync(chatReq{Message: "wake up", SessionID: fmt.Sprintf("s%d", i)})
	}
	counts := map[string]int{}
	for i, ch := range results {
		r := receive(t, ch)
		if r.Status != http.StatusOK {
			t.Errorf("s%d: status %d, body %s", i, r.Status, r.Body)
			continue
		}
		got := decodeReply(t, r.Body)
		if got.SessionID != fmt.Sprintf("s%d", i) {
			t.Errorf("s%d: answered as session %q", i, got.SessionID)
		}
		counts[got.Reply]++
	}
	close(release)
	want := map[string]int{replyWaking: 1, replyStillWaking(0): n - 1}
	if diff := cmp.Diff(want, counts); diff != "" {
		t.Errorf("replies (-want +got):\n%s", diff)
	}
	if got := h.startsInTheEnd(t); got != 1 {
		t.Errorf("%d starts, want exactly 1", got)
	}
	if got := len(h.logs.find(t, "provider not ready for pod qwen (status EXITED) → wake")); got != 1 {
		t.Errorf("%d wake decisions, want 1", got)
	}
}

// TestNextTurnRightAfterTheReply: a client that sends its next turn the
// moment it has read a reply, on another connection, never gets a 409: the
// answered turn is still being stored, and the next one waits for it, then
// sees it in its history.
func TestNextTurnRightAfterTheReply(t *testing.T) {
	h := newHarness(t)
	h.gpu.set(readyPod(rfc3339(t0)))
	clients := []*http.Client{
		{Transport: &http.Transport{}},
		{Transport: &http.Transport{}},
	}
	defer func() {
		for _, c := range clients {
			c.CloseIdleConnections()
		}
	}()
	for i := range 60 {
		body := fmt.Sprintf(`{"message":"turn %d","sessionId":"s1"}`, i)
		res, err := clients[i%2].Post(h.api.url+"/api/chat", "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(res.Body)
		res.Body.Close()
		if res.StatusCode != http.StatusOK {
			t.Fatalf("turn %d: %d %s", i, res.StatusCode, b)
		}
	}
	reqs := h.provA.requests()
	last := reqs[len(reqs)-1].Messages
	// system + 20 history messages (history_messages) + the new one.
	if got := len(last); got != 22 {
		t.Errorf("the last turn carried %d messages, want 22", got)
	}
	if got, want := last[len(last)-2].Content, answerTo("turn 58"); got != want {
		t.Errorf("the last turn's history ends with %q, want %q", got, want)
	}
}
