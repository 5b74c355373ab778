package supervisor_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/wakeonchat/wakeonchat/host/supervisor"
	"github.com/wakeonchat/wakeonchat/plugins/pluginapi"
)

// The plugin boundary carries messages of up to pluginapi.MaxMessageBytes
// both ways, and refuses larger ones on purpose: gRPC's default of 4 MiB
// failed a long conversation with "received message larger than max".
func TestMessageLimits(t *testing.T) {
	t.Parallel()
	const big = 6 << 20 // well above gRPC's default, below the limit
	// The model echoes the size of the last message it got, as that many
	// bytes of "y".
	srv := newFakeServer(t, "", func(w http.ResponseWriter, _ *http.Request, body string) {
		var req struct {
			Messages []struct{ Content string } `json:"messages"`
		}
		if err := json.Unmarshal([]byte(body), &req); err != nil || len(req.Messages) == 0 {
			w.WriteHeader(http.StatusBadRequest)
			return
		}
		answer, _ := json.Marshal(map[string]any{"choices": []any{map[string]any{
			"message": map[string]string{"role": "assistant", "content": strings.Repeat("y", len(req.Messages[len(req.Messages)-1].Content))},
		}}})
		_, _ = w.Write(answer)
	})
	openai := startProvider(t, supervisor.Spec{
		Name: "openai", Path: openaiBin,
		Env: []string{pluginapi.EnvCompletionTimeout + "=30s"},
	})
	test := startProvider(t, testSpec(t, nil))
	tooLarge := &pluginapi.CompletionError{Message: "message over the plugin boundary's 32 MiB limit"}

	tests := []struct {
		name     string
		provider *supervisor.Provider
		model    string
		content  string
		want     int // the answer's length
		wantErr  *pluginapi.CompletionError
	}{
		{name: "6 MiB request and answer through wake-plugin-provider-openai", provider: openai,
			model: "qwen", content: strings.Repeat("x", big), want: big},
		{name: "a request over the limit is refused by the host", provider: openai,
			model: "qwen", content: strings.Repeat("x", pluginapi.MaxMessageBytes+1), wantErr: tooLarge},
		// The answer streams in chunks; the host refuses to gather more than
		// the limit, as a 200 whose body failed (never re-sent, D10).
		{name: "an answer over the limit is refused", provider: test,
			model: "size", content: strconv.Itoa(pluginapi.MaxMessageBytes + 1),
			wantErr: &pluginapi.CompletionError{Status: 200, Message: "response larger than 32 MiB"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req := pluginapi.CompletionRequest{Model: tt.model, Messages: []pluginapi.Message{{Role: "user", Content: tt.content}}}
			got, err := tt.provider.Complete(context.Background(), srv.URL+"/v1", req)
			if tt.wantErr != nil {
				var ce *pluginapi.CompletionError
				if !errors.As(err, &ce) {
					t.Fatalf("Complete: %v (%T), want a *CompletionError", err, err)
				}
				if diff := cmp.Diff(tt.wantErr, ce); diff != "" {
					t.Errorf("Complete (-want +got):\n%s", diff)
				}
				return
			}
			if err != nil {
				t.Fatalf("Complete: %v", err)
			}
			if len(got) != tt.want || strings.Trim(got, "y") != "" {
				t.Errorf("Complete: an answer of %d bytes (%.20q…), want %d bytes of y", len(got), got, tt.want)
			}
		})
	}
	// Whatever was refused, both plugins still serve.
	for _, p := range []*supervisor.Provider{openai, test} {
		if !p.Ready() {
			t.Error("a plugin is not Ready after the refused messages")
		}
	}
}
