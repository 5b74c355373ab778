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
