package wake_test

import (
	"context"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/wakeonchat/wakeonchat/host/wake"
	"github.com/wakeonchat/wakeonchat/machines"
)

// stillWaking is the reply to an ask a few seconds into a wake.
const stillWaking = "Still waking — 0 min elapsed, usually ready by ~9. Ask again shortly."

// TestAsksDecidedOnTheHeldRecord (#18): an ask that changes nothing is
// decided on the record the coordinator holds, with no read of the store,
// while the coordinator is the store's only writer or hears every other
// host's change (Config.Following); while it does not, each ask reads the
// record as stored.
func TestAsksDecidedOnTheHeldRecord(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name      string
		following func() bool
		wantReads int
	}{
		{"the store's only writer", nil, 0},
		{"following the other hosts", func() bool { return true }, 0},
		{"not following them", func() bool { return false }, 5},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			synctest.Test(t, func(t *testing.T) {
				e := newSyncEnv(t, wake.Config{Following: tc.following, WatchPoll: time.Hour})
				e.wakeNow(t)
				synctest.Wait()
				time.Sleep(5 * time.Second)
				before := e.recs.readCount()
				for range 5 {
					d, err := e.c.NotReady(context.Background(), "qwen", "EXITED", machines.LookupFound, false)
					if err != nil || d.Action != machines.ActionWait || d.Text != stillWaking {
						t.Fatalf("an ask 5 s into the wake: %s %q %v, want wait %q", d.Action, d.Text, err, stillWaking)
					}
				}
				if got := e.recs.readCount() - before; got != tc.wantReads {
					t.Errorf("5 asks read the record %d times, want %d", got, tc.wantReads)
				}
			})
		})
	}
}

// TestHeldRecordNeverWakesTwice (#18): host B holds the pod asleep when
// host A wakes it, and B's next ask comes before A's notice. Decided on
// what B holds, the ask would wake; a wake changes the record, so it is
// decided again on the record as stored under the pod's lock: B says
// still waking, and the pod has one start.
func TestHeldRecordNeverWakesTwice(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		following := func() bool { return true }
		a := newSyncEnv(t, wake.Config{Following: following, WatchPoll: time.Hour})
		b := newSyncEnv(t, wake.Config{Following: following, WatchPoll: time.Hour, Records: a.recs, GPU: a.gpu})
		// B learns the pod asleep: an observation of the conductor's EXITED.
		b.c.Observe(context.Background(), "qwen", exited())
		a.wakeNow(t)
		synctest.Wait()
		d, err := b.c.NotReady(context.Background(), "qwen", "EXITED", machines.LookupFound, false)
		if err != nil || d.Action != machines.ActionWait || d.Text != stillWaking {
			t.Errorf("B's ask after A's wake: %s %q %v, want wait %q", d.Action, d.Text, err, stillWaking)
		}
		synctest.Wait()
		if n := a.gpu.starts(); n != 1 {
			t.Errorf("%d starts, want 1", n)
		}
		// What B read under the lock is what it holds now: its next ask
		// reads nothing.
		before := a.recs.readCount()
		if d, _ := b.c.NotReady(context.Background(), "qwen", "EXITED", machines.LookupFound, false); d.Text != stillWaking {
			t.Errorf("B's next ask: %q, want %q", d.Text, stillWaking)
		}
		if n := a.recs.readCount() - before; n != 0 {
			t.Errorf("B's next ask read the record %d times, want 0", n)
		}
	})
}

// TestAnswerOnAHeldReadyRecord (#18): an answer on a pod held ready and
// served changes nothing and reads nothing, while the held record is the
// stored one; while another host's change may have gone unheard
// (Config.Following false), the answer is decided on the record as stored,
// which another host may have moved on.
func TestAnswerOnAHeldReadyRecord(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name      string
		following bool
		wantReads int
	}{
		{"following the other hosts", true, 0},
		{"not following them", false, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			synctest.Test(t, func(t *testing.T) {
				var unheard atomic.Bool // the listener is down
				e := newSyncEnv(t, wake.Config{Following: func() bool { return !unheard.Load() }, WatchPoll: time.Hour})
				e.c.Answered(context.Background(), "qwen", time.Time{})
				synctest.Wait()
				if rec, _ := e.recs.Record(context.Background(), "qwen"); rec.State != machines.Ready || !rec.Served {
					t.Fatalf("after the first answer the record is %s (served %t), want ready and served", rec.State, rec.Served)
				}
				unheard.Store(!tc.following)
				before := e.recs.readCount()
				e.c.Answered(context.Background(), "qwen", time.Time{})
				synctest.Wait()
				if got := e.recs.readCount() - before; got != tc.wantReads {
					t.Errorf("a second answer read the record %d times, want %d", got, tc.wantReads)
				}
			})
		})
	}
}
