package wake

import (
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/wakeonchat/wakeonchat/machines"
	"github.com/wakeonchat/wakeonchat/plugins/pluginapi"
)

// TestDescribeStart is #684's table of start outcomes and log lines.
func TestDescribeStart(t *testing.T) {
	type line struct {
		Level slog.Level
		Line  string
	}
	tests := []struct {
		name       string
		r          *pluginapi.StartResult
		credential string // the pod's backend's credential variable; "" the conductor's
		want       line
	}{
		{"client timed out: in flight", &pluginapi.StartResult{Requested: true, TimedOut: true, TimeoutMs: 3000}, "",
			line{slog.LevelInfo, "wake requested for pod qwen: in flight (client timed out after 3 s; the conductor continues)"}},
		{"client timed out after 1.5 s", &pluginapi.StartResult{Requested: true, TimedOut: true, TimeoutMs: 1500}, "",
			line{slog.LevelInfo, "wake requested for pod qwen: in flight (client timed out after 1.5 s; the conductor continues)"}},
		{"200 accepted", &pluginapi.StartResult{Requested: true, Status: 200}, "",
			line{slog.LevelInfo, "wake requested for pod qwen: accepted status=200"}},
		{"202 accepted", &pluginapi.StartResult{Requested: true, Status: 202}, "",
			line{slog.LevelInfo, "wake requested for pod qwen: accepted status=202"}},
		{"404 refused", &pluginapi.StartResult{Status: 404}, "", line{slog.LevelError, "wake refused for pod qwen: status=404"}},
		{"409 refused", &pluginapi.StartResult{Status: 409}, "", line{slog.LevelError, "wake refused for pod qwen: status=409"}},
		{"503 refused", &pluginapi.StartResult{Status: 503}, "", line{slog.LevelError, "wake refused for pod qwen: status=503"}},
		{"401 names the token", &pluginapi.StartResult{Status: 401}, "",
			line{slog.LevelError, "wake refused for pod qwen: status=401 (the conductor's start wants a valid operator token: check RIG_WAKE_TOKEN in the host's environment)"}},
		{"403 names the token", &pluginapi.StartResult{Status: 403}, "",
			line{slog.LevelError, "wake refused for pod qwen: status=403 (the conductor's start wants a valid operator token: check RIG_WAKE_TOKEN in the host's environment)"}},
		{"401 from another backend names its credential", &pluginapi.StartResult{Status: 401}, "RUNPOD_API_KEY",
			line{slog.LevelError, "wake refused for pod qwen: status=401 (the GPU backend rejected its credential: check RUNPOD_API_KEY in the host's environment)"}},
		{"403 from another backend names its credential", &pluginapi.StartResult{Status: 403}, "RUNPOD_API_KEY",
			line{slog.LevelError, "wake refused for pod qwen: status=403 (the GPU backend rejected its credential: check RUNPOD_API_KEY in the host's environment)"}},
		{"another refusal of that backend names nothing", &pluginapi.StartResult{Status: 500}, "RUNPOD_API_KEY",
			line{slog.LevelError, "wake refused for pod qwen: status=500"}},
		{"answer lost", &pluginapi.StartResult{Requested: true, Lost: true, Error: "plugin stopped during the call"}, "",
			line{slog.LevelInfo, "wake requested for pod qwen: in flight (the start's answer was lost: plugin stopped during the call; watching the pod)"}},
		{"transport failure", &pluginapi.StartResult{Error: "ECONNREFUSED"}, "", line{slog.LevelError, "wake failed for pod qwen: ECONNREFUSED"}},
		{"no result", nil, "", line{slog.LevelError, "wake failed for pod qwen: no result"}},
		{"empty result", &pluginapi.StartResult{}, "", line{slog.LevelError, "wake failed for pod qwen: no result"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			lvl, msg := describeStart("qwen", tt.r, tt.credential)
			if diff := cmp.Diff(tt.want, line{lvl, msg}); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
	// The three non-accepted outcomes must be told apart by a grep.
	_, refused := describeStart("qwen", &pluginapi.StartResult{Status: 409}, "")
	_, failed := describeStart("qwen", &pluginapi.StartResult{Error: "ECONNREFUSED"}, "")
	_, inflight := describeStart("qwen", &pluginapi.StartResult{Requested: true, TimedOut: true, TimeoutMs: 3000}, "")
	for _, p := range []struct{ line, grep string }{{refused, "wake refused"}, {failed, "wake failed"}, {inflight, "wake requested for pod"}} {
		for _, other := range []string{refused, failed, inflight} {
			if other != p.line && strings.Contains(other, p.grep) {
				t.Errorf("%q matches grep %q meant for %q", other, p.grep, p.line)
			}
		}
	}
}

func TestOutcomeEvent(t *testing.T) {
	wake := time.Date(2026, 9, 9, 12, 0, 0, 0, time.UTC)
	now := wake.Add(time.Second)
	tests := []struct {
		name   string
		r      *pluginapi.StartResult
		want   machines.Event
		wantOK bool
	}{
		{"in flight needs no feedback", &pluginapi.StartResult{Requested: true, TimedOut: true, TimeoutMs: 3000}, machines.Event{}, false},
		{"accepted needs no feedback", &pluginapi.StartResult{Requested: true, Status: 202}, machines.Event{}, false},
		{"refused", &pluginapi.StartResult{Status: 409}, machines.Event{Trigger: machines.StartRefused, At: now, HTTPStatus: 409, Wake: wake}, true},
		{"answer lost: in flight, watched", &pluginapi.StartResult{Requested: true, Lost: true, Error: "plugin stopped during the call"}, machines.Event{}, false},
		{"never sent", &pluginapi.StartResult{Error: "ECONNREFUSED"}, machines.Event{Trigger: machines.StartNotSent, At: now, Wake: wake}, true},
		{"no result", nil, machines.Event{Trigger: machines.StartNotSent, At: now, Wake: wake}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := outcomeEvent(tt.r, wake, now)
			if ok != tt.wantOK {
				t.Fatalf("ok = %v, want %v", ok, tt.wantOK)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}
