package wake_test

import (
	"context"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/wakeonchat/wakeonchat/engine"
	"github.com/wakeonchat/wakeonchat/host/wake"
	"github.com/wakeonchat/wakeonchat/machines"
	"github.com/wakeonchat/wakeonchat/plugins/pluginapi"
)

// readyLine is the coordinator's line for a wake that became ready.
func readyLine(clock string) logLine {
	return logLine{Level: "INFO", Msg: "wake ready for pod qwen: ready since " + clock, Pod: "qwen"}
}

// TestObserve: a conductor read from anywhere moves the stored state to agree
// with the conductor, as the lifecycle table says; it never starts a pod,
// never starts a watch, never replies, and writes only what changed. A read
// the conductor could not make (UNREADABLE) changes nothing.
func TestObserve(t *testing.T) {
	now := t0.Add(10 * time.Minute)
	boot := t0.Add(8*time.Minute + 30*time.Second) // the wake's boot: 12:08 UTC
	notFound := pluginapi.Pod{Name: "qwen", Lookup: pluginapi.LookupNotFound}
	unreadable := pluginapi.Pod{Name: "qwen", Lookup: pluginapi.LookupUnreadable}
	rec := func(state engine.State) machines.Record {
		return machines.Record{Pod: "qwen", State: state, WakeRequestedAt: t0}
	}
	with := func(r machines.Record, f func(*machines.Record)) machines.Record { f(&r); return r }
	loading := with(rec(machines.Loading), func(r *machines.Record) { r.ModelLoadingSince = t0 })
	stuck := with(rec(machines.Stuck), func(r *machines.Record) { r.ModelLoadingSince = t0.Add(-15 * time.Minute) })
	ready := with(rec(machines.Ready), func(r *machines.Record) { r.ReadyAt = boot })
	crashed := with(rec(machines.Crashed), func(r *machines.Record) { r.ReadyAt = boot })
	// First seen up during the wake, at t: the wake's RUNNING phase.
	runningAt := func(r machines.Record, t time.Time) machines.Record {
		return with(r, func(r *machines.Record) { r.RunningAt = t })
	}
	tests := []struct {
		name      string
		stored    machines.Record
		read      pluginapi.Pod
		want      machines.Record
		wantLines []logLine
	}{
		{"asleep, EXITED", machines.NewRecord("qwen"), exited(), machines.NewRecord("qwen"), nil},
		{"asleep, up without readySince: loading since now", machines.NewRecord("qwen"), upPod(time.Time{}),
			machines.Record{Pod: "qwen", State: machines.Loading, ModelLoadingSince: now}, nil},
		{"asleep, readySince: ready, no wake to log", machines.NewRecord("qwen"), upPod(boot),
			machines.Record{Pod: "qwen", State: machines.Ready, ReadyAt: boot}, nil},
		{"waking, EXITED", rec(machines.Waking), exited(), rec(machines.Waking), nil},
		{"waking, NOT_FOUND", rec(machines.Waking), notFound, rec(machines.Waking), nil},
		{"waking, up without readySince: loading since the wake", rec(machines.Waking), upPod(time.Time{}), runningAt(loading, now), nil},
		{"waking, readySince of the wake: up since it at the latest", rec(machines.Waking), upPod(boot),
			runningAt(ready, boot), []logLine{readyLine("12:08 UTC")}},
		{"waking, readySince of an earlier boot", rec(machines.Waking), upPod(t0.Add(-2 * time.Minute)), runningAt(loading, now), nil},
		{"loading, EXITED within the watch: waking", loading, exited(), rec(machines.Waking), nil},
		{"loading, EXITED after the watch: asleep",
			with(loading, func(r *machines.Record) {
				r.WakeRequestedAt = t0.Add(-time.Hour)
				r.ModelLoadingSince = t0.Add(-time.Hour)
			}),
			exited(),
			machines.Record{Pod: "qwen", State: machines.Asleep, WakeRequestedAt: t0.Add(-time.Hour)}, nil},
		{"loading, up without readySince", loading, upPod(time.Time{}), loading, nil},
		{"stuck, readySince of the wake", stuck, upPod(boot), ready, []logLine{readyLine("12:08 UTC")}},
		{"ready, EXITED: stopped", ready, exited(), with(ready, func(r *machines.Record) { r.State = machines.Stopped }), nil},
		{"ready, NOT_FOUND: stopped", ready, notFound, with(ready, func(r *machines.Record) { r.State = machines.Stopped }), nil},
		{"ready, an empty lookup is FOUND", ready, pluginapi.Pod{Name: "qwen", Status: "EXITED"},
			with(ready, func(r *machines.Record) { r.State = machines.Stopped }), nil},
		{"ready, readySince", ready, upPod(boot), ready, nil},
		{"crashed, the same boot's readySince", crashed, upPod(boot), crashed, nil},
		{"crashed, a later boot's readySince: ready again", crashed, upPod(now),
			with(ready, func(r *machines.Record) { r.ReadyAt = now }), nil},
		{"crashed, EXITED: asleep", crashed, exited(), with(crashed, func(r *machines.Record) { r.State = machines.Asleep }), nil},
		{"waking, UNREADABLE", rec(machines.Waking), unreadable, rec(machines.Waking), nil},
		{"loading, UNREADABLE keeps the loading clock", loading, unreadable, loading, nil},
		{"ready, UNREADABLE", ready, unreadable, ready, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t, wake.Config{Records: newMemRecords(tt.stored)})
			e.clk.Set(now)

			e.c.Observe(context.Background(), "qwen", tt.read)

			if diff := cmp.Diff(tt.want, e.record(t)); diff != "" {
				t.Errorf("record (-want +got):\n%s", diff)
			}
			wantPuts := 1
			if tt.want.Equal(tt.stored) {
				wantPuts = 0
			}
			if got := e.recs.putCount(); got != wantPuts {
				t.Errorf("%d record writes, want %d", got, wantPuts)
			}
			got := e.logs.lines(t)
			if diff := cmp.Diff(tt.wantLines, got); diff != "" {
				t.Errorf("log (-want +got):\n%s", diff)
			}
			if n, w := e.gpu.starts(), e.clk.Waiters(); n != 0 || w != 0 {
				t.Errorf("StartPod called %d times with %d clock waiters, want 0 and 0: a read never wakes nor watches", n, w)
			}
		})
	}
}

// TestAnswered: a turn the model answered makes the pod ready, since the
// conductor's readySince when it belongs to the wake, else since the answer.
// A wake that becomes ready this way is logged once; a second answered turn
// on the ready pod costs no write, and no read either: it is on every
// answer's path, before its first byte (the record the coordinator holds
// decides it).
func TestAnswered(t *testing.T) {
	now := t0.Add(9 * time.Minute)
	boot := t0.Add(8*time.Minute + 30*time.Second)
	rec := func(state engine.State, loadingSince time.Time) machines.Record {
		return machines.Record{Pod: "qwen", State: state, WakeRequestedAt: t0, ModelLoadingSince: loadingSince}
	}
	// An answered turn serves the wake on record; from waking it is also
	// the first sight of the pod up.
	readyAt := func(at time.Time) machines.Record {
		return machines.Record{Pod: "qwen", State: machines.Ready, WakeRequestedAt: t0, ReadyAt: at, Served: true}
	}
	upAndReadyAt := func(at time.Time) machines.Record {
		r := readyAt(at)
		r.RunningAt = at
		return r
	}
	tests := []struct {
		name       string
		stored     machines.Record
		readySince time.Time
		want       machines.Record
		wantLines  []logLine
	}{
		{"waking, readySince of the wake", rec(machines.Waking, time.Time{}), boot, upAndReadyAt(boot), []logLine{readyLine("12:08 UTC")}},
		{"waking, no readySince", rec(machines.Waking, time.Time{}), time.Time{}, upAndReadyAt(now), []logLine{readyLine("12:09 UTC")}},
		{"loading, readySince of an earlier boot", rec(machines.Loading, t0), t0.Add(-5 * time.Minute), readyAt(now), []logLine{readyLine("12:09 UTC")}},
		{"stuck", rec(machines.Stuck, t0), boot, readyAt(boot), []logLine{readyLine("12:08 UTC")}},
		{"crashed: ready again, not a wake's ready", machines.Record{Pod: "qwen", State: machines.Crashed, WakeRequestedAt: t0, ReadyAt: t0.Add(time.Minute)},
			time.Time{}, readyAt(now), nil},
		{"asleep, no wake on record", machines.NewRecord("qwen"), boot, machines.Record{Pod: "qwen", State: machines.Ready, ReadyAt: boot, Served: true}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t, wake.Config{Records: newMemRecords(tt.stored)})
			e.clk.Set(now)

			e.c.Answered(context.Background(), "qwen", tt.readySince)

			if diff := cmp.Diff(tt.want, e.record(t)); diff != "" {
				t.Errorf("record (-want +got):\n%s", diff)
			}
			if got := e.recs.putCount(); got != 1 {
				t.Errorf("%d record writes, want 1", got)
			}

			e.clk.Advance(time.Minute)
			reads := e.recs.readCount()
			e.c.Answered(context.Background(), "qwen", tt.readySince)

			if got := e.recs.readCount() - reads; got != 0 {
				t.Errorf("a second answered turn on a ready pod read the store %d times, want 0", got)
			}
			if got := e.recs.putCount(); got != 1 {
				t.Errorf("a second answered turn on a ready pod wrote the record (%d writes, want 1)", got)
			}
			if diff := cmp.Diff(tt.want, e.record(t)); diff != "" {
				t.Errorf("record after the second answer (-want +got):\n%s", diff)
			}
			got := e.logs.lines(t)
			if diff := cmp.Diff(tt.wantLines, got); diff != "" {
				t.Errorf("log (-want +got):\n%s", diff)
			}
			if n := e.gpu.starts(); n != 0 {
				t.Errorf("StartPod called %d times, want 0", n)
			}
		})
	}
}
