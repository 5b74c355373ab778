package resolve

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/wakeonchat/wakeonchat/plugins/pluginapi"
)

// fakeStreamer is a Provider that is a Streamer: Stream answers its script
// in order and records every endpoint and body.
type fakeStreamer struct {
	mu      sync.Mutex
	script  []error // nil: a 200
	sent    []string
	bodies  []string
	answers int
}

func (f *fakeStreamer) Complete(ctx context.Context, endpoint string, req pluginapi.CompletionRequest) (string, error) {
	return pluginapi.CompleteVia(ctx, f, endpoint, req)
}

func (f *fakeStreamer) Stream(_ context.Context, req pluginapi.StreamRequest) (*pluginapi.StreamResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.sent = append(f.sent, req.Endpoint)
	f.bodies = append(f.bodies, string(req.Body))
	if len(f.script) == 0 {
		return nil, errors.New("fake: Stream beyond script")
	}
	err := f.script[0]
	f.script = f.script[1:]
	if err != nil {
		return nil, err
	}
	f.answers++
	return &pluginapi.StreamResponse{Status: 200, Header: http.Header{},
		Body: io.NopCloser(strings.NewReader(`{"choices":[{"message":{"content":"hello"}}]}`))}, nil
}

// The door's calls take a body as it is, with Complete's re-resolve and
// retry before the answer's head (Retry) or none (Once), and tell
// the observer when the model answered.
func TestModelStream(t *testing.T) {
	since := time.Date(2026, 9, 9, 12, 33, 56, 0, time.UTC)
	up := func(proxy string) pluginapi.Pod { p := running(proxy); p.ReadySince = since; return p }
	gw := &pluginapi.CompletionError{Status: 502, Message: "HTTP 502"}
	tests := []struct {
		name     string
		once     bool
		pods     []podAnswer
		script   []error
		want     outcome
		wantSent []string
		answered int
	}{
		{"answers", false, []podAnswer{{pod: up(oldProxy)}}, []error{nil}, reply, []string{oldURL}, 1},
		{"a gateway status, re-resolved and retried at the fresh endpoint", false,
			[]podAnswer{{pod: up(oldProxy)}, {pod: up(newProxy)}}, []error{gw, nil}, reply, []string{oldURL, newURL}, 1},
		{"a gateway status twice: loading", false,
			[]podAnswer{{pod: up(oldProxy)}, {pod: up(oldProxy)}}, []error{gw, gw}, loading, []string{oldURL, oldURL}, 0},
		{"a gateway status, the pod down: asleep", false,
			[]podAnswer{{pod: up(oldProxy)}, {pod: exited()}}, []error{gw}, asleep, []string{oldURL}, 0},
		{"once: a gateway status is a provider error, never retried", true,
			[]podAnswer{{pod: up(oldProxy)}}, []error{gw}, plain(502), []string{oldURL}, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			prov := &fakeStreamer{script: tt.script}
			obs := &recordingObserver{}
			m := &Model{Name: "openai-api", Provider: prov, Resolver: NewResolver(&fakeGPU{getPod: podScript(tt.pods...)}, "qwen", apiPath)}
			m.Resolver.SetObserver(obs)
			body := []byte(`{"model":"m", "tools":[1]}`)
			send := Retry
			if tt.once {
				send = Once
			}

			resp, err := m.Stream(context.Background(), body, send)

			content := ""
			if err == nil {
				content, err = pluginapi.ReadContent(resp)
			}
			if diff := cmp.Diff(tt.want, outcomeOf(content, err)); diff != "" {
				t.Errorf("outcome (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.wantSent, prov.sent); diff != "" {
				t.Errorf("endpoints (-want +got):\n%s", diff)
			}
			for _, b := range prov.bodies {
				if b != string(body) {
					t.Errorf("sent %q, want the body as it is", b)
				}
			}
			if len(obs.answered) != tt.answered {
				t.Errorf("answered %d times, want %d", len(obs.answered), tt.answered)
			}
		})
	}
}
