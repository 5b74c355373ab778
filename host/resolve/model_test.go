package resolve

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/wakeonchat/wakeonchat/plugins/pluginapi"
)

// outcome is what a test compares of a Complete result.
type outcome struct {
	Content string
	Kind    string // "reply", "not ready", "provider", "config"

	Provider         string
	FallbackEligible bool

	// *NotReadyError
	PodStatus    string
	Lookup       pluginapi.Lookup
	ModelLoading bool
	UserMessage  string

	// *ProviderError
	Status           int
	TransportFailure bool
	Aborted          bool
}

func outcomeOf(content string, err error) outcome {
	var (
		nr *NotReadyError
		pe *ProviderError
		ce *ConfigError
	)
	switch {
	case err == nil:
		return outcome{Kind: "reply", Content: content}
	case errors.As(err, &nr):
		return outcome{Kind: "not ready", Content: content, Provider: nr.Provider, FallbackEligible: nr.FallbackEligible(),
			PodStatus: nr.Status, Lookup: nr.Lookup, ModelLoading: nr.ModelLoading, UserMessage: nr.UserMessage}
	case errors.As(err, &pe):
		return outcome{Kind: "provider", Content: content, Provider: pe.Provider, FallbackEligible: pe.FallbackEligible(),
			Status: pe.Status, TransportFailure: pe.TransportFailure, Aborted: pe.Aborted}
	case errors.As(err, &ce):
		return outcome{Kind: "config", Content: content, Provider: ce.Provider, FallbackEligible: ce.FallbackEligible()}
	default:
		return outcome{Kind: fmt.Sprintf("unexpected %T: %v", err, err)}
	}
}

var (
	reply = outcome{Kind: "reply", Content: "hello"}
	ok    = answer{content: "hello"}

	asleep = outcome{Kind: "not ready", Provider: "openai-api", PodStatus: "EXITED", Lookup: pluginapi.LookupFound,
		UserMessage: AsleepMessage}
	loading = outcome{Kind: "not ready", Provider: "openai-api", PodStatus: pluginapi.StatusRunning, Lookup: pluginapi.LookupFound,
		ModelLoading: true, UserMessage: LoadingMessage}
)

func plain(status int) outcome {
	return outcome{Kind: "provider", Provider: "openai-api", Status: status, FallbackEligible: status != 200}
}

func TestModelComplete(t *testing.T) {
	conductorDown := podAnswer{err: errors.New("conductor unreachable")}
	tests := []struct {
		name string
		// held, when set, is a ready pod the resolver learned on an earlier
		// turn: it is held, and the calls made to learn it are not counted.
		held      *pluginapi.Pod
		baseURL   string // a literal base_url provider when set
		configErr error
		pods      []podAnswer // conductor answers during the turn
		answers   []answer    // provider answers during the turn

		want          outcome
		wantGetPod    int
		wantEndpoints []string
	}{
		{
			name:          "held resolution reused without asking",
			held:          ptr(running(oldProxy)),
			answers:       []answer{ok},
			want:          reply,
			wantEndpoints: []string{oldURL},
		},
		{
			name:          "nothing held: one lookup, then the completion",
			pods:          []podAnswer{{pod: running(newProxy)}},
			answers:       []answer{ok},
			want:          reply,
			wantGetPod:    1,
			wantEndpoints: []string{newURL},
		},
		{
			name:       "nothing held and not running: asleep, nothing posted",
			pods:       []podAnswer{{pod: exited()}},
			want:       asleep,
			wantGetPod: 1,
		},
		{
			name:       "nothing held and conductor unreachable with nothing cached: plain, nothing posted",
			pods:       []podAnswer{conductorDown},
			want:       outcome{Kind: "provider", Provider: "openai-api", FallbackEligible: true},
			wantGetPod: 1,
		},
		{
			name:          "D6 hanging completion aborted at the old proxy, re-resolve says EXITED: asleep",
			held:          ptr(running(oldProxy)),
			answers:       []answer{aborted},
			pods:          []podAnswer{{pod: exited()}},
			want:          asleep,
			wantGetPod:    1,
			wantEndpoints: []string{oldURL},
		},
		{
			name:          "D6 404 at the old proxy, re-resolve says EXITED: asleep",
			held:          ptr(running(oldProxy)),
			answers:       []answer{failure(404)},
			pods:          []podAnswer{{pod: exited()}},
			want:          asleep,
			wantGetPod:    1,
			wantEndpoints: []string{oldURL},
		},
		{
			name:          "D6 reset at the old proxy, re-resolve says EXITED: asleep",
			held:          ptr(running(oldProxy)),
			answers:       []answer{transport},
			pods:          []podAnswer{{pod: exited()}},
			want:          asleep,
			wantGetPod:    1,
			wantEndpoints: []string{oldURL},
		},
		{
			name:          "D7 502 whose re-resolve says EXITED: the asleep error unchanged",
			held:          ptr(running(oldProxy)),
			answers:       []answer{failure(502)},
			pods:          []podAnswer{{pod: exited()}},
			want:          asleep,
			wantGetPod:    1,
			wantEndpoints: []string{oldURL},
		},
		{
			name:    "re-resolve says UNREADABLE: not ready with that lookup",
			held:    ptr(running(oldProxy)),
			answers: []answer{failure(503)},
			pods:    []podAnswer{{pod: pluginapi.Pod{Lookup: pluginapi.LookupUnreadable}}},
			want: outcome{Kind: "not ready", Provider: "openai-api", Lookup: pluginapi.LookupUnreadable,
				UserMessage: AsleepMessage},
			wantGetPod:    1,
			wantEndpoints: []string{oldURL},
		},
		{
			name:    "re-resolve says RUNNING without a proxy url: not ready, not loading, no retry",
			held:    ptr(running(oldProxy)),
			answers: []answer{failure(502)},
			pods:    []podAnswer{{pod: pluginapi.Pod{Status: pluginapi.StatusRunning, IsRunning: true}}},
			want: outcome{Kind: "not ready", Provider: "openai-api", PodStatus: pluginapi.StatusRunning, Lookup: pluginapi.LookupFound,
				UserMessage: AsleepMessage},
			wantGetPod:    1,
			wantEndpoints: []string{oldURL},
		},
		{
			name:          "D7 502, re-resolve RUNNING at a new proxy, 502 again: model loading",
			held:          ptr(running(oldProxy)),
			answers:       []answer{failure(502), failure(502)},
			pods:          []podAnswer{{pod: running(newProxy)}},
			want:          loading,
			wantGetPod:    1,
			wantEndpoints: []string{oldURL, newURL},
		},
		{
			name:          "D7 503 then 504 while RUNNING: model loading",
			held:          ptr(running(oldProxy)),
			answers:       []answer{failure(503), failure(504)},
			pods:          []podAnswer{{pod: running(oldProxy)}},
			want:          loading,
			wantGetPod:    1,
			wantEndpoints: []string{oldURL, oldURL},
		},
		{
			name:          "D7 transport failure twice while RUNNING: model loading",
			held:          ptr(running(oldProxy)),
			answers:       []answer{transport, transport},
			pods:          []podAnswer{{pod: running(oldProxy)}},
			want:          loading,
			wantGetPod:    1,
			wantEndpoints: []string{oldURL, oldURL},
		},
		{
			name:          "D7 nothing held: lookup, 502, re-resolve RUNNING, 502: model loading",
			pods:          []podAnswer{{pod: running(newProxy)}, {pod: running(newProxy)}},
			answers:       []answer{failure(502), failure(502)},
			want:          loading,
			wantGetPod:    2,
			wantEndpoints: []string{newURL, newURL},
		},
		{
			name:          "D7 500 after the re-resolve: plain",
			held:          ptr(running(oldProxy)),
			answers:       []answer{failure(502), failure(500)},
			pods:          []podAnswer{{pod: running(oldProxy)}},
			want:          plain(500),
			wantGetPod:    1,
			wantEndpoints: []string{oldURL, oldURL},
		},
		{
			name:          "404 after the re-resolve is not a gateway status: plain",
			held:          ptr(running(oldProxy)),
			answers:       []answer{failure(404), failure(404)},
			pods:          []podAnswer{{pod: running(newProxy)}},
			want:          plain(404),
			wantGetPod:    1,
			wantEndpoints: []string{oldURL, newURL},
		},
		{
			name:          "200 bad body after the re-resolve: status 200, not re-sent",
			held:          ptr(running(oldProxy)),
			answers:       []answer{failure(502), badBody},
			pods:          []podAnswer{{pod: running(oldProxy)}},
			want:          plain(200),
			wantGetPod:    1,
			wantEndpoints: []string{oldURL, oldURL},
		},
		{
			name:          "plugin crash on the retry: plain, not loading",
			held:          ptr(running(oldProxy)),
			answers:       []answer{failure(502), crashed},
			pods:          []podAnswer{{pod: running(oldProxy)}},
			want:          outcome{Kind: "provider", Provider: "openai-api"},
			wantGetPod:    1,
			wantEndpoints: []string{oldURL, oldURL},
		},
		{
			name:          "D10 aborted retry while RUNNING: plain, not loading",
			held:          ptr(running(oldProxy)),
			answers:       []answer{failure(502), aborted},
			pods:          []podAnswer{{pod: running(oldProxy)}},
			want:          outcome{Kind: "provider", Provider: "openai-api", Aborted: true},
			wantGetPod:    1,
			wantEndpoints: []string{oldURL, oldURL},
		},
		{
			name:          "D10 aborted retry that also claims a transport failure: the abort wins, plain",
			held:          ptr(running(oldProxy)),
			answers:       []answer{failure(502), {err: &pluginapi.CompletionError{Aborted: true, TransportFailure: true}}},
			pods:          []podAnswer{{pod: running(oldProxy)}},
			want:          outcome{Kind: "provider", Provider: "openai-api", Aborted: true, TransportFailure: true},
			wantGetPod:    1,
			wantEndpoints: []string{oldURL, oldURL},
		},
		{
			name:          "success after the retry at the new proxy",
			held:          ptr(running(oldProxy)),
			answers:       []answer{failure(502), ok},
			pods:          []podAnswer{{pod: running(newProxy)}},
			want:          reply,
			wantGetPod:    1,
			wantEndpoints: []string{oldURL, newURL},
		},
		{
			name:          "D8 502 whose re-resolve is served from cache: the raw 502, not loading",
			held:          ptr(running(oldProxy)),
			answers:       []answer{failure(502)},
			pods:          []podAnswer{conductorDown},
			want:          plain(502),
			wantGetPod:    1,
			wantEndpoints: []string{oldURL},
		},
		{
			name:          "D8 transport failure whose re-resolve is served from cache: the raw failure",
			held:          ptr(running(oldProxy)),
			answers:       []answer{transport},
			pods:          []podAnswer{conductorDown},
			want:          outcome{Kind: "provider", Provider: "openai-api", TransportFailure: true, FallbackEligible: true},
			wantGetPod:    1,
			wantEndpoints: []string{oldURL},
		},
		{
			name:          "D8 abort whose re-resolve is served from cache: the raw abort",
			held:          ptr(running(oldProxy)),
			answers:       []answer{aborted},
			pods:          []podAnswer{conductorDown},
			want:          outcome{Kind: "provider", Provider: "openai-api", Aborted: true},
			wantGetPod:    1,
			wantEndpoints: []string{oldURL},
		},
		{
			name:          "D10 200 bad body: status 200, no re-resolve, sent once",
			held:          ptr(running(oldProxy)),
			answers:       []answer{badBody},
			want:          plain(200),
			wantEndpoints: []string{oldURL},
		},
		{
			name:          "400: plain, no re-resolve",
			held:          ptr(running(oldProxy)),
			answers:       []answer{failure(400)},
			want:          plain(400),
			wantEndpoints: []string{oldURL},
		},
		{
			name:          "401: plain, no re-resolve",
			held:          ptr(running(oldProxy)),
			answers:       []answer{failure(401)},
			want:          plain(401),
			wantEndpoints: []string{oldURL},
		},
		{
			name:          "429: plain, no re-resolve",
			held:          ptr(running(oldProxy)),
			answers:       []answer{failure(429)},
			want:          plain(429),
			wantEndpoints: []string{oldURL},
		},
		{
			name:          "500: plain, no re-resolve",
			held:          ptr(running(oldProxy)),
			answers:       []answer{failure(500)},
			want:          plain(500),
			wantEndpoints: []string{oldURL},
		},
		{
			name:          "plugin crashed: plain, no re-resolve",
			held:          ptr(running(oldProxy)),
			answers:       []answer{crashed},
			want:          outcome{Kind: "provider", Provider: "openai-api"},
			wantEndpoints: []string{oldURL},
		},
		{
			name:          "literal base_url success",
			baseURL:       "https://api.example/v1",
			answers:       []answer{ok},
			want:          reply,
			wantEndpoints: []string{"https://api.example/v1"},
		},
		{
			name:          "literal base_url 502: plain, no resolve",
			baseURL:       "https://api.example/v1",
			answers:       []answer{failure(502)},
			want:          plain(502),
			wantEndpoints: []string{"https://api.example/v1"},
		},
		{
			name:          "literal base_url transport failure: plain, no resolve",
			baseURL:       "https://api.example/v1",
			answers:       []answer{transport},
			want:          outcome{Kind: "provider", Provider: "openai-api", TransportFailure: true, FallbackEligible: true},
			wantEndpoints: []string{"https://api.example/v1"},
		},
		{
			name:      "config error: returned, nothing asked, nothing posted",
			held:      ptr(running(oldProxy)),
			configErr: &ConfigError{Provider: "openai-api", Reason: "api key variable OPENAI_API_KEY is not set"},
			want:      outcome{Kind: "config", Provider: "openai-api"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			gpu := &fakeGPU{}
			provider := &fakeProvider{complete: answerScript(tt.answers...)}
			m := &Model{Name: "openai-api", Provider: provider, ModelName: "qwen2.5", ConfigErr: tt.configErr}
			if tt.baseURL != "" {
				m.BaseURL = tt.baseURL
			} else {
				m.Resolver = NewResolver(gpu, "qwen", apiPath)
			}
			if tt.held != nil {
				gpu.getPod = podScript(podAnswer{pod: *tt.held})
				if _, err := m.Resolver.Current(context.Background()); err != nil {
					t.Fatalf("priming the held resolution: %v", err)
				}
				gpu.resetCalls()
			}
			gpu.getPod = podScript(tt.pods...)

			content, err := m.Complete(context.Background(), []pluginapi.Message{{Role: "user", Content: "hi"}}, Retry)

			if diff := cmp.Diff(tt.want, outcomeOf(content, err)); diff != "" {
				t.Errorf("outcome (-want +got):\n%s\nerror: %v", diff, err)
			}
			if got := gpu.getCalls(); got != tt.wantGetPod {
				t.Errorf("GetPod calls = %d, want %d", got, tt.wantGetPod)
			}
			if diff := cmp.Diff(tt.wantEndpoints, provider.endpoints); diff != "" {
				t.Errorf("endpoints posted to, in order (-want +got):\n%s", diff)
			}
			if len(gpu.startNames) != 0 || len(gpu.stopNames) != 0 {
				t.Errorf("Complete started or stopped the pod: start %v, stop %v", gpu.startNames, gpu.stopNames)
			}
		})
	}
}

func ptr[T any](v T) *T { return &v }

func TestModelCompleteSendsTheRequest(t *testing.T) {
	provider := &fakeProvider{complete: answerScript(failure(502), ok)}
	gpu := &fakeGPU{getPod: podScript(podAnswer{pod: running(oldProxy)}, podAnswer{pod: running(newProxy)})}
	m := &Model{Name: "openai-api", Provider: provider, Resolver: NewResolver(gpu, "qwen", apiPath), ModelName: "qwen2.5"}
	msgs := []pluginapi.Message{{Role: "system", Content: "be brief"}, {Role: "user", Content: "hi"}}

	if _, err := m.Complete(context.Background(), msgs, Retry); err != nil {
		t.Fatalf("Complete: %v", err)
	}
	want := pluginapi.CompletionRequest{Model: "qwen2.5", Messages: msgs}
	if diff := cmp.Diff([]pluginapi.CompletionRequest{want, want}, provider.reqs); diff != "" {
		t.Errorf("requests (-want +got):\n%s", diff)
	}
}

func TestModelCompleteUnusableConfig(t *testing.T) {
	tests := []struct {
		name string
		m    *Model
		want string
	}{
		{"neither pod nor base_url", &Model{Name: "p", Provider: &fakeProvider{}}, "provider p: config error: neither pod nor base_url"},
		{"no provider plugin", &Model{Name: "p", BaseURL: "https://api.example/v1"}, "provider p: config error: no provider plugin"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := tt.m.Complete(context.Background(), nil, Retry)
			var ce *ConfigError
			if !errors.As(err, &ce) {
				t.Fatalf("error = %v (%T), want a *ConfigError", err, err)
			}
			if diff := cmp.Diff(tt.want, err.Error()); diff != "" {
				t.Errorf("Error() (-want +got):\n%s", diff)
			}
		})
	}
}
