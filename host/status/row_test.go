package status

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/wakeonchat/wakeonchat/machines"
)

// TestWakeRowStopped: a wake whose pod the host stopped says so in its
// row, when and why; any other wake's row says nothing of a stop.
func TestWakeRowStopped(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	w := machines.Wake{Pod: "qwen", RequestedAt: now.Add(-time.Hour), RunningAt: now.Add(-54 * time.Minute),
		ReadyAt: now.Add(-51 * time.Minute), Outcome: "ready", Served: true}
	tests := []struct {
		name       string
		at         time.Time
		stop, want string
	}{
		{"not stopped", time.Time{}, "", ""},
		{"idle", now.Add(-20 * time.Minute), machines.StopIdle, "stopped by the host at 11:40:00 UTC, idle"},
		{"unserved", now.Add(-40 * time.Minute), machines.StopUnserved, "stopped by the host at 11:20:00 UTC, nobody served"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := w
			w.StoppedAt, w.Stop = tt.at, tt.stop
			if diff := cmp.Diff(tt.want, row(w, now).Stopped); diff != "" {
				t.Errorf("Stopped (-want +got):\n%s", diff)
			}
		})
	}
}
