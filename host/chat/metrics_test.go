package chat_test

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/wakeonchat/wakeonchat/host/agent"
	"github.com/wakeonchat/wakeonchat/host/chat"
	"github.com/wakeonchat/wakeonchat/host/metrics"
	"github.com/wakeonchat/wakeonchat/host/store"
	"github.com/wakeonchat/wakeonchat/host/turn"
	"github.com/wakeonchat/wakeonchat/machines"
	"github.com/wakeonchat/wakeonchat/plugins/pluginapi"
)

// TestTurnMetrics: every POST /api/chat is counted once under what it
// answered, and timed.
func TestTurnMetrics(t *testing.T) {
	t.Parallel()
	m := metrics.New(metrics.Options{})
	d := newDoor(t, func(c *chat.Config) { c.Metrics = m })
	said := func(d machines.Decision) func(context.Context, turn.Ask, turn.Call[agent.Result]) (turn.Outcome[agent.Result], error) {
		return func(context.Context, turn.Ask, turn.Call[agent.Result]) (turn.Outcome[agent.Result], error) {
			return turn.Outcome[agent.Result]{Said: turn.Said{Pod: "qwen", Decision: d}}, nil
		}
	}
	waking := machines.Decision{Reply: machines.ReplyWaking, Text: replyWaking}
	still := machines.Decision{Reply: machines.ReplyStillWaking, Text: replyStillWaking(1)}

	d.turns.run = said(waking)
	d.post(t, chatReq{Message: "hello", SessionID: "s1"})
	d.turns.run = said(still)
	d.post(t, chatReq{Message: "again", SessionID: "s1"})
	d.turns.wait = func(context.Context, string, string, turn.Call[agent.Result]) (turn.Outcome[agent.Result], error) {
		return turn.Outcome[agent.Result]{Said: turn.Said{Pod: "qwen", Decision: still, Pending: &store.Pending{Key: "k1", Pod: "qwen", Provider: "a"}}}, nil
	}
	d.post(t, chatReq{Message: "hold it", SessionID: "s2", WakeMode: "wait"})
	d.do(t, http.MethodGet, "/api/chat", "", "")
	d.do(t, http.MethodPost, "/api/chat", "application/json", "{")
	d.do(t, http.MethodPost, "/api/chat", "text/plain", `{"message":"hi"}`)
	d.turns.resume = func(context.Context, string, string, func(string) bool, turn.Pinned[agent.Result]) (turn.Outcome[agent.Result], error) {
		return turn.Outcome[agent.Result]{}, turn.ErrNoPending
	}
	d.post(t, chatReq{Message: "resume", SessionID: "s3", WakeMode: "resume", PendingWake: "0123456789abcdef0123456789abcdef"})

	d.turns.run = nil // the model answers
	d.post(t, chatReq{Message: "now?", SessionID: "s1"})
	d.model.complete = func(context.Context, []pluginapi.Message) (string, error) {
		return "", &pluginapi.CompletionError{Status: 400, Message: "HTTP 400: bad"}
	}
	d.post(t, chatReq{Message: "rejected", SessionID: "s4"})
	d.model.complete = func(context.Context, []pluginapi.Message) (string, error) { panic("provider plugin crashed") }
	d.post(t, chatReq{Message: "boom", SessionID: "s5"})

	want := `# HELP wakeonchat_turns_total Turns answered, by door (api_chat, openai) and result (answered, a reply key, or an error class).
# TYPE wakeonchat_turns_total counter
wakeonchat_turns_total{door="api_chat",result="answered"} 1
wakeonchat_turns_total{door="api_chat",result="bad_request"} 1
wakeonchat_turns_total{door="api_chat",result="conflict"} 1
wakeonchat_turns_total{door="api_chat",result="internal_error"} 1
wakeonchat_turns_total{door="api_chat",result="method_not_allowed"} 1
wakeonchat_turns_total{door="api_chat",result="provider_failed"} 1
wakeonchat_turns_total{door="api_chat",result="still_waking"} 2
wakeonchat_turns_total{door="api_chat",result="unsupported_media_type"} 1
wakeonchat_turns_total{door="api_chat",result="waking"} 1
`
	if err := testutil.GatherAndCompare(m.Registry(), strings.NewReader(want), "wakeonchat_turns_total"); err != nil {
		t.Error(err)
	}
	if got := histogramCount(t, m, "wakeonchat_turn_seconds"); got != 10 {
		t.Errorf("wakeonchat_turn_seconds counts %d turns, want 10", got)
	}
}

// histogramCount is the sample count of the one series of a histogram.
func histogramCount(t *testing.T, m *metrics.Metrics, name string) uint64 {
	t.Helper()
	mfs, err := m.Registry().Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() == name && len(mf.GetMetric()) == 1 {
			return mf.GetMetric()[0].GetHistogram().GetSampleCount()
		}
	}
	t.Fatalf("no single series %s", name)
	return 0
}
