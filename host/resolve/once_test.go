package resolve

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/wakeonchat/wakeonchat/plugins/pluginapi"
)

var runningPod = pluginapi.Pod{Name: "qwen", Status: "RUNNING", IsRunning: true, ProxyURL: "http://proxy.test/pod-1", PodID: "pod-1", Lookup: pluginapi.LookupFound}

// TestCompleteOnce: a resume's completion, sent Once, is attempted exactly once, never
// re-resolved or retried, and a failure that may mean a stale endpoint drops
// the held resolution.
func TestCompleteOnce(t *testing.T) {
	tests := []struct {
		name          string
		answer        answer
		wantErr       bool
		wantNeverSent bool
		wantGets      int // GetPod calls: the priming one, plus one more if the resolution was dropped
	}{
		{"success", answer{content: "hi"}, false, false, 1},
		{"502 is never sent, drops the resolution", answer{err: &pluginapi.CompletionError{Status: 502}}, true, true, 2},
		{"404 is never sent", answer{err: &pluginapi.CompletionError{Status: 404}}, true, true, 2},
		{"reset is never sent", answer{err: &pluginapi.CompletionError{TransportFailure: true}}, true, true, 2},
		{"abort is ambiguous and not retried", answer{err: &pluginapi.CompletionError{Aborted: true}}, true, false, 2},
		{"200 bad body is ambiguous", answer{err: &pluginapi.CompletionError{Status: 200}}, true, false, 1},
		{"500", answer{err: &pluginapi.CompletionError{Status: 500}}, true, false, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			gpu := &fakeGPU{getPod: func(context.Context, string) (pluginapi.Pod, error) { return runningPod, nil }}
			prov := &fakeProvider{complete: answerScript(tt.answer)}
			m := &Model{Name: "qwen", Provider: prov, Resolver: NewResolver(gpu, "qwen", "/v1"), ModelName: "qwen"}
			got, err := m.Complete(context.Background(), []pluginapi.Message{{Role: "user", Content: "hi"}}, Once)
			if (err != nil) != tt.wantErr {
				t.Fatalf("err = %v, want error %v", err, tt.wantErr)
			}
			if err == nil && got != "hi" {
				t.Errorf("reply = %q", got)
			}
			var pe *ProviderError
			if err != nil && !errors.As(err, &pe) {
				t.Errorf("err = %T, want *ProviderError", err)
			}
			if NeverSent(err) != tt.wantNeverSent {
				t.Errorf("NeverSent = %v, want %v", NeverSent(err), tt.wantNeverSent)
			}
			if diff := cmp.Diff([]string{"http://proxy.test/pod-1/v1"}, prov.endpoints); diff != "" {
				t.Errorf("completions (-want +got):\n%s", diff)
			}
			// A second turn shows whether the resolution was dropped.
			prov.complete = answerScript(answer{content: "again"})
			m.Complete(context.Background(), nil, Once)
			if got := gpu.getCalls(); got != tt.wantGets {
				t.Errorf("GetPod calls = %d, want %d", got, tt.wantGets)
			}
		})
	}
}

// TestCompleteNoResend: sent NoResend, an aborted attempt is never sent again, but an
// asleep pod behind it is still found; a failure that proves nothing was
// sent is retried as in Complete.
func TestCompleteNoResend(t *testing.T) {
	exited := pluginapi.Pod{Name: "qwen", Status: "EXITED", PodID: "pod-1", Lookup: pluginapi.LookupFound}
	tests := []struct {
		name        string
		answers     []answer
		secondPod   pluginapi.Pod
		wantCalls   int
		wantReply   string
		wantAsleep  bool
		wantAborted bool
	}{
		{"aborted, still running: no retry", []answer{{err: &pluginapi.CompletionError{Aborted: true}}}, runningPod, 1, "", false, true},
		{"aborted, pod stopped: not ready", []answer{{err: &pluginapi.CompletionError{Aborted: true}}}, exited, 1, "", true, false},
		{"502 then success: retried", []answer{{err: &pluginapi.CompletionError{Status: 502}}, {content: "hi"}}, runningPod, 2, "hi", false, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			gpu := &fakeGPU{getPod: podScript(podAnswer{pod: runningPod}, podAnswer{pod: tt.secondPod})}
			prov := &fakeProvider{complete: answerScript(tt.answers...)}
			m := &Model{Name: "qwen", Provider: prov, Resolver: NewResolver(gpu, "qwen", "/v1")}
			got, err := m.Complete(context.Background(), nil, NoResend)
			if len(prov.endpoints) != tt.wantCalls {
				t.Errorf("completions = %d, want %d", len(prov.endpoints), tt.wantCalls)
			}
			if got != tt.wantReply {
				t.Errorf("reply = %q, want %q", got, tt.wantReply)
			}
			var nr *NotReadyError
			if errors.As(err, &nr) != tt.wantAsleep {
				t.Errorf("err = %v, want not-ready %v", err, tt.wantAsleep)
			}
			var pe *ProviderError
			if (errors.As(err, &pe) && pe.Aborted) != tt.wantAborted {
				t.Errorf("err = %v, want aborted provider error %v", err, tt.wantAborted)
			}
		})
	}
}

// TestLookupIsBounded: a GPU plugin that never answers cannot hold a turn:
// the shared lookup ends at the resolver's cap even when the caller's
// context has no deadline, and its failure is a plain provider error.
func TestLookupIsBounded(t *testing.T) {
	gpu := &fakeGPU{getPod: func(ctx context.Context, _ string) (pluginapi.Pod, error) {
		<-ctx.Done()
		return pluginapi.Pod{}, ctx.Err()
	}}
	r := NewResolver(gpu, "qwen", "/v1")
	r.SetLookupTimeout(20 * time.Millisecond)
	done := make(chan error, 1)
	go func() {
		_, err := r.Current(context.Background())
		done <- err
	}()
	select {
	case err := <-done:
		var pe *ProviderError
		if !errors.As(err, &pe) {
			t.Errorf("err = %v, want *ProviderError", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("a hanging lookup held the caller past the cap")
	}
}
