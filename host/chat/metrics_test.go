package chat_test

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/wakeonchat/wakeonchat/host/chat"
	"github.com/wakeonchat/wakeonchat/host/metrics"
	"github.com/wakeonchat/wakeonchat/plugins/pluginapi"
)

// TestTurnMetrics: every POST /api/chat is counted once under what it
// answered, and timed.
func TestTurnMetrics(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	m := metrics.New(metrics.Options{})
	api := h.serve(t, []string{"a"}, func(c *chat.Config) { c.Metrics = m })
	// done waits until session's turn is over: then it has been counted.
	done := func(session string) { h.history(t, session) }

	api.ask("s1", "hello") // asleep: waking
	done("s1")
	h.waitStart(t)
	api.ask("s1", "again") // still waking
	done("s1")
	api.turn(chatReq{Message: "hold it", SessionID: "s2", WakeMode: "wait"}) // still waking, a marker
	done("s2")
	api.do(http.MethodGet, "/api/chat", "", "")
	api.do(http.MethodPost, "/api/chat", "application/json", "{")
	api.do(http.MethodPost, "/api/chat", "text/plain", `{"message":"hi"}`)
	api.post(chatReq{Message: "resume", SessionID: "s3", WakeMode: "resume", PendingWake: "0123456789abcdef0123456789abcdef"})
	done("s3")

	h.gpu.set(readyPod(rfc3339(t0)))
	api.ask("s1", "now?")
	done("s1")
	h.provA.set(fail(pluginapi.CompletionError{Status: 400, Message: "HTTP 400: bad"}))
	api.post(chatReq{Message: "rejected", SessionID: "s4"})
	done("s4")
	h.provA.set(func(context.Context, string, pluginapi.CompletionRequest) (string, error) {
		panic("provider plugin crashed")
	})
	api.post(chatReq{Message: "boom", SessionID: "s5"})
	done("s5")

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
