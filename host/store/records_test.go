package store

import (
	"reflect"
	"testing"
	"time"

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
		StoppedAt:         wake.Add(20 * time.Minute),
		StopReason:        machines.StopUnserved,
		AnsweredAt:        wake.Add(12 * time.Minute),
	}
}

// TestFullRecordIsFull keeps the corruption tests honest: when
// machines.Record gains a field, fullRecord must set it.
func TestFullRecordIsFull(t *testing.T) {
	t.Parallel()
	r := reflect.ValueOf(fullRecord("p", time.Date(2026, 9, 9, 14, 3, 0, 0, time.UTC)))
	for i := range r.NumField() {
		if r.Field(i).IsZero() {
			t.Errorf("fullRecord leaves %s zero", r.Type().Field(i).Name)
		}
	}
}

// TestDecodeRecordFromBeforeTheStamp: a record a host stored before
// records had the answer's stamp (AnsweredAt) reads as it was, with no
// stamp, in either backend (both store EncodeRecord's JSON); a stamp
// survives a round trip, in UTC.
func TestDecodeRecordFromBeforeTheStamp(t *testing.T) {
	t.Parallel()
	wake := time.Date(2026, 9, 9, 12, 0, 0, 0, time.UTC)
	old := `{"pod":"qwen","state":"ready","wakeRequestedAt":"2026-09-09T12:00:00Z","modelLoadingSince":"0001-01-01T00:00:00Z",` +
		`"readyAt":"2026-09-09T12:04:00Z","refusedStatus":0,"runningAt":"2026-09-09T12:03:00Z","served":true}`
	got, err := DecodeRecord("qwen", []byte(old))
	if err != nil {
		t.Fatal(err)
	}
	want := machines.Record{Pod: "qwen", State: machines.Ready, WakeRequestedAt: wake,
		ReadyAt: wake.Add(4 * time.Minute), RunningAt: wake.Add(3 * time.Minute), Served: true}
	if !got.Equal(want) || !got.AnsweredAt.IsZero() {
		t.Errorf("the record from before the stamp = %+v, want %+v", got, want)
	}

	want.AnsweredAt = wake.Add(7 * time.Minute).In(time.FixedZone("CEST", 2*60*60))
	v, err := EncodeRecord(want)
	if err != nil {
		t.Fatal(err)
	}
	got, err = DecodeRecord("qwen", v)
	if err != nil {
		t.Fatal(err)
	}
	if !got.Equal(want) || got.AnsweredAt.Location() != time.UTC {
		t.Errorf("a stamped record's round trip = %+v, want %+v with the stamp in UTC", got, want)
	}
}
