package storetest

import (
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/wakeonchat/wakeonchat/host/store"
	"github.com/wakeonchat/wakeonchat/machines"
)

// loggedWake is a wake of pod requested at wake that took took to be ready.
func loggedWake(pod string, wake time.Time, took time.Duration) machines.Wake {
	return machines.Wake{Pod: pod, RequestedAt: wake, RunningAt: wake.Add(took * 2 / 3), ReadyAt: wake.Add(took),
		Outcome: string(machines.Ready), Served: true}
}

// readyRecord is pod's record once the wake requested at wake was ready.
func readyRecord(pod string, wake time.Time) machines.Record {
	return machines.Record{Pod: pod, State: machines.Ready, WakeRequestedAt: wake,
		RunningAt: wake.Add(time.Minute), ReadyAt: wake.Add(2 * time.Minute)}
}

// wakes is pod's wake log in st, failing the test when it cannot be read.
func wakes(t *testing.T, st store.Backend, pod string) []machines.Wake {
	t.Helper()
	ws, err := st.WakeLog.Wakes(t.Context(), pod)
	must(t, err)
	return ws
}

func testWakeLog(t *testing.T, s Suite) {
	t.Run("round trip", func(t *testing.T) { testWakeLogRoundTrip(t, s) })
	t.Run("bounded", func(t *testing.T) { testWakeLogBounded(t, s) })
	t.Run("rejects", func(t *testing.T) { testWakeLogRejects(t, s) })
	t.Run("with UpdateRecord", func(t *testing.T) { testWakeLogUpdate(t, s) })
	t.Run("shared", func(t *testing.T) {
		if s.Peer == nil {
			t.Skip("the backend is held by one process: no replicas")
		}
		testWakeLogShared(t, s)
	})
}

// testWakeLogRoundTrip: an entry goes in with its record, comes back in
// UTC, and replaces the entry of the same wake.
func testWakeLogRoundTrip(t *testing.T, s Suite) {
	st, _ := open(t, s, 0)
	wake := time.Date(2026, 9, 9, 14, 3, 0, 0, cest)
	if got := wakes(t, st, "gpu-a"); len(got) != 0 {
		t.Fatalf("Wakes of a pod with none = %v; want none", got)
	}

	rec := record("gpu-a")
	first := machines.Wake{RequestedAt: wake, RunningAt: wake.Add(6 * time.Minute), ReadyAt: wake.Add(9 * time.Minute), Outcome: "ready"}
	must(t, st.WakeLog.PutRecordWake(t.Context(), rec, first))
	gotRec, err := st.Records.Record(t.Context(), "gpu-a")
	must(t, err)
	if diff := cmp.Diff(inUTC(rec), gotRec); diff != "" {
		t.Errorf("the record written with the wake (-want +got):\n%s", diff)
	}
	want := first
	want.Pod = "gpu-a" // an empty pod is the record's
	want.RequestedAt, want.RunningAt, want.ReadyAt = wake.UTC(), want.RunningAt.UTC(), want.ReadyAt.UTC()
	got := wakes(t, st, "gpu-a")
	if diff := cmp.Diff([]machines.Wake{want}, got); diff != "" {
		t.Errorf("Wakes (-want +got):\n%s", diff)
	}
	for _, w := range got {
		for _, tm := range []time.Time{w.RequestedAt, w.RunningAt, w.ReadyAt} {
			if tm.Location() != time.UTC {
				t.Errorf("a time of the wake read back in %v, want UTC", tm.Location())
			}
		}
	}

	// The same wake, served now: replaced, not added.
	served := want
	served.Served = true
	must(t, st.WakeLog.PutRecordWake(t.Context(), rec, served))
	if diff := cmp.Diff([]machines.Wake{served}, wakes(t, st, "gpu-a")); diff != "" {
		t.Errorf("Wakes after the same wake again (-want +got):\n%s", diff)
	}
	if other := wakes(t, st, "gpu-b"); len(other) != 0 {
		t.Errorf("another pod's log = %v; want none", other)
	}
	// Wakes a nanosecond apart are two wakes.
	next := loggedWake("gpu-a", wake.Add(time.Nanosecond).UTC(), time.Minute)
	must(t, st.WakeLog.PutRecordWake(t.Context(), rec, next))
	if diff := cmp.Diff([]machines.Wake{served, next}, wakes(t, st, "gpu-a")); diff != "" {
		t.Errorf("Wakes after a wake a nanosecond later (-want +got):\n%s", diff)
	}
}

// testWakeLogBounded: a pod's log keeps its newest WakeLogSize wakes, by
// request time, oldest first, whatever order they were written in.
func testWakeLogBounded(t *testing.T, s Suite) {
	st, _ := open(t, s, 0)
	const n = store.WakeLogSize + 7
	at := func(i int) machines.Wake {
		return loggedWake("gpu-a", T0.Add(time.Duration(i)*time.Hour), time.Duration(4+i%5)*time.Minute)
	}
	// Written in order for the first half and newest first for the second,
	// to show the order is by request time, not by writing.
	var order []int
	for i := range n / 2 {
		order = append(order, i)
	}
	for i := n - 1; i >= n/2; i-- {
		order = append(order, i)
	}
	for _, i := range order {
		w := at(i)
		must(t, st.WakeLog.PutRecordWake(t.Context(), readyRecord("gpu-a", w.RequestedAt), w))
	}
	var want []machines.Wake
	for i := n - store.WakeLogSize; i < n; i++ {
		want = append(want, at(i))
	}
	// Another pod's log is its own.
	must(t, st.WakeLog.PutRecordWake(t.Context(), readyRecord("gpu-b", T0), loggedWake("gpu-b", T0, 5*time.Minute)))
	if diff := cmp.Diff(want, wakes(t, st, "gpu-a")); diff != "" {
		t.Errorf("Wakes (-want +got):\n%s", diff)
	}
	if b := wakes(t, st, "gpu-b"); len(b) != 1 {
		t.Errorf("gpu-b's log = %v; want its one wake", b)
	}
}

// testWakeLogRejects: a wake of another pod, or without a request time, is
// an error, and neither it nor its record is stored.
func testWakeLogRejects(t *testing.T, s Suite) {
	st, _ := open(t, s, 0)
	tests := []struct {
		rec  machines.Record
		w    machines.Wake
		want string
	}{
		{machines.Record{}, loggedWake("", T0, time.Minute), "store: empty pod name"},
		{readyRecord("qwen", T0), loggedWake("other", T0, time.Minute), `store: wake of pod "other" with the record of pod "qwen"`},
		{readyRecord("qwen", T0), machines.Wake{Outcome: "ready"}, `store: wake of pod "qwen" has no request time`},
	}
	for _, tt := range tests {
		t.Run(tt.want, func(t *testing.T) {
			err := st.WakeLog.PutRecordWake(t.Context(), tt.rec, tt.w)
			if err == nil || err.Error() != tt.want {
				t.Errorf("err = %v, want %q", err, tt.want)
			}
		})
	}
	if r, err := st.Records.Record(t.Context(), "qwen"); err != nil || r.State != machines.Asleep {
		t.Errorf("a rejected write stored the record: %+v, %v", r, err)
	}
	if ws := wakes(t, st, "qwen"); len(ws) != 0 {
		t.Errorf("a rejected write stored a wake: %v", ws)
	}
	if _, err := st.WakeLog.Wakes(t.Context(), ""); err == nil {
		t.Error(`Wakes(""): no error`)
	}
}

// testWakeLogUpdate: the entry UpdateRecord's fn names is stored with the
// changed record, in one transaction: not without it, and not when fn
// fails or the entry is refused.
func testWakeLogUpdate(t *testing.T, s Suite) {
	st, _ := open(t, s, 0)
	waking := machines.Record{Pod: "qwen", State: machines.Waking, WakeRequestedAt: T0}
	must(t, st.Records.PutRecord(t.Context(), waking))
	w := loggedWake("qwen", T0, 2*time.Minute)
	update := func(next machines.Record, w *machines.Wake, fnErr error) (machines.Record, machines.Record, error) {
		t.Helper()
		return st.Records.UpdateRecord(t.Context(), "qwen", func(machines.Record) (machines.Record, *machines.Wake, error) { return next, w, fnErr })
	}

	// An entry with an unchanged record: nothing stored.
	if _, _, err := update(waking, &w, nil); err != nil {
		t.Fatal(err)
	}
	if ws := wakes(t, st, "qwen"); len(ws) != 0 {
		t.Errorf("an entry with an unchanged record was stored: %v", ws)
	}
	// fn fails: neither stored.
	errFn := errors.New("the machine refused")
	if _, _, err := update(readyRecord("qwen", T0), &w, errFn); !errors.Is(err, errFn) {
		t.Errorf("UpdateRecord with a failing fn: %v, want its error", err)
	}
	// The entry is refused: the record is not stored without it.
	bad := w
	bad.Pod = "llama"
	if _, _, err := update(readyRecord("qwen", T0), &bad, nil); err == nil {
		t.Error("UpdateRecord with another pod's entry: no error")
	}
	if got, err := st.Records.Record(t.Context(), "qwen"); err != nil || !got.Equal(waking) {
		t.Errorf("the record after failed updates = %+v, %v; want it unchanged", got, err)
	}
	if ws := wakes(t, st, "qwen"); len(ws) != 0 {
		t.Errorf("failed updates stored a wake: %v", ws)
	}

	// A change with its entry: both stored.
	before, after, err := update(readyRecord("qwen", T0), &w, nil)
	must(t, err)
	if !before.Equal(waking) || !after.Equal(readyRecord("qwen", T0)) {
		t.Errorf("UpdateRecord = %+v, %+v; want the waking record, then the ready one", before, after)
	}
	if diff := cmp.Diff([]machines.Wake{w}, wakes(t, st, "qwen")); diff != "" {
		t.Errorf("Wakes after the update (-want +got):\n%s", diff)
	}
	// A change without an entry leaves the log as it was.
	_, _, err = update(machines.Record{Pod: "qwen", State: machines.Stopped, WakeRequestedAt: T0}, nil, nil)
	must(t, err)
	if diff := cmp.Diff([]machines.Wake{w}, wakes(t, st, "qwen")); diff != "" {
		t.Errorf("Wakes after a change with no entry (-want +got):\n%s", diff)
	}
}

// testWakeLogShared: one replica's entries are every replica's, and
// updates with entries spread over replicas lose none.
func testWakeLogShared(t *testing.T, s Suite) {
	a, _ := open(t, s, 0)
	b := s.Peer(t, a, Options{Now: func() time.Time { return T0 }})
	w := loggedWake("qwen", T0, 3*time.Minute)
	must(t, a.WakeLog.PutRecordWake(t.Context(), readyRecord("qwen", T0), w))
	if diff := cmp.Diff([]machines.Wake{w}, wakes(t, b, "qwen")); diff != "" {
		t.Errorf("the wake A logged, read on B (-want +got):\n%s", diff)
	}

	// Each update moves the record to the next wake and logs the last:
	// serialised across the replicas, every wake is logged once.
	const updates = 20
	errs := make(chan error, updates)
	start := make(chan struct{})
	for i := range updates {
		st := []store.Backend{a, b}[i%2]
		go func() {
			<-start
			_, _, err := st.Records.UpdateRecord(t.Context(), "counted", func(r machines.Record) (machines.Record, *machines.Wake, error) {
				r.RefusedStatus++
				r.WakeRequestedAt = T0.Add(time.Duration(r.RefusedStatus) * time.Minute)
				w := loggedWake("counted", r.WakeRequestedAt, time.Minute)
				return r, &w, nil
			})
			errs <- err
		}()
	}
	close(start)
	for range updates {
		if err := <-errs; err != nil {
			t.Error(err)
		}
	}
	ws := wakes(t, a, "counted")
	if len(ws) != updates {
		t.Fatalf("%d updates with an entry each, spread over two replicas, logged %d wakes", updates, len(ws))
	}
	for i, w := range ws {
		if want := T0.Add(time.Duration(i+1) * time.Minute); !w.RequestedAt.Equal(want) {
			t.Errorf("wake %d requested at %v, want %v", i, w.RequestedAt, want)
		}
	}
}
