package main

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/wakeonchat/wakeonchat/host/config"
	"github.com/wakeonchat/wakeonchat/host/sim"
)

// TestAnalyze: a hand-made day of three wakes and five users, each figure
// of measurement 7 worked out by hand. A pushed client's delay is the wait
// for the model's first answer (simulated clock) plus the wall time from
// that answer to its own.
func TestAnalyze(t *testing.T) {
	t0 := time.Date(2026, 9, 10, 9, 0, 0, 0, time.UTC)
	wall := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC) // the wall clock of the run
	at := func(m float64) time.Time { return t0.Add(time.Duration(m * float64(time.Minute))) }
	wakes := []sim.WakeReport{
		// Served the waiter and the asker; up 9 → 30; the probe got the
		// model's first answer 0.8 s after it could give one.
		{PodID: "pod-1", StartedAt: at(0), ReadyAt: at(9), EndedAt: at(30), Answered: 3,
			FirstAnswerAt: at(9).Add(800 * time.Millisecond), FirstAnswerWall: wall},
		// Nobody was left when it was ready: 15 ready minutes for nobody.
		{PodID: "pod-2", StartedAt: at(60), ReadyAt: at(69), EndedAt: at(84),
			FirstAnswerAt: at(69).Add(time.Second), FirstAnswerWall: wall.Add(time.Minute)},
		// Still up when the run ended at 130: served the holder.
		{PodID: "pod-3", StartedAt: at(100), ReadyAt: at(109), Answered: 1,
			FirstAnswerAt: at(109).Add(500 * time.Millisecond), FirstAnswerWall: wall.Add(2 * time.Minute)},
	}
	users := []*user{
		// Waiting at 9, answered 30 ms of wall time after the stream said ready.
		{kind: waiter, arrive: at(0), answered: at(9.1), answeredWall: wall.Add(30 * time.Millisecond), requests: 2},
		// An asker who asked again one minute after readiness.
		{kind: asker, arrive: at(2), answered: at(10), requests: 4},
		// Left at 5: before any model could answer.
		{kind: holder, arrive: at(1), left: at(5), requests: 1},
		// Left at 67, two minutes before pod-2 was ready.
		{kind: waiter, arrive: at(60), left: at(67), requests: 1},
		// Held from 100, answered 10 ms after the stream said ready.
		{kind: holder, arrive: at(100), answered: at(109.2), answeredWall: wall.Add(2*time.Minute + 10*time.Millisecond), requests: 1},
	}
	got := analyze(users, wakes, 100, 5*time.Second, at(130))
	want := dayResult{
		users: 5, answered: 3, leftBeforeReady: 2, leftAfterReady: 0,
		wakes: 3, servedWakes: 2,
		idleReady:   15 * time.Minute,
		waitedWakes: 2, waitedServed: 2,
		lag: map[userKind][]time.Duration{
			waiter: {830 * time.Millisecond},
			asker:  {time.Minute},
			holder: {510 * time.Millisecond},
		},
		conductorRequests: 100,
		// Each boot over 5 s plus its start (109, 109, 109), and 9 user requests.
		requestBound: 3*109 + 9,
	}
	if diff := cmp.Diff(want, got, cmp.AllowUnexported(dayResult{})); diff != "" {
		t.Errorf("analyze (-want +got):\n%s", diff)
	}
}

// TestUserWaitingAt: a user waits from its arrival until it is answered or
// leaves, ends excluded.
func TestUserWaitingAt(t *testing.T) {
	t0 := time.Date(2026, 9, 10, 9, 0, 0, 0, time.UTC)
	answered := &user{arrive: t0, answered: t0.Add(time.Minute)}
	left := &user{arrive: t0, left: t0.Add(time.Minute)}
	for _, tc := range []struct {
		u    *user
		at   time.Duration
		want bool
	}{
		{answered, -time.Second, false},
		{answered, 0, true},
		{answered, 59 * time.Second, true},
		{answered, time.Minute, false},
		{left, 30 * time.Second, true},
		{left, time.Minute, false},
		{&user{arrive: t0}, time.Hour, true}, // still waiting
	} {
		if got := tc.u.waitingAt(t0.Add(tc.at)); got != tc.want {
			t.Errorf("waitingAt(+%s) of %+v = %v, want %v", tc.at, *tc.u, got, tc.want)
		}
	}
}

// TestCost: hand-made days under the stop policies, each day's GPU cost
// worked out by hand. GPU time runs from a wake's start request to its end,
// or to the day's end.
func TestCost(t *testing.T) {
	t0 := time.Date(2026, 9, 10, 9, 0, 0, 0, time.UTC)
	at := func(m float64) time.Time { return t0.Add(time.Duration(m * float64(time.Minute))) }
	end := at(130)
	answered := func(n, of int) []*user { // n of the users answered
		us := make([]*user, of)
		for i := range us {
			us[i] = &user{arrive: t0}
			if i < n {
				us[i].answered = at(10)
			}
		}
		return us
	}
	tests := []struct {
		name  string
		users []*user
		wakes []sim.WakeReport
		stops int
		want  gpuCost
	}{
		{
			name: "no wakes",
			want: gpuCost{},
		},
		{
			// Policy a: the pod stops itself 15 min after its last answer,
			// or after its readiness when it answered nothing.
			name:  "the pod stops itself",
			users: answered(2, 3),
			wakes: []sim.WakeReport{
				{StartedAt: at(0), ReadyAt: at(9), Answered: 3, LastAnswerAt: at(20), EndedAt: at(35)},
				{StartedAt: at(60), ReadyAt: at(69), EndedAt: at(84)},
			},
			want: gpuCost{
				users: 3, answered: 2, wakes: 2, up: (35 + 24) * time.Minute, selfStopped: 2,
				servedTail: []time.Duration{15 * time.Minute}, unservedTail: []time.Duration{15 * time.Minute},
			},
		},
		{
			// Policy b: up from the first wake to the day's end.
			name:  "nobody stops it",
			users: answered(4, 4),
			wakes: []sim.WakeReport{{StartedAt: at(5), ReadyAt: at(14), Answered: 9, LastAnswerAt: at(100)}},
			want:  gpuCost{users: 4, answered: 4, wakes: 1, up: 125 * time.Minute, upAtEnd: 1},
		},
		{
			// Policy d: the host stops a served wake 15 min after its last
			// answer and an unserved one 5 min after readiness; its third
			// stop request found the pod asleep and ended nothing.
			name:  "the host stops it",
			users: answered(1, 2),
			wakes: []sim.WakeReport{
				{StartedAt: at(0), ReadyAt: at(9), Answered: 1, LastAnswerAt: at(10), EndedAt: at(25.1), Stopped: true},
				{StartedAt: at(60), ReadyAt: at(69), EndedAt: at(74), Stopped: true},
			},
			stops: 3,
			want: gpuCost{
				users: 2, answered: 1, wakes: 2, up: 25*time.Minute + 6*time.Second + 14*time.Minute,
				stopRequests: 3, hostStopped: 2,
				servedTail: []time.Duration{15*time.Minute + 6*time.Second}, unservedTail: []time.Duration{5 * time.Minute},
			},
		},
		{
			// Stopped while its model loaded: its GPU time counts, it has no
			// tail (the simulator still reports when it would have been
			// ready).
			name:  "stopped before it was ready",
			wakes: []sim.WakeReport{{StartedAt: at(0), ReadyAt: at(9), EndedAt: at(5), Stopped: true}},
			stops: 1,
			want:  gpuCost{wakes: 1, up: 5 * time.Minute, stopRequests: 1, hostStopped: 1},
		},
		{
			// Read a moment after the day's end, a wake that ended after
			// it is counted as up at the end, until the end.
			name:  "ended after the day's end",
			wakes: []sim.WakeReport{{StartedAt: at(100), ReadyAt: at(109), EndedAt: at(131), Stopped: true}},
			want:  gpuCost{wakes: 1, up: 30 * time.Minute, upAtEnd: 1},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := cost(tt.users, tt.wakes, tt.stops, end)
			if diff := cmp.Diff(tt.want, got, cmp.AllowUnexported(gpuCost{})); diff != "" {
				t.Errorf("cost (-want +got):\n%s", diff)
			}
		})
	}
}

// TestStopPolicies: the table's legend says what each policy is, in
// wake.toml's words, and only the first is today's.
func TestStopPolicies(t *testing.T) {
	var got []string
	for _, p := range stopPolicies {
		got = append(got, p.name+": "+p.String())
	}
	want := []string{
		"a: the pod stops itself 15m after its last answer; the host stops nothing",
		"b: the pod never stops itself; the host stops nothing",
		"c: the pod never stops itself; the host stops it: stop_after_idle 15m",
		"d: the pod never stops itself; the host stops it: stop_after_idle 15m, stop_unserved_after 5m",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("stop policies (-want +got):\n%s", diff)
	}
	if p := stopPolicies[todayPolicy]; !p.podStops || p.host != (hostStops{}) {
		t.Errorf("todayPolicy is %s, want the pod's own stop and none of the host's", p)
	}
}

// TestDayConfig: the config a day's host runs with puts the pod on a
// backend with the policy's stops, at the simulator, and holds OpenAI
// requests: what the host reads, not what the bench meant to write.
func TestDayConfig(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path, err := writeConfig(dir, dir, "127.0.0.1:0", hostSpec{
		conductorURL: "http://127.0.0.1:9", coldStartHold: true,
		stops: &hostStops{afterIdle: 15 * time.Minute, unservedAfter: 5 * time.Minute},
	})
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := config.Load(path)
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	type backend struct {
		Name, Kind, URL     string
		AfterIdle, Unserved time.Duration
	}
	var got []backend
	for _, b := range cfg.GPUBackends() {
		got = append(got, backend{b.Name, b.Kind, b.URL, b.StopAfterIdle.Duration, b.StopUnservedAfter.Duration})
	}
	want := []backend{
		{Name: config.ConductorBackend, Kind: config.KindConductor, URL: "http://127.0.0.1:9"},
		{Name: gpuBackend, Kind: config.KindConductor, URL: "http://127.0.0.1:9", AfterIdle: 15 * time.Minute, Unserved: 5 * time.Minute},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("backends (-want +got):\n%s", diff)
	}
	if len(cfg.Providers) != 1 || config.BackendOf(cfg.Providers[0]) != gpuBackend {
		t.Errorf("providers = %+v, want one, on backend %q", cfg.Providers, gpuBackend)
	}
	if cfg.OpenAI.ColdStart != config.ColdStartHold {
		t.Errorf("openai.cold_start = %q, want hold", cfg.OpenAI.ColdStart)
	}
}

// TestDayUsers: a plan draws the same users every time, follow-up pauses
// included, so that every stop policy lives through the same day.
func TestDayUsers(t *testing.T) {
	t.Parallel()
	t0 := time.Date(2026, 9, 10, 9, 0, 0, 0, time.UTC)
	mix := populations[len(populations)-1]
	first, again := fullDay.users(mix, t0), fullDay.users(mix, t0)
	if diff := cmp.Diff(first, again, cmp.AllowUnexported(user{})); diff != "" {
		t.Errorf("a second draw of the day (-first +second):\n%s", diff)
	}
	follow := 0
	for _, u := range first {
		if len(u.followUps) > 3 {
			t.Errorf("%d follow-ups, want at most 3", len(u.followUps))
		}
		for _, p := range u.followUps {
			if p < time.Minute || p >= 4*time.Minute {
				t.Errorf("a follow-up pause of %s, want 1 to 4 minutes", p)
			}
		}
		follow += len(u.followUps)
	}
	if len(first) == 0 || follow == 0 {
		t.Errorf("%d users with %d follow-ups in all, want some of each", len(first), follow)
	}
}
