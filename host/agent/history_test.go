package agent

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/wakeonchat/wakeonchat/host/resolve"
	"github.com/wakeonchat/wakeonchat/host/store"
	"github.com/wakeonchat/wakeonchat/plugins/pluginapi"
)

func user(content string) store.Message { return store.Message{Role: store.RoleUser, Content: content} }
func assistant(content string) store.Message {
	return store.Message{Role: store.RoleAssistant, Content: content}
}

// x is a message content of n bytes.
func x(n int) string { return strings.Repeat("x", n) }

func TestFitHistory(t *testing.T) {
	turns := []store.Message{user("q0"), assistant("a0"), user("q1"), assistant("a1")} // 2 bytes each
	tests := []struct {
		name   string
		hist   []store.Message
		budget int
		room   int
		want   []store.Message
	}{
		{"everything fits", turns, 8, 1 << 20, turns},
		{"more than enough", turns, 100, 1 << 20, turns},
		{"an exact fit of the newest turn", turns, 4, 1 << 20, turns[2:]},
		{"a budget of 0 sends none", turns, 0, 1 << 20, []store.Message{}},
		{"no history", nil, 100, 1 << 20, nil},
		// 6 bytes fit a1, q1, a0: a0's question q0 is cut off, so a0 goes too.
		{"an orphan answer is dropped", turns, 6, 1 << 20, turns[2:]},
		{"one byte short of the newest turn", turns, 3, 1 << 20, []store.Message{}},
		// A message is never split, and the first that does not fit ends the
		// history: the small turn before the large one is not sent.
		{"a large newest answer sends nothing", []store.Message{user("q0"), assistant("a0"), user("q1"), assistant(x(700 << 10))},
			256 << 10, 1 << 20, []store.Message{}},
		{"a large answer hides everything before it", []store.Message{user("q0"), assistant(x(300)), user("q1"), assistant("a1")},
			256, 1 << 20, []store.Message{user("q1"), assistant("a1")}},
		{"a large question takes its answer with it", []store.Message{user(x(300)), assistant("a0"), user("q1"), assistant("a1")},
			256, 1 << 20, []store.Message{user("q1"), assistant("a1")}},
		// room counts each message's framing too.
		{"room for one turn and its framing", turns, 100, 4 + 2*messageBytes, turns[2:]},
		{"room one byte short of it", turns, 100, 4 + 2*messageBytes - 1, []store.Message{}},
		{"no room", turns, 100, 0, []store.Message{}},
		{"negative room", turns, 100, -5, []store.Message{}},
		// A history that starts with an answer (history_messages odd) starts
		// at its next question.
		{"an odd count's first answer is dropped", turns[1:], 100, 1 << 20, turns[2:]},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := fitHistory(tt.hist, tt.budget, tt.room)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("fitHistory(budget %d, room %d) (-want +got):\n%s", tt.budget, tt.room, diff)
			}
		})
	}
}

// TestHistoryLimits runs turns through Process: what the model is sent for
// each combination of the history's count and byte caps and the request
// limit.
func TestHistoryLimits(t *testing.T) {
	stored := []store.Message{user("q0"), assistant("a0"), user("q1"), assistant(x(1000)), user("q2"), assistant("a2")}
	sys := pluginapi.Message{Role: "system", Content: "sys"}
	msg := func(m store.Message) pluginapi.Message { return pluginapi.Message{Role: m.Role, Content: m.Content} }
	now := pluginapi.Message{Role: "user", Content: "q3"}
	tests := []struct {
		name            string
		messages, bytes int
		requestBytes    int
		message         string
		want            []pluginapi.Message
	}{
		{"the count caps first", 2, 1 << 20, 0, "q3", []pluginapi.Message{sys, msg(stored[4]), msg(stored[5]), now}},
		{"the bytes cap stops at the large answer", 20, 999, 0, "q3", []pluginapi.Message{sys, msg(stored[4]), msg(stored[5]), now}},
		{"a bytes cap that fits it", 20, 1008, 0, "q3", []pluginapi.Message{sys, msg(stored[2]), msg(stored[3]), msg(stored[4]), msg(stored[5]), now}},
		{"both caps generous", 20, 1 << 20, 0, "q3", []pluginapi.Message{sys, msg(stored[0]), msg(stored[1]), msg(stored[2]), msg(stored[3]), msg(stored[4]), msg(stored[5]), now}},
		{"history_bytes 0 sends none", 20, 0, 0, "q3", []pluginapi.Message{sys, now}},
		{"history_messages 0 sends none", 0, 1 << 20, 0, "q3", []pluginapi.Message{sys, now}},
		// The request limit leaves room for the system prompt, the message
		// and one small turn only.
		{"the request limit trims further", 20, 1 << 20,
			envelopeBytes + 3 + 2 + 4*messageBytes + 4 + 500, "q3", []pluginapi.Message{sys, msg(stored[4]), msg(stored[5]), now}},
		{"a message as large as the request allows sends no history", 20, 1 << 20,
			envelopeBytes + 2*messageBytes + 3 + 1000, x(1000), []pluginapi.Message{sys, {Role: "user", Content: x(1000)}}},
	}
	// The same messages go whether the history reads all of the count
	// (memHistory) or stops at the byte cap (the store, a BoundedHistory).
	histories := []struct {
		name string
		open func(t *testing.T) History
	}{
		{"all of the count", func(*testing.T) History {
			return &memHistory{turns: map[string][]store.Message{"s1": stored}}
		}},
		{"the store, bounded", func(t *testing.T) History {
			s, err := store.Open(filepath.Join(t.TempDir(), "wake.db"))
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { s.Close() })
			for i := 0; i < len(stored); i += 2 {
				if err := s.AppendTurn(t.Context(), "s1", stored[i], stored[i+1]); err != nil {
					t.Fatal(err)
				}
			}
			return s
		}},
	}
	for _, hist := range histories {
		h := hist.open(t)
		for _, tt := range tests {
			t.Run(hist.name+"/"+tt.name, func(t *testing.T) {
				m := &fakeModel{reply: "r"}
				ag := New(Config{Chain: []Provider{{"a", m}}, History: h, SystemPrompt: "sys",
					HistoryMessages: tt.messages, HistoryBytes: tt.bytes, RequestBytes: tt.requestBytes})
				if _, err := ag.ProcessHeld(context.Background(), "s1", tt.message, nil); err != nil {
					t.Fatal(err)
				}
				if diff := cmp.Diff(tt.want, m.sent[0]); diff != "" {
					t.Errorf("messages sent (-want +got):\n%s", diff)
				}
			})
		}
	}
}

// boundedHistory is a BoundedHistory that records the caps it is read
// with.
type boundedHistory struct {
	memHistory
	last, maxBytes []int
}

func (b *boundedHistory) HistoryWithin(ctx context.Context, session string, last, maxBytes int) ([]store.Message, error) {
	b.last, b.maxBytes = append(b.last, last), append(b.maxBytes, maxBytes)
	return b.History(ctx, session, last)
}

// TestHistoryReadBound: a BoundedHistory is read with the count and the
// smaller of history_bytes and the room the request leaves for history
// contents; a History without it is read with the count alone.
func TestHistoryReadBound(t *testing.T) {
	const requestBytes = 64 << 10
	room := func(message string) int {
		return requestBytes - envelopeBytes - 2*messageBytes - len("sys") - len(message)
	}
	tests := []struct {
		name         string
		historyBytes int
		message      string
		want         int
	}{
		{"history_bytes is the smaller", 1000, "q", 1000},
		{"the room is the smaller", 1 << 20, "q", room("q")},
		{"a large message leaves less room", 60 << 10, x(10 << 10), room(x(10 << 10))},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := &boundedHistory{}
			ag := New(Config{Chain: []Provider{{"a", &fakeModel{reply: "r"}}}, History: h, SystemPrompt: "sys",
				HistoryMessages: 20, HistoryBytes: tt.historyBytes, RequestBytes: requestBytes})
			if _, err := ag.messages(t.Context(), "s1", tt.message); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff([]int{20}, h.last); diff != "" {
				t.Errorf("counts read (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff([]int{tt.want}, h.maxBytes); diff != "" {
				t.Errorf("byte caps read (-want +got):\n%s", diff)
			}
		})
	}
}

// TestMessageTooLarge: a message that cannot fit with the system prompt is
// refused before any model is asked, by Process and ProcessOn alike.
func TestMessageTooLarge(t *testing.T) {
	m := &fakeModel{reply: "r"}
	const requestBytes = 64 << 10
	ag := New(Config{Chain: []Provider{{"a", m}}, History: &memHistory{}, SystemPrompt: "sys",
		HistoryMessages: 20, HistoryBytes: 1 << 20, RequestBytes: requestBytes})
	if got, want := ag.MaxMessageBytes(), requestBytes-envelopeBytes-2*messageBytes-3; got != want {
		t.Fatalf("MaxMessageBytes = %d, want %d", got, want)
	}
	if _, err := ag.ProcessHeld(context.Background(), "s1", x(ag.MaxMessageBytes()), nil); err != nil {
		t.Errorf("a message of exactly MaxMessageBytes: %v", err)
	}
	if _, err := ag.ProcessHeld(context.Background(), "s1", x(ag.MaxMessageBytes()+1), nil); !errors.Is(err, ErrTooLarge) {
		t.Errorf("Process of a message one byte over: %v, want ErrTooLarge", err)
	}
	if _, err := ag.ProcessOn(context.Background(), "s1", x(ag.MaxMessageBytes()+1), "a", resolve.Retry); !errors.Is(err, ErrTooLarge) {
		t.Errorf("ProcessOn of a message one byte over: %v, want ErrTooLarge", err)
	}
	if len(m.sent) != 1 {
		t.Errorf("the model was asked %d times, want once (for the message that fits)", len(m.sent))
	}
	if got := New(Config{}).MaxMessageBytes(); got != DefaultRequestBytes-envelopeBytes-2*messageBytes {
		t.Errorf("MaxMessageBytes with the default request limit = %d", got)
	}
}
