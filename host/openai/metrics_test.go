package openai_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/wakeonchat/wakeonchat/host/metrics"
	"github.com/wakeonchat/wakeonchat/host/openai"
	"github.com/wakeonchat/wakeonchat/host/resolve"
	"github.com/wakeonchat/wakeonchat/host/turn"
	"github.com/wakeonchat/wakeonchat/plugins/pluginapi"
)

const plainBody = `{"model":"qwen","messages":[{"role":"user","content":"hi"}]}`

// brokenBody is a model's 200 whose body fails after its first bytes.
type brokenBody struct{ sent bool }

func (b *brokenBody) Read(p []byte) (int, error) {
	if !b.sent {
		b.sent = true
		return copy(p, "data: {\"x\":1}\n\n"), nil
	}
	return 0, errors.New("connection reset")
}

func (*brokenBody) Close() error { return nil }

// TestTurnMetrics: each completion is counted once under what it
// answered, and timed.
func TestTurnMetrics(t *testing.T) {
	tests := []struct {
		name   string
		method string
		body   string
		setup  func(d *door)
		cancel bool // the client left before the answer
		want   string
	}{
		{name: "the model answered", body: plainBody, want: "answered"},
		{name: "the model answered a stream", body: streamBody,
			setup: func(d *door) { d.model.stream = answer("text/event-stream", "data: {}\n\ndata: [DONE]\n\n") }, want: "answered"},
		{name: "asleep: the waking reply", body: streamBody,
			setup: func(d *door) { d.model.stream = fails(asleep()) }, want: "waking"},
		{name: "GET", method: http.MethodGet, want: "method_not_allowed"},
		{name: "not JSON", body: "{", want: "bad_request"},
		{name: "a model no provider has", body: `{"model":"gpt-4","messages":[{"role":"user","content":"hi"}]}`, want: "model_not_found"},
		{name: "the provider failed", body: plainBody, setup: func(d *door) {
			d.model.stream = fails(&resolve.ProviderError{Provider: "qwen", Status: 500, Err: &pluginapi.CompletionError{Status: 500, Message: "HTTP 500"}})
		}, want: "provider_failed"},
		{name: "the model refused the request", body: plainBody, setup: func(d *door) {
			d.model.stream = fails(&resolve.ProviderError{Provider: "qwen", Status: 400, Err: &pluginapi.CompletionError{Status: 400, Message: "HTTP 400"}})
		}, want: "model_error"},
		{name: "the answer broke off", body: streamBody, setup: func(d *door) {
			d.model.stream = func(context.Context, []byte) (*pluginapi.StreamResponse, error) {
				return &pluginapi.StreamResponse{Status: 200, Header: http.Header{"Content-Type": {"text/event-stream"}}, Body: &brokenBody{}}, nil
			}
		}, want: "broke_off"},
		{name: "the host panicked", body: plainBody, setup: func(d *door) {
			d.model.stream = func(context.Context, []byte) (*pluginapi.StreamResponse, error) { panic("adapter bug") }
		}, want: "internal_error"},
		{name: "the client left", body: plainBody, cancel: true, setup: func(d *door) {
			d.model.stream = func(ctx context.Context, _ []byte) (*pluginapi.StreamResponse, error) { return nil, ctx.Err() }
		}, want: "client_left"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := metrics.New(metrics.Options{})
			d := newDoor(t, func(c *openai.Config, _ *turn.Config) { c.Metrics = m })
			if tt.setup != nil {
				tt.setup(d)
			}
			ctx, cancel := context.WithCancel(context.Background())
			if tt.cancel {
				cancel()
			}
			defer cancel()
			method := tt.method
			if method == "" {
				method = http.MethodPost
			}
			r := httptest.NewRequestWithContext(ctx, method, "/v1/chat/completions", strings.NewReader(tt.body))
			r.Header.Set("Content-Type", "application/json")
			io.Copy(io.Discard, do(d.Handler(), r).Result().Body)

			want := `# HELP wakeonchat_turns_total Turns answered, by door (api_chat, openai) and result (answered, a reply key, or an error class).
# TYPE wakeonchat_turns_total counter
wakeonchat_turns_total{door="openai",result="` + tt.want + `"} 1
`
			if err := testutil.GatherAndCompare(m.Registry(), strings.NewReader(want), "wakeonchat_turns_total"); err != nil {
				t.Error(err)
			}
			if n, err := testutil.GatherAndCount(m.Registry(), "wakeonchat_turn_seconds"); err != nil || n != 1 {
				t.Errorf("wakeonchat_turn_seconds: %d series (err %v), want 1", n, err)
			}
		})
	}
}

// A held request is in wakeonchat_held_requests while it is held, and
// counted by what it finally answered.
func TestHeldRequestsGauge(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m := metrics.New(metrics.Options{})
		d := holdDoor(t, 0)
		d.Server = openai.New(openai.Config{
			Providers: []openai.Provider{{Name: "qwen", ModelName: "qwen2.5", Pod: "qwen", Model: d.model}},
			Service:   turn.New(turn.Config{Wake: d.coord, Pods: map[string]turn.PodView{"qwen": d.pod}, Events: d.hub}),
			Hold:      true, HoldMax: 2 * time.Minute, Keepalive: 15 * time.Second,
			Metrics: m,
		})
		held := func() float64 {
			mfs, err := m.Registry().Gather()
			if err != nil {
				t.Fatal(err)
			}
			for _, mf := range mfs {
				if mf.GetName() == "wakeonchat_held_requests" {
					return mf.GetMetric()[0].GetGauge().GetValue()
				}
			}
			t.Fatal("no wakeonchat_held_requests")
			return 0
		}

		wait := serveAsync(d.Handler(), context.Background(), streamBody)
		ctx, leave := context.WithCancel(context.Background())
		waitLeft := serveAsync(d.Handler(), ctx, streamBody)
		time.Sleep(6 * time.Second)
		synctest.Wait()
		if got := held(); got != 2 {
			t.Fatalf("two requests held: held_requests %v, want 2", got)
		}
		leave()
		waitLeft()
		if got := held(); got != 1 {
			t.Errorf("one client left: held_requests %v, want 1", got)
		}
		d.readyNow()
		wait()
		if got := held(); got != 0 {
			t.Errorf("the held request ran: held_requests %v, want 0", got)
		}
		want := `# HELP wakeonchat_turns_total Turns answered, by door (api_chat, openai) and result (answered, a reply key, or an error class).
# TYPE wakeonchat_turns_total counter
wakeonchat_turns_total{door="openai",result="answered"} 1
wakeonchat_turns_total{door="openai",result="client_left"} 1
`
		if err := testutil.GatherAndCompare(m.Registry(), strings.NewReader(want), "wakeonchat_turns_total"); err != nil {
			t.Error(err)
		}
	})
}
