package wake_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/wakeonchat/wakeonchat/host/wake"
	"github.com/wakeonchat/wakeonchat/machines"
)

// The answer's stamp (stamp.go): what one host's answers tell the idle
// stops of the others through the stored record.

// stampElsewhere stores at as qwen's AnsweredAt, as another host sharing
// the store would, and tells e's coordinator of the change when notify,
// as the store's listener does (Elsewhere).
func stampElsewhere(t *testing.T, e *syncEnv, at time.Time, notify bool) {
	t.Helper()
	r := e.record(t)
	r.AnsweredAt = at
	if err := e.recs.PutRecord(context.Background(), r); err != nil {
		t.Fatal(err)
	}
	if notify {
		if err := e.c.Elsewhere("qwen", func(machines.Record) {}); err != nil {
			t.Fatal(err)
		}
	}
}

// TestIdleStopWaitsForAStampFromElsewhere: with stop_after_idle 15 min, a
// host whose own last answer was at 2m stops the pod 15 minutes after the
// stamp another host stored at 10m, at 25m, not at 17m: when the other
// host's notice comes (Elsewhere) its idle loop takes the stamp, and when
// none came by then its last look before the stop, on the record as
// stored, finds it and waits.
func TestIdleStopWaitsForAStampFromElsewhere(t *testing.T) {
	for _, tt := range []struct {
		name   string
		notify bool
	}{
		{"told of the stamp", true},
		{"not told: the last look reads it", false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				e := readyEnv(t, fifteen, true, wake.Config{})
				time.Sleep(2 * time.Minute)
				e.c.Answered(context.Background(), "qwen", time.Time{})
				time.Sleep(8 * time.Minute)
				synctest.Wait() // this host's stamp of 2m is stored
				stampElsewhere(t, e, e.at(10*time.Minute), tt.notify)

				time.Sleep(15*time.Minute - time.Nanosecond)
				synctest.Wait()
				if got := e.stops(); len(got) != 0 {
					t.Fatalf("stopped at %v, before 15 min after the other host's stamp (10m)", got)
				}
				time.Sleep(time.Hour)
				synctest.Wait()
				if diff := cmp.Diff([]time.Duration{25 * time.Minute}, e.stops()); diff != "" {
					t.Errorf("stops (-want +got):\n%s", diff)
				}
				e.logs.find(t, "pod stopped after idling: pod qwen, idle 15m0s")
			})
		})
	}
}

// updateCounter is a store that counts UpdateRecord calls: each stamp a
// host tries is one (an answer of a ready, served pod changes nothing
// else).
type updateCounter struct {
	*memRecords
	mu      sync.Mutex
	updates int
}

func (u *updateCounter) UpdateRecord(ctx context.Context, pod string, fn func(machines.Record) (machines.Record, *machines.Wake, error)) (machines.Record, machines.Record, error) {
	u.mu.Lock()
	u.updates++
	u.mu.Unlock()
	return u.memRecords.UpdateRecord(ctx, pod, fn)
}

func (u *updateCounter) count() int {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.updates
}

// TestAnswerStampOncePerMinute: a pod answered every 10 seconds for 5
// minutes has its record stamped once a minute, when the stamp is a minute
// old, not 30 times; each stamp is a stored change (Changed) with its
// answered event. A stamp another host stored counts as this host's own;
// one it stored that this host has not heard of yet costs a look under
// the lock and no write, and is known from then on.
func TestAnswerStampOncePerMinute(t *testing.T) {
	const s = time.Second
	tests := []struct {
		name string
		// before is the stored stamp at the start, after start; known: this
		// host knows it (else it is stored as another host's, unheard of).
		before time.Duration
		known  bool
		stamps []time.Duration // the stamps stored, after start
		tries  int             // UpdateRecord calls
	}{
		{"no stamp before", 0, false, []time.Duration{0, 60 * s, 120 * s, 180 * s, 240 * s}, 5},
		{"another host's, 30 s before, known", -30 * s, true, []time.Duration{30 * s, 90 * s, 150 * s, 210 * s, 270 * s}, 5},
		{"another host's, 30 s before, unheard of", -30 * s, false, []time.Duration{30 * s, 90 * s, 150 * s, 210 * s, 270 * s}, 6},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				start := time.Now()
				r := machines.Record{Pod: "qwen", State: machines.Ready,
					WakeRequestedAt: start.Add(-9 * time.Minute), ReadyAt: start.Add(-time.Minute), Served: true}
				recs := &updateCounter{memRecords: newMemRecords(r)}
				e := readyEnv(t, fifteen, true, wake.Config{Records: recs, Wakes: recs.memRecords})
				e.recs = recs.memRecords
				if tt.before != 0 {
					stampElsewhere(t, e, start.Add(tt.before), tt.known)
				}
				for range 30 {
					e.c.Answered(context.Background(), "qwen", time.Time{})
					synctest.Wait() // a stamp it began is stored
					time.Sleep(10 * s)
				}
				var stamps []time.Duration
				e.mu.Lock()
				for _, c := range e.changes {
					if !c.After.AnsweredAt.Equal(c.Before.AnsweredAt) {
						stamps = append(stamps, c.After.AnsweredAt.Sub(start))
						if c.Event.Trigger != machines.Answered || !c.Event.At.Equal(c.After.AnsweredAt) || c.After.State != machines.Ready {
							t.Errorf("the change of a stamp: %+v, want the answered event at its time, ready as before", c)
						}
					}
				}
				e.mu.Unlock()
				if diff := cmp.Diff(tt.stamps, stamps); diff != "" {
					t.Errorf("stamps stored (-want +got):\n%s", diff)
				}
				if got := recs.count(); got != tt.tries {
					t.Errorf("%d UpdateRecord calls, want %d", got, tt.tries)
				}
				if got := e.record(t).AnsweredAt; !got.Equal(start.Add(tt.stamps[len(tt.stamps)-1])) {
					t.Errorf("stored stamp %s after start, want the last, %s", got.Sub(start), tt.stamps[len(tt.stamps)-1])
				}
			})
		})
	}
}

// TestAnswerStampOffTheAnswersPath: Answered returns while its stamp is
// still being written (the store holds the write): the answer's first
// byte waits for no record write. The stamp is stored once the store
// answers.
func TestAnswerStampOffTheAnswersPath(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		start := time.Now()
		recs := newMemRecords(machines.Record{Pod: "qwen", State: machines.Ready,
			WakeRequestedAt: start.Add(-9 * time.Minute), ReadyAt: start, Served: true})
		held, release := make(chan struct{}), make(chan struct{})
		recs.updating = func() {
			close(held)
			<-release
		}
		e := readyEnv(t, fifteen, true, wake.Config{Records: recs})
		e.c.Answered(context.Background(), "qwen", time.Time{}) // returns: a deadlock fails the bubble
		<-held
		if got := e.record(t).AnsweredAt; !got.IsZero() {
			t.Errorf("stamp %v stored while the write is held", got)
		}
		close(release)
		synctest.Wait()
		if got := e.record(t).AnsweredAt; !got.Equal(start) {
			t.Errorf("stamp %v once the store answered, want %v", got, start)
		}
	})
}

// TestAnswerStampOnlyWithAnIdleStop: a pod whose stop is not
// stop_after_idle (stop_unserved_after alone, or none) is never stamped:
// no idle stop reads it.
func TestAnswerStampOnlyWithAnIdleStop(t *testing.T) {
	for _, tt := range []struct {
		name  string
		stops map[string]wake.StopPolicy
	}{
		{"stop_unserved_after alone", map[string]wake.StopPolicy{"qwen": {UnservedAfter: 5 * time.Minute}}},
		{"no stop", nil},
	} {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				start := time.Now()
				recs := newMemRecords(machines.Record{Pod: "qwen", State: machines.Ready,
					WakeRequestedAt: start.Add(-9 * time.Minute), ReadyAt: start, Served: true})
				e := newSyncEnv(t, wake.Config{Records: recs, Wakes: recs, Stops: tt.stops})
				if err := e.c.Resume(func(string) bool { return true }); err != nil {
					t.Fatal(err)
				}
				for range 3 {
					e.c.Answered(context.Background(), "qwen", time.Time{})
					synctest.Wait()
					time.Sleep(time.Minute)
				}
				if n := recs.putCount(); n != 0 {
					t.Errorf("%d record writes, want none", n)
				}
			})
		})
	}
}

// TestAnswerStampFailure: a stamp the store refuses changes nothing and is
// logged once, at ERROR, as the record's failure ("wake: record of pod P:",
// once per outage); the next answer tries again, and once one is stored
// the store is logged back.
func TestAnswerStampFailure(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		start := time.Now()
		recs := newMemRecords(machines.Record{Pod: "qwen", State: machines.Ready,
			WakeRequestedAt: start.Add(-9 * time.Minute), ReadyAt: start, Served: true})
		var mu sync.Mutex
		failing := true
		recs.putErr = func(machines.Record) error {
			mu.Lock()
			defer mu.Unlock()
			if failing {
				return errors.New("disk full")
			}
			return nil
		}
		e := readyEnv(t, fifteen, true, wake.Config{Records: recs})
		for range 3 {
			e.c.Answered(context.Background(), "qwen", time.Time{})
			synctest.Wait()
			time.Sleep(10 * time.Second)
		}
		if got := e.record(t).AnsweredAt; !got.IsZero() {
			t.Errorf("stamp %v stored while the store refuses it", got)
		}
		lines := e.logs.withMsg(t, "wake: record of pod qwen: the answer's stamp not stored: disk full")
		if len(lines) != 1 || lines[0].Level != "ERROR" {
			t.Errorf("the failure's lines: %+v, want one at ERROR", lines)
		}
		mu.Lock()
		failing = false
		mu.Unlock()
		e.c.Answered(context.Background(), "qwen", time.Time{})
		synctest.Wait()
		if got := e.record(t).AnsweredAt; !got.Equal(e.at(30 * time.Second)) {
			t.Errorf("stamp %v once the store works, want the answer's, 30s after start", got)
		}
		e.logs.find(t, wake.LineStoreBack)
	})
}

// TestTurnBeginStamps: a turn that begins on this host stamps the record
// as an answer does, so that another host's idle stop, which cannot see
// the turn in flight here, measures from it (a stored stamp holds a stop
// back: TestIdleStopWaitsForAStampFromElsewhere).
func TestTurnBeginStamps(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := readyEnv(t, fifteen, true, wake.Config{})
		time.Sleep(14 * time.Minute)
		end := e.c.Begin("qwen")
		defer end()
		synctest.Wait()
		if got, want := e.record(t).AnsweredAt, e.at(14*time.Minute); !got.Equal(want) {
			t.Errorf("the record's stamp after a turn began at 14m: %v, want %v", got, want)
		}
	})
}

// TestLongTurnKeepsStamping: a turn in flight for 25 minutes, a stream
// say, stamps the record when it begins and then once a minute while it
// lasts, so that another host's idle stop (15 min) never takes a pod in
// use here for an idle one; once it ended, the stamps stop.
func TestLongTurnKeepsStamping(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := readyEnv(t, fifteen, true, wake.Config{})
		time.Sleep(14 * time.Minute)
		end := e.c.Begin("qwen")
		var stamps []time.Duration
		for range 25 {
			time.Sleep(time.Minute)
			synctest.Wait()
			stamps = append(stamps, e.record(t).AnsweredAt.Sub(e.start))
		}
		time.Sleep(30 * time.Second)
		end()
		time.Sleep(10 * time.Minute)
		synctest.Wait()
		var want []time.Duration
		for m := 15; m <= 39; m++ {
			want = append(want, time.Duration(m)*time.Minute)
		}
		if diff := cmp.Diff(want, stamps); diff != "" {
			t.Errorf("the record's stamp each minute of the turn (-want +got):\n%s", diff)
		}
		if got, want := e.record(t).AnsweredAt, e.at(39*time.Minute); !got.Equal(want) {
			t.Errorf("the record's stamp 10 minutes after the turn ended: %v, want %v (the last stamp in flight)", got, want)
		}
		if got := e.stops(); len(got) != 0 {
			t.Errorf("stopped at %v, during or within 15 minutes of a turn", got)
		}
	})
}
