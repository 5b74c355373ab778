package storetest

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/wakeonchat/wakeonchat/host/store"
	"github.com/wakeonchat/wakeonchat/machines"
)

// prompt is how long a call whose context has ended may take to return: it
// does no work worth the name, so a call that takes longer waited for
// something (a lock, a database) it should not have.
const prompt = 2 * time.Second

// contents is what a case's store holds, as its reads give it back.
type contents struct {
	Record  machines.Record
	Wakes   []machines.Wake
	History []store.Message
	Pending store.Pending
	Pended  bool
}

// read reads what st holds of pod qwen and session s.
func read(t *testing.T, st store.Backend) contents {
	t.Helper()
	ctx := t.Context()
	var c contents
	var err error
	c.Record, err = st.Records.Record(ctx, "qwen")
	must(t, err)
	c.Wakes, err = st.WakeLog.Wakes(ctx, "qwen")
	must(t, err)
	c.History, err = st.History.History(ctx, "s", 100)
	must(t, err)
	c.Pending, c.Pended, err = st.Pendings.Pending(ctx, "s")
	must(t, err)
	return c
}

// testCancelled: every call whose context has ended returns promptly with
// an error wrapping the context's, and writes nothing; a context that ends
// while a call waits (for another update of the pod) ends the wait; and an
// update whose context ends while it decides stores neither the record nor
// its wake log entry.
func testCancelled(t *testing.T, s Suite) {
	st, _ := open(t, s, 0)
	ctx := t.Context()
	r0 := record("qwen")
	must(t, st.WakeLog.PutRecordWake(ctx, r0, machines.Wake{RequestedAt: r0.WakeRequestedAt, Outcome: string(machines.Refused)}))
	u, a := turn("s", 0)
	must(t, st.History.AppendTurn(ctx, "s", u, a))
	must(t, st.Pendings.PutPending(ctx, "s", pending("k")))
	before := read(t, st)
	changed := func(r machines.Record) machines.Record {
		r.State, r.WakeRequestedAt = machines.Waking, T0.Add(time.Hour)
		return r
	}

	t.Run("ended before the call", func(t *testing.T) {
		done, cancel := context.WithCancel(ctx)
		cancel()
		calls := map[string]func(context.Context) error{
			"Record":    func(ctx context.Context) error { _, err := st.Records.Record(ctx, "qwen"); return err },
			"PutRecord": func(ctx context.Context) error { return st.Records.PutRecord(ctx, changed(r0)) },
			"Records":   func(ctx context.Context) error { _, err := st.Records.Records(ctx); return err },
			"UpdateRecord": func(ctx context.Context) error {
				_, _, err := st.Records.UpdateRecord(ctx, "qwen", func(r machines.Record) (machines.Record, *machines.Wake, error) {
					return changed(r), &machines.Wake{RequestedAt: T0.Add(time.Hour)}, nil
				})
				return err
			},
			"PutRecordWake": func(ctx context.Context) error {
				return st.WakeLog.PutRecordWake(ctx, changed(r0), machines.Wake{RequestedAt: T0.Add(time.Hour)})
			},
			"Wakes":   func(ctx context.Context) error { _, err := st.WakeLog.Wakes(ctx, "qwen"); return err },
			"History": func(ctx context.Context) error { _, err := st.History.History(ctx, "s", 10); return err },
			"HistoryWithin": func(ctx context.Context) error {
				_, err := st.History.HistoryWithin(ctx, "s", 10, 1000)
				return err
			},
			"AppendTurn":    func(ctx context.Context) error { return st.History.AppendTurn(ctx, "s", user("q"), assistant("a")) },
			"Pending":       func(ctx context.Context) error { _, _, err := st.Pendings.Pending(ctx, "s"); return err },
			"PutPending":    func(ctx context.Context) error { return st.Pendings.PutPending(ctx, "s", pending("other")) },
			"TakePending":   func(ctx context.Context) error { _, err := st.Pendings.TakePending(ctx, "s", "k"); return err },
			"DeletePending": func(ctx context.Context) error { return st.Pendings.DeletePending(ctx, "s") },
			"Prune": func(ctx context.Context) error {
				_, err := st.Retainer.Prune(ctx, T0.Add(1000*time.Hour), store.Retention{HistoryMaxAge: time.Hour})
				return err
			},
			"TakeLease": func(ctx context.Context) error { _, err := st.Leases.TakeLease(ctx, "l"); return err },
		}
		if st.Turns != nil {
			calls["TakeTurn"] = func(ctx context.Context) error {
				ok, err := st.Turns.TakeTurn(ctx, "s")
				if ok {
					return errors.New("took the turn")
				}
				return err
			}
		}
		for name, call := range calls {
			start := time.Now()
			err := call(done)
			if took := time.Since(start); took > prompt {
				t.Errorf("%s with an ended context took %v", name, took)
			}
			if name == "TakeTurn" && err == nil {
				continue // false, as when its wait ends: nothing taken
			}
			if !errors.Is(err, context.Canceled) {
				t.Errorf("%s with an ended context: %v, want an error wrapping context.Canceled", name, err)
			}
		}
		if diff := cmp.Diff(before, read(t, st)); diff != "" {
			t.Errorf("the store after calls with an ended context (-want +got):\n%s", diff)
		}
		if ok, err := st.Leases.TakeLease(ctx, "l"); err != nil || !ok {
			t.Errorf("TakeLease after one with an ended context = %v, %v; want it free", ok, err)
		}
	})

	t.Run("ends while deciding", func(t *testing.T) {
		decide, cancel := context.WithCancel(ctx)
		_, _, err := st.Records.UpdateRecord(decide, "qwen", func(r machines.Record) (machines.Record, *machines.Wake, error) {
			cancel() // the client leaves while the change is decided
			return changed(r), &machines.Wake{RequestedAt: T0.Add(time.Hour)}, nil
		})
		if !errors.Is(err, context.Canceled) {
			t.Errorf("UpdateRecord whose context ended in fn: %v, want an error wrapping context.Canceled", err)
		}
		if diff := cmp.Diff(before, read(t, st)); diff != "" {
			t.Errorf("the store after it (-want +got):\n%s", diff)
		}
	})

	t.Run("ends while waiting", func(t *testing.T) {
		holding, release := make(chan struct{}), make(chan struct{})
		first := make(chan error, 1)
		go func() {
			_, _, err := st.Records.UpdateRecord(ctx, "qwen", func(r machines.Record) (machines.Record, *machines.Wake, error) {
				close(holding)
				<-release
				return changed(r), nil, nil
			})
			first <- err
		}()
		<-holding
		short, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
		defer cancel()
		second := make(chan error, 1)
		go func() {
			_, _, err := st.Records.UpdateRecord(short, "qwen", func(r machines.Record) (machines.Record, *machines.Wake, error) {
				t.Error("the second update decided while the first held the pod")
				return r, nil, nil
			})
			second <- err
		}()
		select {
		case err := <-second:
			if !errors.Is(err, context.DeadlineExceeded) {
				t.Errorf("an update waiting for the pod until its context ended: %v, want an error wrapping context.DeadlineExceeded", err)
			}
		case <-time.After(prompt):
			t.Errorf("an update waiting for the pod still waits %v after its context ended", prompt)
		}
		close(release)
		must(t, <-first)
		got, err := st.Records.Record(ctx, "qwen")
		must(t, err)
		if diff := cmp.Diff(inUTC(changed(r0)), got); diff != "" {
			t.Errorf("the record after both (-want +got):\n%s", diff)
		}
	})
}
