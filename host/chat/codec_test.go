package chat_test

import (
	"context"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/wakeonchat/wakeonchat/host/agent"
	"github.com/wakeonchat/wakeonchat/host/store"
	"github.com/wakeonchat/wakeonchat/host/turn"
	"github.com/wakeonchat/wakeonchat/machines"
)

// TestTurnAnswers: what the door asks of the turn service in each wake
// mode, and how it encodes each way a turn ends. A model's answer is 200
// {reply, sessionId} and the turn is stored; what the machine said is 200
// in the same shape with its text (D4), with wait and resume the pending
// wake the service left beside it, and nothing is stored; an error is its
// row's status and fixed body (TestErrorTable), never the error's text.
func TestTurnAnswers(t *testing.T) {
	t.Parallel()
	// A wake requested at t0, in another zone: the marker says it in UTC.
	wakeAt := t0.In(time.FixedZone("CEST", 2*3600))
	pending := &store.Pending{Key: "k1", Pod: "qwen", Provider: "a", WakeRequestedAt: wakeAt, State: "waking", CreatedAt: t0}
	said := func(d machines.Decision, p *store.Pending) (turn.Outcome[agent.Result], error) {
		return turn.Outcome[agent.Result]{Said: turn.Said{Pod: "qwen", Decision: d, Pending: p}}, nil
	}
	waking := machines.Decision{Action: machines.ActionWake, Reply: machines.ReplyWaking, From: machines.Asleep, To: machines.Waking, Text: replyWaking}
	still := machines.Decision{Action: machines.ActionWait, Reply: machines.ReplyStillWaking, From: machines.Waking, To: machines.Waking, Text: replyStillWaking(3)}
	// A failure's text, which must reach no client.
	failure := fmt.Errorf("agent: Post %q: 502 Bad Gateway", proxyURL+"/v1/chat/completions")
	marker := `"pendingWake":{"key":"k1","pod":"qwen","provider":"a","wakeRequestedAt":"2026-09-09T12:26:25Z","state":"waking","events":"/api/pods/qwen/events"}`
	conflict := func(msg string) string { return `{"error":"` + msg + `"}` + "\n" }

	resume := chatReq{Message: "hi", SessionID: "s1", WakeMode: "resume", PendingWake: "k1"}
	type answerCase struct {
		name       string
		req        chatReq
		turns      func(*fakeService) // nil: every turn runs its model call
		wantCalls  []string
		wantStatus int
		wantBody   string
		wantStored []string
	}
	tests := []answerCase{
		{"legacy: the model's answer", chatReq{Message: "hi", SessionID: "s1"}, nil,
			[]string{`Run pod="" send=retry hold=false`}, 200,
			`{"reply":"answer to: hi","sessionId":"s1"}` + "\n", []string{"s1: hi"}},
		{"legacy: what the machine said", chatReq{Message: "hi", SessionID: "s1"}, func(f *fakeService) {
			f.run = func(context.Context, turn.Ask, turn.Call[agent.Result]) (turn.Outcome[agent.Result], error) {
				return said(waking, nil)
			}
		}, []string{`Run pod="" send=retry hold=false`}, 200,
			`{"reply":` + jsonString(replyWaking) + `,"sessionId":"s1"}` + "\n", nil},
		{"legacy: a failure", chatReq{Message: "hi", SessionID: "s1"}, func(f *fakeService) {
			f.run = func(context.Context, turn.Ask, turn.Call[agent.Result]) (turn.Outcome[agent.Result], error) {
				return turn.Outcome[agent.Result]{}, failure
			}
		}, []string{`Run pod="" send=retry hold=false`}, 502, providerFailed, nil},
		{"wait: the model's answer", chatReq{Message: "hi", SessionID: "s1", WakeMode: "wait"}, nil,
			[]string{"Wait session=s1 provider=a"}, 200,
			`{"reply":"answer to: hi","sessionId":"s1"}` + "\n", []string{"s1: hi"}},
		{"wait: a pending wake", chatReq{Message: "hi", SessionID: "s1", WakeMode: "wait"}, func(f *fakeService) {
			f.wait = func(context.Context, string, string, turn.Call[agent.Result]) (turn.Outcome[agent.Result], error) {
				return said(waking, pending)
			}
		}, []string{"Wait session=s1 provider=a"}, 200,
			`{"reply":` + jsonString(replyWaking) + `,"sessionId":"s1",` + marker + `}` + "\n", nil},
		{"wait: a pending wake of no wake on record", chatReq{Message: "hi", SessionID: "s1", WakeMode: "wait"}, func(f *fakeService) {
			f.wait = func(context.Context, string, string, turn.Call[agent.Result]) (turn.Outcome[agent.Result], error) {
				p := *pending
				p.WakeRequestedAt, p.State = time.Time{}, "unreadable"
				return said(machines.Decision{Reply: machines.ReplyUnreadable, Text: replyUnreadable}, &p)
			}
		}, []string{"Wait session=s1 provider=a"}, 200,
			`{"reply":` + jsonString(replyUnreadable) + `,"sessionId":"s1","pendingWake":{"key":"k1","pod":"qwen","provider":"a","wakeRequestedAt":null,"state":"unreadable","events":"/api/pods/qwen/events"}}` + "\n", nil},
		{"resume: the model's answer", resume, nil,
			[]string{"Resume session=s1 key=k1"}, 200,
			`{"reply":"answer to: hi","sessionId":"s1"}` + "\n", []string{"s1: hi"}},
		{"resume: the pending wake kept", resume, func(f *fakeService) {
			f.resume = func(context.Context, string, string, func(string) bool, turn.Pinned[agent.Result]) (turn.Outcome[agent.Result], error) {
				return said(still, pending)
			}
		}, []string{"Resume session=s1 key=k1"}, 200,
			`{"reply":` + jsonString(replyStillWaking(3)) + `,"sessionId":"s1",` + marker + `}` + "\n", nil},
	}
	// Each conflict a resume can end in is a 409 naming it.
	for _, kind := range []error{turn.ErrNoPending, turn.ErrPendingMismatch, turn.ErrPodGone, turn.ErrProviderGone} {
		tests = append(tests, answerCase{"resume: " + kind.Error(), resume, func(f *fakeService) {
			f.resume = func(context.Context, string, string, func(string) bool, turn.Pinned[agent.Result]) (turn.Outcome[agent.Result], error) {
				return turn.Outcome[agent.Result]{}, fmt.Errorf("resume: %w", kind)
			}
		}, []string{"Resume session=s1 key=k1"}, http.StatusConflict, conflict(kind.Error()), nil})
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			d := newDoor(t, nil)
			if tt.turns != nil {
				tt.turns(d.turns)
			}
			res := d.post(t, tt.req)
			if res.Status != tt.wantStatus {
				t.Errorf("status %d, want %d", res.Status, tt.wantStatus)
			}
			if diff := cmp.Diff(tt.wantBody, res.Body); diff != "" {
				t.Errorf("body (-want +got):\n%s", diff)
			}
			if got := res.Header.Get("Content-Type"); got != "application/json" {
				t.Errorf("Content-Type %q, want application/json", got)
			}
			if diff := cmp.Diff(tt.wantCalls, d.turns.made()); diff != "" {
				t.Errorf("turn service calls (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.wantStored, d.history.turnsStored()); diff != "" {
				t.Errorf("turns stored (-want +got):\n%s", diff)
			}
		})
	}
}
