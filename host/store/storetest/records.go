package storetest

import (
	"reflect"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

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
	}
}

// inUTC is r with its times in UTC, as a store gives them back.
func inUTC(r machines.Record) machines.Record {
	r.WakeRequestedAt = r.WakeRequestedAt.UTC()
	r.ModelLoadingSince = r.ModelLoadingSince.UTC()
	r.ReadyAt = r.ReadyAt.UTC()
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

	got, err := st.Record("qwen")
	must(t, err)
	if diff := cmp.Diff(machines.NewRecord("qwen"), got); diff != "" {
		t.Errorf("Record of an unknown pod (-want +got):\n%s", diff)
	}
	if recs, err := st.Records(); err != nil || len(recs) != 0 {
		t.Errorf("Records of an empty store = %v, %v; want none", recs, err)
	}

	// Stored out of order, one replaced: Records lists them by pod.
	for _, pod := range []string{"qwen", "llama", "mistral", "llama"} {
		must(t, st.PutRecord(record(pod)))
	}
	replaced := record("qwen")
	replaced.State, replaced.RefusedStatus = machines.Ready, 0
	must(t, st.PutRecord(replaced))

	got, err = st.Record("qwen")
	must(t, err)
	if diff := cmp.Diff(inUTC(replaced), got); diff != "" {
		t.Errorf("Record after PutRecord (-want +got):\n%s", diff)
	}
	for _, tm := range []time.Time{got.WakeRequestedAt, got.ModelLoadingSince, got.ReadyAt} {
		if tm.Location() != time.UTC {
			t.Errorf("a time came back in %v, want UTC", tm.Location())
		}
	}
	recs, err := st.Records()
	must(t, err)
	want := []machines.Record{inUTC(record("llama")), inUTC(record("mistral")), inUTC(replaced)}
	if diff := cmp.Diff(want, recs); diff != "" {
		t.Errorf("Records (-want +got):\n%s", diff)
	}

	// A monotonic clock reading is dropped: what comes back is Equal.
	mono := machines.Record{Pod: "mono", State: machines.Waking, WakeRequestedAt: time.Now()}
	must(t, st.PutRecord(mono))
	if got, err := st.Record("mono"); err != nil || !got.Equal(mono) {
		t.Errorf("Record of a record with a monotonic reading = %+v, %v; want Equal to %+v", got, err, mono)
	}

	if _, err := st.Record(""); err == nil {
		t.Error("Record of an empty pod name: no error")
	}
	if err := st.PutRecord(machines.Record{State: machines.Asleep}); err == nil {
		t.Error("PutRecord of a record without a pod: no error")
	}
}
