package sim

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestTiming(t *testing.T) {
	tests := []struct {
		name string
		cfg  Config
		want timing
	}{
		{
			name: "zero value is real time with the default delays",
			want: timing{create: 15 * time.Second, boot: 390 * time.Second, ready: 9 * time.Minute, idle: 15 * time.Minute},
		},
		{
			name: "scale 1 is real time",
			cfg:  Config{Scale: 1},
			want: timing{create: 15 * time.Second, boot: 390 * time.Second, ready: 9 * time.Minute, idle: 15 * time.Minute},
		},
		{
			name: "negative scale is real time",
			cfg:  Config{Scale: -3},
			want: timing{create: 15 * time.Second, boot: 390 * time.Second, ready: 9 * time.Minute, idle: 15 * time.Minute},
		},
		{
			name: "scale 27 makes the 9-minute wake 20 seconds",
			cfg:  Config{Scale: 27},
			want: timing{create: 555555556, boot: 14444444444, ready: 20 * time.Second, idle: 33333333333},
		},
		{
			name: "explicit delays",
			cfg:  Config{CreateDelay: time.Second, BootDelay: time.Minute, LoadDelay: 2 * time.Minute, IdleStop: time.Hour},
			want: timing{create: time.Second, boot: time.Minute, ready: 3 * time.Minute, idle: time.Hour},
		},
		{
			name: "NoIdleStop: idle 0 (never), IdleStop unused",
			cfg:  Config{IdleStop: time.Hour, NoIdleStop: true, Scale: 27},
			want: timing{create: 555555556, boot: 14444444444, ready: 20 * time.Second},
		},
		{
			name: "create is capped at boot",
			cfg:  Config{CreateDelay: time.Hour, BootDelay: time.Minute},
			want: timing{create: time.Minute, boot: time.Minute, ready: time.Minute + 150*time.Second, idle: 15 * time.Minute},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := tt.cfg.timing()
			if diff := cmp.Diff(tt.want, got, cmp.AllowUnexported(timing{})); diff != "" {
				t.Errorf("timing() mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

// TestWakeAt checks the pure phase function against the 2026-09-09 timeline
// with the default delays: started at t0, ready at t0+9m.
func TestWakeAt(t *testing.T) {
	t0 := time.Date(2026, 9, 9, 12, 26, 25, 0, time.UTC)
	tm := Config{}.timing()
	ready := t0.Add(9 * time.Minute)
	at := func(d time.Duration) time.Time { return t0.Add(d) }

	never := Config{NoIdleStop: true}.timing()
	tests := []struct {
		name string
		wake wake    // podID and startedAt filled in
		tm   *timing // nil: the default timing
		t    time.Time
		want podState
	}{
		{
			name: "just started: creating",
			wake: wake{readyAt: ready},
			t:    t0,
			want: podState{phase: phaseCreating},
		},
		{
			name: "one instant before the pod exists",
			wake: wake{readyAt: ready},
			t:    at(15*time.Second - 1),
			want: podState{phase: phaseCreating},
		},
		{
			name: "pod created at 15s",
			wake: wake{readyAt: ready},
			t:    at(15 * time.Second),
			want: podState{phase: phaseCreated, created: true},
		},
		{
			name: "running at 6m30s, model loading",
			wake: wake{readyAt: ready},
			t:    at(390 * time.Second),
			want: podState{phase: phaseLoading, created: true, running: true},
		},
		{
			name: "still loading one instant before 9m",
			wake: wake{readyAt: ready},
			t:    at(9*time.Minute - 1),
			want: podState{phase: phaseLoading, created: true, running: true},
		},
		{
			name: "ready at 9m",
			wake: wake{readyAt: ready},
			t:    ready,
			want: podState{phase: phaseReady, created: true, running: true, readySince: ready},
		},
		{
			name: "still ready one instant before the idle stop",
			wake: wake{readyAt: ready},
			t:    at(24*time.Minute - 1),
			want: podState{phase: phaseReady, created: true, running: true, readySince: ready},
		},
		{
			name: "idle stop 15m after ready, readySince kept",
			wake: wake{readyAt: ready},
			t:    at(24 * time.Minute),
			want: podState{phase: phaseAsleep, created: true, running: true, readySince: ready},
		},
		{
			name: "a completion at 20m keeps it up at 30m",
			wake: wake{readyAt: ready, lastActivity: at(20 * time.Minute)},
			t:    at(30 * time.Minute),
			want: podState{phase: phaseReady, created: true, running: true, readySince: ready},
		},
		{
			name: "and it stops 15m after that completion",
			wake: wake{readyAt: ready, lastActivity: at(20 * time.Minute)},
			t:    at(35 * time.Minute),
			want: podState{phase: phaseAsleep, created: true, running: true, readySince: ready},
		},
		{
			name: "stopped while creating: the pod never existed",
			wake: wake{readyAt: ready, stoppedAt: at(5 * time.Second)},
			t:    at(time.Hour),
			want: podState{phase: phaseAsleep},
		},
		{
			name: "stopped exactly when it would have run: it never ran",
			wake: wake{readyAt: ready, stoppedAt: at(390 * time.Second)},
			t:    at(time.Hour),
			want: podState{phase: phaseAsleep, created: true},
		},
		{
			name: "stopped while loading: never ready",
			wake: wake{readyAt: ready, stoppedAt: at(7 * time.Minute)},
			t:    at(time.Hour),
			want: podState{phase: phaseAsleep, created: true, running: true},
		},
		{
			name: "stopped after ready, before the idle stop",
			wake: wake{readyAt: ready, stoppedAt: at(10 * time.Minute)},
			t:    at(10 * time.Minute),
			want: podState{phase: phaseAsleep, created: true, running: true, readySince: ready},
		},
		{
			name: "NoIdleStop: still ready a day after readiness",
			wake: wake{readyAt: ready},
			tm:   &never,
			t:    at(24 * time.Hour),
			want: podState{phase: phaseReady, created: true, running: true, readySince: ready},
		},
		{
			name: "NoIdleStop: a stop request still ends it",
			wake: wake{readyAt: ready, lastActivity: at(20 * time.Minute), stoppedAt: at(35 * time.Minute)},
			tm:   &never,
			t:    at(35 * time.Minute),
			want: podState{phase: phaseAsleep, created: true, running: true, readySince: ready},
		},
		{
			name: "never ready: loading for ever, never idles out",
			wake: wake{},
			t:    at(48 * time.Hour),
			want: podState{phase: phaseLoading, created: true, running: true},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := tt.wake
			w.podID, w.startedAt = "pod-1", t0
			tm := tm
			if tt.tm != nil {
				tm = *tt.tm
			}
			got := w.at(tt.t, tm)
			if diff := cmp.Diff(tt.want, got, cmp.AllowUnexported(podState{})); diff != "" {
				t.Errorf("at(%s) mismatch (-want +got):\n%s", tt.t.Sub(t0), diff)
			}
		})
	}
}

func TestNewWake(t *testing.T) {
	t0 := time.Date(2026, 9, 9, 12, 26, 25, 0, time.UTC)
	tm := Config{Scale: 27}.timing()
	tests := []struct {
		name       string
		neverReady bool
		want       wake
	}{
		{name: "ready after boot and load", want: wake{podID: "pod-7", startedAt: t0, readyAt: t0.Add(20 * time.Second)}},
		{name: "never ready", neverReady: true, want: wake{podID: "pod-7", startedAt: t0}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := newWake("pod-7", t0, tm, tt.neverReady)
			if diff := cmp.Diff(tt.want, *got, cmp.AllowUnexported(wake{})); diff != "" {
				t.Errorf("newWake mismatch (-want +got):\n%s", diff)
			}
		})
	}
}
