package wake_test

import (
	"context"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/wakeonchat/wakeonchat/host/wake"
	"github.com/wakeonchat/wakeonchat/machines"
	"github.com/wakeonchat/wakeonchat/plugins/pluginapi"
)

// TestStartOutcomes: each start result gets its operator line and level
// (#684); a refused or failed start is recorded and not watched, a requested
// one — accepted, or in flight after the client's timeout — is watched; the
// next ask answers from the recorded outcome. A panicking plugin is a failed
// start, and the host carries on.
func TestStartOutcomes(t *testing.T) {
	tests := []struct {
		name      string
		wake      func(context.Context) pluginapi.StartResult // nil: no capabilities at all
		wantLine  logLine
		wantRec   machines.Record
		watched   bool
		wantReply machines.ReplyKey
		wantText  string
	}{
		{
			name:     "in flight",
			wake:     result(pluginapi.StartResult{Requested: true, TimedOut: true, TimeoutMs: 3000}),
			wantLine: logLine{Level: "INFO", Msg: "wake requested for pod qwen: in flight (client timed out after 3 s; the conductor continues)", Pod: "qwen"},
			wantRec:  machines.Record{Pod: "qwen", State: machines.Waking, WakeRequestedAt: t0},
			watched:  true, wantReply: machines.ReplyStillWaking,
			wantText: "Still waking — 1 min elapsed, usually ready by ~9. Ask again shortly.",
		},
		{
			name:     "accepted",
			wake:     result(pluginapi.StartResult{Requested: true, Status: 202}),
			wantLine: logLine{Level: "INFO", Msg: "wake requested for pod qwen: accepted status=202", Pod: "qwen"},
			wantRec:  machines.Record{Pod: "qwen", State: machines.Waking, WakeRequestedAt: t0},
			watched:  true, wantReply: machines.ReplyStillWaking,
			wantText: "Still waking — 1 min elapsed, usually ready by ~9. Ask again shortly.",
		},
		{
			name:     "refused",
			wake:     result(pluginapi.StartResult{Status: 409}),
			wantLine: logLine{Level: "ERROR", Msg: "wake refused for pod qwen: status=409", Pod: "qwen"},
			wantRec: machines.Record{Pod: "qwen", State: machines.Refused, WakeRequestedAt: t0,
				Outcome: machines.OutcomeRefused, RefusedStatus: 409},
			wantReply: machines.ReplyRefused,
			wantText:  "The last wake request was refused by the conductor (HTTP 409). Waking it again — about 9 minutes.",
		},
		{
			name:     "failed",
			wake:     result(pluginapi.StartResult{Error: "ECONNREFUSED"}),
			wantLine: logLine{Level: "ERROR", Msg: "wake failed for pod qwen: ECONNREFUSED", Pod: "qwen"},
			wantRec: machines.Record{Pod: "qwen", State: machines.Refused, WakeRequestedAt: t0,
				Outcome: machines.OutcomeStartFailed},
			wantReply: machines.ReplyWakeFailed,
			wantText:  "The last wake request may not have reached the conductor. Trying again — about 9 minutes.",
		},
		{
			name:     "panicking plugin",
			wake:     func(context.Context) pluginapi.StartResult { panic("plugin crashed") },
			wantLine: logLine{Level: "ERROR", Msg: "wake failed for pod qwen: no result", Pod: "qwen"},
			wantRec: machines.Record{Pod: "qwen", State: machines.Refused, WakeRequestedAt: t0,
				Outcome: machines.OutcomeStartFailed},
			wantReply: machines.ReplyWakeFailed,
			wantText:  "The last wake request may not have reached the conductor. Trying again — about 9 minutes.",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t, wake.Config{})
			caps := &fakeCaps{wake: tt.wake}
			e.notReady(t, caps)

			// The outcome is recorded before the line is logged.
			line := e.logs.wait(t, tt.wantLine.Msg)
			if diff := cmp.Diff(tt.wantLine, line); diff != "" {
				t.Errorf("start line (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.wantRec, e.record(t)); diff != "" {
				t.Errorf("record after the start (-want +got):\n%s", diff)
			}
			if tt.watched {
				e.step(t, time.Minute)
				e.waitWaiters(t, 1) // the first poll is done
				if n := caps.reads.Load(); n != 1 {
					t.Errorf("pod read %d times one poll after a requested start, want 1", n)
				}
			} else {
				// Nothing waits on the clock: no watch was started.
				if n := e.clk.Waiters(); n != 0 {
					t.Errorf("%d clock waiters after a %s start, want 0: it must not be watched", n, tt.name)
				}
				e.clk.Advance(time.Minute)
			}

			// One minute on, the next ask answers from the outcome; the host is alive.
			caps.wake = nil // the conductor accepts now
			d := e.notReady(t, caps)
			if d.Reply != tt.wantReply || d.Text != tt.wantText {
				t.Errorf("next ask: reply %q %q, want %q %q", d.Reply, d.Text, tt.wantReply, tt.wantText)
			}
			wantWakes := int32(1)
			if !tt.watched {
				wantWakes = 2
				e.logs.wait(t, acceptedLine)
			}
			if n := caps.wakes.Load(); n != wantWakes {
				t.Errorf("Wake called %d times, want %d", n, wantWakes)
			}
			if !tt.watched {
				if n := caps.reads.Load(); n != 0 {
					t.Errorf("pod read %d times for a %s start, want 0", n, tt.name)
				}
			}
		})
	}
}

func result(r pluginapi.StartResult) func(context.Context) pluginapi.StartResult {
	return func(context.Context) pluginapi.StartResult { return r }
}

// TestWakeWithoutCapabilities: a wake decision for an error that carries no
// capabilities is a failed start, not a crash.
func TestWakeWithoutCapabilities(t *testing.T) {
	e := newEnv(t, wake.Config{})
	d := e.notReady(t, nil)
	if d.Action != machines.ActionWake {
		t.Fatalf("action %q, want wake", d.Action)
	}
	line := e.logs.wait(t, "wake failed for pod qwen: no result")
	if line.Level != "ERROR" {
		t.Errorf("level %s, want ERROR", line.Level)
	}
	if got := e.record(t).Outcome; got != machines.OutcomeStartFailed {
		t.Errorf("outcome %q, want %q", got, machines.OutcomeStartFailed)
	}
}
