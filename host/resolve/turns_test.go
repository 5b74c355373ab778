package resolve

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/wakeonchat/wakeonchat/plugins/pluginapi"
)

// TestModelCompleteAcrossTurns follows one pod through an idle stop, a wake
// and the model loading, turn by turn, counting what each turn asks and
// where it posts (D6, D7, rule: a ready resolution is reused, a failed one is
// dropped).
func TestModelCompleteAcrossTurns(t *testing.T) {
	gpu := &fakeGPU{}
	provider := &fakeProvider{}
	m := &Model{Name: "openai-api", Provider: provider, Resolver: NewResolver(gpu, "qwen", apiPath), ModelName: "qwen2.5"}
	msgs := []pluginapi.Message{{Role: "user", Content: "hi"}}

	type turn struct {
		name          string
		pods          []podAnswer
		answers       []answer
		want          outcome
		wantGetPod    int
		wantEndpoints []string
	}
	turns := []turn{
		{
			name:          "first turn: one lookup, answered",
			pods:          []podAnswer{{pod: running(oldProxy)}},
			answers:       []answer{ok},
			want:          reply,
			wantGetPod:    1,
			wantEndpoints: []string{oldURL},
		},
		{
			name:          "second turn: the held resolution, no lookup",
			answers:       []answer{ok},
			want:          reply,
			wantEndpoints: []string{oldURL},
		},
		{
			name:          "after the idle stop: the old proxy first, one re-resolve, asleep",
			pods:          []podAnswer{{pod: exited()}},
			answers:       []answer{failure(404)},
			want:          asleep,
			wantGetPod:    1,
			wantEndpoints: []string{oldURL},
		},
		{
			name:       "still waking: nothing held, one lookup, nothing posted",
			pods:       []podAnswer{{pod: pluginapi.Pod{Status: "CREATED", PodID: "abc"}}},
			want:       outcome{Kind: "not ready", Provider: "openai-api", PodStatus: "CREATED", Lookup: pluginapi.LookupFound, UserMessage: AsleepMessage},
			wantGetPod: 1,
		},
		{
			name:          "running, model loading: lookup, 502, re-resolve, 502",
			pods:          []podAnswer{{pod: running(newProxy)}, {pod: running(newProxy)}},
			answers:       []answer{failure(502), failure(502)},
			want:          loading,
			wantGetPod:    2,
			wantEndpoints: []string{newURL, newURL},
		},
		{
			name:          "model serving: the re-resolved resolution is held, no lookup",
			answers:       []answer{ok},
			want:          reply,
			wantEndpoints: []string{newURL},
		},
		{
			name:          "and reused again",
			answers:       []answer{ok},
			want:          reply,
			wantEndpoints: []string{newURL},
		},
	}
	for i, tt := range turns {
		gpu.resetCalls()
		provider.endpoints = nil
		gpu.getPod = podScript(tt.pods...)
		provider.complete = answerScript(tt.answers...)

		content, err := m.Complete(context.Background(), msgs, Retry)

		if diff := cmp.Diff(tt.want, outcomeOf(content, err)); diff != "" {
			t.Errorf("turn %d (%s): outcome (-want +got):\n%s", i+1, tt.name, diff)
		}
		if got := gpu.getCalls(); got != tt.wantGetPod {
			t.Errorf("turn %d (%s): GetPod calls = %d, want %d", i+1, tt.name, got, tt.wantGetPod)
		}
		if diff := cmp.Diff(tt.wantEndpoints, provider.endpoints); diff != "" {
			t.Errorf("turn %d (%s): endpoints (-want +got):\n%s", i+1, tt.name, diff)
		}
	}
}
