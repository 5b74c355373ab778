package turn_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/wakeonchat/wakeonchat/host/resolve"
	"github.com/wakeonchat/wakeonchat/host/store"
	"github.com/wakeonchat/wakeonchat/host/turn"
	"github.com/wakeonchat/wakeonchat/machines"
	"github.com/wakeonchat/wakeonchat/plugins/pluginapi"
)

// Run: a model that answers is the answer and the machine hears nothing;
// a model not ready for a configured pod is the machine's decision; every
// other failure is returned as it is and never wakes (D4, D5).
func TestRun(t *testing.T) {
	t.Parallel()
	provider := &resolve.ProviderError{Provider: "qwen", Status: 500}
	notRetryable := asleep().(*resolve.NotReadyError)
	notRetryable.Retryable = false
	other := resolve.NewNotReadyError("other", resolve.Resolution{Status: "EXITED", Lookup: pluginapi.LookupFound}, false)
	gone := resolve.NewNotReadyError("gone", resolve.Resolution{Status: "EXITED", Lookup: pluginapi.LookupFound}, false)
	tests := []struct {
		name      string
		pod       string // Ask.Pod
		model     error
		want      turn.Outcome[string]
		wantErr   error
		wantCalls []string
	}{
		{"answered", "", nil, turn.Outcome[string]{Answer: "answer", Answered: true}, nil, []string{"model retry"}},
		{"not ready: decided", "", asleep(), turn.Outcome[string]{Said: turn.Said{Pod: "qwen", Decision: waking}}, nil,
			[]string{"model retry", "NotReady qwen EXITED FOUND loading=false"}},
		{"not ready for the provider's pod", "qwen", asleep(), turn.Outcome[string]{Said: turn.Said{Pod: "qwen", Decision: waking}}, nil,
			[]string{"model retry", "NotReady qwen EXITED FOUND loading=false"}},
		{"provider failure", "", provider, turn.Outcome[string]{}, provider, []string{"model retry"}},
		{"not retryable", "", notRetryable, turn.Outcome[string]{}, notRetryable, []string{"model retry"}},
		{"a pod not configured", "", gone, turn.Outcome[string]{}, gone, []string{"model retry"}},
		{"another pod than the provider's", "qwen", other, turn.Outcome[string]{}, other, []string{"model retry"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			f := newFixture(t, func(f *fixture, c *turn.Config) { c.Pods["other"] = f.pod })
			f.model.answers(tt.model)
			got, err := turn.Run(context.Background(), f.svc, turn.Ask{Pod: tt.pod, Send: resolve.Retry}, f.model.call)
			if !errors.Is(err, tt.wantErr) {
				t.Errorf("err %v, want %v", err, tt.wantErr)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("outcome (-want +got):\n%s", diff)
			}
			f.calls.assert(t, tt.wantCalls...)
		})
	}
}

// A machine that cannot decide (its store failed) is a failure: nothing
// was woken.
func TestRunDecisionFails(t *testing.T) {
	t.Parallel()
	f := newFixture(t, nil)
	f.coord.err = errors.New("store down")
	f.model.answers(asleep())
	_, err := turn.Run(context.Background(), f.svc, turn.Ask{Send: resolve.Retry}, f.model.call)
	if !errors.Is(err, f.coord.err) {
		t.Errorf("err %v, want the coordinator's", err)
	}
}

// Wait sends NoResend; a model not ready leaves the session a pending wake
// on the decision's state and the record's wake, instead of the prompt.
func TestWait(t *testing.T) {
	t.Parallel()
	requested := time.Date(2026, 9, 9, 12, 26, 25, 0, time.UTC)
	f := newFixture(t, nil)
	f.coord.rec = machines.Record{State: machines.Waking, WakeRequestedAt: requested}
	f.model.answers(asleep())
	got, err := turn.Wait(context.Background(), f.svc, "s1", "a", f.model.call)
	if err != nil {
		t.Fatal(err)
	}
	p := got.Said.Pending
	if p == nil {
		t.Fatal("no pending wake")
	}
	want := store.Pending{Key: "key-1", Pod: "qwen", Provider: "a", WakeRequestedAt: requested, State: "waking", CreatedAt: p.CreatedAt}
	if diff := cmp.Diff(want, *p); diff != "" {
		t.Errorf("pending wake (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(waking, got.Said.Decision); diff != "" {
		t.Errorf("decision (-want +got):\n%s", diff)
	}
	f.calls.assert(t, "model no-resend", "NotReady qwen EXITED FOUND loading=false", "Record qwen", "PutPending s1 key-1")

	f.model.answers(nil)
	if got, err := turn.Wait(context.Background(), f.svc, "s2", "a", f.model.call); err != nil || !got.Answered {
		t.Errorf("a ready model: %+v, %v; want its answer", got, err)
	}
	f.calls.assert(t, "model no-resend")
}

// Resume: the conflicts a client can correct, the state's reply while the
// pod is not freshly ready (pending wake kept, nothing run, nothing woken),
// and the prompt run exactly once when it is.
func TestResume(t *testing.T) {
	t.Parallel()
	ready := machines.Record{State: machines.Ready, WakeRequestedAt: time.Now()}
	freshlyRunning := resolve.Resolution{Pod: "qwen", Status: "RUNNING", IsRunning: true, Lookup: pluginapi.LookupFound, ReadySince: time.Now()}
	waitingText, err := replies.Render(machines.ReplyResumeWaiting, machines.ReplyData{Pod: "qwen"})
	if err != nil {
		t.Fatal(err)
	}
	marker := store.Pending{Key: "k", Pod: "qwen", Provider: "a"}
	tests := []struct {
		name      string
		pending   *store.Pending
		key       string
		rec       machines.Record
		view      resolve.Resolution
		model     []error
		wantErr   error
		want      turn.Outcome[string]
		wantCalls []string
		wantKept  bool
	}{
		{name: "no pending wake", key: "k", wantErr: turn.ErrNoPending, wantCalls: []string{"Pending s1"}},
		{name: "another key", pending: &marker, key: "x", wantErr: turn.ErrPendingMismatch, wantCalls: []string{"Pending s1"}, wantKept: true},
		{name: "pod gone", pending: &store.Pending{Key: "k", Pod: "gone", Provider: "a"}, key: "k", wantErr: turn.ErrPodGone, wantCalls: []string{"Pending s1"}, wantKept: true},
		{name: "provider gone", pending: &store.Pending{Key: "k", Pod: "qwen", Provider: "gone"}, key: "k", wantErr: turn.ErrProviderGone, wantCalls: []string{"Pending s1"}, wantKept: true},
		{name: "asleep: the state's reply", pending: &marker, key: "k", rec: machines.NewRecord("qwen"), view: resolve.Resolution{Status: "EXITED", Lookup: pluginapi.LookupFound},
			want:      turn.Outcome[string]{Said: turn.Said{Pod: "qwen", Decision: machines.Decision{Reply: machines.ReplyResumeWaiting, Text: waitingText, From: machines.Asleep, To: machines.Asleep}, Pending: &marker}},
			wantCalls: []string{"Pending s1", "Lookup", "Record qwen"}, wantKept: true},
		{name: "freshly ready: runs once", pending: &marker, key: "k", rec: ready, view: freshlyRunning, model: []error{nil},
			want:      turn.Outcome[string]{Answer: "answer", Answered: true},
			wantCalls: []string{"Pending s1", "Lookup", "Record qwen", "TakePending s1 k", "model once"}},
		// The record reads asleep after the failed run (the call below
		// leaves it so, as the resolver's observer would).
		{name: "freshly ready, never sent: kept", pending: &marker, key: "k", rec: ready, view: freshlyRunning, model: []error{neverSent()},
			want:      turn.Outcome[string]{Said: turn.Said{Pod: "qwen", Decision: machines.Decision{Reply: machines.ReplyResumeWaiting, Text: waitingText, From: machines.Asleep, To: machines.Asleep}, Pending: &marker}},
			wantCalls: []string{"Pending s1", "Lookup", "Record qwen", "TakePending s1 k", "model once", "PutPending s1 k", "Lookup", "Record qwen"},
			wantKept:  true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			f := newFixture(t, nil)
			if tt.pending != nil {
				f.pending.m["s1"] = *tt.pending
			}
			f.coord.rec, f.pod.res = tt.rec, tt.view
			if tt.model != nil {
				f.model.answers(tt.model...)
			}
			has := func(p string) bool { return p == "a" }
			got, err := turn.Resume(context.Background(), f.svc, "s1", tt.key, has, func(p string) turn.Call[string] {
				if p != "a" {
					t.Errorf("run on provider %q, want the pinned a", p)
				}
				return func(ctx context.Context, send resolve.Send) (string, error) {
					// After the run the record reads asleep.
					v, err := f.model.call(ctx, send)
					f.coord.mu.Lock()
					f.coord.rec = machines.NewRecord("qwen")
					f.coord.mu.Unlock()
					return v, err
				}
			})
			if !errors.Is(err, tt.wantErr) {
				t.Errorf("err %v, want %v", err, tt.wantErr)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("outcome (-want +got):\n%s", diff)
			}
			f.calls.assert(t, tt.wantCalls...)
			if _, kept := f.pending.m["s1"]; kept != tt.wantKept {
				t.Errorf("pending wake kept %v, want %v", kept, tt.wantKept)
			}
		})
	}
}
