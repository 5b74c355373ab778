package wake_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/wakeonchat/wakeonchat/host/wake"
	"github.com/wakeonchat/wakeonchat/machines"
	"github.com/wakeonchat/wakeonchat/plugins/pluginapi"
)

// TestStartOutcomes: each start result gets its operator line and level
// (#684); a refused start, or one never sent, is recorded and not watched; a
// requested one — accepted, in flight after the client's timeout, or whose
// answer was lost with the plugin or with its connection after it was
// written — stays waking and is watched, and the next
// ask in the window waits without a second start. A panicking plugin is a
// start never sent, and the host carries on.
func TestStartOutcomes(t *testing.T) {
	const stillWaking = "Still waking — 1 min elapsed, usually ready by ~9. Ask again shortly."
	const wakeFailed = "The last wake request may not have reached the conductor. Trying again — about 9 minutes."
	waking := machines.Record{Pod: "qwen", State: machines.Waking, WakeRequestedAt: t0}
	startFailed := machines.Record{Pod: "qwen", State: machines.StartFailed, WakeRequestedAt: t0}
	tests := []struct {
		name      string
		start     func(context.Context, string) (pluginapi.StartResult, error)
		wantLine  logLine
		wantRec   machines.Record
		watched   bool
		wantReply machines.ReplyKey
		wantText  string
	}{
		{
			name:     "in flight",
			start:    answer(pluginapi.StartResult{Requested: true, TimedOut: true, TimeoutMs: 3000}),
			wantLine: logLine{Level: "INFO", Msg: "wake requested for pod qwen: in flight (client timed out after 3 s; the conductor continues)", Pod: "qwen"},
			wantRec:  waking, watched: true, wantReply: machines.ReplyStillWaking, wantText: stillWaking,
		},
		{
			name:     "accepted",
			start:    answer(pluginapi.StartResult{Requested: true, Status: 202}),
			wantLine: logLine{Level: "INFO", Msg: "wake requested for pod qwen: accepted status=202", Pod: "qwen"},
			wantRec:  waking, watched: true, wantReply: machines.ReplyStillWaking, wantText: stillWaking,
		},
		{
			name: "answer lost: the plugin stopped during the call",
			start: func(context.Context, string) (pluginapi.StartResult, error) {
				return pluginapi.StartResult{}, errors.New(`rpc error: code = Unavailable desc = connection to "http://conductor.internal/?token=s3cret" closed`)
			},
			wantLine: logLine{Level: "INFO", Msg: "wake requested for pod qwen: in flight (the start's answer was lost: the GPU plugin stopped during the call; watching the pod)", Pod: "qwen"},
			wantRec:  waking, watched: true, wantReply: machines.ReplyStillWaking, wantText: stillWaking,
		},
		{
			name: "answer lost: the host stopped waiting",
			start: func(context.Context, string) (pluginapi.StartResult, error) {
				return pluginapi.StartResult{}, fmt.Errorf("start pod: %w", context.DeadlineExceeded)
			},
			wantLine: logLine{Level: "INFO", Msg: "wake requested for pod qwen: in flight (the start's answer was lost: the host stopped waiting (DeadlineExceeded); watching the pod)", Pod: "qwen"},
			wantRec:  waking, watched: true, wantReply: machines.ReplyStillWaking, wantText: stillWaking,
		},
		{
			name:     "answer lost: the connection was cut after the request was sent",
			start:    answer(pluginapi.StartResult{Requested: true, Lost: true, Error: "ECONNRESET"}),
			wantLine: logLine{Level: "INFO", Msg: "wake requested for pod qwen: in flight (the start's answer was lost: the connection to the conductor was cut after the request was sent (ECONNRESET); watching the pod)", Pod: "qwen"},
			wantRec:  waking, watched: true, wantReply: machines.ReplyStillWaking, wantText: stillWaking,
		},
		{
			name:      "never sent: cut before the request was written whole",
			start:     answer(pluginapi.StartResult{Error: "ECONNRESET"}),
			wantLine:  logLine{Level: "ERROR", Msg: "wake failed for pod qwen: ECONNRESET", Pod: "qwen"},
			wantRec:   startFailed,
			wantReply: machines.ReplyWakeFailed, wantText: wakeFailed,
		},
		{
			name:      "refused",
			start:     answer(pluginapi.StartResult{Status: 409}),
			wantLine:  logLine{Level: "ERROR", Msg: "wake refused for pod qwen: status=409", Pod: "qwen"},
			wantRec:   machines.Record{Pod: "qwen", State: machines.Refused, WakeRequestedAt: t0, RefusedStatus: 409},
			wantReply: machines.ReplyRefused,
			wantText:  "The last wake request was refused by the conductor (HTTP 409). Waking it again — about 9 minutes.",
		},
		{
			name:      "never sent: connection refused",
			start:     answer(pluginapi.StartResult{Error: "ECONNREFUSED"}),
			wantLine:  logLine{Level: "ERROR", Msg: "wake failed for pod qwen: ECONNREFUSED", Pod: "qwen"},
			wantRec:   startFailed,
			wantReply: machines.ReplyWakeFailed, wantText: wakeFailed,
		},
		{
			name:      "never sent: plugin unavailable",
			start:     answer(pluginapi.StartResult{Error: "plugin unavailable"}),
			wantLine:  logLine{Level: "ERROR", Msg: "wake failed for pod qwen: plugin unavailable", Pod: "qwen"},
			wantRec:   startFailed,
			wantReply: machines.ReplyWakeFailed, wantText: wakeFailed,
		},
		{
			name:      "panicking plugin",
			start:     func(context.Context, string) (pluginapi.StartResult, error) { panic("plugin crashed") },
			wantLine:  logLine{Level: "ERROR", Msg: "wake failed for pod qwen: no result", Pod: "qwen", Panicked: true},
			wantRec:   startFailed,
			wantReply: machines.ReplyWakeFailed, wantText: wakeFailed,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t, wake.Config{})
			e.gpu.startPod = tt.start
			e.notReady(t)

			// The outcome is recorded before the line is logged.
			e.waitStarts(t, 1)
			line := e.logs.find(t, tt.wantLine.Msg)
			if diff := cmp.Diff(tt.wantLine, line); diff != "" {
				t.Errorf("start line (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.wantRec, e.record(t)); diff != "" {
				t.Errorf("record after the start (-want +got):\n%s", diff)
			}
			if tt.watched {
				e.step(t, time.Minute)
				e.waitWaiters(t, 1) // the first poll is done
				if n := e.gpu.reads(); n != 1 {
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
			e.gpu.setStart(nil) // the conductor accepts now
			d := e.notReady(t)
			if d.Reply != tt.wantReply || d.Text != tt.wantText {
				t.Errorf("next ask: reply %q %q, want %q %q", d.Reply, d.Text, tt.wantReply, tt.wantText)
			}
			wantStarts := 1
			if !tt.watched {
				wantStarts = 2
				e.waitStarts(t, 2)
				if n := len(e.logs.withMsg(t, acceptedLine)); n != 1 {
					t.Errorf("%d %q lines, want 1", n, acceptedLine)
				}
			}
			if n := e.gpu.starts(); n != wantStarts {
				t.Errorf("StartPod called %d times, want %d", n, wantStarts)
			}
			if !tt.watched {
				if n := e.gpu.reads(); n != 0 {
					t.Errorf("pod read %d times for a %s start, want 0", n, tt.name)
				}
			}
			if log := e.logs.String(); strings.Contains(log, "conductor.internal") || strings.Contains(log, "s3cret") {
				t.Errorf("the log carries a URL or a token:\n%s", log)
			}
		})
	}
}
