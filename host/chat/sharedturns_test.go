package chat_test

import (
	"context"
	"errors"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/wakeonchat/wakeonchat/host/chat"
	"github.com/wakeonchat/wakeonchat/host/store"
)

// fakeTurns is a store.Turns that another host's turns are scripted into:
// busy sessions are refused, a set err fails every take; every call is kept
// in order.
type fakeTurns struct {
	mu    sync.Mutex
	busy  map[string]bool
	err   error
	calls []string
}

var _ store.Turns = (*fakeTurns)(nil)

func (f *fakeTurns) TakeTurn(_ context.Context, session string) (bool, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, "take "+session)
	if f.err != nil {
		return false, f.err
	}
	return !f.busy[session], nil
}

func (f *fakeTurns) FinishTurn(_ context.Context, session string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, "finish "+session)
	return nil
}

func (f *fakeTurns) ReleaseTurn(_ context.Context, session string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, "release "+session)
	return nil
}

func (f *fakeTurns) took() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.calls)
}

// TestSharedTurns: with Config.Turns, a turn that may reach a model also
// holds its session on the store the hosts share. A turn the machine
// answers (the pod is not ready) calls no model and stores nothing: it
// takes no hold, even for a session another host runs a turn of. Once the
// model is ready, a session another host runs is 409; a store that fails
// is the generic 502; an answered turn finishes its hold before its reply
// and releases it after storing.
func TestSharedTurns(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	turns := &fakeTurns{busy: map[string]bool{"elsewhere": true}}
	a := h.serve(t, []string{"a"}, func(c *chat.Config) { c.Turns = turns })

	if got := a.ask("elsewhere", "hi").Reply; got != replyWaking {
		t.Errorf("not ready, a session another host runs: %q, want the waking reply", got)
	}
	if got := a.ask("s1", "hi").Reply; got == "" {
		t.Errorf("not ready: no reply")
	}
	if got := turns.took(); len(got) != 0 {
		t.Errorf("turns the machine answered took the shared turn: %q", got)
	}
	h.gpu.set(readyPod(rfc3339(t0)))
	if r := a.post(chatReq{Message: "hi", SessionID: "elsewhere"}); r.Status != http.StatusConflict ||
		strings.TrimSpace(r.Body) != `{"error":"a turn is already in flight for this session"}` {
		t.Errorf("a session another host runs: %d %s, want 409", r.Status, r.Body)
	}
	if got := a.ask("s1", "what is 2+2?").Reply; got != answerTo("what is 2+2?") {
		t.Errorf("ready: %q, want the answer", got)
	}
	for _, s := range h.servers {
		s.Wait(context.Background(), "s1")
	}
	want := []string{"take elsewhere", "take s1", "finish s1", "release s1"}
	if diff := cmp.Diff(want, turns.took()); diff != "" {
		t.Errorf("calls of the shared turns (-want +got):\n%s", diff)
	}

	turns.err = errors.New("store: take a lease: PostgreSQL ECONNREFUSED")
	if r := a.post(chatReq{Message: "hi", SessionID: "s2"}); r.Status != http.StatusBadGateway || strings.TrimSpace(r.Body) != `{"error":"the agent provider failed"}` {
		t.Errorf("the shared store failing: %d %s, want the generic 502", r.Status, r.Body)
	}
	if len(h.logs.find(t, "turn failed")) == 0 {
		t.Error("no turn failed line for the store's failure")
	}
}
