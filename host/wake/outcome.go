package wake

import (
	"fmt"
	"log/slog"
	"strconv"
	"time"

	"github.com/wakeonchat/wakeonchat/machines"
	"github.com/wakeonchat/wakeonchat/plugins/pluginapi"
)

// describeStart gives a start request's outcome its operator log line
// and level (#684). Operators grep "wake requested for pod" to see that a wake
// fired, and alert on "wake refused" and "wake failed"; a client timeout is a
// wake in flight, not a fault. A nil result is a failure. r.Lost marks an
// answer lost in the host too (callStart), not only by the plugin.
func describeStart(pod string, r *pluginapi.StartResult, credential string) (slog.Level, string) {
	switch {
	case r == nil:
		return slog.LevelError, fmt.Sprintf("wake failed for pod %s: no result", pod)
	case r.Requested && r.Lost:
		return slog.LevelInfo, fmt.Sprintf("wake requested for pod %s: in flight (the start's answer was lost: %s; watching the pod)", pod, r.Error)
	case r.Requested && r.TimedOut:
		return slog.LevelInfo, fmt.Sprintf("wake requested for pod %s: in flight (client timed out after %s s; the conductor continues)",
			pod, strconv.FormatFloat(float64(r.TimeoutMs)/1000, 'f', -1, 64))
	case r.Requested:
		return slog.LevelInfo, fmt.Sprintf("wake requested for pod %s: accepted status=%d", pod, r.Status)
	case (r.Status == 401 || r.Status == 403) && credential != "":
		return slog.LevelError, fmt.Sprintf("wake refused for pod %s: status=%d (the GPU backend rejected its credential: check %s in the host's environment)", pod, r.Status, credential)
	case r.Status == 401 || r.Status == 403:
		return slog.LevelError, fmt.Sprintf("wake refused for pod %s: status=%d (the conductor's start wants a valid operator token: check RIG_WAKE_TOKEN in the host's environment)", pod, r.Status)
	case r.Status != 0:
		return slog.LevelError, fmt.Sprintf("wake refused for pod %s: status=%d", pod, r.Status)
	case r.Error != "":
		return slog.LevelError, fmt.Sprintf("wake failed for pod %s: %s", pod, r.Error)
	default:
		return slog.LevelError, fmt.Sprintf("wake failed for pod %s: no result", pod)
	}
}

// outcomeEvent turns a start's result into the event to feed back to the
// machine for the wake requested at wake, or false when the start needs no
// feedback (accepted or in flight: the watch takes over).
func outcomeEvent(r *pluginapi.StartResult, wake, now time.Time) (machines.Event, bool) {
	switch {
	case r != nil && r.Requested:
		return machines.Event{}, false
	case r != nil && r.Status != 0:
		return machines.Event{Trigger: machines.StartRefused, At: now, HTTPStatus: r.Status, Wake: wake}, true
	default:
		return machines.Event{Trigger: machines.StartNotSent, At: now, Wake: wake}, true
	}
}
