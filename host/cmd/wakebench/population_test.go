package main

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

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
