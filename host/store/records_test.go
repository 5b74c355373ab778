package store

import (
	"reflect"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/wakeonchat/wakeonchat/machines"
)

// fullRecord is a record of pod with every field set, its times from wake on.
func fullRecord(pod string, wake time.Time) machines.Record {
	return machines.Record{
		Pod:               pod,
		State:             machines.Ready,
		WakeRequestedAt:   wake,
		ModelLoadingSince: wake.Add(90 * time.Second),
		ReadyAt:           wake.Add(4 * time.Minute),
		RefusedStatus:     409,
		RunningAt:         wake.Add(3 * time.Minute),
		Served:            true,
	}
}

// timeFields returns v's time.Time fields by name.
func timeFields(v any) map[string]time.Time {
	rv := reflect.ValueOf(v)
	out := map[string]time.Time{}
	for i := range rv.NumField() {
		if t, ok := rv.Field(i).Interface().(time.Time); ok {
			out[rv.Type().Field(i).Name] = t
		}
	}
	return out
}

// TestFullRecordIsFull keeps the round-trip tests honest: when
// machines.Record gains a field, fullRecord must set it.
func TestFullRecordIsFull(t *testing.T) {
	r := reflect.ValueOf(fullRecord("p", time.Date(2026, 9, 9, 14, 3, 0, 0, time.UTC)))
	for i := range r.NumField() {
		if r.Field(i).IsZero() {
			t.Errorf("fullRecord leaves %s zero", r.Type().Field(i).Name)
		}
	}
}

func TestRecordRoundTrip(t *testing.T) {
	s, _ := openTemp(t)
	wake := time.Date(2026, 9, 9, 14, 3, 0, 0, cest)

	got, err := s.Record("gpu-a")
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(machines.NewRecord("gpu-a"), got); diff != "" {
		t.Errorf("Record of unknown pod (-want +got):\n%s", diff)
	}

	for _, want := range []machines.Record{
		fullRecord("gpu-a", wake),
		{Pod: "gpu-a", State: machines.Asleep}, // overwrite, times back to zero
	} {
		if err := s.PutRecord(want); err != nil {
			t.Fatal(err)
		}
		got, err := s.Record("gpu-a")
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("Record (-want +got):\n%s", diff)
		}
	}
}

func TestPutRecordStoresUTC(t *testing.T) {
	s, _ := openTemp(t)
	// A wall clock reading with a monotonic part, in a non-UTC zone.
	now := time.Now().In(cest)
	if err := s.PutRecord(fullRecord("gpu-a", now)); err != nil {
		t.Fatal(err)
	}
	got, err := s.Record("gpu-a")
	if err != nil {
		t.Fatal(err)
	}
	want := timeFields(fullRecord("gpu-a", now))
	if len(want) == 0 {
		t.Fatal("machines.Record has no time fields: this test checks nothing")
	}
	for name, tm := range timeFields(got) {
		if tm.Location() != time.UTC {
			t.Errorf("%s read back in %v, want UTC", name, tm.Location())
		}
		if !tm.Equal(want[name]) {
			t.Errorf("%s = %v, want %v", name, tm, want[name])
		}
	}
}

func TestRecordsSortedByPod(t *testing.T) {
	s, _ := openTemp(t)
	got, err := s.Records()
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 0 {
		t.Errorf("Records of an empty store = %v, want none", got)
	}

	wake := time.Date(2026, 9, 9, 14, 3, 0, 0, time.UTC)
	for _, pod := range []string{"zeta", "Alpha", "alpha", "mid", "alpha-2"} {
		if err := s.PutRecord(fullRecord(pod, wake)); err != nil {
			t.Fatal(err)
		}
	}
	got, err = s.Records()
	if err != nil {
		t.Fatal(err)
	}
	var want []machines.Record
	for _, pod := range []string{"Alpha", "alpha", "alpha-2", "mid", "zeta"} {
		want = append(want, fullRecord(pod, wake))
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Records (-want +got):\n%s", diff)
	}
}

func TestEmptyPodIsRejected(t *testing.T) {
	s, _ := openTemp(t)
	if _, err := s.Record(""); err == nil {
		t.Error("Record(\"\"): no error")
	}
	if err := s.PutRecord(machines.Record{}); err == nil {
		t.Error("PutRecord of a record without pod: no error")
	}
}
