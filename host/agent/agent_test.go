package agent

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/wakeonchat/wakeonchat/host/resolve"
	"github.com/wakeonchat/wakeonchat/host/store"
	"github.com/wakeonchat/wakeonchat/plugins/pluginapi"
)

// fakeModel answers with reply or err and records what it was sent.
type fakeModel struct {
	reply string
	err   error
	mu    sync.Mutex
	sent  [][]pluginapi.Message
	sends []resolve.Send
}

func (f *fakeModel) Complete(_ context.Context, msgs []pluginapi.Message, send resolve.Send) (string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.sent = append(f.sent, msgs)
	f.sends = append(f.sends, send)
	return f.reply, f.err
}

// memHistory is an in-memory History.
type memHistory struct {
	turns     map[string][]store.Message
	appendErr error
}

func (m *memHistory) History(_ context.Context, session string, last int) ([]store.Message, error) {
	h := m.turns[session]
	if last < len(h) {
		h = h[len(h)-last:]
	}
	return h, nil
}

func (m *memHistory) AppendTurn(_ context.Context, session string, user, assistant store.Message) error {
	if m.appendErr != nil {
		return m.appendErr
	}
	if m.turns == nil {
		m.turns = map[string][]store.Message{}
	}
	m.turns[session] = append(m.turns[session], user, assistant)
	return nil
}

func TestProcessFallback(t *testing.T) {
	notReady := resolve.NewNotReadyError("qwen", resolve.Resolution{Status: "EXITED"}, false)
	tests := []struct {
		name         string
		first        error
		wantProvider string
		wantSecond   int  // calls to the second provider
		wantNotReady bool // the error is the not-ready error, through the wrapping
		wantStored   int  // messages stored
	}{
		{"first answers", nil, "a", 0, false, 2},
		{"an eligible failure falls back", &resolve.ProviderError{Provider: "a", Status: 500}, "b", 1, false, 2},
		{"not ready never falls back (D11)", notReady, "", 0, true, 0},
		{"an aborted completion never falls back", &resolve.ProviderError{Provider: "a", Aborted: true}, "", 0, false, 0},
		{"a config error never falls back", &resolve.ConfigError{Provider: "a", Reason: "x"}, "", 0, false, 0},
		{"an unclassified error never falls back", errors.New("boom"), "", 0, false, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := &fakeModel{reply: "from a", err: tt.first}
			b := &fakeModel{reply: "from b"}
			h := &memHistory{}
			ag := New(Config{Chain: []Provider{{"a", a}, {"b", b}}, History: h, HistoryMessages: 20, HistoryBytes: 1 << 10})
			res, err := ag.ProcessHeld(context.Background(), "s1", "hi", nil)
			if err == nil {
				if err := ag.Remember(t.Context(), "s1", "hi", res); err != nil {
					t.Fatal(err)
				}
			}
			if res.Provider != tt.wantProvider {
				t.Errorf("provider = %q, want %q (err %v)", res.Provider, tt.wantProvider, err)
			}
			if len(b.sent) != tt.wantSecond {
				t.Errorf("second provider called %d times, want %d", len(b.sent), tt.wantSecond)
			}
			var nr *resolve.NotReadyError
			if errors.As(err, &nr) != tt.wantNotReady {
				t.Errorf("err = %v, not-ready found %v, want %v", err, !tt.wantNotReady, tt.wantNotReady)
			}
			if got := len(h.turns["s1"]); got != tt.wantStored {
				t.Errorf("stored %d messages, want %d", got, tt.wantStored)
			}
		})
	}
}

func TestMessagesCarryPromptAndHistory(t *testing.T) {
	m := &fakeModel{reply: "r2"}
	h := &memHistory{turns: map[string][]store.Message{"s1": {
		{Role: "user", Content: "q0"}, {Role: "assistant", Content: "r0"},
		{Role: "user", Content: "q1"}, {Role: "assistant", Content: "r1"},
	}}}
	ag := New(Config{Chain: []Provider{{"a", m}}, History: h, SystemPrompt: "be brief", HistoryMessages: 2, HistoryBytes: 1 << 10})
	res, err := ag.ProcessHeld(context.Background(), "s1", "q2", nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := ag.Remember(t.Context(), "s1", "q2", res); err != nil {
		t.Fatal(err)
	}
	if got := len(h.turns["s1"]); got != 6 {
		t.Errorf("%d messages stored, want 6", got)
	}
	want := []pluginapi.Message{
		{Role: "system", Content: "be brief"},
		{Role: "user", Content: "q1"}, {Role: "assistant", Content: "r1"},
		{Role: "user", Content: "q2"},
	}
	if diff := cmp.Diff(want, m.sent[0]); diff != "" {
		t.Errorf("messages (-want +got):\n%s", diff)
	}
}

func TestProcessOn(t *testing.T) {
	a := &fakeModel{reply: "from a"}
	b := &fakeModel{err: &resolve.ProviderError{Provider: "b", Status: 500}}
	other := &fakeModel{reply: "from other"}
	ag := New(Config{Chain: []Provider{{"b", b}, {"a", a}}, Others: []Provider{{"other", other}}, History: &memHistory{}})
	if !ag.Has("other") || ag.Has("nope") || ag.First() != "b" {
		t.Fatalf("Has/First wrong: other %v nope %v first %q", ag.Has("other"), ag.Has("nope"), ag.First())
	}
	// Pinned: no fallback from b to a.
	if _, err := ag.ProcessOn(context.Background(), "s1", "hi", "b", resolve.Retry); err == nil || len(a.sent) != 0 {
		t.Errorf("pinned b: err %v, a called %d times; want an error and no fallback", err, len(a.sent))
	}
	// A provider outside the chain can be pinned.
	if res, err := ag.ProcessOn(context.Background(), "s1", "hi", "other", resolve.Retry); err != nil || res.Reply != "from other" {
		t.Errorf("pinned other: %+v, %v", res, err)
	}
	// The send mode reaches the model as given; the chain sends with Retry.
	if _, err := ag.ProcessOn(context.Background(), "s1", "hi", "a", resolve.Once); err != nil {
		t.Errorf("pinned a: %v", err)
	}
	if _, err := ag.ProcessHeld(context.Background(), "s1", "hi", nil); err != nil {
		t.Errorf("chain: %v", err)
	}
	if diff := cmp.Diff([]resolve.Send{resolve.Once, resolve.Retry}, a.sends); diff != "" {
		t.Errorf("send modes (-want +got):\n%s", diff)
	}
	if _, err := ag.ProcessOn(context.Background(), "s1", "hi", "nope", resolve.Retry); !errors.Is(err, ErrNoProvider) {
		t.Errorf("unknown provider: %v, want ErrNoProvider", err)
	}
}

func TestRememberError(t *testing.T) {
	ag := New(Config{Chain: []Provider{{"a", &fakeModel{reply: "r"}}}, History: &memHistory{appendErr: fmt.Errorf("disk full")}})
	res, err := ag.ProcessHeld(context.Background(), "s1", "q", nil)
	if err != nil || res.Reply != "r" {
		t.Fatalf("got %+v, %v", res, err)
	}
	if err := ag.Remember(t.Context(), "s1", "q", res); err == nil {
		t.Error("a failed store must be an error")
	}
}

func TestEmptyChain(t *testing.T) {
	if _, err := New(Config{History: &memHistory{}}).ProcessHeld(context.Background(), "s", "q", nil); err == nil {
		t.Error("an empty chain must be an error")
	}
}
