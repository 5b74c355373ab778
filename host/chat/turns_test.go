package chat_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/wakeonchat/wakeonchat/host/agent"
	"github.com/wakeonchat/wakeonchat/host/chat"
	"github.com/wakeonchat/wakeonchat/host/store"
	"github.com/wakeonchat/wakeonchat/plugins/pluginapi"
)

// TestHistory: a not-ready turn stores neither the message nor the policy's
// reply; an answered turn stores both; the next turn sends the system
// prompt, the history and the new message, to the pod's endpoint.
func TestHistory(t *testing.T) {
	t.Parallel()
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
	t.Parallel()
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
	t.Parallel()
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

// blockedHistory is the harness's store whose AppendTurn waits for release,
// telling entered each time one begins.
type blockedHistory struct {
	*store.Store
	entered chan string
	release chan struct{}
}

func (b *blockedHistory) AppendTurn(ctx context.Context, session string, user, assistant store.Message) error {
	b.entered <- session
	<-b.release
	return b.Store.AppendTurn(ctx, session, user, assistant)
}

// TestStoreAfterHandler: an answered turn is stored after its handler
// returns, so a client's next request on the same keep-alive connection (a
// new session) is answered while the first turn is still being stored; the
// first session's slot, Wait and Drain hold until the turn is stored.
func TestStoreAfterHandler(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	hist := &blockedHistory{Store: h.store, entered: make(chan string, 2), release: make(chan struct{})}
	a := h.serve(t, []string{"a"}, func(cfg *chat.Config) {
		cfg.Agent = agent.New(agent.Config{
			Chain: []agent.Provider{{Name: "a", Model: h.models["a"]}}, History: hist,
			SystemPrompt: systemPrompt, HistoryMessages: 20, HistoryBytes: 256 << 10,
		})
	})
	cs := h.servers[len(h.servers)-1]
	release := sync.OnceFunc(func() { close(hist.release) })
	t.Cleanup(release) // runs before the server closes, should the test fail first
	h.gpu.set(readyPod(rfc3339(t0)))

	if got := a.ask("s1", "first").Reply; got != answerTo("first") {
		t.Fatalf("s1: reply %q, want the model's answer", got)
	}
	if got := <-hist.entered; got != "s1" {
		t.Fatalf("storing %q, want s1", got)
	}
	// s1 is still being stored; the same client's next request must not
	// wait for it (httptest's client reuses the idle connection).
	answered := make(chan string, 1)
	go func() {
		b, _ := json.Marshal(chatReq{Message: "second", SessionID: "s2"})
		res, err := a.client.Post(a.url+"/api/chat", "application/json", bytes.NewReader(b))
		if err != nil {
			answered <- err.Error()
			return
		}
		defer res.Body.Close()
		body, _ := io.ReadAll(res.Body)
		answered <- string(body)
	}()
	select {
	case body := <-answered:
		if !strings.Contains(body, answerTo("second")) {
			t.Errorf("s2: body %s, want the model's answer", body)
		}
	case <-time.After(waitLimit):
		t.Fatal("s2 was not answered while s1's turn was being stored")
	}
	if got := <-hist.entered; got != "s2" {
		t.Fatalf("storing %q, want s2", got)
	}

	short, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	if err := cs.Wait(short, "s1"); err == nil {
		t.Error("Wait(s1) returned before s1's turn was stored")
	}
	if err := cs.Drain(short); err == nil {
		t.Error("Drain returned before the turns were stored")
	}

	release()
	ctx, cancel2 := context.WithTimeout(context.Background(), waitLimit)
	defer cancel2()
	if err := cs.Drain(ctx); err != nil {
		t.Fatalf("Drain after the stores: %v", err)
	}
	for _, s := range []string{"s1", "s2"} {
		if got := h.history(t, s); len(got) != 2 {
			t.Errorf("history of %s: %v, want its turn", s, got)
		}
	}
}
