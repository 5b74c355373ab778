package storetest

import (
	"errors"
	"reflect"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/wakeonchat/wakeonchat/host/store"
	"github.com/wakeonchat/wakeonchat/machines"
)

// cest is a zone other than UTC, so that a case sees times come back in
// UTC.
var cest = time.FixedZone("CEST", 2*60*60)

// record is a record of pod with every field set.
func record(pod string) machines.Record {
	wake := time.Date(2026, 9, 9, 14, 3, 0, 0, cest)
	return machines.Record{
		Pod: pod, State: machines.Refused, WakeRequestedAt: wake,
		ModelLoadingSince: wake.Add(time.Minute), ReadyAt: wake.Add(9 * time.Minute), RefusedStatus: 409,
		RunningAt: wake.Add(40 * time.Second), Served: true,
		StoppedAt: wake.Add(30 * time.Minute), StopReason: machines.StopIdle,
		AnsweredAt: wake.Add(25 * time.Minute),
	}
}

// inUTC is r with its times in UTC, as a store gives them back.
func inUTC(r machines.Record) machines.Record {
	r.WakeRequestedAt = r.WakeRequestedAt.UTC()
	r.ModelLoadingSince = r.ModelLoadingSince.UTC()
	r.ReadyAt = r.ReadyAt.UTC()
	r.RunningAt = r.RunningAt.UTC()
	r.StoppedAt = r.StoppedAt.UTC()
	r.AnsweredAt = r.AnsweredAt.UTC()
	return r
}

func testRecords(t *testing.T, s Suite) {
	// The round trips below check every field only while record sets every
	// field: a field machines.Record gains must be set there too.
	full := reflect.ValueOf(record("p"))
	for i := range full.NumField() {
		if full.Field(i).IsZero() {
			t.Errorf("record leaves machines.Record.%s zero", full.Type().Field(i).Name)
		}
	}
	st, _ := open(t, s, 0)

	got, err := st.Records.Record(t.Context(), "qwen")
	must(t, err)
	if diff := cmp.Diff(machines.NewRecord("qwen"), got); diff != "" {
		t.Errorf("Record of an unknown pod (-want +got):\n%s", diff)
	}
	if recs, err := st.Records.Records(t.Context()); err != nil || len(recs) != 0 {
		t.Errorf("Records of an empty store = %v, %v; want none", recs, err)
	}

	// Stored out of order, one replaced: Records lists them by pod.
	for _, pod := range []string{"qwen", "llama", "mistral", "llama"} {
		must(t, st.Records.PutRecord(t.Context(), record(pod)))
	}
	replaced := record("qwen")
	replaced.State, replaced.RefusedStatus = machines.Ready, 0
	must(t, st.Records.PutRecord(t.Context(), replaced))

	got, err = st.Records.Record(t.Context(), "qwen")
	must(t, err)
	if diff := cmp.Diff(inUTC(replaced), got); diff != "" {
		t.Errorf("Record after PutRecord (-want +got):\n%s", diff)
	}
	for _, tm := range []time.Time{got.WakeRequestedAt, got.ModelLoadingSince, got.ReadyAt, got.RunningAt, got.StoppedAt, got.AnsweredAt} {
		if tm.Location() != time.UTC {
			t.Errorf("a time came back in %v, want UTC", tm.Location())
		}
	}
	recs, err := st.Records.Records(t.Context())
	must(t, err)
	want := []machines.Record{inUTC(record("llama")), inUTC(record("mistral")), inUTC(replaced)}
	if diff := cmp.Diff(want, recs); diff != "" {
		t.Errorf("Records (-want +got):\n%s", diff)
	}

	// A monotonic clock reading is dropped: what comes back is Equal.
	mono := machines.Record{Pod: "mono", State: machines.Waking, WakeRequestedAt: time.Now()}
	must(t, st.Records.PutRecord(t.Context(), mono))
	if got, err := st.Records.Record(t.Context(), "mono"); err != nil || !got.Equal(mono) {
		t.Errorf("Record of a record with a monotonic reading = %+v, %v; want Equal to %+v", got, err, mono)
	}

	if _, err := st.Records.Record(t.Context(), ""); err == nil {
		t.Error("Record of an empty pod name: no error")
	}
	if err := st.Records.PutRecord(t.Context(), machines.Record{State: machines.Asleep}); err == nil {
		t.Error("PutRecord of a record without a pod: no error")
	}
}

func testUpdateRecord(t *testing.T, s Suite) {
	st, _ := open(t, s, 0)

	// Unchanged: nothing is stored, not even the new pod's default.
	before, after, err := st.Records.UpdateRecord(t.Context(), "qwen", func(r machines.Record) (machines.Record, *machines.Wake, error) { return r, nil, nil })
	must(t, err)
	if want := machines.NewRecord("qwen"); !before.Equal(want) || !after.Equal(want) {
		t.Errorf("UpdateRecord of an unknown pod, unchanged = %+v, %+v; want the new record twice", before, after)
	}
	if recs, err := st.Records.Records(t.Context()); err != nil || len(recs) != 0 {
		t.Errorf("Records after an update that changed nothing = %v, %v; want none", recs, err)
	}

	// Changed: stored, and returned as a read gives it back.
	want := record("qwen")
	before, after, err = st.Records.UpdateRecord(t.Context(), "qwen", func(r machines.Record) (machines.Record, *machines.Wake, error) { return want, nil, nil })
	must(t, err)
	if diff := cmp.Diff(machines.NewRecord("qwen"), before); diff != "" {
		t.Errorf("UpdateRecord's before (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(inUTC(want), after); diff != "" {
		t.Errorf("UpdateRecord's after (-want +got):\n%s", diff)
	}
	if got, err := st.Records.Record(t.Context(), "qwen"); err != nil || !got.Equal(want) {
		t.Errorf("Record after UpdateRecord = %+v, %v; want %+v", got, err, want)
	}

	// fn fails: nothing stored, its error back as it is.
	errFn := errors.New("the machine refused")
	_, _, err = st.Records.UpdateRecord(t.Context(), "qwen", func(r machines.Record) (machines.Record, *machines.Wake, error) {
		r.State = machines.Ready
		return r, nil, errFn
	})
	if !errors.Is(err, errFn) {
		t.Errorf("UpdateRecord with a failing fn: %v, want its error", err)
	}
	// A record of another pod is refused.
	if _, _, err := st.Records.UpdateRecord(t.Context(), "qwen", func(machines.Record) (machines.Record, *machines.Wake, error) { return record("llama"), nil, nil }); err == nil {
		t.Error("UpdateRecord whose fn returns another pod's record: no error")
	}
	if got, err := st.Records.Record(t.Context(), "qwen"); err != nil || !got.Equal(want) {
		t.Errorf("Record after failed updates = %+v, %v; want it unchanged, %+v", got, err, want)
	}
	if _, _, err := st.Records.UpdateRecord(t.Context(), "", func(r machines.Record) (machines.Record, *machines.Wake, error) { return r, nil, nil }); err == nil {
		t.Error("UpdateRecord of an empty pod name: no error")
	}

	// Concurrent updates are serialised: none is lost.
	checkUpdatesSerialised(t, []store.Backend{st})
}

// checkUpdatesSerialised has 40 updates, spread over the stores, each add 1
// to a pod's RefusedStatus at once, and checks that the pod ends at 40: an
// update that read the record while another was deciding on it would lose
// one.
func checkUpdatesSerialised(t *testing.T, stores []store.Backend) {
	t.Helper()
	const updates = 40
	var wg sync.WaitGroup
	errs := make(chan error, updates)
	start := make(chan struct{})
	for i := range updates {
		st := stores[i%len(stores)]
		wg.Go(func() {
			<-start
			_, _, err := st.Records.UpdateRecord(t.Context(), "counted", func(r machines.Record) (machines.Record, *machines.Wake, error) {
				r.RefusedStatus++
				return r, nil, nil
			})
			errs <- err
		})
	}
	close(start)
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Error(err)
		}
	}
	got, err := stores[0].Records.Record(t.Context(), "counted")
	must(t, err)
	if got.RefusedStatus != updates {
		t.Errorf("after %d concurrent increments the count is %d: updates were lost", updates, got.RefusedStatus)
	}
}
